// Two servers on one PostgreSQL journal (docs/deployment.md): exactly one leads; the standby answers reads from
// the journal it follows, redirects changes to the leader (307, method and body kept), and takes the lead when
// the leader goes. The CLI's client, given both URLs, follows the redirect; given only the standby, it says
// where the leader is.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "client/http_client.h"
#include "pg_test_instance.h"
#include "eventually.h"
#include "server/server.h"

namespace allot::server::server_standby_test {
namespace {

namespace fs = std::filesystem;
using allot::test::eventually;

class ServerStandby : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    bool failed = false;
    auto* pg = testing::PgTestInstance::get(&why, &failed);
    if (!pg) {
      if (failed) FAIL() << why;
      GTEST_SKIP() << "PostgreSQL cases skipped: " << why;
    }
    database_ = pg->fresh_database();
    root_ = fs::temp_directory_path() / ("allot-standby-test-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override {
    for (auto& s : servers_)
      if (s) s->stop();
    servers_.clear();
    fs::remove_all(root_);
  }

  Server& start(const std::string& name, uint64_t snapshot_every = ServerOptions{}.snapshot_every_records) {
    ServerOptions o;
    o.snapshot_every_records = snapshot_every;
    o.snapshot_min_records = 0;  // the test's journals are far below the size where snapshots pay
    o.listen = "127.0.0.1:0";
    o.data_dir = (root_ / name).string();
    o.database = database_;
    o.tick = std::chrono::milliseconds(10);
    o.leader_poll = std::chrono::milliseconds(50);
    auto s = Server::open(o);
    EXPECT_TRUE(s.ok()) << s.error().message;
    auto st = (*s)->start();
    EXPECT_TRUE(st.ok()) << st.error().message;
    servers_.push_back(std::move(*s));
    return *servers_.back();
  }
  std::string token() {
    std::ifstream in(root_ / "a" / "admin-token");
    std::string t;
    std::getline(in, t);
    return t;
  }
  httplib::Result call(Server& s, const std::string& method, const std::string& path, const std::string& body = "") {
    httplib::Client c("127.0.0.1", s.port());
    c.set_bearer_token_auth(token().c_str());
    c.set_read_timeout(10, 0);
    if (method == "GET") return c.Get(path.c_str());
    return c.Post(path.c_str(), body, "application/json");
  }
  nlohmann::json health(Server& s) {
    auto r = call(s, "GET", "/v1/health");
    return r ? nlohmann::json::parse(r->body) : nlohmann::json();
  }
  std::string database_;
  fs::path root_;
  std::vector<std::unique_ptr<Server>> servers_;
};

const char* kTeams = R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}]}]})";

TEST_F(ServerStandby, TheStandbyRedirectsChangesAnswersReadsAndTakesOver) {
  Server& a = start("a");
  Server& b = start("b");
  ASSERT_FALSE(token().empty()) << "the leader makes the first admin token";
  EXPECT_EQ(health(a)["role"], "leader");
  EXPECT_EQ(health(b)["role"], "standby");
  EXPECT_EQ(health(b)["leader"], a.url());
  EXPECT_FALSE(fs::exists(root_ / "b" / "admin-token")) << "a standby writes nothing";

  auto redirected = call(b, "POST", "/v1/apply?dry=0", kTeams);
  ASSERT_TRUE(redirected);
  EXPECT_EQ(redirected->status, 307) << redirected->body;
  EXPECT_EQ(redirected->get_header_value("Location"), a.url() + "/v1/apply?dry=0");

  auto applied = call(a, "POST", "/v1/apply", kTeams);
  ASSERT_TRUE(applied);
  ASSERT_EQ(applied->status, 200) << applied->body;
  EXPECT_TRUE(eventually([&] {
    auto r = call(b, "GET", "/v1/teams");
    return r && r->status == 200 && r->body.find("\"a\"") != std::string::npos;
  })) << "the standby follows the journal and answers reads";

  // The leader goes (its session ends with it); the standby takes the lead and takes changes.
  servers_[0]->stop();
  servers_[0].reset();
  ASSERT_TRUE(eventually([&] { return health(b)["role"] == "leader"; }));
  auto submitted = call(b, "POST", "/v1/jobs", R"({"name": "j1", "team": "a", "per_replica": {"accelerators": 1}, "command": "true"})");
  ASSERT_TRUE(submitted);
  EXPECT_EQ(submitted->status, 201) << submitted->body;
}

