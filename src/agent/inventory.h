#pragma once
// What a node has, as the agent reports it when it registers: its instance type, accelerators (from
// `nvidia-smi -L` or /dev/neuron*), NUMA layout (from /sys/devices/system/node) and CPUs. For development an
// agent emulates an instance type from the catalog (--instance-type) on whatever machine it runs on; the
// report then says which facts are emulated, and replicas still get the emulated devices in their env.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/catalog.h"
#include "core/model/result.h"
#include "interop/nvidia_smi.h"

namespace allot::agent {

struct HostNuma {
  int node = 0;
  std::string cpus;  // "0-47"
};

struct Inventory {
  std::string instance_type;  // canonical catalog name
  AcceleratorKind kind = AcceleratorKind::kNone;
  std::string accelerator_model;
  int accelerators = 0;               // as the instance type has them
  std::vector<std::string> devices;   // what the machine really shows (GPU names, /dev/neuronN)
  std::vector<HostNuma> numa;         // the real NUMA nodes
  std::vector<int> cpus;              // the real CPUs this agent may use
  int64_t memory_mib = 0;             // real memory
  int neuron_cores_per_device = 0;
  bool emulated = false;              // the machine does not have what the instance type says
  // A MIG type (docs/mig.md): the MIG devices in accelerator order (device d is the d-th), each with the UUID a
  // replica's CUDA_VISIBLE_DEVICES names it by; read from `nvidia-smi -L`, or emulated (stable per node, GPU, device).
  std::string mig_profile;
  std::vector<interop::MigDevice> mig_devices;
};

// Parses `nvidia-smi -L` ("GPU 0: NVIDIA A10G (UUID: GPU-...)") into the GPU names, one per line.
std::vector<std::string> parse_nvidia_smi_list(const std::string& text);

// What the machine has, without naming an instance type: GPUs, Neuron devices, NUMA, CPUs, memory.
Inventory probe_machine();
// The same, with the GPUs read from `nvidia-smi -L` text already at hand.
Inventory probe_machine_with(const std::string& nvidia_smi_list);

// The instance type of this machine: `requested` when given (emulation when the machine does not match),
// else EC2 instance metadata (IMDSv2), else an error asking for --instance-type. A machine whose GPUs nvidia-smi
// lists as partitioned in MIG devices is of the MIG type they make (interop::mig_type_of; requesting the base type
// or that MIG type are both right, another MIG type is an error); a MIG type requested on a machine without MIG
// devices is emulated, with devices named for `node`.
Result<Inventory> discover(const std::string& requested, const Catalog& catalog, const std::string& node = "");
// The same, given what `nvidia-smi -L` printed (tests feed it real-format text).
Result<Inventory> discover_with(const std::string& requested, const Catalog& catalog, const std::string& node,
                                Inventory machine, const std::string& nvidia_smi_list);

nlohmann::json inventory_json(const Inventory& inv);

}  // namespace allot::agent
