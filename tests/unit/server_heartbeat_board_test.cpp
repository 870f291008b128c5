// Heartbeats off the write path (heartbeat_board.h): a heartbeat that changes nothing is answered while the writer
// is held busy in a batch, with the answer the writer would give; one that reports a change still goes through
// the writer; the failure timeout, the node's own credential and the audit trail work as before.
#include <future>
#include <mutex>

#include "heartbeat_board_fixture.h"

namespace allot::server::test::server_heartbeat_board_test {
namespace {

using nlohmann::json;

TEST_F(ServerHeartbeatBoard, AHeartbeatThatChangesNothingIsAnsweredWhileTheWriterIsHeldInABatch) {
  const std::string node = run_job("train");
  auto before = heartbeat(node, running("train"));
  ASSERT_EQ(before.status, 200) << before.body;

  hold();
  auto submitted = std::async(std::launch::async, [this] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_bearer_token_auth(admin_token_.c_str());
    c.set_read_timeout(30, 0);
    auto r = c.Post("/v1/jobs", json{{"name", "second"}, {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", "x"}}.dump(),
                    "application/json");
    return r ? r->status : 0;
  });
  wait_held();
  // The writer is inside the submission's batch: these heartbeats are answered without it.
  const uint64_t off = off_writer();
  auto during = heartbeat(node, running("train"));
  ASSERT_EQ(during.status, 200) << during.body;
  EXPECT_EQ(during.json, before.json) << "the same answer as before the batch: nothing answered has changed";
  ASSERT_EQ(during.json["run"].size(), 1u) << during.body;
  EXPECT_EQ(during.json["run"][0]["job"], "train");
  EXPECT_EQ(during.json["stop"], json::array());
  // A replica the node does not run any more is told to stop, off the writer too.
  auto stale = heartbeat(node, json{{"replicas", {{{"job", "gone"}, {"rank", 0}, {"state", "running"}}}}});
  ASSERT_EQ(stale.status, 200) << stale.body;
  EXPECT_EQ(stale.json["stop"], json::array({{{"job", "gone"}, {"rank", 0}}})) << stale.body;
  EXPECT_EQ(off_writer(), off + 2);
  EXPECT_EQ(submitted.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the writer was released before the heartbeats were answered";
  release();
  EXPECT_EQ(submitted.get(), 201);
}

TEST_F(ServerHeartbeatBoard, AHeartbeatThatReportsAChangeGoesThroughTheWriter) {
  const std::string node = run_job("train");
  ASSERT_EQ(heartbeat(node, running("train")).status, 200);
  const uint64_t off = off_writer();
  // The CPUs a replica got are recorded (the writer's); the same report again changes nothing (the board's).
  json cpus = running("train");
  cpus["replicas"][0]["cpus"] = "0-3";
  auto first = heartbeat(node, cpus);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(off_writer(), off);
  settle();
  auto again = heartbeat(node, cpus);
  EXPECT_EQ(again.json, first.json);
  EXPECT_EQ(off_writer(), off + 1);
  // A health report: new (the writer's), then the same (the board's).
  json health = running("train");
  health["health"] = {{"checks", {{{"name", "gpu"}, {"status", "passed"}, {"on_failure", "reboot"}, {"at_ms", 5}}}},
                      {"configured", 1}, {"boot", 0}, {"deep_check", {{"status", "none"}, {"detail", ""}}}};
  ASSERT_EQ(heartbeat(node, health).status, 200);
  EXPECT_EQ(off_writer(), off + 1);
  settle();
  ASSERT_EQ(heartbeat(node, health).status, 200);
  EXPECT_EQ(off_writer(), off + 2);
  // An exit ends the run: the writer's, and the run list is empty afterwards.
  auto exited = heartbeat(node, json{{"replicas", {{{"job", "train"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 0}, {"attempt", 0}}}}});
  ASSERT_EQ(exited.status, 200) << exited.body;
  EXPECT_EQ(off_writer(), off + 2);
  EXPECT_EQ(get("/v1/jobs/train").json["state"], "Succeeded");
  auto after = heartbeat(node);
  EXPECT_EQ(after.json["run"], json::array()) << after.body;
  EXPECT_EQ(off_writer(), off + 3);
}

TEST_F(ServerHeartbeatBoard, ANodeHeardOnlyThroughTheBoardStaysAndASilentOneTimesOut) {
  const std::string busy = run_job("one");
  const std::string quiet = busy == "g1" ? "g2" : "g1";
  ASSERT_EQ(run_job("two"), quiet);
  settle();
  // Both timeouts (2 s) pass; only `busy` heartbeats, every 500 ms, each answered off the writer.
  const uint64_t off = off_writer();
  for (int i = 0; i < 6; ++i) {
    advance(std::chrono::milliseconds(500));
    ASSERT_EQ(heartbeat(busy, running("one")).status, 200);
  }
  EXPECT_EQ(off_writer(), off + 6);
  eventually([&] { return get("/v1/nodes/" + quiet).json["health"] == "UnschedulablePendingReboot"; });
  EXPECT_EQ(get("/v1/nodes/" + busy).json["health"], "Schedulable") << "heartbeats answered by the board count";
  EXPECT_EQ(get("/v1/jobs/one").json["state"], "Running");
  // The silent node's next heartbeat is the writer's: it makes the node Schedulable again, and the job that was
  // restarted is not in its run list any more but in its stop list.
  auto back = heartbeat(quiet, running("two"));
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(off_writer(), off + 6);
  EXPECT_EQ(back.json["stop"], json::array({{{"job", "two"}, {"rank", 0}}})) << back.body;
  EXPECT_EQ(get("/v1/nodes/" + quiet).json["health"], "Schedulable");
}

TEST_F(ServerHeartbeatBoard, HeartbeatsLeaveNoAuditEntryNorJournalRecord) {
  const std::string node = run_job("train");
  settle();
  const uint64_t records = server_->stats().records;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(heartbeat(node, running("train")).status, 200);
  // A heartbeat through the writer (a new CPU list) is not audited either.
  json cpus = running("train");
  cpus["replicas"][0]["cpus"] = "0-3";
  ASSERT_EQ(heartbeat(node, cpus).status, 200);
  settle();
  EXPECT_EQ(server_->stats().records, records) << "a heartbeat that ends no run journals nothing";
  auto audit = get("/v1/audit");
  ASSERT_EQ(audit.status, 200) << audit.body;
  for (const auto& e : audit.json) EXPECT_EQ(e["action"].get<std::string>().find("heartbeat"), std::string::npos) << e.dump();
}

TEST_F(ServerHeartbeatBoard, ANodeCredentialIsRefusedForAnotherNode) {
  const std::string node = run_job("train");
  const std::string other = node == "g1" ? "g2" : "g1";
  ASSERT_EQ(heartbeat(node, running("train")).status, 200);
  ASSERT_EQ(heartbeat(other).status, 200);  // both have their credentials and board slots
  httplib::Client c("127.0.0.1", server_->port());
  c.set_bearer_token_auth(credentials_[other].c_str());
  auto r = c.Post(("/v1/agents/" + node + "/heartbeat").c_str(), running("train").dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_EQ(r->body.find("train"), std::string::npos) << "another node's assignments must not leak: " << r->body;
}

}  // namespace
}  // namespace allot::server::test::server_heartbeat_board_test
