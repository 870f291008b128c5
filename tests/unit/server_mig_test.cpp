// MIG nodes on a live server (docs/mig.md): an agent registers as a MIG type, jobs of that type get its devices
// and whole-GPU jobs never do, and a node whose MIG layout changes across an agent restart leaves and joins again,
// its jobs suspended with the reason and placed again.
#include <set>

#include "server_test_fixture.h"

namespace allot::server::test::server_mig_test {
namespace {

using nlohmann::json;

constexpr const char* kMig1g = "ml.p4de.24xlarge.mig-1g.10gb";
constexpr const char* kMig3g = "ml.p4de.24xlarge.mig-3g.40gb";

class ServerMig : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", json{{"teams", {{{"name", "a"},
                                                {"allocation", {{{"instance_type", kMig1g}, {"accelerators", 56}},
                                                                {{"instance_type", kMig3g}, {"accelerators", 16}},
                                                                {{"instance_type", "ml.p4de.24xlarge"}, {"accelerators", 8}}}}}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    enroll("mig-1", kMig1g, "10.0.0.1");
    enroll("whole-1", "ml.p4de.24xlarge", "10.0.0.2");
  }
  Response enroll(const std::string& name, const std::string& type, const std::string& address) {
    auto reg = post("/v1/agents/register", json{{"name", name}, {"instance_type", type}, {"address", address},
                                                {"labels", {{"network-node-layer-3", "x"}}}});
    EXPECT_EQ(reg.status, 200) << reg.body;
    return reg;
  }
  json submit(const std::string& name, int replicas, int devices, const std::string& type = "") {
    json j = {{"name", name}, {"team", "a"}, {"replicas", replicas}, {"per_replica", {{"accelerators", devices}}},
              {"command", {"sleep", "60"}}};
    if (!type.empty()) j["instance_type"] = type;
    auto r = post("/v1/jobs", j);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json;
  }
  json run_list(const std::string& node) {
    auto r = post("/v1/agents/" + node + "/heartbeat", json{{"replicas", json::array()}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json["run"];
  }
  json job(const std::string& name) { return get("/v1/jobs/" + name).json; }
};

TEST_F(ServerMig, MigJobsGetDevicesOfTheMigNodeAndWholeGpuJobsNever) {
  auto node = get("/v1/nodes/mig-1");
  ASSERT_EQ(node.status, 200);
  EXPECT_EQ(node.json["instance_type"], kMig1g) << node.body;
  // Eight whole GPUs fill whole-1; the ninth waits although 56 MIG devices are idle.
  EXPECT_EQ(submit("fill", 1, 8)["state"], "Running");
  EXPECT_EQ(submit("ninth", 1, 1)["state"], "Pending");
  auto slices = submit("slices", 2, 3, kMig1g);
  ASSERT_EQ(slices["state"], "Running") << slices.dump();
  auto runs = run_list("mig-1");
  ASSERT_EQ(runs.size(), 2u) << runs.dump();
  std::set<int> devices;
  for (const auto& r : runs)
    for (int d : r["accelerators"]) devices.insert(d);
  EXPECT_EQ(devices.size(), 6u);
  for (int d : devices) EXPECT_LT(d, 56);
  for (const auto& r : run_list("whole-1")) EXPECT_NE(r["job"], "slices");
  // Quotas and usage per MIG type, where quotas show.
  auto metrics = get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find(R"(allot_quota{team="a",instance_type="ml.p4de.24xlarge.mig-1g.10gb",resource="accelerators"} 56)"),
            std::string::npos);
  EXPECT_NE(metrics.body.find(R"(allot_usage{team="a",instance_type="ml.p4de.24xlarge.mig-1g.10gb",resource="accelerators"} 6)"),
            std::string::npos);
}

TEST_F(ServerMig, ALayoutChangedAcrossARestartMovesTheNodeAndSuspendsItsJobsWithTheReason) {
  ASSERT_EQ(submit("slices", 1, 1, kMig1g)["state"], "Running");
  // The agent comes back with the GPUs partitioned in 3g.40gb.
  auto again = enroll("mig-1", kMig3g, "10.0.0.1");
  EXPECT_EQ(again.json["instance_type"], kMig3g) << again.body;
  EXPECT_EQ(get("/v1/nodes/mig-1").json["instance_type"], kMig3g);
  auto j = job("slices");
  EXPECT_NE(j["state"], "Running") << j.dump();
  const std::string reason = j["reason"];
  // No node has 1g.10gb devices now: it waits. Its history says why it stopped.
  EXPECT_NE(j.dump().find("its MIG layout changed from ml.p4de.24xlarge.mig-1g.10gb to ml.p4de.24xlarge.mig-3g.40gb"),
            std::string::npos) << j.dump();
  // A job of the new profile runs there.
  EXPECT_EQ(submit("big", 1, 2, kMig3g)["state"], "Running");
  // The journal keeps the cause: after a restart the reasons are the same.
  const std::string before = job("slices").dump();
  restart();
  EXPECT_EQ(job("slices").dump(), before);
  // An unrelated type is still refused.
  auto other = post("/v1/agents/register", json{{"name", "mig-1"}, {"instance_type", "ml.g5.8xlarge"}, {"address", "10.0.0.1"}});
  EXPECT_EQ(other.status, 409) << other.body;
}

}  // namespace
}  // namespace allot::server::test::server_mig_test
