// Rank 0's rendezvous port (docs/resiliency.md, "The rendezvous port"): chosen per attempt within --master-ports;
// the agent's check finds a port another process holds; a rank 0 reported not started for its port requeues the
// job without using a retry, and the next attempt gets another port; bad reports are refused.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/rendezvous_port.h"
#include "server/lifecycle/rendezvous_port.h"
#include "server_test_fixture.h"

namespace allot::server::test::rendezvous_port_test {
namespace {

using nlohmann::json;

// A listening socket on a free port of the IPv4 wildcard, as another process's server would hold it.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 1) != 0) return;
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~HeldPort() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(RendezvousPort, TheAgentFindsAPortAnotherProcessHolds) {
  HeldPort held;
  ASSERT_GT(held.port(), 0);
  auto busy = agent::rendezvous_port_free(held.port());
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(busy.error().message.find("MASTER_PORT " + std::to_string(held.port()) + " is in use on this node"), std::string::npos)
      << busy.error().message;
  held.release();
  auto free = agent::rendezvous_port_free(held.port());
  EXPECT_TRUE(free.ok()) << free.error().message;
  EXPECT_TRUE(agent::rendezvous_port_free(0).ok()) << "no port assigned: nothing to check";
}

TEST(RendezvousPort, EachAttemptOfAJobGetsAnotherPortInTheRange) {
  ServerOptions o;
  o.master_port_min = 29500;
  o.master_port_max = 30499;
  const JobId job{7};
  std::set<int> seen;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int p = master_port(o, job, attempt);
    EXPECT_GE(p, 29500);
    EXPECT_LE(p, 30499);
    EXPECT_EQ(p, master_port(o, job, attempt)) << "the same for every rank and every time it is asked";
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 10u);
  const int n = static_cast<int>(job.index());
  EXPECT_EQ(master_port(o, job, 0), 29500 + n);
  EXPECT_EQ(master_port(o, job, 1), 29500 + n + kAttemptStride);
  EXPECT_EQ(master_port(o, job, 11), 29500 + (n + 11 * kAttemptStride) % 1000) << "modulo the range";
  o.master_port_max = o.master_port_min;
  EXPECT_EQ(master_port(o, job, 3), 29500) << "a range of one port";
}

class RendezvousPortServer : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 2}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (int i = 1; i <= 2; ++i) {
      auto reg = post("/v1/agents/register", json{{"name", "g" + std::to_string(i)},
                                                  {"instance_type", "g5.12xlarge"},
                                                  {"address", "10.0.0." + std::to_string(i)},
                                                  {"labels", {{"network-node-layer-3", "x"}}},
                                                  {"inventory", {{"gpus", 4}}}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
  }
  Response heartbeat(const std::string& node, json replicas = json::array()) {
    return post("/v1/agents/" + node + "/heartbeat", json{{"replicas", replicas}});
  }
  // Rank 0's assignment of `job` in its node's run list, and that node.
  std::pair<json, std::string> rank0(const std::string& job) {
    for (const char* n : {"g1", "g2"}) {
      const json run = heartbeat(n).json["run"];
      for (const auto& a : run)
        if (a["job"] == job && a["rank"] == 0) return {a, n};
    }
    return {json(), ""};
  }
  json not_started(const std::string& job, int attempt, int port) {
    return json::array({{{"job", job}, {"rank", 0}, {"state", "not_started"}, {"cause", "port_in_use"}, {"port", port}, {"attempt", attempt}}});
  }
};

// A port clash is the node's: no retry is used (max_retries 0 would fail the job otherwise), the job runs again at
// once with another port, and its history says why.
TEST_F(RendezvousPortServer, APortInUseRequeuesTheJobWithAnotherPortAndNoRetry) {
  auto j = post("/v1/jobs", json{{"name", "train"}, {"team", "a"}, {"replicas", 2}, {"max_retries", 0},
                                 {"per_replica", {{"accelerators", 4}}}, {"command", {"python", "train.py"}}});
  ASSERT_EQ(j.status, 201) << j.body;
  // Admitted by the submission's batch's pass, or by the next one when a slow pass held it back (writer.cpp,
  // kCheapPass: seen on a loaded CI machine).
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/train").json["state"] == "Running"; })) << get("/v1/jobs/train").body;
  auto [first, node] = rank0("train");
  ASSERT_FALSE(node.empty()) << heartbeat("g1").body << heartbeat("g2").body;
  const int port = first["master_port"];
  ASSERT_EQ(first["attempt"], 0);
  auto hb = heartbeat(node, not_started("train", 0, port));
  ASSERT_EQ(hb.status, 200) << hb.body;
  EXPECT_TRUE(eventually([&] { return get("/v1/jobs/train").json["state"] == "Running"; })) << "requeued and admitted again";
  auto after = get("/v1/jobs/train").json;
  EXPECT_EQ(after["restarts"], 0) << after.dump();
  EXPECT_EQ(after["state"], "Running") << "requeued and admitted again: " << after.dump();
  EXPECT_NE(after["history"].dump().find("MASTER_PORT " + std::to_string(port) + " was in use on node " + node), std::string::npos)
      << after.dump();
  // The new run is handed out once both nodes said nothing of the old one runs (the start gate).
  heartbeat("g1");
  heartbeat("g2");
  auto [second, node2] = rank0("train");
  ASSERT_FALSE(node2.empty());
  EXPECT_EQ(second["attempt"], 1);
  EXPECT_NE(second["master_port"], port);
  // A late copy of the report changes nothing now (another attempt runs).
  ASSERT_EQ(heartbeat(node, not_started("train", 0, port)).status, 200);
  EXPECT_EQ(get("/v1/jobs/train").json["state"], "Running");
  // Replay gives the same state: the requeue is in the journal, and the run is the second attempt.
  restart();
  auto replayed = get("/v1/jobs/train").json;
  EXPECT_EQ(replayed["state"], "Running");
  EXPECT_EQ(replayed["restarts"], 0);
  heartbeat("g1");
  heartbeat("g2");
  EXPECT_EQ(rank0("train").first["attempt"], 1);
}

// With --master-ports of one port the next attempt could not get another: the run fails as a start failure does.
TEST_F(RendezvousPortServer, WithASinglePortTheClashUsesARetry) {
  options_.master_port_min = options_.master_port_max = 29600;
  restart();
  auto j = post("/v1/jobs", json{{"name", "one"}, {"team", "a"}, {"replicas", 1}, {"max_retries", 0},
                                 {"per_replica", {{"accelerators", 4}}}, {"command", {"python", "train.py"}}});
  ASSERT_EQ(j.status, 201) << j.body;
  auto [a, node] = rank0("one");
  ASSERT_EQ(a["master_port"], 29600);
  ASSERT_EQ(heartbeat(node, not_started("one", 0, 29600)).status, 200);
  auto after = get("/v1/jobs/one").json;
  EXPECT_EQ(after["state"], "Failed") << after.dump();
  EXPECT_NE(after["history"].dump().find("has this one port"), std::string::npos) << after.dump();
}

TEST_F(RendezvousPortServer, ABadNotStartedReportIsRefused) {
  const json bad[] = {
      json::array({{{"job", "x"}, {"rank", 0}, {"state", "not_started"}}}),
      json::array({{{"job", "x"}, {"rank", 0}, {"state", "not_started"}, {"cause", "disk_full"}, {"port", 29500}}}),
      json::array({{{"job", "x"}, {"rank", 0}, {"state", "not_started"}, {"cause", "port_in_use"}, {"port", 0}}}),
      json::array({{{"job", "x"}, {"rank", 0}, {"state", "not_started"}, {"cause", "port_in_use"}, {"port", "29500"}}}),
  };
  for (const auto& b : bad) {
    auto r = heartbeat("g1", b);
    EXPECT_EQ(r.status, 400) << b.dump() << " -> " << r.body;
  }
  EXPECT_NE(heartbeat("g1", bad[1]).body.find("must be port_in_use"), std::string::npos);
}

}  // namespace
}  // namespace allot::server::test::rendezvous_port_test
