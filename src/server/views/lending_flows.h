#pragma once
// Who lends to whom (docs/dashboard.md, "Teams"), per instance type, from the quota usage alone. The quota rule
// (core/quota/quota.h) says how much each borrower borrows and how much each lender has lent: borrowed capacity is
// attributed to the idle pool first, then to the lending teams in proportion to their unused quota. The pool is
// shared, so which lender's capacity a given borrower holds is not decided anywhere; these flows pair them in a
// fixed order (the idle pool, then lenders by name, against borrowers by name), filling each borrower from the
// next source with something left. Every borrower's flows add up to what it borrows, every lender's to what it
// has lent, and the idle pool's to the rest.
#include <optional>
#include <string>
#include <vector>

#include "core/model/state.h"

namespace allot::server {

struct LendingFlow {
  std::optional<TeamId> lender;  // nullopt: the idle pool (capacity outside every team's quota)
  TeamId borrower;
  Resources amount;
};

// The flows of one instance type; teams that are removed or lend and borrow nothing do not appear.
std::vector<LendingFlow> lending_flows(const ClusterState& s, TypeId type);

}  // namespace allot::server
