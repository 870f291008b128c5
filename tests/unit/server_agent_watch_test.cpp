// The agents' watch (heartbeat_board.h, GET /v1/agents/{name}/changes): a long poll that ends when the node's
// run tag moves, so that an agent heartbeats for new work at once. Waits are bounded by far deadlines; a test
// fails when a wake-up that should come does not come within them.
#include <chrono>
#include <future>

#include "heartbeat_board_fixture.h"

namespace allot::server::test {
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
  // The heartbeat the agent sends then gets the job, and the same tag: its next watch waits again.
  auto hb = heartbeat(node);
  ASSERT_EQ(hb.status, 200) << hb.body;
  ASSERT_EQ(hb.json["run"].size(), 1u) << hb.body;
  EXPECT_EQ(hb.json["run"][0]["job"], "train");
  EXPECT_EQ(hb.json["run_tag"], tag);
  // The other node's watch is still waiting: a job for the other node ends it too.
  const std::string other = run_job("second");
  EXPECT_NE(other, node);
  auto& still = node == "g1" ? w2 : w1;
  ASSERT_EQ(still.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the watch of " << other << " should end when the second job is placed there";
  EXPECT_NE(still.get().json["run_tag"], tags[other]);
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

std::shared_ptr<const NodeAnswer> answer_with_tag(const std::string& tag, bool reboot = false) {
  auto a = std::make_shared<NodeAnswer>();
  a->fast = true;
  a->reboot = reboot;
  a->tag = tag;
  return a;
}

TEST(HeartbeatBoardWatch, ANewTagWakesTheWatcherAndTheSameTagDoesNot) {
  HeartbeatBoard board([] { return int64_t{0}; });
  board.publish("g1", answer_with_tag("aaaa"));
  const auto far = steady_clock::now() + std::chrono::seconds(60);
  EXPECT_EQ(board.wait_for_change("g1", "bbbb", far), "aaaa") << "a tag other than the known one answers at once";
  // The same tag published again (a heartbeat's time, a CPU list) is no change: the watch runs to its deadline.
  board.publish("g1", answer_with_tag("aaaa", false));
  EXPECT_EQ(board.wait_for_change("g1", "aaaa", steady_clock::now()), "aaaa");
  auto waiting = std::async(std::launch::async, [&] { return board.wait_for_change("g1", "aaaa", far); });
  board.publish("g1", answer_with_tag("cccc"));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a new tag must wake the watcher";
  EXPECT_EQ(waiting.get(), "cccc");
}

TEST(HeartbeatBoardWatch, ANodeWithoutASlotWaitsForOneAndShutdownWakesEveryWatcher) {
  HeartbeatBoard board([] { return int64_t{0}; });
  EXPECT_EQ(board.wait_for_change("g9", "", steady_clock::now()), "") << "no slot, deadline passed: no tag";
  const auto far = steady_clock::now() + std::chrono::seconds(60);
  // A watcher of a node that has no answer yet is woken by its first one.
  auto first = std::async(std::launch::async, [&] { return board.wait_for_change("g1", "", far); });
  board.publish("g1", answer_with_tag("aaaa"));
  ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(first.get(), "aaaa");
  // A slot that goes (the node left) ends its watch with no tag. The watch may begin after the slot went and
  // then waits for a new one until its deadline: a short one here, since either way the answer is no tag.
  auto gone = std::async(std::launch::async, [&] {
    return board.wait_for_change("g1", "aaaa", steady_clock::now() + std::chrono::seconds(3));
  });
  board.publish("g1", nullptr);
  ASSERT_EQ(gone.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(gone.get(), "");
  // Shutdown ends the watches of nodes with and without slots, and later watches return at once.
  board.publish("g2", answer_with_tag("dddd"));
  auto with_slot = std::async(std::launch::async, [&] { return board.wait_for_change("g2", "dddd", far); });
  auto without = std::async(std::launch::async, [&] { return board.wait_for_change("g3", "", far); });
  board.shutdown();
  ASSERT_EQ(with_slot.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_EQ(without.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(with_slot.get(), "");
  EXPECT_EQ(without.get(), "");
  EXPECT_EQ(board.wait_for_change("g2", "dddd", far), "");
}

}  // namespace
}  // namespace allot::server::test
