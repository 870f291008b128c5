// `allot apply` merges what the file names (client/apply_plan.h): a file with only a policy section keeps
// every priority class and team it does not name (applying one used to delete every priority class without a
// word), the changes are listed, and --prune removes only what the file's own lists leave out.
#include <gtest/gtest.h>

#include "client/apply_plan.h"

namespace allot::client::client_apply_plan_test {
namespace {

using nlohmann::json;

json current_policy() {
  return {{"task_prioritization", "fcfs"}, {"idle_compute", "fair-share"}, {"idle_pool", false},
          {"priority_classes", json::array({{{"name", "inference"}, {"weight", 100}}, {{"name", "training"}, {"weight", 50}}})},
          {"min_runtime", 0}, {"starvation_threshold", 0}};
}

json team(const std::string& name, int instances, int weight = 1) {
  return {{"name", name}, {"fair_share_weight", weight},
          {"allocation", json::array({{{"instance_type", "ml.g5.8xlarge"}, {"instances", instances}}})},
          {"sharing", {{"strategy", "LendAndBorrow"}, {"borrow_limit", 100}}}, {"preempt_team_tasks", "Never"}};
}

bool has(const ApplyPlan& p, const std::string& line) {
  for (const auto& c : p.changes)
    if (c == line) return true;
  return false;
}

TEST(ApplyPlan, APolicyKeyAloneKeepsClassesAndTeams) {
  ApplyInput in;
  in.file_policy = current_policy();
  in.file_policy["task_prioritization"] = "task-ranking";
  in.file_policy["priority_classes"] = json::array();  // what parse_policy gives for a file without classes
  in.file_policy_keys = {"task_prioritization"};
  in.current_policy = current_policy();
  in.current_teams = json::array({team("a", 1)});
  const ApplyPlan p = plan_apply(in);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_EQ(p.changes[0], "~ policy.task_prioritization: fcfs -> task-ranking");
  EXPECT_EQ(p.body["policy"]["priority_classes"].size(), 2u) << "the classes the file does not name stay";
  EXPECT_EQ(p.body["policy"]["task_prioritization"], "task-ranking");
  EXPECT_FALSE(p.body.contains("teams"));
  EXPECT_TRUE(p.delete_teams.empty());
}

TEST(ApplyPlan, ClassesMergeByNameAndPruneOnlyWhatTheListLeavesOut) {
  ApplyInput in;
  in.file_policy = {{"priority_classes", json::array({{{"name", "training"}, {"weight", 60}}, {{"name", "batch"}, {"weight", 10}}})}};
  in.file_policy_keys = {"priority_classes"};
  in.current_policy = current_policy();
  in.current_teams = json::array({team("a", 1), team("b", 1)});
  ApplyPlan p = plan_apply(in);
  EXPECT_TRUE(has(p, "~ priority-class training: weight 50 -> 60"));
  EXPECT_TRUE(has(p, "+ priority-class batch (weight 10)"));
  EXPECT_EQ(p.body["policy"]["priority_classes"].size(), 3u);
  in.prune = true;
  p = plan_apply(in);
  EXPECT_TRUE(has(p, "- priority-class inference (pruned: not in the file)"));
  EXPECT_EQ(p.body["policy"]["priority_classes"].size(), 2u);
  EXPECT_TRUE(p.delete_teams.empty()) << "a file without a teams list prunes no team";
}

TEST(ApplyPlan, TeamsAreAddedChangedAndPruned) {
  ApplyInput in;
  in.file_teams = json::array({team("a", 2), team("c", 1)});
  in.current_policy = current_policy();
  in.current_teams = json::array({team("a", 1), team("b", 1)});
  ApplyPlan p = plan_apply(in);
  EXPECT_TRUE(has(p, "+ team c"));
  EXPECT_TRUE(has(p, R"(~ team a.allocation: [{"instance_type":"ml.g5.8xlarge","instances":1}] -> [{"instance_type":"ml.g5.8xlarge","instances":2}])"));
  EXPECT_FALSE(p.body.contains("policy")) << "a file without a policy section leaves the policy alone";
  EXPECT_TRUE(p.delete_teams.empty());
  in.prune = true;
  p = plan_apply(in);
  EXPECT_EQ(p.delete_teams, std::vector<std::string>{"b"});
  EXPECT_TRUE(has(p, "- team b (pruned: not in the file)"));
  // The same file again: nothing to change.
  in.current_teams = json::array({team("a", 2), team("c", 1)});
  in.prune = false;
  EXPECT_TRUE(plan_apply(in).changes.empty());
}

}  // namespace
}  // namespace allot::client::client_apply_plan_test
