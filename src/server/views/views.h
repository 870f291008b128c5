#pragma once
// JSON answers the server adds to the shared views (view/state_json.h): the policy in the scenario format's
// shape (so GET and PUT /v1/policy round-trip), nodes with what the server knows of their agents, and the
// topology tree.
#include <nlohmann/json.hpp>

#include "auth/caller.h"
#include "server/writer/server_state.h"
#include "view/preemption_json.h"

namespace allot::server {

nlohmann::json policy_json(const PolicySpec& p);
nlohmann::json node_view(const ServerState& st, const Node& n);
nlohmann::json topology_json(const ClusterState& s);
// A job's restarts (with cause and work lost) and goodput, added to its view (docs/resiliency.md).
void add_resilience(const ServerState& st, const Job& j, Time now, nlohmann::json& view);
// The CPUs each placed replica of the current run reported it is bound to ("cpus_bound" beside the planned
// "cpus" of the view's placement); on an emulated node they differ, folded onto the machine's real CPUs.
void add_bound_cpus(const ServerState& st, const Job& j, nlohmann::json& view);
// Goodput of the job so far: useful over held slot-seconds, counting the current run as kept; 1 when it never ran.
double job_goodput(const ServerState& st, const Job& j, Time now, int64_t* held = nullptr, int64_t* lost = nullptr);
// Whose job names a caller may read in a preemption record: members those of their teams (as everywhere else),
// admins and viewers every team's.
view::SeesTeamJobs job_names_for(const auth::Caller& who);
// The preemption groups a job took part in (ServerState::preemptions_of), added to its view as
// "preemption_records": [{at, as: victim|preemptor, ...the record}], with other teams' job names hidden as
// job_names_for says.
void add_preemption_records(const ServerState& st, const Job& j, const auth::Caller& who, nlohmann::json& view);
// Every team not removed through the API, by name.
nlohmann::json teams_json(const ServerState& st);

}  // namespace allot::server
