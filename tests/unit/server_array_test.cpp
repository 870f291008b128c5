// Job arrays in the server (core/model/array.h; docs/jobs.md, "Arrays"): one submission makes its tasks in one journal
// batch, at most `parallel` run and the rest wait with reason array_throttle, each replica gets its index in the
// environment, a failing task retries on its own, listings summarise the array, describe shows it, cancel and
// delete act on every task, roles are a job's, a restart keeps everything, and a write that fails mid-submission
// leaves no task behind.
#include "server/views/wait_category.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_array_test {
namespace {

using nlohmann::json;

class ServerArray : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    // Two nodes of 4 GPUs each: room for 8 one-GPU tasks, so only the throttle keeps tasks waiting.
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 2}]},
                                             {"name": "b"}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const char* n : {"g1", "g2"}) {
      auto reg = post("/v1/agents/register", json{{"name", n}, {"instance_type", "ml.g5.12xlarge"}, {"address", "10.0.0.1"}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
  }
  static json array_spec(const std::string& name, int count, std::optional<int> parallel, int max_retries = 0) {
    json a = {{"count", count}};
    if (parallel) a["parallel"] = *parallel;
    return {{"name", name},        {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}},
            {"max_retries", max_retries}, {"array", a}};
  }
  json job(const std::string& name) { return get("/v1/jobs/" + name).json; }
  // The run list entries of every node for the job, from a heartbeat that reports nothing new.
  std::vector<json> runs_of(const std::string& job) {
    std::vector<json> out;
    for (const char* n : {"g1", "g2"}) {
      auto hb = post(std::string("/v1/agents/") + n + "/heartbeat", json{{"replicas", json::array()}});
      EXPECT_EQ(hb.status, 200) << hb.body;
      for (const auto& a : hb.json["run"])
        if (a["job"] == job) out.push_back(a);
    }
    return out;
  }
  // The agent running the job's replica reports it exited with `code`.
  void exits(const std::string& job, int code) {
    for (const char* n : {"g1", "g2"}) {
      auto hb = post(std::string("/v1/agents/") + n + "/heartbeat", json{{"replicas", json::array()}});
      ASSERT_EQ(hb.status, 200) << hb.body;
      for (const auto& a : hb.json["run"]) {
        if (a["job"] != job) continue;
        auto r = post(std::string("/v1/agents/") + n + "/heartbeat",
                      json{{"replicas", json::array({{{"job", job}, {"rank", 0}, {"state", "exited"}, {"exit_code", code},
                                                      {"attempt", a["attempt"]}}})}});
        ASSERT_EQ(r.status, 200) << r.body;
        return;
      }
    }
    FAIL() << job << " is in no node's run list";
  }
  int running_tasks(const std::string& array) {
    int n = 0;
    for (const auto& j : list_jobs("arrays=tasks"))
      n += j.contains("array") && j["array"]["name"] == array && j["state"] == "Running";
    return n;
  }
  size_t submit_records() {
    size_t n = 0;
    for (const auto& r : journal_->records()) n += std::holds_alternative<store::Submit>(r.op);
    return n;
  }
};

