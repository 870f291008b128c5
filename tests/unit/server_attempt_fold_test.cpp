// Attempt numbers after the server folded its per-name run counts (core ClusterState::attempts_folded: past
// kAttemptsKept names a job whose name is not listed numbers its runs after every folded one). Inside, the runs
// of such a job start above 0, so that no agent's report of a folded name's old run is taken for the new job's.
// People must not see that: a name never used before shows what it shows without the fold (its log has no line
// before its first run, `allot logs -o json` and ALLOT_ATTEMPT say attempt 0, then 1 after a restart).
#include "agent/replica.h"
#include "client/log_attempts.h"
#include "core/model/state.h"
#include "server_test_fixture.h"
#include "spec_builders.h"

namespace allot::server::test::server_attempt_fold_test {
namespace {

using nlohmann::json;

class ServerAttemptFold : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 1}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    auto reg = post("/v1/agents/register", json{{"name", "g1"}, {"instance_type", "g5.12xlarge"}, {"address", "10.0.0.1"}});
    ASSERT_EQ(reg.status, 200) << reg.body;
    // The journal as a server that compacted more finished jobs than attempts_used keeps names of would have
    // left it: kAttemptsKept + 1 jobs submitted and cancelled (each used one attempt), then one compaction.
    stop();
    uint64_t seq = 0;
    ASSERT_TRUE(journal_->load_after(0, [&](const store::Record& rec) {
      seq = rec.seq;
      return ok_status();
    }).ok());
    const Time at = now_ms_ / 1000 - 10;
    std::vector<store::Record> batch;
    for (size_t i = 0; i <= ClusterState::kAttemptsKept; ++i) {
      const std::string name = "old-" + std::to_string(i);
      batch.push_back({++seq, at, store::Submit{allot::test::job_spec(name, "a")}, {}});
      batch.push_back({++seq, at, store::Cancel{name}, {}});
    }
    batch.push_back({++seq, at + 1, store::CompactFinished{at}, {}});
    ASSERT_TRUE(journal_->append(batch).ok());
    start();
  }
  json heartbeat(json replicas = json::array()) {
    auto r = post("/v1/agents/g1/heartbeat", json{{"replicas", replicas}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json;
  }
  // The one replica assignment of `job` in g1's run list (null when there is none).
  json assignment(const std::string& job) {
    const json hb = heartbeat();
    for (const auto& a : hb["run"])
      if (a["job"] == job) return a;
    return nullptr;
  }
  static std::string allot_attempt(const json& a) {
    auto parsed = agent::assignment_from_json(a);
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    return parsed.ok() ? agent::replica_env(*parsed, agent::MachineFacts{}).at("ALLOT_ATTEMPT") : "";
  }
  json submit(const std::string& name) {
    auto r = post("/v1/jobs", json{{"name", name}, {"team", "a"}, {"replicas", 1}, {"max_retries", 1},
                                   {"per_replica", {{"accelerators", 1}}}, {"command", {"python", "train.py"}}});
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json;
  }
};

TEST_F(ServerAttemptFold, ANewNameShowsAttemptZeroFirstAsWithoutTheFold) {
  ASSERT_EQ(get("/v1/jobs/old-0").status, 404) << "the old jobs were compacted";
  ASSERT_EQ(submit("fresh")["state"], "Running");
  json a = assignment("fresh");
  ASSERT_TRUE(a.is_object()) << heartbeat().dump();
  const int first = a["attempt"].get<int>();
  EXPECT_GE(first, 1) << "inside, after every run of the folded names";
  EXPECT_EQ(allot_attempt(a), "0");

  // Its first run's output: no line before it, as for any log's first attempt 0.
  ASSERT_EQ(post("/v1/agents/g1/logs", json{{"job", "fresh"}, {"rank", 0}, {"attempt", first}, {"data", "epoch 1\n"}}).status, 204);
  EXPECT_EQ(get("/v1/jobs/fresh/logs").body, "epoch 1\n");

  // It fails once and restarts: the second run is attempt 1 to people, first + 1 to agents.
  heartbeat(json::array({{{"job", "fresh"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 1}, {"attempt", first}}}));
  ASSERT_TRUE(eventually([&] {
    a = assignment("fresh");
    return a.is_object() && a["attempt"] == first + 1;
  })) << get("/v1/jobs/fresh").body;
  EXPECT_EQ(allot_attempt(a), "1");
  ASSERT_EQ(post("/v1/agents/g1/logs", json{{"job", "fresh"}, {"rank", 0}, {"attempt", first + 1}, {"data", "resumed\n"}}).status, 204);
  const std::string log = get("/v1/jobs/fresh/logs").body;
  EXPECT_EQ(log, "epoch 1\nallot: ==> attempt 1 of replica 0 on node g1 <==\nresumed\n");
  const json attempts = client::log_attempts(0, log, /*from_start=*/true);
  ASSERT_EQ(attempts.size(), 2u) << attempts.dump();
  EXPECT_EQ(attempts[0]["attempt"], 0);
  EXPECT_EQ(attempts[1]["attempt"], 1);

  // The same after a restart of the server (replayed from the journal).
  restart();
  a = assignment("fresh");
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a["attempt"], first + 1);
  EXPECT_EQ(allot_attempt(a), "1");
}

// A folded name used again is numbered after all its old runs: an agent's late report of the old job's run is
// not taken for the new one's.
TEST_F(ServerAttemptFold, AFoldedNameUsedAgainIsNeverTakenForItsOldRuns) {
  ASSERT_EQ(submit("old-7")["state"], "Running");
  const json a = assignment("old-7");
  ASSERT_TRUE(a.is_object());
  EXPECT_GE(a["attempt"].get<int>(), 1);
  heartbeat(json::array({{{"job", "old-7"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 1}, {"attempt", 0}}}));
  EXPECT_EQ(get("/v1/jobs/old-7").json["state"], "Running");
  EXPECT_EQ(get("/v1/jobs/old-7").json["restarts"], 0) << get("/v1/jobs/old-7").body;
}

}  // namespace
}  // namespace allot::server::test::server_attempt_fold_test
