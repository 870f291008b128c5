#pragma once
// JSON views of the state, the same everywhere a program reads allot's state: `allot sim run --json`, the
// server's /v1 API and `allot ... -o json`. Amounts use the external units: accelerators, vcpu (may be
// fractional), memory_gib (may be fractional).
#include <functional>

#include <nlohmann/json.hpp>

#include "core/model/state.h"
#include "view/times.h"

namespace allot::view {

nlohmann::json resources_json(const Resources& r);
// A pod set's per-replica request as the job asked: only the amounts given ({"accelerators": 2}), or
// {"whole_node": true}; what is not given follows the instance type's proportions (docs/jobs.md).
nlohmann::json request_json(const AmountSpec& a);
nlohmann::json placement_json(const ClusterState& s, const Placement& p);
// Points in time (submitted_at, started_at, the history's and resizes' at) as `times` says: the server writes
// RFC 3339, the simulator its virtual seconds.
nlohmann::json job_json(const ClusterState& s, const Job& j, bool with_history = true, Times times = Times::kSeconds);
// A job's wall-time limit as of `now` (core/lifecycle/time_limit.h), added to its view when it has one: time_limit_s,
// time_used_s, time_left_s, and while it runs time_limit_at (when it reaches the limit if it keeps running).
void add_time_limit(nlohmann::json& view, const Job& j, Time now, Times times = Times::kSeconds);
// A job array (core/model/array.h) as one item: {name, kind: "array", state, team, priority, submitted_at, array: {count, parallel}, tasks: {state:
// count, ...}, task_count, summary}, counting its live tasks for which `counted` holds (a listing's filters).
nlohmann::json array_json(const ClusterState& s, const ArrayTasks& a, const std::function<bool(const Job&)>& counted,
                          Times times = Times::kRfc3339);
nlohmann::json team_json(const ClusterState& s, const Team& t);
// A team's container settings as the API shows and takes them: {"host_paths": [...], "capabilities": ["NET_RAW"],
// "registry_auth_file"?}; team_json has them under "containers" when the team has any.
nlohmann::json team_containers_json(const TeamContainerSettings& c);
nlohmann::json node_json(const ClusterState& s, const Node& n);
nlohmann::json decision_json(const ClusterState& s, const Decision& d);
// A capacity plan: its spec, state, capacity, the nodes that have joined and the active jobs that name it.
// A plan's start and end: the server writes them as RFC 3339, the simulator as its virtual seconds.
nlohmann::json plan_json(const ClusterState& s, const Plan& p, Times times = Times::kSeconds);

// Per-team totals over all instance types.
Resources team_usage_total(const ClusterState& s, TeamId team);
Resources team_borrowed_total(const ClusterState& s, TeamId team);
Resources team_lent_total(const ClusterState& s, TeamId team);
Resources team_nominal_total(const ClusterState& s, TeamId team);

}  // namespace allot::view
