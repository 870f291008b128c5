#pragma once
// The proportional rule that turns an allocation entry or a per-replica request into exact amounts for one
// instance type (DESIGN.md, "Compute allocation"):
//   given accelerators a only:  vcpu = a / A * V,  memory = a / A * M
//   given vcpu v (and maybe a): memory = v / V * M      (memory follows the vCPU ratio)
//   explicit values override;  vcpu or memory alone give no accelerators;  instances n: n x (A, V, M)
// where A, V, M are the instance type's accelerators, vCPUs and memory. Amounts are integers (milli-vCPU,
// MiB), rounded down, so the result never exceeds what the proportion allows.
#include "core/model/catalog.h"
#include "core/model/resources.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot {

// An unlimited resource (AmountSpec::vcpu_unlimited, memory_unlimited) resolves to 0: its limit is not an
// amount; unlimited_resources says which they are.
Result<Resources> resolve_allocation(const InstanceType& type, const AmountSpec& amount);
ResourceSet unlimited_resources(const AmountSpec& amount);
Result<Resources> resolve_replica(const InstanceType& type, const AmountSpec& amount);

}  // namespace allot
