// A node's failure timeout and its heartbeat crossing (heartbeat_board.h, docs/api.md "Heartbeat timeout"). Before
// the writer times a silent node out it closes the node's slot on the board in one locked step: a heartbeat the
// board answered before that step counts, and the node is not timed out; one that comes after it is refused by the
// board and handled by the writer, which undoes the timeout. Either way every replica runs once: where the job is
// placed, of its current attempt.
//
// The crossing is ordered with hooks, never with wall time: the writer is stopped at a known point of its batch
// (at its reading of the clock, which follows the fold of the board's times into the state; or at the log line it
// writes after closing the slot) while the test sends the heartbeat. HeartbeatBoardCrossing.* order the same two
// steps on the board alone, through the clock a heartbeat reads under the slot's lock.
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <map>
#include <mutex>

#include "heartbeat_board_fixture.h"

namespace allot::server::test::server_heartbeat_crossing_test {
namespace {

using nlohmann::json;

// Calls `on` with every log line's text (on the thread that logs it). No lock of its own: `on` is thread-safe.
class LogHook final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit LogHook(std::function<void(std::string_view)> on) : on_(std::move(on)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& m) override { on_(std::string_view(m.payload.data(), m.payload.size())); }
  void flush_() override {}

 private:
  std::function<void(std::string_view)> on_;
};

class ServerHeartbeatCrossing : public ServerHeartbeatBoard {
 protected:
  void SetUp() override {
    // Added before the server starts and removed after it stopped: nothing logs while the list of sinks changes.
    logger_ = spdlog::default_logger();
    hook_ = std::make_shared<LogHook>([this](std::string_view line) {
      std::string wanted;
      {
        std::lock_guard lock(mu_);
        wanted = park_on_line_;
      }
      if (!wanted.empty() && line.find(wanted) != std::string_view::npos) after_close_.pass();
    });
    logger_->sinks().push_back(hook_);
    ServerHeartbeatBoard::SetUp();
  }
  void TearDown() override {
    park_at_clock_ = false;
    {
      std::lock_guard lock(mu_);
      park_on_line_.clear();
    }
    at_clock_.release();
    after_close_.release();
    ServerHeartbeatBoard::TearDown();
    auto& sinks = logger_->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), hook_), sinks.end());
  }
  // The writer's next reading of the clock parks it (at_clock_) while park_at_clock_ is set.
  int64_t read_clock() override {
    if (park_at_clock_.load() && std::this_thread::get_id() == writer_thread_.load()) {
      park_at_clock_ = false;
      at_clock_.pass();
    }
    return ServerHeartbeatBoard::read_clock();
  }
  // Job one runs on `busy`, job two (restarted once by a timeout) on `quiet`; both nodes have heartbeated with
  // their replica and the board holds what that published.
  void run_one_and_two(std::string& busy, std::string& quiet) {
    busy = run_job("one");
    quiet = busy == "g1" ? "g2" : "g1";
    ASSERT_EQ(run_job("two", /*max_retries=*/1), quiet);  // restarted by a timeout
    ASSERT_EQ(heartbeat(busy, running("one")).status, 200);
    ASSERT_EQ(heartbeat(quiet, running("two")).status, 200);
    settle();
  }
  // The writer parks (after_close_) when it logs that it times `node` out: it has closed the node's slot on the
  // board and not yet applied the timeout, nor answered or published anything of its batch.
  void park_when_timing_out(const std::string& node) {
    after_close_.hold();
    std::lock_guard lock(mu_);
    park_on_line_ = "node " + node + ": no heartbeat for";
  }
  std::future<Response> heartbeat_async(const std::string& node, json body) {
    return std::async(std::launch::async, [this, node, body] { return heartbeat(node, body); });
  }
  std::future<int> write_async() {
    // A change that places nothing (a join token): it only makes the writer run a batch with a command.
    return std::async(std::launch::async, [this] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_bearer_token_auth(admin_token_.c_str());
      c.set_read_timeout(30, 0);
      auto r = c.Post("/v1/tokens", R"({"role": "agent-join"})", "application/json");
      return r ? r->status : 0;
    });
  }
  std::string health(const std::string& node) { return get("/v1/nodes/" + node).json["health"].get<std::string>(); }

  // (c) Given each node's latest heartbeat answer: every replica of a Running job is in the run list of the node
  // its placement names, once, and in no other; a job that is not Running is in no run list. Returns, per job,
  // the attempt its run-list entry names (-1: in none).
  std::map<std::string, int> expect_each_replica_once(const std::map<std::string, json>& answers, const std::vector<std::string>& jobs) {
    std::map<std::string, int> attempts;
    for (const std::string& job : jobs) {
      auto view = get("/v1/jobs/" + job);
      const bool runs = view.json["state"] == "Running";
      const std::string placed = runs ? view.json["placement"][0]["replicas"][0]["node"].get<std::string>() : "";
      int listed = 0;
      attempts[job] = -1;
      for (const auto& [node, answer] : answers) {
        for (const json& a : answer["run"]) {
          if (a["job"] != job) continue;
          ++listed;
          EXPECT_EQ(node, placed) << job << " is in the run list of " << node << ", placed on '" << placed << "': " << answer.dump();
          attempts[job] = a["attempt"].get<int>();
        }
      }
      EXPECT_EQ(listed, runs ? 1 : 0) << job << " (" << view.json["state"] << ") in " << listed << " run lists";
    }
    return attempts;
  }
  // The report of an agent that runs what `answer` told it to run (and stopped the rest).
  static json runs_as_told(const json& answer) {
    json replicas = json::array();
    for (const json& a : answer["run"])
      replicas.push_back({{"job", a["job"]}, {"rank", a["rank"]}, {"state", "running"}, {"attempt", a["attempt"]}});
    return json{{"replicas", replicas}};
  }

  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<LogHook> hook_;
  std::atomic<bool> park_at_clock_{false};
  WriterGate at_clock_, after_close_;  // where the writer parks (used as gates: pass() waits while held)
  std::mutex mu_;
  std::string park_on_line_;
};

