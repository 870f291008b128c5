// Usage reports (server/views/usage_ledger.h): accelerator-seconds used, borrowed, lent and lost, and queueing, as hourly
// aggregates that are a pure function of the journal. A replay, a snapshot restore (with the records after it
// applied) and a compaction of finished jobs give the same report; a snapshot written before usage was kept is
// refused, so start-up replays the journal instead.
#include <gtest/gtest.h>

#include "core/quota/quota.h"
#include "core/pass/scheduler.h"
#include "server/api/api.h"
#include "server/writer/server_state.h"
#include "server/writer/state_snapshot.h"
#include "store/replay.h"

#include "server_journal_fixture.h"
#include "spec_builders.h"

namespace allot::server::server_usage_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // one accelerator per node
std::vector<UsageDim> all_dims() { return {kAllUsageDims[0], kAllUsageDims[1], kAllUsageDims[2], kAllUsageDims[3]}; }

using allot::test::job_spec;
using allot::test::JobBuilder;
JobBuilder whole_node_job(const std::string& name, const std::string& team = "team-a") {
  return job_spec(name, team).whole_nodes().instance_type(kType);
}

store::Actor token(const std::string& id) { return store::Actor{.token = id, .role = auth::Role::kMember, .teams = {"team-a"}}; }

class Usage : public test::JournalTest {
 protected:
  void team(const std::string& name, int instances, SharingStrategy strategy = SharingStrategy::kLendAndBorrow) {
    TeamSpec t;
    t.name = name;
    AmountSpec amount;
    amount.instances = instances;
    t.allocation = {{kType, amount}};
    t.strategy = strategy;
    put(0, store::UpsertTeam{t});
  }
  void nodes(int n) {
    for (int i = 1; i <= n; ++i) put(0, store::AddNode{NodeSpec{"gpu-" + std::to_string(i), kType, "", {}}, "", false});
  }
  static nlohmann::json report(const ServerState& st, Time since, Time until, Time now,
                               std::vector<UsageDim> by = all_dims()) {
    return usage_report_json(st.usage.report(since, until, now, by, nullptr));
  }
  static UsageFigures total(const ServerState& st, Time since, Time until, Time now) {
    return st.usage.report(since, until, now, {UsageDim::kTeam}, nullptr).total;
  }
  static UsageFigures row(const ServerState& st, Time since, Time until, Time now, const std::string& team,
                          const std::string& user) {
    for (const auto& r : st.usage.report(since, until, now, {UsageDim::kTeam, UsageDim::kUser}, nullptr).rows)
      if (r.team == team && r.user == user) return r.figures;
    return {};
  }

};

TEST_F(Usage, UseIsSplitAtHourBoundariesAndCountsWhileRunning) {
  team("team-a", 2);
  nodes(2);
  put(2000, store::Submit{whole_node_job("train").replicas(2)}, token("alice"));
  pass(3000);  // waited 1000 s; runs on 2 accelerators from 3000 s
  ASSERT_EQ(st_.cluster.find_job("train")->state, JobState::kRunning);

  // While it runs, a report counts up to now at the rate in force.
  EXPECT_EQ(total(st_, 0, 5000, 5000).used_s, 2000 * 2);
  put(7800, store::Finish{"train", true, ""});

  EXPECT_EQ(total(st_, 0, 3600, 9000).used_s, 600 * 2);
  EXPECT_EQ(total(st_, 3600, 7200, 9000).used_s, 3600 * 2);
  EXPECT_EQ(total(st_, 7200, 10800, 9000).used_s, 600 * 2);
  // `since` counts from the start of its hour.
  EXPECT_EQ(total(st_, 4000, 7200, 9000).used_s, 3600 * 2);
  const UsageFigures all = total(st_, 0, 10800, 9000);
  EXPECT_EQ(all.used_s, 4800 * 2);
  EXPECT_EQ(all.queued_s, 1000);
  EXPECT_EQ(all.admitted, 1);
  EXPECT_EQ(all.lost_preemption_s + all.lost_failure_s, 0);  // it succeeded

  const auto j = report(st_, 0, 10800, 9000);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["team"], "team-a");
  EXPECT_EQ(j["rows"][0]["user"], "alice");
  EXPECT_EQ(j["rows"][0]["priority"], "none");
  EXPECT_EQ(j["rows"][0]["instance_type"], kType);
}

