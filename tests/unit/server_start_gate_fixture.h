#pragma once
// A server with team a (two ml.g5.12xlarge nodes, g1 and g2, registered by their agents) for the tests of stops
// before starts (server/lifecycle/start_gate.h), and a heartbeat helper that checks the answer is 200.
#include "server_test_fixture.h"

namespace allot::server::test {

class StartGateTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 2}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const char* n : {"g1", "g2"}) {
      auto reg = post("/v1/agents/register", nlohmann::json{{"name", n}, {"instance_type", "g5.12xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
  }
  nlohmann::json heartbeat(const std::string& node, nlohmann::json replicas = nlohmann::json::array()) {
    auto r = post("/v1/agents/" + node + "/heartbeat", nlohmann::json{{"replicas", replicas}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json;
  }
};

}  // namespace allot::server::test
