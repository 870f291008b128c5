#include "interop/nvidia_smi.h"

#include <cstdint>
#include <cstdio>
#include <map>

#include "core/model/mig.h"

namespace allot::interop {
namespace {

std::string_view trim_nvsmi(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The text inside "(UUID: ...)", or empty.
std::string_view uuid_in(std::string_view line) {
  const size_t at = line.find("(UUID: ");
  if (at == std::string_view::npos) return {};
  const size_t from = at + 7, to = line.find(')', from);
  if (to == std::string_view::npos) return {};
  return trim_nvsmi(line.substr(from, to - from));
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string line_error(int number, std::string_view line, const std::string& what) {
  std::string shown(line.substr(0, 120));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return "nvidia-smi -L, line " + std::to_string(number) + " (\"" + shown + "\"): " + what;
}

uint64_t fnv1a_nvsmi(std::string_view text, uint64_t h) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Result<NvidiaSmiList> parse_nvidia_smi_mig(std::string_view text) {
  NvidiaSmiList out;
  int number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    const std::string_view line = trim_nvsmi(raw);
    if (line.starts_with("GPU ") && line.find(": ") != std::string_view::npos) {
      ++out.gpus;
      continue;
    }
    if (!line.starts_with("MIG ")) continue;
    if (out.gpus == 0) return Error::invalid(line_error(number, line, "a MIG device before any GPU line"));
    // "MIG <profile> Device <n>: (UUID: <uuid>)", the fields separated by runs of spaces.
    std::string_view rest = trim_nvsmi(line.substr(4));
    const size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return Error::invalid(line_error(number, line, "no \"Device N:\" after the profile"));
    MigDevice d;
    d.gpu = out.gpus - 1;
    d.profile = std::string(rest.substr(0, sp));
    rest = trim_nvsmi(rest.substr(sp));
    if (!rest.starts_with("Device ")) return Error::invalid(line_error(number, line, "no \"Device N:\" after the profile"));
    rest = trim_nvsmi(rest.substr(7));
    const size_t colon = rest.find(':');
    if (colon == std::string_view::npos || !all_digits(rest.substr(0, colon)))
      return Error::invalid(line_error(number, line, "the device number is not a number"));
    d.device = std::stoi(std::string(rest.substr(0, colon)));
    const std::string_view uuid = uuid_in(rest);
    if (!uuid.starts_with("MIG-") || uuid.size() < 5 || uuid.find(' ') != std::string_view::npos)
      return Error::invalid(line_error(number, line, "no \"(UUID: MIG-...)\""));
    d.uuid = std::string(uuid);
    const auto& p = d.profile;
    if (p.empty() || p.find('g') == std::string::npos || p.find('.') == std::string::npos)
      return Error::invalid(line_error(number, line, "the profile \"" + p + "\" is not of the form 1g.10gb"));
    out.mig.push_back(std::move(d));
  }
  return out;
}

Result<std::string> mig_type_of(const InstanceType& base, const NvidiaSmiList& list, const Catalog& catalog) {
  if (list.mig.empty()) return base.name;
  std::map<int, std::map<std::string, int>> per_gpu;  // GPU -> profile -> devices
  for (const MigDevice& d : list.mig) ++per_gpu[d.gpu][d.profile];
  const std::string profile = list.mig.front().profile;
  const std::string type_name = mig_type_name(base.name, profile);
  auto type = catalog.lookup(type_name);
  if (!type) return type.error();
  const InstanceType& t = catalog.at(*type);
  const int gpus = base.accelerators;
  for (int g = 0; g < gpus; ++g) {
    const auto it = per_gpu.find(g);
    std::string has;
    if (it != per_gpu.end())
      for (const auto& [p, n] : it->second) has += (has.empty() ? "" : " and ") + std::to_string(n) + " x " + p;
    if (it == per_gpu.end() || it->second.size() != 1 || it->second.begin()->first != profile ||
        it->second.begin()->second != t.mig_per_gpu)
      return Error::invalid("GPU " + std::to_string(g) + " holds " + (has.empty() ? "no MIG devices" : has) +
                            ", not " + std::to_string(t.mig_per_gpu) + " x " + profile +
                            " as GPU 0 does: allot schedules a node whose GPUs are all partitioned alike, in the "
                            "full count of one profile (docs/mig.md)");
  }
  if (list.gpus != gpus || static_cast<int>(per_gpu.size()) != gpus)
    return Error::invalid("nvidia-smi lists " + std::to_string(list.gpus) + " GPUs, MIG devices on " +
                          std::to_string(per_gpu.size()) + ", but " + base.name + " has " + std::to_string(gpus));
  return t.name;
}

std::vector<MigDevice> emulated_mig_devices(std::string_view node, const InstanceType& type) {
  std::vector<MigDevice> out;
  if (!type.is_mig()) return out;
  for (int d = 0; d < type.accelerators; ++d) {
    MigDevice m;
    m.gpu = d / type.mig_per_gpu;
    m.device = d % type.mig_per_gpu;
    m.profile = type.mig_profile;
    uint64_t h = fnv1a_nvsmi(node, 14695981039346656037ull);
    h = fnv1a_nvsmi("/" + std::to_string(m.gpu) + "/" + std::to_string(m.device), h);
    const uint64_t h2 = fnv1a_nvsmi(type.mig_profile, h ^ 0x9e3779b97f4a7c15ull);
    char buf[64];
    std::snprintf(buf, sizeof buf, "MIG-%08x-%04x-5%03x-%04x-%012llx", static_cast<unsigned>(h >> 32),
                  static_cast<unsigned>((h >> 16) & 0xffff), static_cast<unsigned>(h & 0xfff),
                  static_cast<unsigned>(0x8000 | ((h2 >> 48) & 0x3fff)),
                  static_cast<unsigned long long>(h2 & 0xffffffffffffull));
    m.uuid = buf;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace allot::interop
