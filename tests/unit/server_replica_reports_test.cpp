// What agents report about replicas beside their exits: the attempt of each log chunk (LogStore keeps the
// attempts of one rank apart with a line between them) and the CPUs a running replica is bound to.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "server/lifecycle/agents.h"
#include "server/lifecycle/log_store.h"
#include "server/api/log_upload.h"

namespace allot::server::server_replica_reports_test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("allot-logstore-" + std::to_string(std::random_device{}()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(LogStoreAttempts, ALineSeparatesAttemptsAndLateChunksOfAnOlderOne) {
  TempDir dir;
  LogStore logs(dir.path.string(), 1 << 20);
  ASSERT_TRUE(logs.append("train", 0, "step 1\n", LogStore::Attempt{0, "gpu-1"}));
  ASSERT_TRUE(logs.append("train", 0, "step 2", LogStore::Attempt{0, "gpu-1"}));  // no newline at the end
  ASSERT_TRUE(logs.append("train", 0, "resumed\n", LogStore::Attempt{1, "gpu-2"}));
  ASSERT_TRUE(logs.append("train", 0, "late\n", LogStore::Attempt{0, "gpu-1"}));  // the old node's last chunk
  auto text = logs.read("train", 0, 0);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text,
            "step 1\nstep 2\n"
            "allot: ==> attempt 1 of replica 0 on node gpu-2 <==\nresumed\n"
            "allot: ==> attempt 0 of replica 0 on node gpu-1 <==\nlate\n");
  // Another rank has its own log and its own attempts.
  ASSERT_TRUE(logs.append("train", 1, "r1\n", LogStore::Attempt{0, "gpu-3"}));
  EXPECT_EQ(*logs.read("train", 1, 0), "r1\n");
}

TEST(LogStoreAttempts, ALogThatStartsAfterTheFirstAttemptSaysWhichItIs) {
  TempDir dir;
  LogStore logs(dir.path.string(), 1 << 20);
  ASSERT_TRUE(logs.append("j", 0, "out\n", LogStore::Attempt{2, "n-1"}));
  EXPECT_EQ(*logs.read("j", 0, 0), "allot: ==> attempt 2 of replica 0 on node n-1 <==\nout\n");
  // Chunks without an attempt (agents that do not send one) are appended as they are.
  ASSERT_TRUE(logs.append("j", 0, "more\n"));
  EXPECT_EQ(*logs.read("j", 0, 0), "allot: ==> attempt 2 of replica 0 on node n-1 <==\nout\nmore\n");
  // A restarted server reads the last attempt from beside the log: no second line for the same attempt.
  LogStore again(dir.path.string(), 1 << 20);
  ASSERT_TRUE(again.append("j", 0, "after restart\n", LogStore::Attempt{2, "n-1"}));
  EXPECT_EQ(*again.read("j", 0, 0), "allot: ==> attempt 2 of replica 0 on node n-1 <==\nout\nmore\nafter restart\n");
}

TEST(LogUploadBody, AttemptIsOptionalAndANonNegativeInteger) {
  auto up = parse_log_upload({{"job", "j"}, {"rank", 0}, {"data", "x"}, {"attempt", 3}});
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(up->attempt, 3);
  auto old = parse_log_upload({{"job", "j"}, {"rank", 0}, {"data", "x"}});
  ASSERT_TRUE(old);
  EXPECT_EQ(old->attempt, -1);
  EXPECT_FALSE(parse_log_upload({{"job", "j"}, {"rank", 0}, {"data", "x"}, {"attempt", -1}}));
  EXPECT_FALSE(parse_log_upload({{"job", "j"}, {"rank", 0}, {"data", "x"}, {"attempt", "1"}}));
}

TEST(HeartbeatReplicaCpus, ACpuListIsReadAndAnythingElseRefused) {
  auto ok = parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}, {"cpus", "0-3,8"}}}}});
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].cpus, "0-3,8");
  for (const auto& bad : {nlohmann::json("0-3; rm -rf /"), nlohmann::json(3), nlohmann::json(std::string(5000, '1'))}) {
    auto r = parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", "running"}, {"cpus", bad}}}}});
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_NE(r.error().message.find("cpus"), std::string::npos) << r.error().message;
  }
}

// A state of another type is the same clear error as an unknown one, not an exception (found by http_body_fuzz).
TEST(HeartbeatReplicaState, AStateThatIsNotRunningOrExitedIsRefused) {
  for (const auto& bad : {nlohmann::json(1), nlohmann::json("done"), nlohmann::json(nullptr), nlohmann::json::array()}) {
    auto r = parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", bad}}}}});
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_NE(r.error().message.find("replicas[0]: state must be running, pulling, exited, lost or not_started"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}}}}})) << "no state at all";
}

}  // namespace
}  // namespace allot::server::server_replica_reports_test
