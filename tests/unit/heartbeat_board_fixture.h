#pragma once
// The fixture of the heartbeat board tests (server_heartbeat_board_test.cpp, server_heartbeat_crossing_test.cpp):
// a server whose writer a test can hold in a batch (writer_gate.h), team a with two ml.g5.12xlarge nodes g1 and g2
// that joined through agents (so both time out when silent), and helpers to run whole-node jobs and heartbeat.
#include <atomic>
#include <string>
#include <thread>

#include "server_test_fixture.h"
#include "writer_gate.h"

namespace allot::server::test {

class ServerHeartbeatBoard : public ServerTest {
 protected:
  void SetUp() override {
    options_.before_batch = [this] {
      writer_thread_ = std::this_thread::get_id();
      gate_.pass();
    };
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 2}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (int i = 1; i <= 2; ++i) {
      auto reg = post("/v1/agents/register", nlohmann::json{{"name", "g" + std::to_string(i)},
                                                            {"instance_type", "ml.g5.12xlarge"},
                                                            {"address", "10.0.0." + std::to_string(i)},
                                                            {"labels", {{"network-node-layer-3", "x"}}}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
  }
  void TearDown() override {
    release();
    ServerTest::TearDown();
  }
  void hold() { gate_.hold(); }
  void release() { gate_.release(); }
  void wait_held() { gate_.wait_held(); }

  Response heartbeat(const std::string& node, nlohmann::json body = nlohmann::json{{"replicas", nlohmann::json::array()}}) {
    return post("/v1/agents/" + node + "/heartbeat", body.dump());
  }
  uint64_t off_writer() { return server_->stats().heartbeats_off_writer; }
  // Submits a one-replica job of 4 GPUs (a whole node), restarted after a node failure up to `max_retries` times,
  // and returns the node it runs on.
  std::string run_job(const std::string& name, int max_retries = 0) {
    nlohmann::json body{{"name", name}, {"team", "a"}, {"replicas", 1}, {"per_replica", {{"accelerators", 4}}},
                        {"command", {"python", "train.py"}}};
    if (max_retries > 0) body["max_retries"] = max_retries;
    auto r = post("/v1/jobs", body);
    EXPECT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.json["state"], "Running") << r.body;
    return r.json["placement"][0]["replicas"][0]["node"].get<std::string>();
  }
  static nlohmann::json running(const std::string& job, int attempt = 0) {
    return nlohmann::json{{"replicas", {{{"job", job}, {"rank", 0}, {"state", "running"}, {"attempt", attempt}}}}};
  }
  // Waits (bounded) until the writer has run a batch after now, so the board holds what the last change published.
  void settle() {
    const auto batches = server_->stats().batches;
    eventually([&] { return server_->stats().batches > batches + 1; });
  }

  WriterGate gate_;
  std::atomic<std::thread::id> writer_thread_;  // the writer's thread, once it has run a batch with commands
};

}  // namespace allot::server::test
