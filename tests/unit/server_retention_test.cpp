// Retention (server/writer/retention.h, `allot server --retain-finished`): finished jobs leave the server once they
// have outlived the retention, so the jobs it holds, and its snapshots, follow the jobs kept rather than every
// job ever run. A compaction is journaled: a restart replays it; a compacted job's name is free, and asking for
// it says where it went.
#include <regex>

#include "server/writer/state_snapshot.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_retention_test {
namespace {

using nlohmann::json;

class ServerRetention : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    stop();
    options_.retain_finished_s = 60;
    // A snapshot falls due at every batch that wrote a record (and at the writer's next tick when one was
    // being written then), so that once the test is quiet the latest snapshot is of the state it left.
    options_.snapshot_every_records = 1;
    options_.snapshot_min_records = 0;  // the test's journal is far below the size where snapshots pay
    start();
  }
  // A counter or gauge from /metrics; -1 when it is missing.
  double metric(const std::string& line_start) {
    const std::string body = get("/metrics").body;
    const auto at = body.find("\n" + line_start + " ");
    return at == std::string::npos ? -1 : std::stod(body.substr(at + line_start.size() + 2));
  }
  // The bytes of the latest snapshot's cluster part (jobs, nodes, teams). The audit trail and the events in
  // memory have bounds of their own (100,000 and 10,000 entries) and grow here with every request until then.
  size_t snapshot_bytes() {
    // Snapshots are written off the writer thread, one at a time, so the one due after the last record may
    // come a tick later: wait for the snapshot of the journal's last record.
    uint64_t last = 0;
    EXPECT_TRUE(journal_->load_after(0, [&](const store::Record& r) {
      last = r.seq;
      return ok_status();
    }).ok());
    std::optional<store::Snapshot> latest;
    EXPECT_TRUE(eventually([&] {
      auto snap = journal_->latest_snapshot();
      if (!snap.ok() || !*snap || (*snap)->seq < last || server_->stats().snapshot_writing) return false;
      latest = **snap;
      return true;
    })) << "no snapshot of journal record " << last;
    return latest ? snapshot_document(latest->body).value().at("cluster").dump().size() : 0;
  }
};

TEST_F(ServerRetention, FinishedJobsLeaveAfterTheRetentionAndTheStateStaysBounded) {
  small_cluster();
  constexpr int kRounds = 6, kPerRound = 40;
  std::vector<size_t> snapshots;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerRound; ++i) {
      const std::string name = "r" + std::to_string(round) + "-" + std::to_string(i);
      ASSERT_EQ(post("/v1/jobs", job(name)).status, 201);
      ASSERT_EQ(post("/v1/jobs/" + name + "/cancel").status, 200);
    }
    // Each round's jobs finished a minute and a second before the next round: the leader compacts them.
    advance(std::chrono::seconds(61));
    ASSERT_TRUE(eventually([&] { return metric("allot_jobs_compacted_total") == (round + 1) * kPerRound; }))
        << "compacted: " << metric("allot_jobs_compacted_total");
    EXPECT_EQ(list_jobs().size(), 0u) << "round " << round;
    snapshots.push_back(snapshot_bytes());
  }
  // The server holds no more than one round's jobs at any time, whatever it ran in all; so do its snapshots.
  // What stays of a compacted job is its ID in a run of tombstones and its name with its run count (so that a
  // later job of that name numbers its runs after it): under 20 bytes of the cluster part per compacted job,
  // where a kept one takes hundreds.
  ASSERT_GT(snapshots.front(), 0u);
  EXPECT_LT(snapshots.back() - snapshots.front(), size_t{20} * (kRounds - 1) * kPerRound)
      << "first " << snapshots.front() << ", last " << snapshots.back();
  // Kept, they counted under "any" (they named no type and never ran); compacted, they are in no series.
  EXPECT_EQ(metric("allot_jobs{team=\"a\",instance_type=\"ml.g5.8xlarge\",state=\"Cancelled\"}"), 0) << "compacted jobs are not counted as kept";
  EXPECT_EQ(metric("allot_jobs{team=\"a\",instance_type=\"any\",state=\"Cancelled\"}"), -1) << "no series: compacted jobs are not counted as kept";

  // A compacted job's name: a 404 that says where it went, then free for a new job.
  auto gone = get("/v1/jobs/r0-1");
  EXPECT_EQ(gone.status, 404);
  EXPECT_NE(gone.body.find("compacted"), std::string::npos) << gone.body;
  EXPECT_NE(gone.body.find("journal"), std::string::npos) << gone.body;
  EXPECT_TRUE(std::regex_search(gone.body, std::regex("at or before \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ")))
      << "the cutoff as an RFC 3339 time: " << gone.body;
  EXPECT_EQ(post("/v1/jobs/r0-1/cancel").status, 404);
  auto again = post("/v1/jobs", job("r0-1"));
  ASSERT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(get("/v1/jobs/r0-1").json["state"], "Running");

  // Replayed from the journal (and the latest snapshot), the same jobs are gone and the same one kept.
  restart();
  EXPECT_EQ(metric("allot_jobs_compacted_total"), kRounds * kPerRound);
  EXPECT_EQ(list_jobs().size(), 1u);
  EXPECT_EQ(get("/v1/jobs/r0-1").json["state"], "Running");
  EXPECT_EQ(get("/v1/jobs/r5-3").status, 404);
}

TEST_F(ServerRetention, ActiveAndRecentJobsStay) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("running")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("old")).status, 201);
  ASSERT_EQ(post("/v1/jobs/old/cancel").status, 200);
  advance(std::chrono::seconds(30));
  ASSERT_EQ(post("/v1/jobs", job("recent")).status, 201);
  ASSERT_EQ(post("/v1/jobs/recent/cancel").status, 200);
  advance(std::chrono::seconds(31));  // old finished 61 s ago, recent 31 s ago
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/old").status == 404; }));
  EXPECT_EQ(get("/v1/jobs/recent").json["state"], "Cancelled");
  EXPECT_EQ(get("/v1/jobs/running").json["state"], "Running") << "a running job is never compacted, however old";
  // The compaction is one journaled record by the server, with its cutoff.
  auto events = get("/v1/events");
  ASSERT_EQ(events.status, 200) << events.body;
  int compactions = 0;
  for (const auto& e : events.json["events"])
    if (e["kind"] == "compact_finished") {
      ++compactions;
      EXPECT_NE(e["message"].get<std::string>().find("(1 compacted so far)"), std::string::npos) << e.dump();
    }
  EXPECT_EQ(compactions, 1);
}

}  // namespace
}  // namespace allot::server::test::server_retention_test
