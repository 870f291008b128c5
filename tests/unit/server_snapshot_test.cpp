// The server writes snapshots as it goes (--snapshot-every) and starts from the latest one: what it answers
// after a restart is what it answered before, with and without the snapshot, and a damaged snapshot stops
// start-up with an error that names it.
#include "server_test_fixture.h"

namespace allot::server::test {
namespace {

class ServerSnapshot : public ServerTest {
 protected:
  void SetUp() override {
    options_.snapshot_every_records = 4;
    ServerTest::SetUp();
  }
  // What readers see, with the fields that a restart may change (timings, heartbeats) left out.
  nlohmann::json seen() {
    nlohmann::json out;
    out["jobs"] = list_jobs();
    for (const char* path : {"/v1/nodes", "/v1/teams", "/v1/tokens", "/v1/audit?limit=1000", "/v1/events?since=0&limit=1000"}) {
      auto r = get(path);
      EXPECT_EQ(r.status, 200) << path << ": " << r.body;
      out[path] = r.json;
    }
    for (auto& n : out["/v1/nodes"])
      if (n.is_object()) n.erase("last_heartbeat");
    return out;
  }
};

TEST_F(ServerSnapshot, ARestartFromTheLatestSnapshotAnswersAsBefore) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("a-1")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("a-2", "a", 2)).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("b-1", "b")).status, 201);
  ASSERT_EQ(post("/v1/jobs/a-1/cancel").status, 200);
  ASSERT_EQ(post("/v1/jobs", job("a-3")).status, 201);
  const auto before = seen();
  ASSERT_TRUE(before["jobs"].is_array());
  ASSERT_EQ(before["jobs"].size(), 4u);

  // Snapshots are written off the writer thread, one at a time; one that was due while another was being written
  // follows at the writer's next tick.
  const uint64_t last = journal_->records().back().seq;
  ASSERT_TRUE(eventually([&] {
    auto s = journal_->latest_snapshot();
    return !server_->stats().snapshot_writing && s.ok() && s->has_value() && (*s)->seq + options_.snapshot_every_records >= last;
  })) << "no snapshot within " << options_.snapshot_every_records << " records of the journal's end was written";
  auto snap = journal_->latest_snapshot();
  ASSERT_TRUE(snap.ok() && snap->has_value()) << "no snapshot was written";
  EXPECT_GT((*snap)->seq, 0u);
  EXPECT_LE((*snap)->seq, last);
  EXPECT_GE((*snap)->seq + options_.snapshot_every_records, last) << "snapshots fell behind the journal";

  restart();
  EXPECT_EQ(seen(), before);
  // The same state from the whole journal.
  options_.use_snapshots = false;
  restart();
  EXPECT_EQ(seen(), before);
}

TEST_F(ServerSnapshot, ADamagedSnapshotStopsStartUpNamingIt) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("a-1")).status, 201);
  stop();
  const uint64_t last = journal_->records().back().seq;
  ASSERT_TRUE(journal_->put_snapshot(last, "{\"format\": 1, \"last_seq\": " + std::to_string(last) + "}").ok());
  auto s = Server::open(options_, std::make_unique<SharedStore>(journal_));
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto started = (*s)->start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().message.find("snapshot at journal record " + std::to_string(last) + " is malformed"), std::string::npos)
      << started.error().message;
  EXPECT_NE(started.error().message.find("--no-snapshots"), std::string::npos) << started.error().message;
  s->reset();
  options_.use_snapshots = false;
  start();
  auto r = get("/v1/jobs/a-1");
  EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace allot::server::test
