#pragma once
// Resource amounts are integers: whole accelerators, vCPU in milli-units, memory in MiB. Quota arithmetic
// never touches floating point, so sums and comparisons are exact and repeatable.
#include <array>
#include <cstdint>
#include <string>

namespace allot {

enum class Resource : int { kAccelerators = 0, kVcpu = 1, kMemory = 2 };
inline constexpr int kResourceCount = 3;
inline constexpr std::array<Resource, kResourceCount> kAllResources = {Resource::kAccelerators, Resource::kVcpu,
                                                                       Resource::kMemory};

// External names, as in scenario files and the API: accelerators, vcpu, memory_gib.
const char* resource_name(Resource r);

struct Resources {
  int64_t accelerators = 0;
  int64_t vcpu_milli = 0;
  int64_t memory_mib = 0;

  int64_t get(Resource r) const {
    switch (r) {
      case Resource::kAccelerators: return accelerators;
      case Resource::kVcpu: return vcpu_milli;
      case Resource::kMemory: return memory_mib;
    }
    return 0;
  }
  int64_t& at(Resource r) {
    switch (r) {
      case Resource::kAccelerators: return accelerators;
      case Resource::kVcpu: return vcpu_milli;
      case Resource::kMemory: break;
    }
    return memory_mib;
  }
  Resources& operator+=(const Resources& o) {
    accelerators += o.accelerators;
    vcpu_milli += o.vcpu_milli;
    memory_mib += o.memory_mib;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    accelerators -= o.accelerators;
    vcpu_milli -= o.vcpu_milli;
    memory_mib -= o.memory_mib;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, int64_t k) {
    a.accelerators *= k;
    a.vcpu_milli *= k;
    a.memory_mib *= k;
    return a;
  }
  friend bool operator==(const Resources&, const Resources&) = default;

  // Every amount of *this is at most the same amount of `limit`.
  bool fits_in(const Resources& limit) const {
    return accelerators <= limit.accelerators && vcpu_milli <= limit.vcpu_milli && memory_mib <= limit.memory_mib;
  }
  bool is_zero() const { return accelerators == 0 && vcpu_milli == 0 && memory_mib == 0; }
  bool any_positive() const { return accelerators > 0 || vcpu_milli > 0 || memory_mib > 0; }
};

// A set of resources, such as those a team's quota leaves unlimited on one instance type (AmountSpec).
struct ResourceSet {
  uint8_t bits = 0;
  bool has(Resource r) const { return (bits >> static_cast<int>(r)) & 1u; }
  void add(Resource r) { bits = static_cast<uint8_t>(bits | (1u << static_cast<int>(r))); }
  bool empty() const { return bits == 0; }
  // `r` with the amounts of this set's resources zeroed: the part of `r` that is counted against a quota.
  Resources outside(Resources r) const {
    for (Resource x : kAllResources)
      if (has(x)) r.at(x) = 0;
    return r;
  }
  friend bool operator==(const ResourceSet&, const ResourceSet&) = default;
};

Resources max0(const Resources& r);               // each amount clamped at zero
Resources min_each(const Resources& a, const Resources& b);

// "2 accelerators, 48 vCPU, 512 GiB" in the units people use.
std::string format_resources(const Resources& r);
std::string format_amount(Resource r, int64_t amount);

}  // namespace allot
