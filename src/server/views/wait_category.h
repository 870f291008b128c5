#pragma once
// What a waiting job waits for, in a word the Queue page colours (docs/dashboard.md, "Queue"): the reason code
// (core/model/explanation.h) folded into a few categories. This is the one table from reason code to category; the page
// receives the category as data and never reads the reason's prose.
#include <string_view>

#include "core/model/explanation.h"

namespace allot::server {

enum class WaitCategory {
  kScheduling,      // submitted or requeued: the next scheduler pass decides
  kQuota,           // the team's quota does not allow it now (or is lent out)
  kBorrowLimit,     // it would have to borrow beyond the team's limit, or nothing lendable is idle
  kCapacity,        // quota allows it; the nodes have no room now
  kTopology,        // no domain of the level it asks for has room now
  kUnhealthyNodes,  // it fits the cluster but not its schedulable nodes: it waits for nodes to come back
  kOrder,           // it waits its turn: strict FIFO, or a starving job ahead holds the room
  kHeld,            // held by request
  kPlan,            // its capacity plan has not started, or its nodes have not joined
  kDependency,      // a job it names in `after` has not succeeded, ended or started yet (core/model/dependency.h)
  kUserLimit,       // its user is at a per-user limit of its team (core/quota/user_limits.h)
  kArrayThrottle,   // a task of a job array whose `parallel` tasks are admitted (core/model/array.h)
  kRemote,          // a manager's job that a worker cluster is to admit or runs (docs/multicluster.md)
  kNeverFits,       // no amount of waiting runs it (also every job the scheduler marked not feasible)
  kNotWaiting,      // the code of a job that is not waiting (Running or ended)
};

// The category of a job with this reason code; `feasible` false (model.h, Job::feasible) is never-fits whatever
// the code says.
WaitCategory wait_category(ReasonCode code, bool feasible);
// The API's spelling ("borrow_limit") and the page's short label ("borrow limit").
std::string_view wait_category_name(WaitCategory c);
std::string_view wait_category_label(WaitCategory c);

}  // namespace allot::server
