#include "core/model/resources.h"

#include <algorithm>
#include <sstream>

namespace allot {

const char* resource_name(Resource r) {
  switch (r) {
    case Resource::kAccelerators: return "accelerators";
    case Resource::kVcpu: return "vcpu";
    case Resource::kMemory: return "memory_gib";
  }
  return "?";
}

Resources max0(const Resources& r) {
  return {std::max<int64_t>(0, r.accelerators), std::max<int64_t>(0, r.vcpu_milli),
          std::max<int64_t>(0, r.memory_mib)};
}

Resources min_each(const Resources& a, const Resources& b) {
  return {std::min(a.accelerators, b.accelerators), std::min(a.vcpu_milli, b.vcpu_milli),
          std::min(a.memory_mib, b.memory_mib)};
}

static std::string trim_decimal(int64_t value, int64_t unit) {
  std::ostringstream s;
  if (value % unit == 0) {
    s << value / unit;
  } else {
    // Three decimals at most, trailing zeros dropped: 1.5, 0.25.
    int64_t whole = value / unit, frac = (value < 0 ? -value : value) % unit;
    // Thousandths of the unit, zero-padded to three digits (1000 + n, its first digit dropped), for any unit.
    std::string f = std::to_string(1000 + frac * 1000 / unit).substr(1);
    while (!f.empty() && f.back() == '0') f.pop_back();
    s << (value < 0 && whole == 0 ? "-" : "") << whole << "." << f;
  }
  return s.str();
}

std::string format_amount(Resource r, int64_t amount) {
  switch (r) {
    case Resource::kAccelerators: return std::to_string(amount);
    case Resource::kVcpu: return trim_decimal(amount, 1000);
    case Resource::kMemory: return trim_decimal(amount, 1024);
  }
  return "?";
}

std::string format_resources(const Resources& r) {
  std::ostringstream s;
  s << r.accelerators << (r.accelerators == 1 ? " accelerator, " : " accelerators, ") << format_amount(Resource::kVcpu, r.vcpu_milli) << " vCPU, "
    << format_amount(Resource::kMemory, r.memory_mib) << " GiB";
  return s.str();
}

}  // namespace allot
