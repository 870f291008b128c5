// `allot logs -o json`: a replica's log cut into attempts at the server's separator lines.
#include <gtest/gtest.h>

#include "client/log_attempts.h"

namespace allot::client::client_log_attempts_test {
namespace {

using nlohmann::json;

TEST(LogAttempts, OneObjectPerAttemptWithoutTheSeparators) {
  const std::string log =
      "epoch 1\nepoch 2\n"
      "allot: ==> attempt 1 of replica 2 on node gpu-7 <==\n"
      "resumed\n"
      "allot: ==> attempt 2 of replica 2 on node gpu-3 <==\n"
      "allot: ==> attempt 3 of replica 2 on node gpu-3 <==\n"
      "done, no newline";
  const json want = json::parse(R"([
    {"attempt": 0, "rank": 2, "node": null, "lines": ["epoch 1", "epoch 2"]},
    {"attempt": 1, "rank": 2, "node": "gpu-7", "lines": ["resumed"]},
    {"attempt": 2, "rank": 2, "node": "gpu-3", "lines": []},
    {"attempt": 3, "rank": 2, "node": "gpu-3", "lines": ["done, no newline"]}])");
  EXPECT_EQ(log_attempts(2, log, /*from_start=*/true), want);
}

TEST(LogAttempts, ACutStartHasNoAttemptNumber) {
  const json got = log_attempts(0, "tail of something\nallot: ==> attempt 4 of replica 0 on node n1 <==\nx\n", false);
  ASSERT_EQ(got.size(), 2u) << got;
  EXPECT_TRUE(got[0]["attempt"].is_null()) << got;
  EXPECT_EQ(got[1]["attempt"], 4);
  EXPECT_EQ(got[1]["lines"], json::array({"x"}));
}

TEST(LogAttempts, OnlyTheServersLinesForThisReplicaSeparate) {
  // Output that looks like a separator but names another replica, or is malformed, is the job's own output.
  const std::string log =
      "allot: ==> attempt 1 of replica 1 on node n1 <==\n"
      "allot: ==> attempt x of replica 0 on node n1 <==\n"
      "allot: ==> attempt 1 of replica 0 on node  <==\n"
      "  allot: ==> attempt 1 of replica 0 on node n1 <==\n";
  const json got = log_attempts(0, log, true);
  ASSERT_EQ(got.size(), 1u) << got;
  EXPECT_EQ(got[0]["lines"].size(), 4u) << got;
  EXPECT_EQ(log_attempts(0, "", true), json::array());
}

}  // namespace
}  // namespace allot::client::client_log_attempts_test
