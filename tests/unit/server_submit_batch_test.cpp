// Issue 28 on the server: a server-side dry run of a submission (the same answer, nothing journaled), a list of
// jobs submitted all or nothing, a team's default request for a pod set that asks for nothing, JOB_COMPLETION_INDEX,
// and instance types from the policy file.
#include "server_test_fixture.h"

#include "config/spec_yaml.h"
#include "view/instance_type_json.h"

namespace allot::server::test::server_submit_batch_test {
namespace {

using nlohmann::json;

class ServerSubmit : public ServerTest {};

size_t submits(const store::MemStore& m) {
  size_t n = 0;
  for (const auto& r : m.records()) n += std::holds_alternative<store::Submit>(r.op);
  return n;
}

TEST_F(ServerSubmit, DryRunAnswersAsTheSubmissionWouldAndJournalsNothing) {
  small_cluster();
  json j = job("d1");
  j["priority"] = "high";
  const size_t records = journal_->records().size();
  auto dry = post("/v1/jobs?dry_run=true", j);
  ASSERT_EQ(dry.status, 200) << dry.body;
  EXPECT_EQ(dry.json["name"], "d1");
  EXPECT_EQ(dry.json["team"], "a");
  EXPECT_EQ(dry.json["priority"], "high");
  EXPECT_EQ(dry.json["priority_weight"], 90);
  EXPECT_EQ(dry.json["state"], "Pending");
  EXPECT_EQ(journal_->records().size(), records) << "a dry run journals nothing";
  EXPECT_EQ(get("/v1/jobs/d1").status, 404) << "a dry run submits nothing";

  // Refusals are the submission's: the same status and message.
  json unknown = job("d2", "nobody");
  auto real_refusal = post("/v1/jobs", unknown);
  auto dry_refusal = post("/v1/jobs?dry_run=true", unknown);
  EXPECT_EQ(dry_refusal.status, real_refusal.status);
  EXPECT_EQ(dry_refusal.json["error"], real_refusal.json["error"]);
  json bad_class = job("d3");
  bad_class["priority"] = "urgent";
  EXPECT_EQ(post("/v1/jobs?dry_run=true", bad_class).status, 400);
  ASSERT_EQ(post("/v1/jobs", job("taken")).status, 201);
  EXPECT_EQ(post("/v1/jobs?dry_run=true", job("taken")).status, 409);
  EXPECT_EQ(post("/v1/jobs?dry_run=maybe", job("d4")).status, 400);
}

TEST_F(ServerSubmit, AListIsSubmittedAllOrNothing) {
  small_cluster();
  const size_t before = submits(*journal_);
  // The second job names a team that does not exist: neither is submitted.
  auto refused = post("/v1/jobs", json{{"jobs", json::array({job("l1"), job("l2", "nobody")})}});
  ASSERT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.json["error"]["message"].get<std::string>().find("job l2"), std::string::npos) << refused.body;
  EXPECT_EQ(get("/v1/jobs/l1").status, 404);
  // Two jobs of one name in one list: the second is refused, and so the first too.
  EXPECT_EQ(post("/v1/jobs", json{{"jobs", json::array({job("same"), job("same")})}}).status, 409);
  EXPECT_EQ(get("/v1/jobs/same").status, 404);
  EXPECT_EQ(submits(*journal_), before);
  // A dry run of a list checks every job the same way.
  auto dry = post("/v1/jobs?dry_run=true", json{{"jobs", json::array({job("l1"), job("l2", "b")})}});
  ASSERT_EQ(dry.status, 200) << dry.body;
  ASSERT_TRUE(dry.json.is_array());
  EXPECT_EQ(dry.json.size(), 2u);
  EXPECT_EQ(submits(*journal_), before);