// Snapshots on PostgreSQL: the leader writes them; a standby that starts later catches up from the latest one
// plus the records after it, and answers what the leader answers.
TEST_F(ServerStandby, AStandbyStartingLaterCatchesUpFromTheLeadersSnapshot) {
  Server& a = start("a", /*snapshot_every=*/3);
  ASSERT_EQ(call(a, "POST", "/v1/apply", kTeams)->status, 200);
  for (int i = 1; i <= 5; ++i) {
    auto r = call(a, "POST", "/v1/jobs",
                  R"({"name": "j)" + std::to_string(i) + R"(", "team": "a", "per_replica": {"accelerators": 1}, "command": "true"})");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
  }
  // Snapshots are written off the writer thread.
  ASSERT_TRUE(eventually([&] { return !a.stats().snapshot_writing; }));
  EXPECT_EQ(testing::PgTestInstance::exec(database_, "DO $$ BEGIN IF (SELECT count(*) FROM allot_snapshots) = 0 THEN "
                                                     "RAISE 'the leader wrote no snapshot'; END IF; END $$"),
            "");
  Server& b = start("b", /*snapshot_every=*/3);
  EXPECT_EQ(health(b)["role"], "standby");
  // Names, states and submission times (a standby runs no scheduler, so its waiting jobs' explanations may lag).
  auto jobs_of = [&](Server& s) {
    nlohmann::json out = nlohmann::json::array();
    auto r = call(s, "GET", "/v1/jobs");
    if (!r || r->status != 200) return out;
    const auto body = nlohmann::json::parse(r->body);
    for (const auto& j : body["items"]) out.push_back({j["name"], j["state"], j["submitted_at"]});
    return out;
  };
  const auto leader_jobs = jobs_of(a);
  ASSERT_EQ(leader_jobs.size(), 5u);
  EXPECT_TRUE(eventually([&] { return jobs_of(b) == leader_jobs; })) << jobs_of(b).dump() << " vs " << leader_jobs.dump();
}

// Journal checksums (docs/deployment.md): a record changed in the database as it is written (a trigger stands for
// whatever changed it) is found by the standby as it follows: it applies nothing of that batch and, once the leader
// goes, does not take the lead on a journal it cannot read; a server starting on it refuses, naming the record.
TEST_F(ServerStandby, AStandbyThatFindsADamagedRecordDoesNotLead) {
  Server& a = start("a");
  Server& b = start("b");
  ASSERT_EQ(call(a, "POST", "/v1/apply", kTeams)->status, 200);
  ASSERT_EQ(testing::PgTestInstance::exec(
                database_,
                "CREATE FUNCTION allot_test_tamper() RETURNS trigger AS $$ BEGIN "
                "NEW.body := replace(NEW.body, '\"j-bad\"', '\"j-evil\"'); RETURN NEW; END $$ LANGUAGE plpgsql;"
                "CREATE TRIGGER allot_test_tamper BEFORE INSERT ON allot_journal FOR EACH ROW EXECUTE FUNCTION allot_test_tamper()"),
            "");
  auto bad = call(a, "POST", "/v1/jobs", R"({"name": "j-bad", "team": "a", "per_replica": {"accelerators": 1}, "command": "true"})");
  ASSERT_TRUE(bad);
  ASSERT_EQ(bad->status, 201) << bad->body;
  // The standby never shows the changed job (nor the one it names): it stops at the damaged batch.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto listed = call(b, "GET", "/v1/jobs");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->body.find("j-evil"), std::string::npos) << listed->body;
  EXPECT_EQ(listed->body.find("j-bad"), std::string::npos) << listed->body;
  servers_[0]->stop();
  servers_[0].reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // 30 of its leader polls
  EXPECT_EQ(health(b)["role"], "standby") << "a standby that cannot read the journal to its end must not lead";
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.data_dir = (root_ / "c").string();
  o.database = database_;
  auto c = Server::open(o);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto started = (*c)->start();
  ASSERT_FALSE(started.ok()) << "a server must not start on a damaged journal";
  EXPECT_NE(started.error().message.find("(submit, job j-evil) in the batch from record"), std::string::npos) << started.error().message;
  EXPECT_NE(started.error().message.find("does not match its checksum"), std::string::npos) << started.error().message;
}

TEST_F(ServerStandby, TheClientFollowsTheLeaderAmongTheServersItWasGiven) {
  Server& a = start("a");
  Server& b = start("b");
  auto both = client::ApiClient::connect(b.url() + "," + a.url(), {.ca_file = {}, .token = token()});
  ASSERT_TRUE(both.ok()) << both.error().message;
  auto r = both->post("/v1/apply", nlohmann::json::parse(kTeams));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(both->url(), a.url());

  auto standby_only = client::ApiClient::connect(b.url(), {.ca_file = {}, .token = token()});
  ASSERT_TRUE(standby_only.ok());
  auto refused = standby_only->post("/v1/apply", nlohmann::json::parse(kTeams));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("the leader is at " + a.url() + ", which is not among the servers given"),
            std::string::npos)
      << refused.error().message;

  // The first server listed is down: the client goes on to the next one.
  servers_[0]->stop();
  servers_[0].reset();
  ASSERT_TRUE(eventually([&] { return health(b)["role"] == "leader"; }));
  auto after = client::ApiClient::connect(std::string("http://127.0.0.1:1,") + b.url(), {.ca_file = {}, .token = token()});
  ASSERT_TRUE(after.ok());
  auto teams = after->get("/v1/teams");
  ASSERT_TRUE(teams.ok()) << teams.error().message;
}

}  // namespace
}  // namespace allot::server::server_standby_test
