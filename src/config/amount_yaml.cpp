// Amounts as users write them (accelerators, vcpu, memory_gib, instances, whole_node) into AmountSpec's exact
// integers. The proportional defaults are the core's business (request.h); here only the shape is checked.
#include "config/spec_yaml.h"

namespace allot {

std::vector<std::string_view> amount_keys(AmountUse use) {
  switch (use) {
    case AmountUse::kAllocation: return {"instances", "accelerators", "vcpu", "memory_gib"};
    case AmountUse::kReplica: return {"accelerators", "vcpu", "memory_gib", "whole_node"};
    case AmountUse::kResources: break;
  }
  return {"accelerators", "vcpu", "memory_gib"};
}

namespace config {

Result<AmountSpec> read_amount(const YamlContext& ctx, const Fields& fields, AmountUse use) {
  AmountSpec a;
  const Val& self = fields.self();
  if (use == AmountUse::kAllocation) {
    if (auto v = fields.get("instances")) {
      auto n = read_int(ctx, *v, 0, kMaxInstances);
      if (!n) return n.error();
      a.instances = *n;
    }
  }
  if (auto v = fields.get("accelerators")) {
    auto n = read_int(ctx, *v, 0, kMaxAccelerators);
    if (!n) return n.error();
    a.accelerators = *n;
  }
  // An allocation may leave vCPU and memory unlimited (`vcpu: unlimited`): the team's quota then does not
  // limit them on the type (AmountSpec).
  auto unlimited = [&](const Val& v) {
    return use == AmountUse::kAllocation && v.node.IsScalar() && v.node.Scalar() == "unlimited";
  };
  if (auto v = fields.get("vcpu"); v && unlimited(*v)) {
    a.vcpu_unlimited = true;
  } else if (v) {
    auto n = read_decimal(ctx, *v, 1000, kMaxVcpus, /*exact=*/true);
    if (!n) return n.error();
    a.vcpu_milli = *n;
  }
  if (auto v = fields.get("memory_gib"); v && unlimited(*v)) {
    a.memory_unlimited = true;
  } else if (v) {
    // 0.1 GiB is 102.4 MiB: memory rounds to the nearest MiB rather than rejecting such natural values.
    auto n = read_decimal(ctx, *v, 1024, kMaxMemoryGib, /*exact=*/false);
    if (!n) return n.error();
    a.memory_mib = *n;
  }
  if (use == AmountUse::kReplica) {
    if (auto v = fields.get("whole_node")) {
      auto b = read_bool(ctx, *v);
      if (!b) return b.error();
      a.whole_node = *b;
    }
  }

  const bool amounts = a.accelerators || a.vcpu_milli || a.memory_mib || a.vcpu_unlimited || a.memory_unlimited;
  switch (use) {
    case AmountUse::kAllocation:
      if (a.instances && amounts)
        return fail(ctx, self, name_of(self) + " gives instances together with accelerators, vcpu or memory_gib",
                    "give either instances or accelerators/vcpu/memory_gib");
      if (!a.instances && !amounts)
        return fail(ctx, self, name_of(self) + " gives no amount", "give instances, accelerators, vcpu or memory_gib");
      break;
    case AmountUse::kReplica:
      if (a.whole_node && amounts)
        return fail(ctx, self, name_of(self) + " asks for whole_node together with accelerators, vcpu or memory_gib",
                    "give either whole_node: true or amounts");
      // Asking for nothing ({}) is left to the team's default_request, or refused naming it (core/lifecycle/submit.cpp).
      break;
    case AmountUse::kResources: break;
  }
  return a;
}

}  // namespace config
}  // namespace allot
