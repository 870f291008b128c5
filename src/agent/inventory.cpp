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

Inventory probe_machine() {
  Inventory inv;
  inv.devices = parse_nvidia_smi_list(run_and_read("nvidia-smi -L 2>/dev/null"));
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

Result<Inventory> discover(const std::string& requested, const Catalog& catalog) {
  Inventory inv = probe_machine();
  std::string type = requested;
  if (type.empty()) type = imds_instance_type();
  if (type.empty())
    return Error::invalid("cannot tell this machine's instance type (no EC2 instance metadata); pass "
                          "--instance-type, e.g. --instance-type ml.g5.8xlarge to emulate one for development");
  auto id = catalog.lookup(type);
  if (!id) return id.error();
  const InstanceType& t = catalog.at(*id);
  inv.instance_type = t.name;
  inv.kind = t.accelerator_kind;
  inv.accelerator_model = t.accelerator_model;
  inv.accelerators = t.accelerators;
  inv.neuron_cores_per_device = t.neuron_cores_per_accelerator;
  // Emulated when the machine lacks the devices or CPUs the type promises; replicas are then given the
  // type's device indices anyway, which is what development and the demo need.
  inv.emulated = static_cast<int>(inv.devices.size()) < t.accelerators || static_cast<int>(inv.cpus.size()) < t.vcpus;
  return inv;
}

nlohmann::json inventory_json(const Inventory& inv) {
  nlohmann::json numa = nlohmann::json::array();
  for (const auto& n : inv.numa) numa.push_back({{"node", n.node}, {"cpus", n.cpus}});
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {{"accelerator_kind", accelerator_kind_name(inv.kind)},
          {"accelerator_model", inv.accelerator_model},
          {"accelerators", inv.accelerators},
          {"devices", inv.devices},
          {"host_numa", numa},
          {"host_cpus", format_cpu_list(inv.cpus)},
          {"host_memory_mib", inv.memory_mib},
          {"hostname", host},
          {"emulated", inv.emulated}};
}

}  // namespace allot::agent