TEST_F(Usage, WorkLostToFailuresAndPreemptionIsChargedWhereItWasDone) {
  team("team-a", 2);
  nodes(2);
  put(0, store::Submit{whole_node_job("train").replicas(2).checkpoint_interval_s(1000).max_retries(2)}, token("alice"));
  pass(0);
  // A failure at 2500 s: the work since the checkpoint at 2000 s is lost on both accelerators.
  put(2500, store::Finish{"train", false, "replica 1 exited with code 1"});
  pass(2500);
  ASSERT_EQ(st_.cluster.find_job("train")->state, JobState::kRunning);
  // A drain at 3900 s suspends it: the run from 2500 s checkpointed at 3500 s, so 400 s lost, over two hours.
  put(3900, store::Drain{"gpu-1"});
  ASSERT_NE(st_.cluster.find_job("train")->state, JobState::kRunning);

  EXPECT_EQ(total(st_, 0, 3600, 4000).lost_failure_s, 500 * 2);
  EXPECT_EQ(total(st_, 0, 3600, 4000).lost_preemption_s, 100 * 2);
  EXPECT_EQ(total(st_, 3600, 7200, 4000).lost_preemption_s, 300 * 2);
  EXPECT_EQ(total(st_, 0, 7200, 4000).used_s, 3900 * 2);
  EXPECT_EQ(total(st_, 0, 7200, 4000).admitted, 2);
}

TEST_F(Usage, BorrowedAndLentFollowTheQuota) {
  team("team-a", 2);  // may borrow half its quota: one node
  team("team-b", 2);
  nodes(4);
  put(0, store::Submit{whole_node_job("wide").replicas(3)}, token("alice"));
  pass(0);
  ASSERT_EQ(st_.cluster.find_job("wide")->state, JobState::kRunning);
  const TypeId type = *st_.cluster.catalog.find(kType);
  // The quota rule's own figures while it runs: team-a borrows one accelerator, team-b lends it.
  ASSERT_EQ(borrowed(st_.cluster, st_.cluster.usage, st_.cluster.find_team("team-a")->id, type).accelerators, 1);
  ASSERT_EQ(lent_by_team(st_.cluster, st_.cluster.usage, type)[st_.cluster.find_team("team-b")->id.index()].accelerators, 1);
  put(5000, store::Finish{"wide", true, ""});

  const UsageFigures a = row(st_, 0, 7200, 7200, "team-a", kTeamRow);
  const UsageFigures b = row(st_, 0, 7200, 7200, "team-b", kTeamRow);
  EXPECT_EQ(a.borrowed_s, 5000);
  EXPECT_EQ(a.lent_s, 0);
  EXPECT_EQ(b.lent_s, 5000);
  EXPECT_EQ(b.borrowed_s, 0);
  EXPECT_EQ(row(st_, 0, 7200, 7200, "team-a", "alice").used_s, 5000 * 3);
  // Nothing is borrowed from the idle pool here: what is borrowed is what is lent.
  const UsageFigures all = total(st_, 0, 7200, 7200);
  EXPECT_EQ(all.borrowed_s, all.lent_s);
}

TEST_F(Usage, MembersSeeTheirOwnTeamsOnly) {
  team("team-a", 1);
  team("team-b", 1);
  nodes(2);
  put(0, store::Submit{whole_node_job("a1")}, token("alice"));
  put(0, store::Submit{whole_node_job("b1", "team-b")}, token("bob"));
  pass(0);
  const auto r = st_.usage.report(0, 3600, 3600, {UsageDim::kTeam, UsageDim::kUser},
                                  [](const std::string& t) { return t == "team-a"; });
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].user, "alice");
  EXPECT_EQ(r.total.used_s, 3600);
}

TEST_F(Usage, ARecordWithoutATokenIsUnknownUser) {
  team("team-a", 1);
  nodes(1);
  put(0, store::Submit{whole_node_job("old")});  // written before tokens existed: no actor
  pass(0);
  EXPECT_EQ(row(st_, 0, 3600, 3600, "team-a", kUnknownUser).used_s, 3600);
}

TEST(UsageDims, ByIsCheckedAndNamed) {
  EXPECT_EQ(parse_usage_dims("team,user,priority,instance_type").value().size(), 4u);
  auto bad = parse_usage_dims("team,project");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown key 'project'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse_usage_dims("team,team"));
  EXPECT_FALSE(parse_usage_dims(""));
  EXPECT_FALSE(parse_usage_dims("team,"));
}

