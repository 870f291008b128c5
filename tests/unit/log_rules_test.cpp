// Rules on a job's output (core/lifecycle/log_rules.h): the YAML reader and its errors, the checks at submission, the line
// matcher, the journal's JSON, the core's ending of a run by each kind (retries charged to the job, never a node),
// replay, and the agent's attempt journal keeping a fired rule across a restart.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/attempt_journal.h"
#include "config/spec_yaml.h"
#include "core/pass/scheduler.h"
#include "core/model/state.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "store/spec_json.h"

namespace allot::log_rules_test {
namespace {

YAML::Node yaml(const std::string& text) {
  auto d = load_yaml(text, YamlContext{"t.yaml", "", 0});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
  return d.ok() ? *d : YAML::Node();
}

Result<JobSpec> job(const std::string& rules) {
  return parse_job_spec(yaml("{name: j, team: a, replicas: 1, per_replica: {whole_node: true}, max_retries: 2, log_rules: " + rules + "}"),
                        Catalog::builtin(), YamlContext{"t.yaml", "submit", 0});
}

TEST(LogRules, YamlReadsEveryField) {
  auto j = job(R"({progress: {pattern: 'step \d+', every: 600}, restart_on: ['NCCL timeout', 'CUDA error'], fail_on: ['loss.*nan']})");
  ASSERT_TRUE(j.ok()) << j.error().message;
  ASSERT_TRUE(j->log_rules.progress);
  EXPECT_EQ(j->log_rules.progress->pattern, "step \\d+");
  EXPECT_EQ(j->log_rules.progress->every_s, 600);
  EXPECT_EQ(j->log_rules.restart_on, (std::vector<std::string>{"NCCL timeout", "CUDA error"}));
  EXPECT_EQ(j->log_rules.fail_on, std::vector<std::string>{"loss.*nan"});
  // The journal's JSON keeps it exactly; a spec without rules writes nothing new.
  EXPECT_EQ(store::job_from_json(store::to_json(*j)), *j);
  JobSpec plain = *j;
  plain.log_rules = {};
  EXPECT_FALSE(store::to_json(plain).contains("log_rules"));
}

TEST(LogRules, BadRulesAreRefusedSayingWhichWhereAndWhy) {
  struct Case {
    const char* rules;
    const char* says;
  };
  for (const Case& c : {Case{"{fail_on: ['ok', '(unclosed']}", "log_rules.fail_on[1]: the pattern does not compile"},
                        Case{"{restart_on: ['']}", "log_rules.restart_on[0]: the pattern is empty"},
                        Case{"{progress: {pattern: 'step', every: 0}}", "every"},
                        Case{"{progress: {pattern: 'step', every: 604801}}", "every"},
                        Case{"{progress: {pattern: 'step'}}", "every"},
                        Case{"{progress: {every: 10}}", "pattern"},
                        Case{"{fail_on: 'loss'}", "fail_on"},
                        Case{"{stop_on: ['x']}", "stop_on"}}) {
    auto r = job(c.rules);
    ASSERT_FALSE(r.ok()) << c.rules;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << c.rules << ": " << r.error().message;
    EXPECT_NE(r.error().message.find("t.yaml:"), std::string::npos) << r.error().message;  // where
  }
  std::string many = "{restart_on: [";
  for (int i = 0; i <= static_cast<int>(kMaxLogRulePatterns); ++i) many += std::string(i ? "," : "") + "'p" + std::to_string(i) + "'";
  EXPECT_FALSE(job(many + "]}").ok());
  // The same checks hold for specs that did not come through YAML (submit_job).
  LogRules bad;
  bad.fail_on = {"a", "[z-a]"};
  auto st = check_log_rules(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("log_rules.fail_on[1]"), std::string::npos) << st.error().message;
}

TEST(LogRules, MatcherSplitsLinesFiresOnceAndCountsProgress) {
  LogRules rules{ProgressRule{"step \\d+", 60}, {"NCCL (timeout|error)"}, {"loss.*nan"}};
  LogLineMatcher m(rules, 3);
  EXPECT_FALSE(m.feed("step 1 loss 2.3\nste"));
  EXPECT_EQ(m.progress_lines(), 1u);
  EXPECT_FALSE(m.feed("p 2 loss 2.1\n"));  // a line cut across two reads is one line
  EXPECT_EQ(m.progress_lines(), 2u);
  // fail_on is matched before restart_on: a line matching both fails the job.
  auto f = m.feed("step 3 NCCL timeout, loss: nan\r\nloss nan again\n");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, LogRuleKind::kFail);
  EXPECT_EQ(f->index, 0);
  EXPECT_EQ(f->rank, 3);
  EXPECT_EQ(f->line, "step 3 NCCL timeout, loss: nan");
  EXPECT_FALSE(m.feed("loss: nan\n"));  // fires once
  EXPECT_EQ(m.progress_lines(), 3u);

  LogLineMatcher r(rules, 0);
  auto g = r.feed("NCCL error\n");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->kind, LogRuleKind::kRestart);
  // A last line without its newline is matched at the end of the output.
  LogLineMatcher last(rules, 0);
  EXPECT_FALSE(last.feed("loss=nan"));
  ASSERT_TRUE(last.finish());
  // A long line is matched on its first kLogRuleMatchBytes bytes; the line kept is bounded and escaped.
  LogLineMatcher longer(rules, 0);
  EXPECT_FALSE(longer.feed(std::string(kLogRuleMatchBytes, 'x') + "loss nan\n"));
  auto esc = longer.feed("\x1b[31mloss nan" + std::string(2 * kMaxLogRuleLine, 'y') + "\n");
  ASSERT_TRUE(esc);
  EXPECT_EQ(esc->line.rfind("\\x1b[31mloss nan", 0), 0u) << esc->line;
  EXPECT_LE(esc->line.size(), kMaxLogRuleLineShown);
}