// (b) and (c): both nodes are silent past the timeout when the writer folds the board's times into the state, so
// both are timed out by that batch unless heard before the slot is closed. g-busy's heartbeat comes after the fold
// (the writer is parked at its next step) and is answered by the board: it counts, and only the other node times out.
TEST_F(ServerHeartbeatCrossing, AHeartbeatAnsweredAfterTheFoldButBeforeTheSlotClosesPreventsTheTimeout) {
  std::string busy, quiet;
  ASSERT_NO_FATAL_FAILURE(run_one_and_two(busy, quiet));

  hold();
  auto written = write_async();
  wait_held();
  now_ms_ += 2500;  // past the 2 s timeout for both nodes, while no batch can look at the clock
  at_clock_.hold();
  park_at_clock_ = true;
  release();
  // The batch has folded the times (both stale) and not yet decided anything.
  ASSERT_TRUE(at_clock_.wait_held_for(std::chrono::seconds(20))) << "the writer's batch never read the clock";

  const uint64_t off = off_writer();
  auto in_time = heartbeat(busy, running("one"));
  ASSERT_EQ(in_time.status, 200) << in_time.body;
  EXPECT_EQ(off_writer(), off + 1) << "the board answers it: its slot is still open";
  EXPECT_EQ(in_time.json["stop"], json::array()) << in_time.body;
  at_clock_.release();
  EXPECT_EQ(written.get(), 201);

  // The same batch timed the other node out, so it did look at both; the one heard in time was spared.
  EXPECT_EQ(health(quiet), "UnschedulablePendingReboot");
  EXPECT_EQ(health(busy), "Schedulable") << "a heartbeat counted in time must prevent the timeout";
  auto one = get("/v1/jobs/one");
  EXPECT_EQ(one.json["state"], "Running") << one.body;
  settle();
  std::map<std::string, json> answers;
  answers[busy] = heartbeat(busy, running("one")).json;
  EXPECT_EQ(off_writer(), off + 2) << "the spared node's slot stays open";
  EXPECT_NE(get("/v1/jobs/two").json["state"], "Running") << "its only room is the node that timed out";
  auto attempts = expect_each_replica_once(answers, {"one", "two"});
  EXPECT_EQ(attempts["one"], 0) << "the replica heard in time keeps running, not restarted";
  EXPECT_EQ(answers[busy]["stop"], json::array());

  // The timed-out node comes back through the writer; its old replica of "two" is stopped, whatever runs now.
  auto back = heartbeat(quiet, running("two"));
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(off_writer(), off + 2);
  EXPECT_EQ(back.json["stop"], json::array({{{"job", "two"}, {"rank", 0}}})) << back.body;
  EXPECT_EQ(health(quiet), "Schedulable");
  settle();
  answers[quiet] = heartbeat(quiet, runs_as_told(back.json)).json;
  answers[busy] = heartbeat(busy, running("one")).json;
  attempts = expect_each_replica_once(answers, {"one", "two"});
  EXPECT_EQ(attempts["one"], 0);
  EXPECT_EQ(attempts["two"], 1) << "two runs again, as its next attempt, on the node that came back (its only room)";
}

