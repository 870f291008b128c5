#include "agent/inventory.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "agent/process.h"

namespace allot::agent {
namespace {

std::string run_and_read(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() &&
          std::isdigit(static_cast<unsigned char>(name[prefix.size()])))
        out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(prefix.size())) < std::stoi(b.substr(prefix.size()));
  });
  return out;
}

// EC2 instance metadata, IMDSv2 (token first). Short timeouts: off EC2 the address does not answer.
std::string imds_instance_type() {
  httplib::Client c("http://169.254.169.254");
  c.set_connection_timeout(std::chrono::milliseconds(300));
  c.set_read_timeout(std::chrono::milliseconds(500));
  auto tok = c.Put("/latest/api/token", httplib::Headers{{"X-aws-ec2-metadata-token-ttl-seconds", "60"}}, "",
                   "text/plain");
  if (!tok || tok->status != 200) return "";
  auto r = c.Get("/latest/meta-data/instance-type", httplib::Headers{{"X-aws-ec2-metadata-token", tok->body}});
  if (!r || r->status != 200) return "";
  return r->body;
}

}  // namespace

std::vector<std::string> parse_nvidia_smi_list(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("GPU ", 0) != 0) continue;
    auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2);
    auto uuid = name.find(" (UUID");
    if (uuid != std::string::npos) name = name.substr(0, uuid);
    out.push_back(name);
  }
  return out;
}

Inventory probe_machine() { return probe_machine_with(run_and_read("nvidia-smi -L 2>/dev/null")); }

Inventory probe_machine_with(const std::string& nvidia_smi_list) {
  Inventory inv;
  inv.devices = parse_nvidia_smi_list(nvidia_smi_list);
  if (inv.devices.empty())
    for (const auto& d : list_dir("/dev", "neuron")) inv.devices.push_back("/dev/" + d);
  for (const auto& n : list_dir("/sys/devices/system/node", "node")) {
    std::string cpus = read_file("/sys/devices/system/node/" + n + "/cpulist");
    if (!cpus.empty()) inv.numa.push_back({std::stoi(n.substr(4)), cpus});
  }
  inv.cpus = available_cpus();
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) inv.memory_mib = static_cast<int64_t>(pages) * page / (1024 * 1024);
  return inv;
}

Result<Inventory> discover(const std::string& requested, const Catalog& catalog, const std::string& node) {
  const std::string list = run_and_read("nvidia-smi -L 2>/dev/null");
  return discover_with(requested, catalog, node, probe_machine_with(list), list);
}

Result<Inventory> discover_with(const std::string& requested, const Catalog& catalog, const std::string& node,
                                Inventory inv, const std::string& nvidia_smi_list) {
  std::string type = requested;
  if (type.empty()) type = imds_instance_type();
  if (type.empty())
    return Error::invalid("cannot tell this machine's instance type (no EC2 instance metadata); pass "
                          "--instance-type, e.g. --instance-type ml.g5.8xlarge to emulate one for development");
  auto id = catalog.lookup(type);
  if (!id) return id.error();
  // MIG devices the machine really has decide its MIG type (docs/mig.md).
  auto listed = interop::parse_nvidia_smi_mig(nvidia_smi_list);
  if (!listed) return listed.error();
  if (!listed->mig.empty()) {
    const InstanceType& named = catalog.at(*id);
    auto base = named.is_mig() ? catalog.lookup(named.mig_base) : Result<TypeId>(*id);
    if (!base) return base.error();
    auto mig = interop::mig_type_of(catalog.at(*base), *listed, catalog);
    if (!mig) return Error::invalid("the MIG devices nvidia-smi lists: " + mig.error().message);
    if (named.is_mig() && *mig != named.name)
      return Error::invalid("--instance-type " + named.name + ", but nvidia-smi lists the MIG devices of " + *mig +
                            "; give " + catalog.at(*base).name + " (the agent reads the layout) or " + *mig);
    id = catalog.lookup(*mig);
    if (!id) return id.error();
    inv.mig_devices = listed->mig;
  }
  const InstanceType& t = catalog.at(*id);
  inv.instance_type = t.name;
  inv.kind = t.accelerator_kind;
  inv.accelerator_model = t.accelerator_model;
  inv.accelerators = t.accelerators;
  inv.neuron_cores_per_device = t.neuron_cores_per_accelerator;
  inv.mig_profile = t.mig_profile;
  // Emulated when the machine lacks the devices or CPUs the type promises; replicas are then given the
  // type's device indices anyway, which is what development and the demo need. A MIG type's devices are
  // MIG devices: counted against the GPUs they come from.
  const int gpus = t.is_mig() ? t.accelerators / t.mig_per_gpu : t.accelerators;
  inv.emulated = static_cast<int>(inv.devices.size()) < gpus || static_cast<int>(inv.cpus.size()) < t.vcpus ||
                 (t.is_mig() && inv.mig_devices.empty());
  if (t.is_mig() && inv.mig_devices.empty()) inv.mig_devices = interop::emulated_mig_devices(node, t);
  // Sorted so that accelerator index d is the d-th device: by GPU, then by its device number there.
  std::sort(inv.mig_devices.begin(), inv.mig_devices.end(), [](const auto& a, const auto& b) {
    return a.gpu != b.gpu ? a.gpu < b.gpu : a.device < b.device;
  });
  return inv;
}

nlohmann::json inventory_json(const Inventory& inv) {
  nlohmann::json numa = nlohmann::json::array();
  for (const auto& n : inv.numa) numa.push_back({{"node", n.node}, {"cpus", n.cpus}});
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json out = {{"accelerator_kind", accelerator_kind_name(inv.kind)},
          {"accelerator_model", inv.accelerator_model},
          {"accelerators", inv.accelerators},
          {"devices", inv.devices},
          {"host_numa", numa},
          {"host_cpus", format_cpu_list(inv.cpus)},
          {"host_memory_mib", inv.memory_mib},
          {"hostname", host},
          {"emulated", inv.emulated}};
  if (!inv.mig_profile.empty()) {
    nlohmann::json mig = nlohmann::json::array();
    for (const auto& d : inv.mig_devices) mig.push_back({{"gpu", d.gpu}, {"device", d.device}, {"uuid", d.uuid}});
    out["mig_profile"] = inv.mig_profile;
    out["mig_devices"] = mig;
  }
  return out;
}

}  // namespace allot::agent