TEST_F(ServerArray, OneSubmissionThrottledTasksWithTheirIndexSummarisedAndRestored) {
  const size_t submits = submit_records(), appends = journal_->appends();
  auto r = post("/v1/jobs", array_spec("sweep", 10, 3, /*max_retries=*/1));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json["kind"], "array");
  EXPECT_EQ(r.json["array"], json::parse(R"({"count": 10, "parallel": 3})"));
  EXPECT_EQ(r.json["tasks"]["Running"], 3) << r.body;
  EXPECT_EQ(r.json["tasks"]["Pending"], 7) << r.body;
  EXPECT_EQ(r.json["summary"], "3 running, 7 pending");
  // One record per task, all in the submission's one batch (the pass's admissions join the same batch).
  EXPECT_EQ(submit_records() - submits, 10u);
  EXPECT_EQ(journal_->appends() - appends, 1u);

  // Tasks 0..2 run (lowest index first); the rest wait for the throttle, and not for capacity (there is room for 8).
  for (int i = 0; i < 3; ++i) EXPECT_EQ(job("sweep-" + std::to_string(i))["state"], "Running") << i;
  json t = job("sweep-5");
  EXPECT_EQ(t["state"], "Pending");
  EXPECT_EQ(t["reason_code"], "array_throttle");
  EXPECT_EQ(t["reason"], "waiting: array sweep admits at most 3 of its tasks at once (parallel), and 3 of them are running or ahead of this one");
  EXPECT_EQ(t["array"], json::parse(R"({"name": "sweep", "index": 5, "count": 10, "parallel": 3})"));
  EXPECT_EQ(wait_category(ReasonCode::kArrayThrottle, true), WaitCategory::kArrayThrottle);

  // Every replica of task i gets its index and the count.
  auto runs = runs_of("sweep-2");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["env"]["ALLOT_ARRAY_INDEX"], "2");
  EXPECT_EQ(runs[0]["env"]["ALLOT_ARRAY_COUNT"], "10");
  EXPECT_EQ(runs[0]["env"]["JOB_COMPLETION_INDEX"], "2");

  // Listings: one item for the array, or every task.
  json summary = list_jobs("arrays=summary");
  ASSERT_EQ(summary.size(), 1u) << summary.dump();
  EXPECT_EQ(summary[0]["name"], "sweep");
  EXPECT_EQ(summary[0]["state"], "Running");
  EXPECT_EQ(list_jobs().size(), 10u) << "the default lists tasks as the jobs they are";
  EXPECT_EQ(list_jobs("arrays=summary&state=Pending")[0]["summary"], "7 pending") << "filters count the tasks they keep";
  EXPECT_EQ(get("/v1/jobs?arrays=some").status, 400);
  // describe NAME: the array.
  json d = job("sweep");
  EXPECT_EQ(d["kind"], "array");
  EXPECT_EQ(d["waiting_reason"]["task"], "sweep-3");
  EXPECT_EQ(d["waiting_reason"]["reason_code"], "array_throttle");

  // A task that ends lets the next one in; one that fails retries on its own (max_retries 1), touching no other.
  exits("sweep-0", 0);
  EXPECT_EQ(job("sweep-0")["state"], "Succeeded");
  EXPECT_EQ(job("sweep-3")["state"], "Running");
  exits("sweep-1", 1);
  ASSERT_TRUE(eventually([&] { return job("sweep-1")["restarts"] == 1 && job("sweep-1")["state"] == "Running"; })) << job("sweep-1").dump();
  EXPECT_EQ(job("sweep-2")["restarts"], 0);
  EXPECT_EQ(job("sweep-4")["state"], "Pending") << "the retried task kept its place within the throttle";
  EXPECT_EQ(running_tasks("sweep"), 3);
  exits("sweep-1", 1);
  EXPECT_EQ(job("sweep-1")["state"], "Failed") << "no retries left";
  EXPECT_EQ(job("sweep-4")["state"], "Running");
  EXPECT_EQ(job("sweep")["failed_tasks"], json::array({"sweep-1"}));

  // A restart replays the journal: the array and every task's state as they were.
  const json before = list_jobs("arrays=tasks");
  restart();
  json after = list_jobs("arrays=tasks");
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i]["name"], before[i]["name"]);
    EXPECT_EQ(after[i]["state"], before[i]["state"]) << after[i]["name"];
    EXPECT_EQ(after[i]["restarts"], before[i]["restarts"]) << after[i]["name"];
  }
  EXPECT_EQ(job("sweep")["summary"], "3 running, 5 pending, 1 succeeded, 1 failed");
  EXPECT_EQ(running_tasks("sweep"), 3) << "the throttle holds after the restart";

  // Cancel the array: every active task; delete it: every task, and the names are free again.
  auto c = post("/v1/jobs/sweep/cancel");
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json["summary"], "1 succeeded, 1 failed, 8 cancelled");
  EXPECT_EQ(post("/v1/jobs/sweep/cancel").status, 409) << "nothing left to cancel";
  auto gone = del("/v1/jobs/sweep");
  ASSERT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(get("/v1/jobs/sweep").status, 404);
  EXPECT_EQ(get("/v1/jobs/sweep-3").status, 404);
  EXPECT_TRUE(list_jobs().empty());
  ASSERT_EQ(post("/v1/jobs", array_spec("sweep", 2, std::nullopt)).status, 201) << "the names are free";
  EXPECT_EQ(job("sweep")["array"]["parallel"], 2) << "parallel defaults to count";
  EXPECT_EQ(running_tasks("sweep"), 2);
}