// (a) and (c): the writer has closed the quiet node's slot and is about to apply the timeout when the node's
// heartbeat arrives. The board must refuse it (it is not answered while the writer is parked), and the writer,
// handling it after the timeout, undoes the timeout; the replica restarted by the timeout is not run twice.
TEST_F(ServerHeartbeatCrossing, AHeartbeatAfterTheSlotClosedGoesToTheWriterAndUndoesTheTimeout) {
  std::string busy, quiet;
  ASSERT_NO_FATAL_FAILURE(run_one_and_two(busy, quiet));
  now_ms_ += 1500;
  ASSERT_EQ(heartbeat(busy, running("one")).status, 200);  // busy stays within its timeout
  park_when_timing_out(quiet);
  now_ms_ += 1000;  // quiet: 2.5 s silent
  ASSERT_TRUE(after_close_.wait_held_for(std::chrono::seconds(20)))
      << "the writer never logged that it times " << quiet << " out (see park_when_timing_out: did its log line change?)";

  const uint64_t off = off_writer();
  auto late = heartbeat_async(quiet, running("two"));
  // A board that answered it would do so at once; the writer cannot answer while parked.
  EXPECT_EQ(late.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "a heartbeat after the slot closed was answered while the writer was timing the node out";
  EXPECT_EQ(off_writer(), off);
  after_close_.release();
  Response back = late.get();
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(off_writer(), off) << "the board must refuse a heartbeat of a node whose slot is closed";
  EXPECT_EQ(health(quiet), "Schedulable") << "the writer undoes the timeout";
  EXPECT_EQ(health(busy), "Schedulable");
  // The timeout restarted "two": the replica the agent still runs (attempt 0) is told to stop.
  EXPECT_EQ(back.json["stop"], json::array({{{"job", "two"}, {"rank", 0}}})) << back.body;
  for (const json& a : back.json["run"]) EXPECT_NE(a["attempt"], 0) << "the old attempt is not run again: " << back.body;

  settle();
  std::map<std::string, json> answers;
  answers[quiet] = heartbeat(quiet, runs_as_told(back.json)).json;
  answers[busy] = heartbeat(busy, running("one")).json;
  EXPECT_EQ(answers[quiet]["stop"], json::array()) << answers[quiet].dump();
  auto attempts = expect_each_replica_once(answers, {"one", "two"});
  EXPECT_EQ(attempts["one"], 0) << "the node that kept heartbeating keeps its replica";
  EXPECT_EQ(attempts["two"], 1) << "two runs again, as its next attempt, on the node that came back (its only room)";
}

// The same two steps on the board alone, in both orders.
struct FakeClock {
  std::atomic<int64_t> now{10'000};
  WriterGate gate;  // a reading of the clock waits here while held
  int64_t read() {
    gate.pass();
    return now.load();
  }
};

std::shared_ptr<const NodeAnswer> fast_answer() {
  auto a = std::make_shared<NodeAnswer>();
  a->fast = true;
  return a;
}

TEST(HeartbeatBoardCrossing, AHeartbeatNotedUnderTheSlotLockIsSeenByTheCloseThatWaitsForIt) {
  FakeClock clock;
  HeartbeatBoard board([&] { return clock.read(); });
  ServerOptions options;
  board.publish("g1", fast_answer());
  // The heartbeat stops inside the slot's lock, at its reading of the clock; the close is called meanwhile.
  clock.gate.hold();
  auto answered = std::async(std::launch::async, [&] { return board.try_answer("g1", options, {}, std::nullopt).has_value(); });
  ASSERT_TRUE(clock.gate.wait_held_for(std::chrono::seconds(20)));
  auto closed = std::async(std::launch::async, [&] { return board.close_if_silent("g1", 10'000, 2000); });
  // Whether the close has reached the lock yet or not, it must see the time this heartbeat notes.
  clock.gate.release();
  EXPECT_TRUE(answered.get());
  EXPECT_FALSE(closed.get()) << "a heartbeat answered by the board did not count against the timeout";
  EXPECT_EQ(board.answered(), 1u);
  ASSERT_NE(board.published("g1"), nullptr) << "a node heard in time keeps its slot open";
}

TEST(HeartbeatBoardCrossing, AfterTheCloseEveryHeartbeatIsTheWritersUntilItPublishesAFastAnswer) {
  FakeClock clock;
  HeartbeatBoard board([&] { return clock.read(); });
  ServerOptions options;
  board.publish("g1", fast_answer());
  ASSERT_TRUE(board.try_answer("g1", options, {}, std::nullopt).has_value());
  clock.now += 2001;
  ASSERT_TRUE(board.close_if_silent("g1", clock.now, 2000));
  EXPECT_EQ(board.try_answer("g1", options, {}, std::nullopt), std::nullopt);
  int64_t heard = -1;
  board.for_each_time([&](const std::string&, int64_t ms) { heard = ms; });
  EXPECT_EQ(heard, 10'000) << "a refused heartbeat must not count as heard (the writer counts it)";
  // The writer publishes the timed-out node's answer (not fast): still refused.
  board.publish("g1", std::make_shared<const NodeAnswer>());
  EXPECT_EQ(board.try_answer("g1", options, {}, std::nullopt), std::nullopt);
  EXPECT_EQ(board.answered(), 1u);
  // Once the writer has undone the timeout and published a fast answer, the board answers again.
  board.publish("g1", fast_answer());
  EXPECT_TRUE(board.try_answer("g1", options, {}, std::nullopt).has_value());
  EXPECT_EQ(board.answered(), 2u);
}

}  // namespace
}  // namespace allot::server::test::server_heartbeat_crossing_test