// Two nodes of one GPU each, team a owning both.
ClusterState cluster() {
  ClusterState s;
  EXPECT_TRUE(add_nodes(s, {{.name = "n1", .instance_type = "ml.g5.8xlarge"}, {.name = "n2", .instance_type = "ml.g5.8xlarge"}}, 0).ok());
  EXPECT_TRUE(upsert_team(s, TeamSpec{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = 2}}}}).ok());
  return s;
}

JobSpec spec(int max_retries) {
  JobSpec j{.name = "j", .team = "a", .max_retries = max_retries};
  j.pod_sets.push_back({.replicas = 2, .per_replica = {.whole_node = true}});
  j.log_rules = LogRules{ProgressRule{"step \\d+", 600}, {"NCCL timeout"}, {"loss.*nan"}};
  return j;
}

TEST(LogRules, RestartAndHungUseTheJobsRetriesNeverANode) {
  ClusterState s = cluster();
  const JobId id = *submit_job(s, spec(1), 0);
  const Job& j = s.jobs[id.index()];
  (void)schedule(s, 0);
  ASSERT_EQ(j.state, JobState::kRunning);
  ASSERT_TRUE(store::apply_record(s, store::Record{1, 100, store::LogRuleFired{"j", 0, {LogRuleKind::kRestart, 0, 1, "NCCL timeout"}}, {}}).ok());
  EXPECT_EQ(j.state, JobState::kSuspended);
  EXPECT_EQ(j.reason_code, ReasonCode::kLogRestart);
  EXPECT_EQ(j.restarts, 1);
  EXPECT_NE(j.reason.str().find("log rule log_rules.restart_on[0] (`NCCL timeout`) matched a line of rank 1"), std::string::npos) << j.reason.str();
  EXPECT_EQ(j.reason.str().find("NCCL timeout\""), std::string::npos);  // the line itself is not in the reason
  for (const Node& n : s.nodes) EXPECT_EQ(n.health, NodeHealth::kSchedulable);
  (void)schedule(s, 100);
  ASSERT_EQ(j.state, JobState::kRunning);
  // Hung with no retries left: Failed, reason hung.
  ASSERT_TRUE(fire_log_rule(s, "j", 800, {LogRuleKind::kHung, 0, 0, ""}).ok());
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_EQ(j.reason_code, ReasonCode::kHung);
  EXPECT_NE(j.reason.str().find("hung: no line of rank 0 matched log_rules.progress (`step \\d+`) for 600 s; no retries left"), std::string::npos)
      << j.reason.str();
  EXPECT_EQ(parse_reason_code("hung"), ReasonCode::kHung);
  EXPECT_EQ(parse_reason_code("log_restart"), ReasonCode::kLogRestart);
  EXPECT_EQ(parse_reason_code("log_fail"), ReasonCode::kLogFail);
}

TEST(LogRules, FailOnFailsWithoutARetryAndAnUndeclaredRuleIsRefused) {
  ClusterState s = cluster();
  const JobId id = *submit_job(s, spec(5), 0);
  const Job& j = s.jobs[id.index()];
  (void)schedule(s, 0);
  auto undeclared = fire_log_rule(s, "j", 10, {LogRuleKind::kFail, 1, 0, "x"});
  ASSERT_FALSE(undeclared.ok());
  EXPECT_NE(undeclared.error().message.find("no rule log_rules.fail_on[1]"), std::string::npos);
  EXPECT_EQ(j.state, JobState::kRunning);
  const store::Op op = store::LogRuleFired{"j", 0, {LogRuleKind::kFail, 0, 0, "step 7 loss: nan"}};
  auto back = store::op_from_json(store::op_to_json(op));  // the journal's JSON round trip
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, op);
  ASSERT_TRUE(store::apply_record(s, store::Record{1, 20, *back, {}}).ok());
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_EQ(j.reason_code, ReasonCode::kLogFail);
  EXPECT_EQ(j.restarts, 0);
  EXPECT_NE(j.reason.str().find("fail_on[0] (`loss.*nan`) matched a line of rank 0; failed without retry"), std::string::npos) << j.reason.str();
  // Applied twice (a repeated report): the job is no longer running, so the second changes nothing.
  EXPECT_FALSE(store::apply_record(s, store::Record{2, 21, *back, {}}).ok());
  EXPECT_EQ(j.restarts, 0);
}

TEST(LogRules, TheAgentsJournalKeepsAFiredRuleAcrossARestart) {
  const std::string path = (std::filesystem::temp_directory_path() / ("allot-log-rules-" + std::to_string(getpid()) + ".json")).string();
  std::filesystem::remove(path);
  auto j = agent::AttemptJournal::load(path);
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(j->started({"train", 1, 4, "/d", "/d/log", std::nullopt, false, std::nullopt}).ok());
  const LogRuleFiring f{LogRuleKind::kFail, 0, 1, "loss: nan \\xff"};
  ASSERT_TRUE(j->log_rule_fired("train/1#4", f).ok());
  auto again = agent::AttemptJournal::load(path);
  ASSERT_TRUE(again.ok()) << again.error().message;
  ASSERT_EQ(again->entries().at("train/1#4").log_rule, f);
  EXPECT_FALSE(again->entries().at("train/1#4").exit_code);  // killed before it collected the exit
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace allot::log_rules_test