// GET /v1/jobs?array=NAME (the dashboard's Jobs page opening an array): that array's tasks only, in index order,
// under the other filters and paged like any listing (the continue token never leaves the array); an unknown
// array, or another team's for a member, is 404 as reading the array would be; arrays=summary with it is 400.
TEST_F(ServerArray, OneArraysTasksAreListedPagedAndFiltered) {
  ASSERT_EQ(post("/v1/jobs", json{{"name", "before"}, {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}}}).status, 201);
  ASSERT_EQ(post("/v1/jobs", array_spec("sweep", 7, 2)).status, 201);
  ASSERT_EQ(post("/v1/jobs", array_spec("other", 3, 1)).status, 201);
  ASSERT_EQ(post("/v1/jobs", json{{"name", "after"}, {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}}}).status, 201);
  auto names = [](const json& items) {
    std::vector<std::string> out;
    for (const auto& j : items) out.push_back(j["name"]);
    return out;
  };
  const std::vector<std::string> sweep = {"sweep-0", "sweep-1", "sweep-2", "sweep-3", "sweep-4", "sweep-5", "sweep-6"};
  EXPECT_EQ(names(list_jobs("array=sweep")), sweep);
  EXPECT_EQ(names(list_jobs("array=sweep&state=Running")), (std::vector<std::string>{"sweep-0", "sweep-1"}));
  EXPECT_EQ(names(list_jobs("array=sweep&state=Succeeded")), std::vector<std::string>{});
  // Pages of 3: three pages, each of the array's tasks only, and no token after the last.
  std::vector<std::string> paged;
  std::string token;
  int pages = 0;
  do {
    auto r = get("/v1/jobs?array=sweep&limit=3" + (token.empty() ? "" : "&continue=" + token));
    ASSERT_EQ(r.status, 200) << r.body;
    for (const auto& n : names(r.json["items"])) paged.push_back(n);
    token = r.json.value("continue", "");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(paged, sweep);
  EXPECT_EQ(pages, 3);
  // The summary listing still shows each array once, and the tasks' own listing is unchanged.
  EXPECT_EQ(names(list_jobs("arrays=summary")), (std::vector<std::string>{"before", "sweep", "other", "after"}));
  auto unknown = get("/v1/jobs?array=nothing");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_NE(unknown.body.find("nothing"), std::string::npos) << unknown.body;
  EXPECT_EQ(get("/v1/jobs?array=sweep-1").status, 404) << "a task is a job, not an array";
  auto both = get("/v1/jobs?array=sweep&arrays=summary");
  EXPECT_EQ(both.status, 400) << both.body;
  EXPECT_NE(both.body.find("arrays=summary"), std::string::npos) << both.body;
  const std::string b = bearer({{"role", "member"}, {"teams", {"b"}}});
  EXPECT_EQ(get_as(b, "/v1/jobs?array=sweep").status, 404) << "another team's array reads as a missing one";
  const std::string a = bearer({{"role", "member"}, {"teams", {"a"}}});
  auto mine = get_as(a, "/v1/jobs?array=other");
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(names(mine.json["items"]), (std::vector<std::string>{"other-0", "other-1", "other-2"}));
}

TEST_F(ServerArray, BadArraysAreRefusedAndChangeNothing) {
  ASSERT_EQ(post("/v1/jobs", json{{"name", "sweep-4"}, {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}}}).status, 201);
  const size_t submits = submit_records();
  auto refused = [&](const json& body, int status, const std::string& says) {
    auto r = post("/v1/jobs", body);
    EXPECT_EQ(r.status, status) << body.dump() << " -> " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
  };
  refused(array_spec("sweep", 0, std::nullopt), 400, "1..100000");
  refused(array_spec("sweep", 100001, std::nullopt), 400, "1..100000");
  refused(array_spec("sweep", 4, 5), 400, "1..4");
  refused(array_spec("sweep", 4, 0), 400, "1..4");
  json elastic = array_spec("sweep", 4, 2);
  elastic["replicas"] = {{"min", 1}, {"max", 2}};
  refused(elastic, 400, "elastic");
  json extra = array_spec("sweep", 4, 2);
  extra["array"]["index"] = 1;
  refused(extra, 400, "index");
  refused(json{{"jobs", json::array({array_spec("sweep", 2, 1)})}}, 400, "submit an array alone");
  // Task 4's name is taken: nothing of the array is submitted, task 0 included.
  refused(array_spec("sweep", 10, 2), 409, "sweep-4");
  refused(array_spec("sweep-4", 2, 1), 409, "a job of that name exists");
  EXPECT_EQ(get("/v1/jobs/sweep-0").status, 404);
  EXPECT_EQ(submit_records(), submits) << "nothing of a refused array is journaled";
  // Another team's member neither sees nor changes the array; a job of that name is refused too.
  ASSERT_EQ(post("/v1/jobs", array_spec("other", 3, 1)).status, 201);
  const std::string b = bearer({{"role", "member"}, {"teams", {"b"}}});
  EXPECT_EQ(get_as(b, "/v1/jobs/other").status, 404);
  EXPECT_EQ(post_as(b, "/v1/jobs/other/cancel").status, 404);
  EXPECT_EQ(del_as(b, "/v1/jobs/other").status, 404);
  EXPECT_EQ(job("other-0")["state"], "Running");
  const std::string a = bearer({{"role", "member"}, {"teams", {"a"}}});
  EXPECT_EQ(get_as(a, "/v1/jobs/other").status, 200);
  EXPECT_EQ(post("/v1/jobs", json{{"name", "other"}, {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}}}).status, 409);
}

TEST_F(ServerArray, AWriteThatFailsMidSubmissionLeavesNoTask) {
  // The journal has room for fewer records than the array's tasks: the one batch fails whole, as a crash before its
  // commit would leave it (the store's batch is one transaction).
  journal_->fail_after_records(100);
  auto r = post("/v1/jobs", array_spec("big", 1000, 5));
  EXPECT_EQ(r.status, 500) << r.body;
  journal_->make_room();
  restart();
  EXPECT_EQ(get("/v1/jobs/big").status, 404);
  EXPECT_TRUE(list_jobs().empty());
  ASSERT_TRUE(eventually([&] { return post("/v1/jobs", array_spec("big", 1000, 5)).status == 201; }));
  restart();
  json big = job("big");
  EXPECT_EQ(big["task_count"], 1000);
  EXPECT_EQ(big["summary"], "5 running, 995 pending");
}

}  // namespace
}  // namespace allot::server::test::server_array_test
