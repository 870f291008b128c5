// HeartbeatBoard::try_answer reads a node's published answer, checks the heartbeat against it outside the slot's
// lock, and notes the heartbeat's time only if that answer is still the published one when it takes the lock
// again. These tests act in the window between the two, through the board's test hook, as the writer may: they
// close the slot for silence or publish a new answer there. Without the recheck a heartbeat would be noted (and
// answered) against an answer the writer had already replaced or closed, and a node the writer timed out would
// count as heard.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "server/lifecycle/heartbeat_board.h"

namespace allot::server::heartbeat_board_window_test {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 100000;      // the board's clock, in ms
constexpr int64_t kTimeout = 15000;   // silent for longer than this: the writer times the node out

std::shared_ptr<const NodeAnswer> running(const std::string& job) {
  auto a = std::make_shared<NodeAnswer>();
  a->fast = true;
  a->run = json::array({{{"job", job}, {"rank", 0}}});
  a->placed[{job, 0}] = 1;
  return a;
}

int64_t heard(const HeartbeatBoard& board, const std::string& node) {
  int64_t out = -1;
  board.for_each_time([&](const std::string& n, int64_t ms) {
    if (n == node) out = ms;
  });
  return out;
}

TEST(HeartbeatBoardWindow, ASlotClosedForSilenceInTheWindowAnswersNothingAndNotesNoTime) {
  HeartbeatBoard board([] { return kNow; });
  board.publish("n1", running("train"));
  int calls = 0;
  board.set_before_recheck([&](const std::string& node) {
    if (calls++ == 0) EXPECT_TRUE(board.close_if_silent(node, kNow, kTimeout)) << "never heard: silent";
  });
  const ServerOptions options;
  EXPECT_EQ(board.try_answer("n1", options, {}, std::nullopt), std::nullopt)
      << "the writer closed the slot: the heartbeat is the writer's, which undoes the timeout";
  EXPECT_EQ(heard(board, "n1"), 0) << "a heartbeat noted after the node was timed out";
  EXPECT_EQ(board.answered(), 0u);
}

TEST(HeartbeatBoardWindow, AnAnswerReplacedInTheWindowIsTheOneGiven) {
  HeartbeatBoard board([] { return kNow; });
  board.publish("n1", running("old"));
  int calls = 0;
  board.set_before_recheck([&](const std::string& node) {
    if (calls++ == 0) board.publish(node, running("new"));
  });
  const ServerOptions options;
  auto answer = board.try_answer("n1", options, {}, std::nullopt);
  ASSERT_TRUE(answer.has_value()) << "the new answer changes nothing either: answered from the board";
  ASSERT_EQ((*answer)["run"].size(), 1u) << answer->dump();
  EXPECT_EQ((*answer)["run"][0]["job"], "new") << "answered from the replaced answer: " << answer->dump();
  EXPECT_EQ(calls, 2) << "checked once against the old answer, once against the new";
  EXPECT_EQ(heard(board, "n1"), kNow);
  EXPECT_EQ(board.answered(), 1u);
}

TEST(HeartbeatBoardWindow, AnAnswerReplacedAtEveryTryGoesToTheWriter) {
  HeartbeatBoard board([] { return kNow; });
  board.publish("n1", running("job-0"));
  int calls = 0;
  board.set_before_recheck([&](const std::string& node) { board.publish(node, running("job-" + std::to_string(++calls))); });
  const ServerOptions options;
  EXPECT_EQ(board.try_answer("n1", options, {}, std::nullopt), std::nullopt);
  EXPECT_EQ(heard(board, "n1"), 0) << "noted against an answer that was no longer published";
  EXPECT_EQ(board.answered(), 0u);
}

// The writer folds heartbeat times from take_heard(): each node heard since the last call, once, with its latest
// time; a node not heard since is not listed (its time is folded already).
TEST(HeartbeatBoardHeard, ListsEachNodeHeardSinceTheLastTakeOnceWithItsLatestTime) {
  int64_t now = kNow;
  HeartbeatBoard board([&] { return now; });
  for (const char* n : {"n1", "n2", "n3"}) board.publish(n, running("train"));
  const ServerOptions options;
  auto take = [&] {
    std::map<std::string, int64_t> out;
    board.take_heard([&](const std::string& n, int64_t ms) { EXPECT_TRUE(out.emplace(n, ms).second) << n << " listed twice"; });
    return out;
  };
  EXPECT_TRUE(take().empty()) << "nobody heard yet";
  ASSERT_TRUE(board.try_answer("n1", options, {}, std::nullopt));
  now += 10;
  ASSERT_TRUE(board.try_answer("n1", options, {}, std::nullopt));
  ASSERT_TRUE(board.try_answer("n3", options, {}, std::nullopt));
  EXPECT_EQ(take(), (std::map<std::string, int64_t>{{"n1", kNow + 10}, {"n3", kNow + 10}}));
  EXPECT_TRUE(take().empty()) << "nothing heard since the last take";
  now += 10;
  ASSERT_TRUE(board.try_answer("n2", options, {}, std::nullopt));
  EXPECT_EQ(take(), (std::map<std::string, int64_t>{{"n2", kNow + 20}}));
}

// Heartbeats answered on other threads while the writer takes: the latest time each node was heard is always
// seen by some take (none is lost between a take's unlisting and the heartbeat's listing).
TEST(HeartbeatBoardHeard, NoTimeIsLostToATakeThatRunsBesideHeartbeats) {
  std::atomic<int64_t> now{kNow};
  HeartbeatBoard board([&] { return now.fetch_add(1); });
  const int nodes = 8;
  for (int i = 0; i < nodes; ++i) board.publish("n" + std::to_string(i), running("train"));
  const ServerOptions options;
  std::map<std::string, int64_t> folded;
  auto fold = [&] {
    board.take_heard([&](const std::string& n, int64_t ms) {
      int64_t& f = folded[n];
      f = std::max(f, ms);
    });
  };
  std::vector<std::thread> agents;
  for (int i = 0; i < nodes; ++i)
    agents.emplace_back([&, i] {
      for (int k = 0; k < 2000; ++k) ASSERT_TRUE(board.try_answer("n" + std::to_string(i), options, {}, std::nullopt));
    });
  std::atomic<bool> done{false};
  std::thread writer([&] {
    while (!done.load()) fold();
  });
  for (auto& t : agents) t.join();
  done = true;
  writer.join();
  fold();  // the writer's next round
  std::map<std::string, int64_t> latest;
  board.for_each_time([&](const std::string& n, int64_t ms) { latest[n] = ms; });
  EXPECT_EQ(folded, latest);
}

}  // namespace
}  // namespace allot::server::heartbeat_board_window_test