  auto ok = post("/v1/jobs", json{{"jobs", json::array({job("l1"), job("l2", "b")})}});
  ASSERT_EQ(ok.status, 201) << ok.body;
  ASSERT_TRUE(ok.json.is_array());
  EXPECT_EQ(ok.json[0]["name"], "l1");
  EXPECT_EQ(ok.json[1]["name"], "l2");
  EXPECT_EQ(submits(*journal_), before + 2);
  EXPECT_EQ(post("/v1/jobs", json{{"jobs", json::array()}}).status, 400);
  EXPECT_EQ(post("/v1/jobs", json::array({job("l3")})).status, 400);  // a bare list is not a job spec
}

// A list is one writer command and so one journal transaction: a write that fails half-way (a disk that fills up
// after the first record) keeps none of its jobs, and the state is rebuilt from the journal without them.
TEST_F(ServerSubmit, AListWhoseWriteFailsKeepsNoJob) {
  small_cluster();
  journal_->fail_next_appends(1);
  auto failed = post("/v1/jobs", json{{"jobs", json::array({job("w1"), job("w2", "b")})}});
  EXPECT_GE(failed.status, 500) << failed.body;
  EXPECT_EQ(get("/v1/jobs/w1").status, 404);
  EXPECT_EQ(get("/v1/jobs/w2").status, 404);
  restart();
  EXPECT_EQ(get("/v1/jobs/w1").status, 404);
  auto ok = post("/v1/jobs", json{{"jobs", json::array({job("w1"), job("w2", "b")})}});
  EXPECT_EQ(ok.status, 201) << ok.body;
}

TEST_F(ServerSubmit, DryRunNeedsTheRightsASubmissionNeeds) {
  small_cluster();
  const std::string member = bearer({{"role", "member"}, {"teams", {"b"}}});
  auto r = post_as(member, "/v1/jobs?dry_run=true", job("x", "a"));
  EXPECT_EQ(r.status, 403) << r.body;
  r = post_as(member, "/v1/jobs?dry_run=true", job("x", "b"));
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(ServerSubmit, APodSetThatAsksForNothingGetsTheTeamsDefaultRequest) {
  small_cluster();
  json bare = {{"name", "bare"}, {"team", "a"}, {"replicas", 1}, {"command", "sleep 1"}};
  auto refused = post("/v1/jobs", bare);
  ASSERT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.json["error"]["message"].get<std::string>().find("team a has no default_request"), std::string::npos) << refused.body;
  auto put_team = put("/v1/teams/a", R"({"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}],
                                          "default_request": {"accelerators": 1, "vcpu": 4}})");
  ASSERT_EQ(put_team.status, 200) << put_team.body;
  EXPECT_EQ(get("/v1/teams/a").json["default_request"], json({{"accelerators", 1}, {"vcpu", 4}}));
  auto ok = post("/v1/jobs", bare);
  ASSERT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(ok.json["pod_sets"][0]["per_replica"], json({{"accelerators", 1}, {"vcpu", 4}}));
  // The request stays the job's after a restart (replayed from the journal).
  restart();
  EXPECT_EQ(get("/v1/jobs/bare").json["pod_sets"][0]["per_replica"], json({{"accelerators", 1}, {"vcpu", 4}}));
}

// instance types from the policy file (`allot server --instance-types`): nodes of such a type join, and a restart
// with the same catalog replays them; a restart without the type names it.
TEST_F(ServerSubmit, PolicyFileInstanceTypes) {
  stop();
  const std::string path = (data_dir_ / "types.yaml").string();
  std::filesystem::create_directories(data_dir_);
  std::ofstream(path) << "instance_types:\n  - {name: ml.lab.cpu16, vcpus: 16, memory_gib: 64}\n";
  auto catalog = load_catalog(path);
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  options_.catalog = *catalog;
  start();
  // GET /v1/instance-types lists them all, as the CLI reads them back (view/instance_type_json.h).
  auto types = get("/v1/instance-types");
  ASSERT_EQ(types.status, 200) << types.body;
  EXPECT_EQ(types.json.size(), catalog->size());
  bool lab = false;
  for (const auto& t : types.json) {
    auto back = view::instance_type_from_json(t);
    ASSERT_TRUE(back.ok()) << back.error().message;
    auto id = catalog->find(back->name);
    ASSERT_TRUE(id.has_value()) << back->name;
    EXPECT_EQ(fact_differences(*back, catalog->at(*id)), "") << back->name;
    lab |= back->name == "ml.lab.cpu16";
  }
  EXPECT_TRUE(lab);
  auto r = post("/v1/nodes", R"([{"name": "lab-1", "instance_type": "ml.lab.cpu16"}])");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(post("/v1/nodes", R"([{"name": "p-1", "instance_type": "ml.nope.1"}])").status, 400);
  restart();
  EXPECT_EQ(get("/v1/nodes/lab-1").status, 200);
  stop();
  options_.catalog = Catalog::builtin();
  auto s = Server::open(options_, std::make_unique<SharedStore>(journal_));
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto st = (*s)->start();
  ASSERT_FALSE(st.ok()) << "a journal that names a type the catalog lacks must stop the start";
  EXPECT_NE(st.error().message.find("ml.lab.cpu16"), std::string::npos) << st.error().message;
  options_.catalog = *catalog;
  start();  // for TearDown
}

}  // namespace
}  // namespace allot::server::test::server_submit_batch_test
