// Waiting for locality in the server (docs/scheduling.md, "Waiting for locality"): the server runs the same core
// as the simulator, journals when a job's locality wait began (a `locality_wait` record), and a restarted server
// counts the wait from that same time.
#include "server_test_fixture.h"

namespace allot::server::test::server_locality_wait_test {
namespace {

using nlohmann::json;
// Two layer-3 domains of two 1-GPU nodes (x: n1, n2; y: n3, n4) with n2 and n4 cordoned: a 2-node job with a
// preferred layer-3 request could run now only spread over n1 and n3, while one domain, empty, could hold it.
class ServerLocalityWait : public ServerTest {
 protected:
  void two_domains(const std::string& policy) {
    auto r = post("/v1/apply", R"({"policy": )" + policy + R"(,
                                   "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 4}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    r = post("/v1/nodes", R"([{"name": "n[1-2]", "instance_type": "ml.g5.8xlarge", "labels": {"network-node-layer-3": "x"}},
                              {"name": "n[3-4]", "instance_type": "ml.g5.8xlarge", "labels": {"network-node-layer-3": "y"}}])");
    ASSERT_EQ(r.status, 201) << r.body;
    for (const char* n : {"n2", "n4"}) ASSERT_EQ(post(std::string("/v1/nodes/") + n + "/cordon").status, 200);
  }
};

json wide() {
  return {{"name", "wide"},          {"team", "a"},
          {"replicas", 2},           {"per_replica", {{"accelerators", 1}}},
          {"command", "sleep 1"},    {"topology", {{"preferred", "network-node-layer-3"}}}};
}

TEST_F(ServerLocalityWait, ARestartKeepsWhenTheWaitBegan) {
  two_domains(R"({"locality_wait": 600})");
  const int64_t t0 = now_ms_.load() / 1000;
  const std::string until = "until t=" + std::to_string(t0 + 600) + " (locality_wait 600 s)";
  ASSERT_EQ(post("/v1/jobs", wide()).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/wide").json.value("reason_code", "") == "locality"; }))
      << get("/v1/jobs/wide").body;
  EXPECT_NE(get("/v1/jobs/wide").json.value("reason", "").find(until), std::string::npos) << get("/v1/jobs/wide").body;
  // The pass that held it journaled when its wait began, once.
  int records = 0;
  for (const store::Record& r : journal_->records())
    if (const auto* w = std::get_if<store::LocalityWaitBegan>(&r.op)) {
      EXPECT_EQ(w->job, "wide");
      EXPECT_EQ(r.at, t0);
      ++records;
    }
  EXPECT_EQ(records, 1);

  // 100 s later the server dies and comes back: the wait still ends at t0 + 600, not 600 s after the restart.
  advance(std::chrono::seconds(100));
  restart();
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/wide").json.value("reason_code", "") == "locality"; }));
  EXPECT_NE(get("/v1/jobs/wide").json.value("reason", "").find(until), std::string::npos) << get("/v1/jobs/wide").body;
  advance(std::chrono::seconds(499));
  EXPECT_EQ(get("/v1/jobs/wide").json.value("state", ""), "Pending");
  advance(std::chrono::seconds(1));
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/wide").json.value("state", "") == "Running"; }))
      << get("/v1/jobs/wide").body;
  int after = 0;
  for (const store::Record& r : journal_->records()) after += std::holds_alternative<store::LocalityWaitBegan>(r.op);
  EXPECT_EQ(after, 1) << "the restarted server began no second wait";
}

TEST_F(ServerLocalityWait, WithoutAWaitNothingIsJournaled) {
  two_domains("{}");
  ASSERT_EQ(post("/v1/jobs", wide()).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/wide").json.value("state", "") == "Running"; }));
  for (const store::Record& rec : journal_->records()) EXPECT_FALSE(std::holds_alternative<store::LocalityWaitBegan>(rec.op));
}

}  // namespace
}  // namespace allot::server::test::server_locality_wait_test
