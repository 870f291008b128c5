// HeartbeatBoard::try_answer reads a node's published answer, checks the heartbeat against it outside the slot's
// lock, and notes the heartbeat's time only if that answer is still the published one when it takes the lock
// again. These tests act in the window between the two, through the board's test hook, as the writer may: they
// close the slot for silence or publish a new answer there. Without the recheck a heartbeat would be noted (and
// answered) against an answer the writer had already replaced or closed, and a node the writer timed out would
// count as heard.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace allot::server::heartbeat_board_window_test
