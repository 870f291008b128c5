// The agents' watch (heartbeat_board.h, GET /v1/agents/{name}/changes): a long poll that ends when the node's
// run tag moves, with the node's run list and orders, so that an agent starts new work at once. Waits are bounded by far deadlines; a test
// fails when a wake-up that should come does not come within them.
#include <chrono>
#include <future>

#include "heartbeat_board_fixture.h"

namespace allot::server::test::server_agent_watch_test {
namespace {

using nlohmann::json;
using std::chrono::steady_clock;

class ServerAgentWatch : public ServerHeartbeatBoard {
 protected:
  // A GET of an agent's endpoint with a node's credential (another node's, to test refusals).
  Response agent_get(const std::string& as_node, const std::string& path) {
    if (!credentials_.count(as_node)) heartbeat(as_node);  // makes the credential (server_test_fixture.h)
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    c.set_bearer_token_auth(credentials_[as_node].c_str());
    return wrap(c.Get(path.c_str()));
  }
  std::future<Response> watch(const std::string& node, const std::string& known) {
    return std::async(std::launch::async, [this, node, known] {
      return agent_get(node, "/v1/agents/" + node + "/changes?wait_ms=60000&known=" + known);
    });
  }
};

TEST_F(ServerAgentWatch, AJobPlacedOnTheNodeEndsItsWatchWithTheTagOfItsNextHeartbeat) {
  std::map<std::string, std::string> tags;
  for (const char* n : {"g1", "g2"}) {
    auto hb = heartbeat(n);
    ASSERT_EQ(hb.status, 200) << hb.body;
    tags[n] = hb.json["run_tag"].get<std::string>();
    EXPECT_EQ(tags[n].size(), 16u) << hb.body;
  }
  settle();
  // With the tag it knows and no wait, the answer is that same tag: nothing changed.
  auto now = agent_get("g1", "/v1/agents/g1/changes?wait_ms=0&known=" + tags["g1"]);
  ASSERT_EQ(now.status, 200) << now.body;
  EXPECT_EQ(now.json["run_tag"], tags["g1"]);

  auto w1 = watch("g1", tags["g1"]);
  auto w2 = watch("g2", tags["g2"]);
  const std::string node = run_job("train");
  auto& woken = node == "g1" ? w1 : w2;
  ASSERT_EQ(woken.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the watch of " << node << " should end when the job is placed there";
  Response changed = woken.get();
  ASSERT_EQ(changed.status, 200) << changed.body;
  const std::string tag = changed.json["run_tag"].get<std::string>();
  EXPECT_NE(tag, tags[node]);
  // The answer carries the work itself, as a heartbeat answer lists it, and no stop list (that answers a report).
  ASSERT_EQ(changed.json["run"].size(), 1u) << changed.body;
  EXPECT_EQ(changed.json["run"][0]["job"], "train") << changed.body;
  EXPECT_FALSE(changed.json.contains("stop")) << changed.body;
  ASSERT_TRUE(changed.json["as_of"].is_number_unsigned()) << changed.body;
  // A heartbeat then gets the same job and tag, from a state no older: its next watch waits again.
  auto hb = heartbeat(node);
  ASSERT_EQ(hb.status, 200) << hb.body;
  ASSERT_EQ(hb.json["run"].size(), 1u) << hb.body;
  EXPECT_EQ(hb.json["run"][0], changed.json["run"][0]);
  EXPECT_EQ(hb.json["run_tag"], tag);
  EXPECT_GE(hb.json["as_of"].get<uint64_t>(), changed.json["as_of"].get<uint64_t>()) << hb.body;
  // The other node's watch is still waiting: a job for the other node ends it too.
  const std::string other = run_job("second");
  EXPECT_NE(other, node);
  auto& still = node == "g1" ? w2 : w1;
  ASSERT_EQ(still.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the watch of " << other << " should end when the second job is placed there";
  Response second = still.get();
  EXPECT_NE(second.json["run_tag"], tags[other]);
  // Only that node's own work: the first job, on the other node, is not in it.
  ASSERT_EQ(second.json["run"].size(), 1u) << second.body;
  EXPECT_EQ(second.json["run"][0]["job"], "second") << second.body;
  EXPECT_GT(second.json["as_of"].get<uint64_t>(), changed.json["as_of"].get<uint64_t>()) << second.body;
}

class ServerAgentWatchLimit : public ServerAgentWatch {
 protected:
  void SetUp() override {
    ServerAgentWatch::SetUp();
    // At most half of the connections may be held by watches: 4 of 8.
    options_.max_connections = 8;
    // Every client of the test comes from 127.0.0.1: without this the per-address share (half) refuses first.
    options_.max_connections_per_address = 8;
    restart();
  }
};

TEST_F(ServerAgentWatchLimit, WatchesBeyondHalfTheConnectionsAreRefusedAndHeartbeatsStillAnswered) {
  const std::string tag1 = heartbeat("g1").json["run_tag"].get<std::string>();
  const std::string tag2 = heartbeat("g2").json["run_tag"].get<std::string>();
  settle();
  std::vector<std::future<Response>> waiting;
  for (int i = 0; i < 2; ++i) {
    waiting.push_back(watch("g1", tag1));
    waiting.push_back(watch("g2", tag2));
  }
  eventually([&] { return server_->stats().watches_waiting == 4; });
  httplib::Client c("127.0.0.1", server_->port());
  c.set_bearer_token_auth(credentials_["g1"].c_str());
  auto refused = c.Get(("/v1/agents/g1/changes?wait_ms=60000&known=" + tag1).c_str());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "60");
  EXPECT_NE(refused->body.find("--max-connections 8"), std::string::npos) << refused->body;
  // The connections left are the heartbeats'.
  auto hb = heartbeat("g1");
  EXPECT_EQ(hb.status, 200) << hb.body;
  // Work for both nodes ends every watch; a watch is let in again.
  run_job("one");
  run_job("two");
  for (auto& w : waiting) {
    ASSERT_EQ(w.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_EQ(w.get().status, 200);
  }
  eventually([&] { return server_->stats().watches_waiting == 0; });
  auto again = agent_get("g1", "/v1/agents/g1/changes?wait_ms=0&known=" + tag1);
  EXPECT_EQ(again.status, 200) << again.body;
}

// `allot server --max-watches N` sets the limit instead of half of --max-connections.
class ServerAgentWatchFlag : public ServerAgentWatch {
 protected:
  // Restarts the server with at most `n` watches, and returns the 429 a watch of g1 gets then, if any, after
  // `waiting` watches of g1 (none answered) hold their connections.
  httplib::Result refused_after(size_t n, size_t waiting, std::vector<std::future<Response>>& held) {
    options_.max_watches = n;
    restart();
    tag_ = heartbeat("g1").json["run_tag"].get<std::string>();
    settle();
    for (size_t i = 0; i < waiting; ++i) held.push_back(watch("g1", tag_));
    eventually([&] { return server_->stats().watches_waiting == waiting; });
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    c.set_bearer_token_auth(credentials_["g1"].c_str());
    return c.Get(("/v1/agents/g1/changes?wait_ms=60000&known=" + tag_).c_str());
  }
  std::string tag_;
};

// A refusal: 429 TooManyWatches, a minute to wait, and the flag that set the limit named.
void expect_refused(const httplib::Result& refused, const std::string& flag) {
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "60");
  EXPECT_NE(refused->body.find("TooManyWatches"), std::string::npos) << refused->body;
  EXPECT_NE(refused->body.find(flag), std::string::npos) << refused->body;
}

TEST_F(ServerAgentWatchFlag, WithMaxWatchesOneTheSecondConcurrentWatchIsRefused) {
  std::vector<std::future<Response>> held;
  expect_refused(refused_after(1, 1, held), "--max-watches 1");
  // Well below half of the 64 connections: the flag, not the default, set the limit. Heartbeats still go.
  EXPECT_EQ(heartbeat("g1").status, 200);
  run_job("one");
  run_job("two");  // both nodes busy: the held watch of g1 ends with its job
  ASSERT_EQ(held[0].wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(held[0].get().status, 200);
  eventually([&] { return server_->stats().watches_waiting == 0; });
  EXPECT_EQ(agent_get("g1", "/v1/agents/g1/changes?wait_ms=0&known=" + tag_).status, 200) << "the one watch may wait again";
}

TEST_F(ServerAgentWatchFlag, WithMaxWatchesZeroTheFirstWatchIsRefused) {
  std::vector<std::future<Response>> held;
  expect_refused(refused_after(0, 0, held), "--max-watches 0");
  EXPECT_EQ(server_->stats().watches_waiting, 0u);
  EXPECT_EQ(heartbeat("g1").status, 200);
}

// A limit that leaves no connection for heartbeats is refused before the server starts, saying what was given,
// what is allowed and why; one below --max-connections is taken.
TEST_F(ServerAgentWatchFlag, MaxWatchesMustStayBelowMaxConnections) {
  stop();
  for (size_t n : {size_t{8}, size_t{9}, size_t{100000}}) {
    ServerOptions o = options_;
    o.max_connections = 8;
    o.max_watches = n;
    auto s = Server::open(o, std::make_unique<SharedStore>(journal_));
    ASSERT_FALSE(s.ok()) << n;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument) << s.error().message;
    for (std::string says : {"--max-watches " + std::to_string(n), std::string("--max-connections 8"), std::string("0..7"),
                             std::string("heartbeats")})
      EXPECT_NE(s.error().message.find(says), std::string::npos) << s.error().message;
  }
  for (size_t n : {size_t{0}, size_t{7}}) {
    ServerOptions o = options_;
    o.max_connections = 8;
    o.max_watches = n;
    EXPECT_TRUE(Server::open(o, std::make_unique<SharedStore>(journal_)).ok()) << n;
    EXPECT_EQ(watch_limit(o), n);
  }
  ServerOptions unset = options_;
  unset.max_connections = 8;
  EXPECT_EQ(watch_limit(unset), 4u) << "half of --max-connections by default";
  start();  // TearDown stops it
}

TEST_F(ServerAgentWatch, OnlyTheNodesOwnAgentMayWatchAndBadParametersAreRefused) {
  auto other = agent_get("g2", "/v1/agents/g1/changes?wait_ms=0");
  EXPECT_EQ(other.status, 403) << other.body;
  auto admin = get("/v1/agents/g1/changes?wait_ms=0");
  EXPECT_EQ(admin.status, 403) << admin.body;
  auto tag = agent_get("g1", "/v1/agents/g1/changes?wait_ms=0&known=NOT-A-TAG");
  EXPECT_EQ(tag.status, 400) << tag.body;
  EXPECT_NE(tag.body.find("run tag"), std::string::npos) << tag.body;
  auto wait = agent_get("g1", "/v1/agents/g1/changes?wait_ms=600000");
  EXPECT_EQ(wait.status, 400) << wait.body;
}

// The tag a watch ends with ("" when no answer is published).
std::string tag_of(const std::shared_ptr<const NodeAnswer>& a) { return a ? a->tag : ""; }

// An answer with the given tag that places rank 0 of each of `jobs` (attempt 0) on the node.
std::shared_ptr<const NodeAnswer> answer_with_tag(const std::string& tag, std::vector<std::string> jobs = {}, bool reboot = false) {
  auto a = std::make_shared<NodeAnswer>();
  a->fast = true;
  a->reboot = reboot;
  a->tag = tag;
  for (const auto& j : jobs) a->placed[{j, 0}] = 0;
  return a;
}

TEST(HeartbeatBoardWatch, NewWorkWakesTheWatcherAndTheSameWorkDoesNot) {
  HeartbeatBoard board([] { return int64_t{0}; });
  board.publish("g1", answer_with_tag("aaaa", {"a"}));
  const auto far = steady_clock::now() + std::chrono::seconds(60);
  EXPECT_EQ(tag_of(board.wait_for_change("g1", "bbbb", far)), "aaaa") << "a tag other than the known one answers at once";
  // The same answer published again (a heartbeat's time, a CPU list) is no change: the watch runs to its deadline.
  board.publish("g1", answer_with_tag("aaaa", {"a"}));
  EXPECT_EQ(tag_of(board.wait_for_change("g1", "aaaa", steady_clock::now())), "aaaa");
  auto waiting = std::async(std::launch::async, [&] { return board.wait_for_change("g1", "aaaa", far); });
  board.publish("g1", answer_with_tag("cccc", {"a", "b"}));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "new work must wake the watcher";
  EXPECT_EQ(tag_of(waiting.get()), "cccc");
}

TEST(HeartbeatBoardWatch, OnlyANewReplicaAttemptOrOrderIsWork) {
  const auto one = answer_with_tag("1", {"a"});
  EXPECT_FALSE(adds_work(*one, *one));
  EXPECT_FALSE(adds_work(*one, *answer_with_tag("2"))) << "a replica taken away (an exit, a cancel) is stopped at heartbeats";
  EXPECT_TRUE(adds_work(*one, *answer_with_tag("3", {"a", "b"}))) << "a new replica";
  auto retried = std::make_shared<NodeAnswer>(*one);
  retried->placed[{"a", 0}] = 1;
  EXPECT_TRUE(adds_work(*one, *retried)) << "a new attempt of the same replica";
  EXPECT_TRUE(adds_work(*one, *answer_with_tag("4", {"a"}, /*reboot=*/true))) << "an order";
  auto deep = std::make_shared<NodeAnswer>(*one);
  deep->deep_check = true;
  EXPECT_TRUE(adds_work(*one, *deep));
  EXPECT_FALSE(adds_work(*deep, *one)) << "an order withdrawn";
}

TEST(HeartbeatBoardWatch, ANodeWithoutASlotWaitsForOneAndShutdownWakesEveryWatcher) {
  HeartbeatBoard board([] { return int64_t{0}; });
  EXPECT_EQ(tag_of(board.wait_for_change("g9", "", steady_clock::now())), "") << "no slot, deadline passed: no tag";
  const auto far = steady_clock::now() + std::chrono::seconds(60);
  // A watcher of a node that has no answer yet is woken by its first one.
  auto first = std::async(std::launch::async, [&] { return board.wait_for_change("g1", "", far); });
  board.publish("g1", answer_with_tag("aaaa"));
  ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(tag_of(first.get()), "aaaa");
  // A slot that goes (the node left) ends its watch with no tag. The watch may begin after the slot went and
  // then waits for a new one until its deadline: a short one here, since either way the answer is no tag.
  auto gone = std::async(std::launch::async, [&] {
    return board.wait_for_change("g1", "aaaa", steady_clock::now() + std::chrono::seconds(3));
  });
  board.publish("g1", nullptr);
  ASSERT_EQ(gone.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(tag_of(gone.get()), "");
  // Shutdown ends the watches of nodes with and without slots, and later watches return at once.
  board.publish("g2", answer_with_tag("dddd"));
  auto with_slot = std::async(std::launch::async, [&] { return board.wait_for_change("g2", "dddd", far); });
  auto without = std::async(std::launch::async, [&] { return board.wait_for_change("g3", "", far); });
  board.shutdown();
  ASSERT_EQ(with_slot.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_EQ(without.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(tag_of(with_slot.get()), "");
  EXPECT_EQ(tag_of(without.get()), "");
  EXPECT_EQ(tag_of(board.wait_for_change("g2", "dddd", far)), "");
}

}  // namespace
}  // namespace allot::server::test::server_agent_watch_test
