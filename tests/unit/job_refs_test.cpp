// view::hide_job_refs: reason texts name another team's job only as "job NAME of team TEAM", and a reader who may
// not see that team's jobs reads "a job of team TEAM" instead.
#include <gtest/gtest.h>

#include "core/explanation.h"
#include "view/job_refs.h"

namespace allot::view::job_refs_test {
namespace {

const SeesTeamJobs kSeesOnlyA = [](const std::string& team) { return team == "a"; };

TEST(JobRefs, HidesOnlyTheJobsOfTeamsTheReaderMayNotSee) {
  const std::string text = "admitted on n-1; after preempting x-1, " + job_ref("b-7", "b") + ", " + job_ref("a-2", "a") + ".";
  EXPECT_EQ(hide_job_refs(text, kSeesOnlyA), "admitted on n-1; after preempting x-1, a job of team b, job a-2 of team a.");
}

TEST(JobRefs, AReaderWhoSeesEveryTeamReadsTheTextUnchanged) {
  const std::string text = "waiting: capacity is reserved for " + job_ref("big.run_2", "research") + ", which waited";
  EXPECT_EQ(hide_job_refs(text, {}), text);
  EXPECT_EQ(hide_job_refs(text, kSeesOnlyA), "waiting: capacity is reserved for a job of team research, which waited");
}

TEST(JobRefs, LeavesOtherWordingAlone) {
  for (const std::string text : {"preempted by job a-1 of the same team (priority high)", "the job of team b", "subjob x of team b",
                                 "job  of team b", "job x of team ", "team b is above its fair share"})
    EXPECT_EQ(hide_job_refs(text, kSeesOnlyA), text) << text;
}

TEST(JobRefs, HidesInAJobViewsReasonHistoryAndResizes) {
  nlohmann::json v = {{"reason", "preempted (reclaim): team b takes back its lent quota for job b-1 of team b"},
                      {"history", {{{"reason", "admitted; after preempting job b-3 of team b"}}, {{"reason", "submitted"}}}},
                      {"resizes", {{{"reason", "shrunk for job b-4 of team b"}}}}};
  hide_job_refs(v, kSeesOnlyA);
  EXPECT_EQ(v.dump().find("b-1"), std::string::npos) << v.dump();
  EXPECT_EQ(v.dump().find("b-3"), std::string::npos) << v.dump();
  EXPECT_EQ(v.dump().find("b-4"), std::string::npos) << v.dump();
  EXPECT_EQ(v["history"][1]["reason"], "submitted");
}

}  // namespace
}  // namespace allot::view::job_refs_test
