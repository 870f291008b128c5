// Threads serve requests, not connections (http_server.h, docs/architecture.md "Connections and threads"): an
// idle keep-alive connection and an agent's watch waiting for work are parked without a thread, so a server with 4
// request threads keeps hundreds of them open and still answers everyone else. A parked watch is woken by its
// node's new work, answers at its deadline, and leaves nothing behind when its client goes away; a stopping server
// closes every parked connection. Every wait is bounded; nothing asserts how long something took.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <future>

#include "heartbeat_board_fixture.h"

namespace allot::server::test::server_parking_test {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One HTTP answer read from `fd` (by its Content-Length) before `until`: its status (0: none, the connection
// ended or nothing came) and body.
struct Answer {
  int status = 0;
  std::string body;
};
Answer read_answer(int fd, SteadyClock::time_point until) {
  std::string in;
  char buf[8192];
  while (SteadyClock::now() < until) {
    if (const size_t head = in.find("\r\n\r\n"); head != std::string::npos) {
      const size_t at = in.find("Content-Length: ");
      const size_t length = at != std::string::npos && at < head ? std::stoul(in.substr(at + 16)) : 0;
      if (in.size() >= head + 4 + length) return Answer{std::stoi(in.substr(9, 3)), in.substr(head + 4, length)};
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return {};
    if (n > 0) in.append(buf, static_cast<size_t>(n));
  }
  return {};
}

bool send_all(int fd, const std::string& s) { return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()); }

// Whether the server ended the connection (end of file or reset) before `until`.
bool ended_by_server(int fd, SteadyClock::time_point until) {
  while (SteadyClock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

SteadyClock::time_point far() { return SteadyClock::now() + std::chrono::seconds(30); }

class ServerParking : public ServerHeartbeatBoard {
 protected:
  void SetUp() override {
    ServerHeartbeatBoard::SetUp();
    stop();
    options_.http_threads = 4;
    options_.max_connections = 400;
    options_.max_connections_per_address = 400;  // every client of the test comes from 127.0.0.1
    options_.max_watches = 300;
    options_.keep_alive_timeout = std::chrono::milliseconds(60000);  // idle connections stay for the whole test
    start();
  }
  void TearDown() override {
    for (int fd : open_) ::close(fd);
    ServerHeartbeatBoard::TearDown();
  }
  int open() {
    const int fd = connect_to(server_->port());
    if (fd >= 0) open_.push_back(fd);
    return fd;
  }
  void close_fd(int fd) {
    ::close(fd);
    open_.erase(std::find(open_.begin(), open_.end(), fd));
  }
  // The node's credential (made by a heartbeat, server_test_fixture.h) and a watch request with it.
  std::string watch_request(const std::string& node, const std::string& known, int wait_ms) {
    if (!credentials_.count(node)) heartbeat(node);
    return "GET /v1/agents/" + node + "/changes?wait_ms=" + std::to_string(wait_ms) + "&known=" + known +
           " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + credentials_[node] + "\r\n\r\n";
  }
  std::string tag_of(const std::string& node) { return heartbeat(node).json["run_tag"].get<std::string>(); }
  std::vector<int> open_;
};

constexpr const char* kHealth = "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";

TEST_F(ServerParking, TwoHundredIdleKeepAliveConnectionsHoldNoThreadAndANewClientIsAnswered) {
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = open();
    ASSERT_GE(fd, 0) << i;
    ASSERT_TRUE(send_all(fd, kHealth));
    ASSERT_EQ(read_answer(fd, far()).status, 200) << "connection " << i;
    idle.push_back(fd);
  }
  ASSERT_TRUE(eventually([&] { return server_->connections_parked() >= 200; }));
  // 4 request threads, 200 open connections: a new client is answered, and so is every idle one again.
  EXPECT_EQ(get("/v1/health").status, 200);
  EXPECT_EQ(heartbeat("g1").status, 200);
  for (int fd : idle) {
    ASSERT_TRUE(send_all(fd, kHealth));
    EXPECT_EQ(read_answer(fd, far()).status, 200);
  }
}

// A connection parks again after every request: its first park adds its socket to the parking's epoll set, the
// request that arrives disarms it (one-shot) and each later park re-arms it; a watch's wake takes it out of the set
// and the next park adds it again. Every request on it is answered, and it is parked between them.
TEST_F(ServerParking, OneConnectionParkedAgainAndAgainServesEveryRequest) {
  const int fd = open();
  ASSERT_GE(fd, 0);
  auto health_then_parked = [&](int round) {
    ASSERT_TRUE(send_all(fd, kHealth));
    ASSERT_EQ(read_answer(fd, far()).status, 200) << "round " << round;
    ASSERT_TRUE(eventually([&] { return server_->connections_parked() == 1; })) << "round " << round;
  };
  for (int round = 0; round < 20; ++round) health_then_parked(round);
  const std::string tag = tag_of("g1");
  settle();
  ASSERT_TRUE(send_all(fd, watch_request("g1", tag, 60000)));
  ASSERT_TRUE(eventually([&] { return server_->stats().watches_waiting == 1; }));
  // Whole-node jobs: the second goes to g1 if the first went to g2.
  if (run_job("train") != "g1") ASSERT_EQ(run_job("train-2"), "g1");
  const Answer woken = read_answer(fd, far());
  ASSERT_EQ(woken.status, 200) << woken.body;
  EXPECT_NE(json::parse(woken.body)["run_tag"], tag) << woken.body;
  for (int round = 20; round < 30; ++round) health_then_parked(round);
}

TEST_F(ServerParking, AHundredWaitingWatchesHoldNoThreadAndTheNewRunListWakesThem) {
  const std::map<std::string, std::string> tags{{"g1", tag_of("g1")}, {"g2", tag_of("g2")}};
  settle();
  std::map<int, std::string> watches;  // fd -> node
  for (int i = 0; i < 100; ++i) {
    const std::string node = i % 2 == 0 ? "g1" : "g2";
    const int fd = open();
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, watch_request(node, tags.at(node), 60000)));
    watches[fd] = node;
  }
  ASSERT_TRUE(eventually([&] { return server_->stats().watches_waiting == 100 && server_->connections_parked() >= 100; }));
  // Every thread would be taken by a watch if watches held threads.
  EXPECT_EQ(heartbeat("g1").status, 200);
  EXPECT_EQ(heartbeat("g2").status, 200);
  EXPECT_EQ(get("/v1/health").status, 200);
  // A job placed on one node answers that node's watches with their new run list; the other node's still wait.
  const std::string node = run_job("train");
  for (const auto& [fd, watched] : watches) {
    if (watched != node) continue;
    const Answer a = read_answer(fd, far());
    ASSERT_EQ(a.status, 200) << a.body;
    const json j = json::parse(a.body);
    EXPECT_NE(j["run_tag"], tags.at(node)) << a.body;
    ASSERT_EQ(j["run"].size(), 1u) << a.body;
    EXPECT_EQ(j["run"][0]["job"], "train") << a.body;
  }
  ASSERT_TRUE(eventually([&] { return server_->stats().watches_waiting == 50; }));
  // The watches answered are keep-alive connections again: each serves its next request.
  for (const auto& [fd, watched] : watches) {
    if (watched != node) continue;
    ASSERT_TRUE(send_all(fd, kHealth));
    EXPECT_EQ(read_answer(fd, far()).status, 200);
  }
}

TEST_F(ServerParking, AParkedWatchAnswersAtItsDeadlineWithTheTagItKnew) {
  const std::string tag = tag_of("g1");
  settle();
  const int fd = open();
  ASSERT_TRUE(send_all(fd, watch_request("g1", tag, 300)));
  const Answer a = read_answer(fd, far());
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(json::parse(a.body)["run_tag"], tag) << a.body;
  ASSERT_TRUE(eventually([&] { return server_->stats().watches_waiting == 0 && server_->stats().watch_wakes == 0; }));
  // A watch that knows another tag is answered at once, with the tag published.
  const int other = open();
  ASSERT_TRUE(send_all(other, watch_request("g1", "", 60000)));
  const Answer b = read_answer(other, far());
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(json::parse(b.body)["run_tag"], tag) << b.body;
}

TEST_F(ServerParking, AWatcherThatGoesAwayWhileParkedGivesBackItsSeatAndCount) {
  stop();
  options_.max_connections = 2;
  options_.max_connections_per_address = 2;
  options_.max_watches = 1;
  start();
  const std::string tag = tag_of("g1");
  settle();
  const int fd = open();
  ASSERT_TRUE(send_all(fd, watch_request("g1", tag, 60000)));
  ASSERT_TRUE(eventually([&] { return server_->stats().watches_waiting == 1 && server_->connections_parked() == 1; }));
  EXPECT_EQ(server_->stats().watch_wakes, 1u);
  // The watch holds one of the two seats: one more keep-alive connection takes the other, a third is refused.
  const int second = open();
  ASSERT_TRUE(send_all(second, kHealth));
  ASSERT_EQ(read_answer(second, far()).status, 200);
  const int third = open();
  ASSERT_TRUE(send_all(third, kHealth));
  EXPECT_EQ(read_answer(third, far()).status, 503);
  close_fd(third);
  close_fd(fd);
  ASSERT_TRUE(eventually([&] {
    return server_->stats().watches_waiting == 0 && server_->stats().watch_wakes == 0 && server_->connections_parked() == 1;
  }));
  // The seat comes back once the connection is closed, just after the counts: a new client is answered (asked
  // again until then; one refused gets its 503 and is closed).
  auto answered = [&](const std::string& request) {
    const int fd = open();
    if (fd < 0) return false;
    const bool ok = send_all(fd, request) && read_answer(fd, far()).status == 200;
    close_fd(fd);
    return ok;
  };
  ASSERT_TRUE(eventually([&] { return answered(kHealth); }));
  // And a watch is admitted again, once the second connection has given its seat back too.
  close_fd(second);
  ASSERT_TRUE(eventually([&] { return answered(watch_request("g1", tag, 0)); }));
}

TEST_F(ServerParking, AStoppingServerClosesEveryParkedConnection) {
  const std::string tag = tag_of("g1");
  settle();
  std::vector<int> parked;
  for (int i = 0; i < 20; ++i) {
    const int fd = open();
    ASSERT_TRUE(send_all(fd, kHealth));
    ASSERT_EQ(read_answer(fd, far()).status, 200);
    parked.push_back(fd);
  }
  for (int i = 0; i < 20; ++i) {
    const int fd = open();
    ASSERT_TRUE(send_all(fd, watch_request("g1", tag, 60000)));
    parked.push_back(fd);
  }
  ASSERT_TRUE(eventually([&] { return server_->connections_parked() == 40; }));
  auto stopped = std::async(std::launch::async, [this] { server_->stop(); });
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "Server::stop hangs on parked connections";
  // Idle ones are closed; watches are answered (nothing to act on) or closed: either way none is left open.
  for (int fd : parked) EXPECT_TRUE(ended_by_server(fd, far()));
  server_.reset();
}

}  // namespace
}  // namespace allot::server::test::server_parking_test
