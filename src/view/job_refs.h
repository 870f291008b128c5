#pragma once
// Hides other teams' job names in reason texts. Reasons name a job of another team only as core::job_ref's
// "job NAME of team TEAM" (a reclaim victim's preemptor, a fair-share preemptor, a starving job holding
// capacity, the jobs an admission preempted); for a reader who may not see that team's jobs (a member of
// another team) it becomes "a job of team TEAM", as preemption records show such jobs as null.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "view/preemption_json.h"

namespace allot::view {

// `text` with every job reference of a team `sees` refuses written as "a job of team TEAM". An empty `sees`
// sees every team: the text comes back unchanged.
std::string hide_job_refs(std::string_view text, const SeesTeamJobs& sees);

// The same on a job_json() view: its reason, its history's and its resizes' reasons.
void hide_job_refs(nlohmann::json& job_view, const SeesTeamJobs& sees);

}  // namespace allot::view
