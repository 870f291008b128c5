// Overload must never cost a node its jobs (server/http/http_server.h, server/lifecycle/node_silence.h, docs/deployment.md
// "Overload"): a flood of idle anonymous connections leaves agents' heartbeats answered (per-address limits, seats
// reserved for agents), connections that send no complete request head are closed, and heartbeats the server
// refused itself are never counted as missed. Every wait is bounded; nothing asserts how long something took.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "server_test_fixture.h"

namespace allot::server::test::server_overload_test {
namespace {

using nlohmann::json;

// A connection to the server from `source` (127.0.0.2: another client address than the tests' own), or -1.
int connect_from(const char* source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed (or answered) the connection within `wait`.
bool closed_within(int fd, std::chrono::milliseconds wait) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
  char c[512];
  return ::recv(fd, c, sizeof c, MSG_DONTWAIT) >= 0;
}

class ServerOverload : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();  // sets the fixture's limits, which these tests narrow
    stop();
    options_.max_connections = 8;
    options_.agent_connections = 4;
    start();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 1}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    auto reg = post("/v1/agents/register", json{{"name", "g1"}, {"instance_type", "ml.g5.12xlarge"},
                                                {"labels", {{"network-node-layer-3", "x"}}}, {"heartbeat_interval_ms", 500}});
    ASSERT_EQ(reg.status, 200) << reg.body;
  }
  void TearDown() override {
    for (int fd : flood_) ::close(fd);
    ServerTest::TearDown();
  }
  // `n` connections from 127.0.0.2 that send nothing.
  void flood(int n) {
    for (int i = 0; i < n; ++i)
      if (int fd = connect_from("127.0.0.2", server_->port()); fd >= 0) flood_.push_back(fd);
    ASSERT_EQ(flood_.size(), static_cast<size_t>(n));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server has seated (or refused) them
  }
  int beat() { return post("/v1/agents/g1/heartbeat", R"({"replicas": []})").status; }
  std::vector<int> flood_;
};

TEST_F(ServerOverload, AFloodFromOneAddressTakesAtMostItsShareAndAgentsAreAnswered) {
  // Five times the connection limit, idle, from one address: it holds half the seats (--max-connections-per-address)
  // and the agents' seats; the rest are refused at once.
  flood(40);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(beat(), 200);
  EXPECT_EQ(get("/v1/health").status, 200);
  EXPECT_EQ(get("/v1/nodes/g1").json["health"], "Schedulable");
}

TEST_F(ServerOverload, PastEveryGeneralSeatOnlyAgentsAreServed) {
  stop();
  options_.max_connections_per_address = 8;  // the flood may take every general seat
  options_.head_timeout = std::chrono::milliseconds(30000);  // and keep them for the whole test
  start();
  flood(8);
  // The tests' own address finds no general seat: a reserved one serves the heartbeat and refuses the rest.
  EXPECT_EQ(beat(), 200);
  httplib::Client other("127.0.0.1", server_->port());
  other.set_bearer_token_auth(admin_token_.c_str());
  auto refused = wrap(other.Get("/v1/health"));
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("--agent-connections"), std::string::npos) << refused.body;
  EXPECT_EQ(beat(), 200);
}

TEST_F(ServerOverload, ConnectionsWithoutACompleteHeadAreClosed) {
  stop();
  options_.head_timeout = std::chrono::milliseconds(500);
  options_.keep_alive_timeout = std::chrono::milliseconds(30000);
  options_.read_timeout = std::chrono::milliseconds(30000);
  start();
  int idle = connect_from("127.0.0.2", server_->port());
  int trickle = connect_from("127.0.0.2", server_->port());
  ASSERT_GE(idle, 0);
  ASSERT_GE(trickle, 0);
  bool trickle_closed = false;
  const std::string head = "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  for (size_t i = 0; i < head.size() && !trickle_closed; ++i) {
    (void)::send(trickle, head.data() + i, 1, MSG_NOSIGNAL);
    trickle_closed = closed_within(trickle, std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(trickle_closed) << "a head trickled a byte every 100 ms was kept past --head-timeout";
  EXPECT_TRUE(closed_within(idle, std::chrono::milliseconds(10000))) << "a connection that sent nothing was kept";
  ::close(idle);
  ::close(trickle);
  EXPECT_EQ(beat(), 200);
}

TEST_F(ServerOverload, HeartbeatsTheServerRefusedAreNotCountedAsMissed) {
  stop();
  options_.max_connections = 2;
  options_.max_connections_per_address = 2;
  options_.agent_connections = 0;
  start();
  ASSERT_EQ(beat(), 200);
  // Every seat taken: every further connection (g1's heartbeats among them) is refused while the clock passes
  // the 2 s heartbeat timeout.
  flood(2);
  std::atomic<bool> stop_knocking{false};
  std::thread knock([&] {
    while (!stop_knocking) {
      if (int fd = connect_from("127.0.0.2", server_->port()); fd >= 0) {
        (void)closed_within(fd, std::chrono::milliseconds(50));
        ::close(fd);
      }
    }
  });
  for (int step = 0; step < 6; ++step) {
    // At least one refusal at each time the clock shows, whatever the knocking thread managed on a loaded machine:
    // the server notes the refusal before it closes the connection.
    if (int fd = connect_from("127.0.0.2", server_->port()); fd >= 0) {
      EXPECT_TRUE(closed_within(fd, std::chrono::milliseconds(5000))) << "a connection past every seat was kept";
      ::close(fd);
    }
    advance(std::chrono::milliseconds(500));
  }
  stop_knocking = true;
  knock.join();
  for (int fd : flood_) ::close(fd);
  flood_.clear();
  std::string health;
  ASSERT_TRUE(eventually([&] {
    auto r = get("/v1/nodes/g1");
    health = r.json.is_object() ? r.json.value("health", "") : "";
    return r.status == 200;
  }));
  EXPECT_EQ(health, "Schedulable") << "a node whose heartbeats the server itself refused was timed out";
  auto events = get("/v1/events?since=0").json.dump();
  EXPECT_NE(events.find("refused connections at its limit"), std::string::npos) << events;
}

}  // namespace
}  // namespace allot::server::test::server_overload_test
