#include "core/model/request.h"

namespace allot {
namespace {

// a * num / den without overflow for the sizes that occur (amounts below 2^40, ratios below 2^22).
int64_t scale(int64_t a, int64_t num, int64_t den) {
  return den == 0 ? 0 : static_cast<int64_t>((static_cast<__int128>(a) * num) / den);
}

Result<Resources> proportional(const InstanceType& type, const AmountSpec& amount, const char* what) {
  const Resources cap = type.capacity();
  if ((amount.accelerators && *amount.accelerators < 0) || (amount.vcpu_milli && *amount.vcpu_milli < 0) ||
      (amount.memory_mib && *amount.memory_mib < 0))
    return Error::invalid(std::string(what) + " amounts must not be negative");
  Resources r;
  if (amount.accelerators) {
    if (*amount.accelerators > 0 && type.accelerators == 0)
      return Error::invalid(std::string(what) + " asks for accelerators, but " + type.name + " has none");
    r.accelerators = *amount.accelerators;
    r.vcpu_milli = scale(r.accelerators, cap.vcpu_milli, type.accelerators);
    r.memory_mib = scale(r.accelerators, cap.memory_mib, type.accelerators);
  }
  if (amount.vcpu_milli) {
    r.vcpu_milli = *amount.vcpu_milli;
    r.memory_mib = scale(r.vcpu_milli, cap.memory_mib, cap.vcpu_milli);
  }
  if (amount.memory_mib) r.memory_mib = *amount.memory_mib;
  const ResourceSet unlimited = unlimited_resources(amount);
  r = unlimited.outside(r);
  if (!r.any_positive() && unlimited.empty()) return Error::invalid(std::string(what) + " asks for nothing");
  return r;
}

}  // namespace

ResourceSet unlimited_resources(const AmountSpec& amount) {
  ResourceSet out;
  if (amount.vcpu_unlimited) out.add(Resource::kVcpu);
  // Memory follows vCPU, unless given.
  if (amount.memory_unlimited || (amount.vcpu_unlimited && !amount.memory_mib)) out.add(Resource::kMemory);
  return out;
}

Result<Resources> resolve_allocation(const InstanceType& type, const AmountSpec& amount) {
  if (amount.whole_node) return Error::invalid("whole_node is for job requests, not allocations");
  if ((amount.vcpu_unlimited && amount.vcpu_milli) || (amount.memory_unlimited && amount.memory_mib))
    return Error::invalid("an allocation entry gives an amount and 'unlimited' for the same resource");
  if (amount.instances && (amount.vcpu_unlimited || amount.memory_unlimited))
    return Error::invalid("an allocation entry gives instances or accelerators/vcpu/memory_gib, not both");
  if (amount.instances) {
    if (amount.accelerators || amount.vcpu_milli || amount.memory_mib)
      return Error::invalid("an allocation entry gives instances or accelerators/vcpu/memory_gib, not both");
    if (*amount.instances < 0) return Error::invalid("instances must not be negative");
    return type.capacity() * *amount.instances;
  }
  return proportional(type, amount, "allocation");
}

Result<Resources> resolve_replica(const InstanceType& type, const AmountSpec& amount) {
  if (amount.instances) return Error::invalid("instances is for allocations; a replica asks for whole_node");
  if (amount.vcpu_unlimited || amount.memory_unlimited)
    return Error::invalid("'unlimited' is for allocations; a replica asks for amounts");
  if (amount.whole_node) {
    if (amount.accelerators || amount.vcpu_milli || amount.memory_mib)
      return Error::invalid("whole_node cannot be combined with accelerators, vcpu or memory_gib");
    return type.capacity();
  }
  return proportional(type, amount, "per-replica request");
}

}  // namespace allot
