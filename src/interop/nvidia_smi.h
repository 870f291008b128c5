#pragma once
// `nvidia-smi -L` with MIG devices (docs/mig.md): the agent reads which MIG devices each GPU is partitioned into,
// and which MIG type (core/model/mig.h) that makes the node. The lines look like
//   GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
//     MIG 1g.10gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
// (drivers before R470 wrote the UUID as MIG-GPU-<gpu uuid>/<gi>/<ci>; it is taken as it stands). Pure text in,
// data out: no tool is run here.
#include <string>
#include <string_view>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/result.h"

namespace allot::interop {

struct MigDevice {
  int gpu = 0;          // the index of the GPU line it follows
  int device = 0;       // its "Device N" number on that GPU
  std::string profile;  // "1g.10gb"
  std::string uuid;     // "MIG-c6d4f1ef-..."
  friend bool operator==(const MigDevice&, const MigDevice&) = default;
};

struct NvidiaSmiList {
  int gpus = 0;                   // GPU lines
  std::vector<MigDevice> mig;     // in the order listed: by GPU, then device
};

// Reads `nvidia-smi -L`. Lines of neither kind are passed over (the tool prints warnings there); a MIG line before
// any GPU line, or one whose profile or UUID cannot be read, is an error naming the line.
Result<NvidiaSmiList> parse_nvidia_smi_mig(std::string_view text);

// The MIG type a node of `base` type is, given what nvidia-smi listed: `base` itself when no GPU is partitioned;
// the type `base.mig-P` when every GPU holds the full count of profile P (mig_per_gpu); otherwise an error saying
// which GPU differs and how (a mixed or partial layout is not a type allot can schedule, docs/mig.md).
// REQUIRES: base is not itself a MIG type.
Result<std::string> mig_type_of(const InstanceType& base, const NvidiaSmiList& list, const Catalog& catalog);

// The MIG devices of an emulated node of a MIG type, with UUIDs that stay the same for the same node, GPU and
// device (a hash of the three, spelled as a version-5-like UUID), so a restarted agent hands out the same ones.
std::vector<MigDevice> emulated_mig_devices(std::string_view node, const InstanceType& type);

}  // namespace allot::interop
