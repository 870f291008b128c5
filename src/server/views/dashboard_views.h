#pragma once
// The JSON the dashboard's pages read (docs/dashboard.md), built from the server's state on the writer thread.
// Each answer is an aggregate or one page: nothing here lists every job or node of a large cluster at once
// (the topology lists every node, compactly, because the page draws them all).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "auth/caller.h"
#include "server/writer/server_state.h"

namespace allot::server {

// Accelerators and vCPUs per instance type (in use, free, on unhealthy nodes, on cordoned nodes), nodes by health,
// the nodes that need attention (unhealthy, cordoned or suspect; first 100), the jobs kept per state, the failures
// of the last hour and day, the newest failed jobs `who` may read (members: their own teams'), and the
// utilisation samples plus one for `now`.
nlohmann::json cluster_summary(const ServerState& st, Time now, const auth::Caller& who);

// Per team and instance type: nominal, the most it may hold, in use, borrowed, lent; its fair-share weight and
// share, its job counts; and per instance type the cohort's pool, what of it is used, what is idle, and who lends
// to whom (lending_flows.h).
nlohmann::json teams_summary(const ServerState& st);

// The waiting jobs in scheduling order, with each one's estimated start, cached until the state changes.
// Only the writer thread may use a QueueCache (it lives with the route, read inside a Render).
struct QueueCache {
  static constexpr Time kEstimatesFor = 30;  // estimates are recomputed this often even when nothing changes
  uint64_t version = ~uint64_t{0};
  Time computed_at = 0;
  std::vector<JobId> order;
  std::vector<std::optional<Time>> estimated_start;  // by position in `order`
  std::optional<size_t> estimate_from_reservation;     // the position whose estimate is the backfill reservation's
};
void refresh_queue(QueueCache& cache, const ServerState& st, Time now);

struct QueueQuery {
  std::string team;      // "" = all
  std::string priority;  // a priority class, "none" for jobs without one, "" = all
  std::optional<JobState> state;  // Pending or Suspended; nullopt = both
  std::string job;       // one job by name (the Job page's position), "" = all
  size_t offset = 0;
  size_t limit = 100;
};
// One page of the queue as `who` may see it: a member gets its own teams' jobs; the jobs of other teams ahead of
// them count in the positions, and how many there are is given in `hidden`.
nlohmann::json queue_page(const QueueCache& cache, const ServerState& st, const QueueQuery& q, const auth::Caller& who,
                          Time now);

// The topology tree (views.h, topology_json) with each node's health, cordon, instance type, accelerators and
// accelerators in use, for drawing.
nlohmann::json topology_summary(const ServerState& st);

}  // namespace allot::server
