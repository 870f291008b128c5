#pragma once
// Warnings `allot submit` and `allot apply` print before they send anything: what the server would accept
// but what will not do what the user likely meant (a job that can never be placed, or waits for borrowed
// capacity only; allocations beyond what the cluster has; a team whose fair-share weight is left at 0).
// Pure functions over the server's answers, so that they are tested without one.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/catalog.h"
#include "core/model/spec.h"

namespace allot::client {

// `team` is GET /v1/teams/{job.team}, or null when the request failed (the server then says why itself).
std::vector<std::string> job_warnings(const JobSpec& job, const nlohmann::json& team, const Catalog& catalog);

// `teams` as the file gives them; `without_weight` the names of those whose entry has no fair_share_weight;
// `nodes` is GET /v1/nodes.
std::vector<std::string> apply_warnings(const std::vector<TeamSpec>& teams, const std::vector<std::string>& without_weight,
                                        const nlohmann::json& nodes, const Catalog& catalog);

}  // namespace allot::client
