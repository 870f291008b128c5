#pragma once
// The JSON form of a preemption record (core/preemption/preemption_record.h) for people and programs: `allot sim run
// --json`, GET /v1/events, GET /v1/jobs/NAME and the CLI. Amounts in the external units (resources_json); a
// share as a number, null when infinite (a team of weight 0).
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/preemption/preemption_record.h"

namespace allot::view {

// Says whether the reader may see the jobs of a team; the jobs of a team it may not see appear as
// {"team", "rule", "job": null} (and the preemptor as null), so a member learns which team lost or gained
// capacity, which /v1/teams shows anyway, but not that team's job names.
using SeesTeamJobs = std::function<bool(const std::string& team)>;

nlohmann::json preemption_json(const PreemptionGroup& g, const SeesTeamJobs& sees = {});
nlohmann::json share_json(const Share& s);

}  // namespace allot::view
