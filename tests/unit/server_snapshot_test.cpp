// The server writes snapshots as it goes (--snapshot-every) and starts from the latest one: what it answers
// after a restart is what it answered before, with and without the snapshot, and a snapshot that cannot be read or
// restored (torn, changed, of an unknown format, or one the store cannot read) is passed over: the server replays
// the whole journal instead and answers the same.
#include "server/writer/state_snapshot.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_snapshot_test {
namespace {

class ServerSnapshot : public ServerTest {
 protected:
  void SetUp() override {
    options_.snapshot_every_records = 4;
    options_.snapshot_min_records = 0;  // these journals are far below the size where snapshots pay
    ServerTest::SetUp();
  }
  // What readers see, with the fields that a restart may change (timings, heartbeats) left out.
  nlohmann::json seen() {
    nlohmann::json out;
    out["jobs"] = list_jobs();
    for (const char* path : {"/v1/nodes", "/v1/teams", "/v1/tokens", "/v1/audit?limit=1000", "/v1/events?since=0&limit=1000",
                             "/v1/usage?by=team,user,priority,instance_type"}) {
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

// A store whose latest snapshot cannot be read (a part is missing, the database fails the read).
class UnreadableSnapshotStore final : public store::Store {
 public:
  explicit UnreadableSnapshotStore(std::shared_ptr<store::MemStore> mem) : mem_(std::move(mem)) {}
  Status append(const std::vector<store::Record>& batch) override { return mem_->append(batch); }
  Status load_after(uint64_t after, const std::function<Status(const store::Record&)>& fn) override {
    return mem_->load_after(after, fn);
  }
  Status put_snapshot(uint64_t seq, const std::string& body) override { return mem_->put_snapshot(seq, body); }
  Result<std::optional<store::Snapshot>> latest_snapshot() override {
    return Error::internal("the snapshot at journal record 9 is incomplete: part 1 of 3 is missing");
  }
  std::string describe() const override { return "unreadable-snapshot-mem:"; }

 private:
  std::shared_ptr<store::MemStore> mem_;
};

TEST_F(ServerSnapshot, ASnapshotThatCannotBeRestoredIsPassedOverAndTheJournalReplayed) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("a-1")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("b-1", "b")).status, 201);
  ASSERT_EQ(post("/v1/jobs/a-1/cancel").status, 200);
  const auto before = seen();
  options_.snapshot_every_records = 0;  // the damaged snapshot stays the latest while the test looks
  options_.snapshot_interval = std::chrono::milliseconds(0);
  stop();
  const uint64_t last = journal_->records().back().seq;
  ServerState live;
  std::vector<Event> events;
  for (const auto& r : journal_->records()) ASSERT_TRUE(apply(live, r, events).ok()) << r.seq;
  const std::string good = encode_state_snapshot(live, events);
  std::string changed = good;  // a valid-looking change: one job's accelerators, as item 5 of issue 25 did to records
  const size_t at = changed.find("\"accelerators\":1");
  ASSERT_NE(at, std::string::npos);
  changed[at + 15] = '7';
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"a malformed format-1 document", "{\"format\": 1, \"last_seq\": " + std::to_string(last) + "}"},
      {"a torn body (its first half)", good.substr(0, good.size() / 2)},
      {"a changed body", changed},
      {"an unknown format", "allot-snapshot 3 0123\n{}\n"},
      {"the state after another record", encode_state_snapshot(ServerState{}, {})},
  };
  uint64_t refused = 0;
  for (const auto& [what, body] : damaged) {
    SCOPED_TRACE(what);
    // A store writes one snapshot at a position only: each damaged one goes into a fresh copy of the journal.
    auto fresh = std::make_shared<store::MemStore>();
    ASSERT_TRUE(fresh->append(journal_->records()).ok());
    ASSERT_TRUE(fresh->put_snapshot(last, body).ok());
    journal_ = fresh;
    start();
    EXPECT_EQ(server_->stats().snapshots_refused, 1u);
    EXPECT_EQ(seen(), before);
    ++refused;
    stop();
  }
  EXPECT_EQ(refused, damaged.size());
  // A snapshot the store cannot read at all is passed over the same way.
  auto s = Server::open(options_, std::make_unique<UnreadableSnapshotStore>(journal_));
  ASSERT_TRUE(s.ok()) << s.error().message;
  server_ = std::move(*s);
  ASSERT_TRUE(server_->start().ok());
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  client_->set_bearer_token_auth(admin_token_.c_str());
  EXPECT_EQ(server_->stats().snapshots_refused, 1u);
  EXPECT_EQ(seen(), before);
  // An intact snapshot is restored, not passed over.
  auto intact = std::make_shared<store::MemStore>();
  ASSERT_TRUE(intact->append(journal_->records()).ok());
  ASSERT_TRUE(intact->put_snapshot(last, good).ok());
  journal_ = intact;
  restart();
  EXPECT_EQ(server_->stats().snapshots_refused, 0u);
  EXPECT_EQ(seen(), before);
}

}  // namespace
}  // namespace allot::server::test::server_snapshot_test
