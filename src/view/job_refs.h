#pragma once
// Hides other teams' job names in reason texts. A reason names a job of another team only through core::job_ref
// (a reclaim victim's preemptor, a fair-share preemptor, a starving job holding capacity, the jobs an admission
// preempted, a dependency), which records where in the text "job NAME of team TEAM" sits (core/model/ref_text.h); for a
// reader who may not see that team's jobs (a member of another team) it becomes "a job of team TEAM", as
// preemption records show such jobs as null. The text is never read for this, except for a text whose references
// are unknown (RefText::refs_known: read back from a record or snapshot that kept none, written by a version
// before references were kept): that one is scanned for the words, as those versions did (scan_job_refs).
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/model/model.h"
#include "core/model/ref_text.h"
#include "view/preemption_json.h"

namespace allot::view {

// `text` with every job reference of a team `sees` refuses written as "a job of team TEAM". An empty `sees`
// sees every team: the text comes back unchanged.
std::string hide_job_refs(const RefText& text, const SeesTeamJobs& sees);
inline std::string hide_job_refs(const SharedText& text, const SeesTeamJobs& sees) { return hide_job_refs(text.ref_text(), sees); }

// The same on a job_json() view of `job`: its reason, its history's and its resizes' reasons, from the job's own.
void hide_job_refs(nlohmann::json& job_view, const Job& job, const SeesTeamJobs& sees);

// The earlier versions' reading, for texts whose references are unknown only: every "job NAME of team TEAM" in
// the text, NAME and TEAM Kubernetes-style names, is taken for a reference.
std::string scan_job_refs(std::string_view text, const SeesTeamJobs& sees);

}  // namespace allot::view