// A busy journal: teams borrowing and lending, failures, drains, preemptions by priority, resubmissions.
class UsageAgrees : public Usage {
 protected:
  void SetUp() override {
    PolicySpec policy;
    policy.priority_classes = {PriorityClassSpec{"low", 1}, PriorityClassSpec{"high", 10}};
    put(0, store::SetPolicy{policy});
    team("team-a", 2);
    team("team-b", 2);
    nodes(4);
    put(100, store::Submit{whole_node_job("a-wide").replicas(3).checkpoint_interval_s(600).max_retries(3).priority("low")},
        token("alice"));
    put(200, store::Submit{whole_node_job("b-one", "team-b").checkpoint_interval_s(300)}, token("bob"));
    pass(300);
    put(4000, store::Finish{"a-wide", false, "replica 0 exited with code 1"});
    pass(4000);
    put(5000, store::Submit{whole_node_job("b-two", "team-b").replicas(2).priority("high")}, token("bob"));
    pass(5000);  // team-b takes back what it lent
    put(9000, store::Finish{"b-one", true, ""});
    pass(9000);
    put(11000, store::Drain{"gpu-4"});
    pass(11000);
    put(12000, store::Cordon{"gpu-4", false});
    pass(12500);
    put(15000, store::Finish{"b-two", true, ""});
    pass(15000);
  }
};

TEST_F(UsageAgrees, AfterReplay) {
  const auto before = report(st_, 0, 20000, 20000);
  ASSERT_GT(before["total"]["used_s"].get<int64_t>(), 0);
  ASSERT_GT(before["total"]["lost_failure_s"].get<int64_t>(), 0);
  ServerState replayed;
  std::vector<Event> events;
  for (const store::Record& r : records_) ASSERT_TRUE(apply(replayed, r, events).ok()) << store::op_name(r.op);
  EXPECT_EQ(report(replayed, 0, 20000, 20000), before);
  EXPECT_EQ(replayed.usage.rows().size(), st_.usage.rows().size());
}

TEST_F(UsageAgrees, AfterASnapshotRestoreAtEveryRecord) {
  // Restore a snapshot taken after each record, apply the records after it, and compare with the live state.
  const auto want = report(st_, 0, 20000, 20000);
  for (size_t k = 1; k < records_.size(); k += 3) {
    ServerState prefix;
    std::vector<Event> events;
    for (size_t i = 0; i < k; ++i) ASSERT_TRUE(apply(prefix, records_[i], events).ok());
    auto restored = restore_state_snapshot(records_[k - 1].seq, encode_state_snapshot(prefix, {}));
    ASSERT_TRUE(restored) << restored.error().message;
    ServerState& st = restored->state;
    for (size_t i = k; i < records_.size(); ++i) ASSERT_TRUE(apply(st, records_[i], events).ok());
    EXPECT_EQ(report(st, 0, 20000, 20000), want) << "snapshot after record " << k;
    // And the snapshot's own text is the same again once restored.
    auto again = restore_state_snapshot(records_[k - 1].seq, encode_state_snapshot(prefix, {}));
    ASSERT_TRUE(again);
    EXPECT_EQ(encode_state_snapshot(again->state, {}), encode_state_snapshot(prefix, {}));
  }
  // Format 1 carries them too.
  auto one = restore_state_snapshot(st_.last_seq, encode_state_snapshot_format1(st_, {}));
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(report(one->state, 0, 20000, 20000), want);
}

TEST_F(UsageAgrees, ASnapshotWithoutUsageIsRefused) {
  auto doc = snapshot_document(encode_state_snapshot(st_, {})).value();
  // As a version before usage reports wrote it: no "usage" in the header, no usage lines.
  doc.erase("usage");
  doc["usage_rows"] = nlohmann::json::array();
  doc["usage_users"] = nlohmann::json::array();
  auto restored = restore_state_snapshot(st_.last_seq, snapshot_from_document(doc));
  ASSERT_FALSE(restored);
  EXPECT_NE(restored.error().message.find("before usage reports were kept"), std::string::npos) << restored.error().message;
}

TEST_F(UsageAgrees, AfterCompaction) {
  const auto before = report(st_, 0, 20000, 20000);
  put(20000, store::CompactFinished{16000});
  ASSERT_EQ(st_.cluster.find_job("b-two"), nullptr);  // compacted
  EXPECT_EQ(report(st_, 0, 20000, 20000), before);
  auto restored = restore_state_snapshot(st_.last_seq, encode_state_snapshot(st_, {}));
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(report(restored->state, 0, 20000, 20000), before);
}

}  // namespace
}  // namespace allot::server::server_usage_test
