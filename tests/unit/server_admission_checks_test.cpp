// Admission checks end to end in one process (server/outside/admission_checks.h, admission_checker.h): a real HTTP check
// endpoint on loopback answers ready, retry or reject, or fails, or hangs; the job holds its quota and nodes while
// its replicas wait; the built-in capacity plan check; bad input; roles; a restart and a snapshot in the middle.
#include <condition_variable>
#include <mutex>

#include "core/model/plans.h"
#include "server/outside/admission_checks.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_admission_checks_test {
namespace {

using nlohmann::json;

// A check endpoint on a free loopback port: records every ask, answers with `reply` (status and body), and while
// held keeps each request waiting (a hanging endpoint) until released.
class CheckEndpoint {
 public:
  CheckEndpoint() {
    http_.Post("/check", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      asks_.push_back(json::parse(req.body, nullptr, false));
      cv_.notify_all();
      cv_.wait(lock, [this] { return !held_ || stopping_; });
      res.status = status_;
      res.set_content(body_, "application/json");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
  }
  ~CheckEndpoint() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    http_.stop();
    thread_.join();
  }
  void reply(int status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  void answer(const std::string& state, const std::string& message = "") {
    reply(200, json{{"state", state}, {"message", message}}.dump());
  }
  void hold(bool held) {
    std::lock_guard lock(mu_);
    held_ = held;
    cv_.notify_all();
  }
  std::vector<json> asks() {
    std::lock_guard lock(mu_);
    return asks_;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/check"; }

 private:
  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> asks_;
  int status_ = 503;
  std::string body_ = "not yet";
  bool held_ = false;
  bool stopping_ = false;
};

class ServerAdmissionChecks : public ServerTest {
 protected:
  void SetUp() override {
    options_.admission_checks.backoff = std::chrono::milliseconds(20);
    options_.admission_checks.backoff_max = std::chrono::milliseconds(80);
    options_.admission_checks.connect_timeout = std::chrono::milliseconds(1000);
    options_.admission_checks.timeout = std::chrono::milliseconds(300);
    ServerTest::SetUp();
    small_cluster();
  }
  Response put_check(const std::string& name, const json& body) { return put("/v1/admission-checks/" + name, body.dump()); }
  void http_check(const std::string& name, const std::string& url, const json& extra = json::object()) {
    json body = {{"kind", "http"}, {"url", url}};
    body.update(extra);
    auto r = put_check(name, body);
    ASSERT_EQ(r.status, 201) << r.body;
  }
  json job_view(const std::string& name) { return get("/v1/jobs/" + name).json; }
  // The checks the job's replicas wait for, by name.
  std::vector<std::string> waits(const std::string& name) {
    std::vector<std::string> out;
    for (const auto& w : job_view(name).value("waits_for_checks", json::array())) out.push_back(w["check"]);
    return out;
  }
  httplib::Client as(const std::string& token) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_bearer_token_auth(token.c_str());
    c.set_read_timeout(30, 0);
    return c;
  }
  std::string token(const json& body) {
    auto t = post("/v1/tokens", body);
    EXPECT_EQ(t.status, 201) << t.body;
    return t.json.value("token", "");
  }
};

TEST_F(ServerAdmissionChecks, AReadyAnswerLetsTheHeldRunStartWhileItsQuotaStaysHeld) {
  CheckEndpoint ep;
  http_check("budget", ep.url(), {{"teams", {"a"}}});
  auto r = post("/v1/jobs", job("train", "a", 2));
  ASSERT_EQ(r.status, 201) << r.body;
  // Admitted and placed: Running on both nodes, so the team's quota and the nodes are its; its replicas wait.
  const json v = job_view("train");
  EXPECT_EQ(v["state"], "Running");
  EXPECT_EQ(v["nodes"].size(), 2u);
  EXPECT_EQ(waits("train"), std::vector<std::string>{"budget"});
  // The endpoint was asked with the job's summary; it answers nothing usable yet (503): the job keeps waiting.
  ASSERT_TRUE(eventually([&] { return !ep.asks().empty(); }));
  const json ask = ep.asks().front();
  EXPECT_EQ(ask["check"], "budget");
  EXPECT_EQ(ask["job"], "train");
  EXPECT_EQ(ask["team"], "a");
  EXPECT_EQ(ask["replicas"], 2);
  EXPECT_EQ(ask["accelerators"], 2);
  ASSERT_TRUE(eventually([&] { return job_view("train")["waits_for_checks"][0].contains("error"); }));
  EXPECT_NE(job_view("train")["waits_for_checks"][0]["error"].get<std::string>().find("HTTP 503"), std::string::npos);
  // Another job of the team finds no room: the held run keeps what it was given.
  r = post("/v1/jobs", job("second", "a", 1));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_NE(job_view("second")["state"], "Running");
  ep.answer("ready", "within budget");
  ASSERT_TRUE(eventually([&] { return waits("train").empty(); }));
  EXPECT_EQ(job_view("train")["state"], "Running");
  // The answer is journaled: an event says so.
  auto ev = get("/v1/events?since=0");
  EXPECT_NE(ev.body.find("admission check budget answered ready"), std::string::npos) << ev.body;
}

TEST_F(ServerAdmissionChecks, AnAgentIsGivenTheReplicasOnlyOnceEveryCheckSaidReady) {
  auto reg = post("/v1/agents/register", json{{"name", "g1"}, {"instance_type", "g5.8xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}});
  ASSERT_EQ(reg.status, 200) << reg.body;
  ASSERT_EQ(post("/v1/nodes/n1/cordon").status, 200);
  ASSERT_EQ(post("/v1/nodes/n2/cordon").status, 200);
  CheckEndpoint ep;
  http_check("budget", ep.url());
  auto r = post("/v1/jobs", job("solo", "a", 1));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(job_view("solo")["nodes"][0], "g1");
  auto run_of = [&] {
    auto hb = post("/v1/agents/g1/heartbeat", json{{"replicas", json::array()}});
    EXPECT_EQ(hb.status, 200) << hb.body;
    return hb.json["run"];
  };
  EXPECT_TRUE(run_of().empty()) << "the run waits for check budget";
  ep.answer("ready");
  ASSERT_TRUE(eventually([&] { return !run_of().empty(); }));
  EXPECT_EQ(run_of()[0]["job"], "solo");
}

TEST_F(ServerAdmissionChecks, ARejectEndsTheJobFailedWithTheChecksMessage) {
  CheckEndpoint ep;
  ep.answer("reject", "team a is over its monthly budget");
  http_check("budget", ep.url());
  auto r = post("/v1/jobs", job("train"));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(eventually([&] { return job_view("train")["state"] == "Failed"; }));
  const json v = job_view("train");
  EXPECT_EQ(v["reason_code"], "admission_check_rejected");
  EXPECT_NE(v["reason"].get<std::string>().find("team a is over its monthly budget"), std::string::npos) << v["reason"];
  // Its quota is free again: the next job runs (and is asked in turn).
  ep.answer("ready");
  r = post("/v1/jobs", job("next", "a", 2));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(eventually([&] { return job_view("next")["state"] == "Running" && waits("next").empty(); }));
}

TEST_F(ServerAdmissionChecks, ARetryRequeuesTheJobWithABackoffWithoutUsingARetry) {
  options_.admission_checks.retry_backoff_s = 30;
  restart();
  CheckEndpoint ep;
  ep.answer("retry", "the budget service is being reconciled");
  http_check("budget", ep.url());
  auto r = post("/v1/jobs", json{{"name", "train"}, {"team", "a"}, {"replicas", 1}, {"max_retries", 0},
                                 {"per_replica", {{"accelerators", 1}}}, {"command", "sleep 1"}});
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(eventually([&] { return job_view("train")["reason_code"] == "admission_check_retry"; }));
  json v = job_view("train");
  EXPECT_EQ(v["state"], "Suspended");
  EXPECT_NE(v["reason"].get<std::string>().find("backoff 30 s"), std::string::npos) << v["reason"];
  // The backoff holds it; once past it, it is admitted again and asked again for its new run.
  ep.answer("ready");
  advance(std::chrono::seconds(10));
  EXPECT_EQ(job_view("train")["state"], "Suspended");
  advance(std::chrono::seconds(25));
  ASSERT_TRUE(eventually([&] { return job_view("train")["state"] == "Running" && waits("train").empty(); }));
  const auto asks = ep.asks();
  ASSERT_GE(asks.size(), 2u);
  EXPECT_GT(asks.back()["attempt"].get<int>(), asks.front()["attempt"].get<int>());
  // Not a failure of its code: max_retries 0 and still it runs.
  EXPECT_EQ(job_view("train")["restarts"], 0);
}

TEST_F(ServerAdmissionChecks, AnEndpointDownOrHangingKeepsTheJobWaitingWithAGrowingBackoff) {
  CheckEndpoint hanging;
  hanging.hold(true);
  http_check("slow", hanging.url());
  http_check("down", "http://127.0.0.1:1/check");
  auto r = post("/v1/jobs", job("train"));
  ASSERT_EQ(r.status, 201) << r.body;
  // Both fail, again and again; the job keeps waiting for both and says why.
  ASSERT_TRUE(eventually([&] {
    const json w = job_view("train").value("waits_for_checks", json::array());
    return w.size() == 2 && w[0].value("tries", 0) >= 2 && w[1].value("tries", 0) >= 3;
  }));
  const json w = job_view("train")["waits_for_checks"];
  EXPECT_EQ(w[0]["check"], "down");
  EXPECT_NE(w[0]["error"].get<std::string>().find("no answer"), std::string::npos) << w[0];
  EXPECT_EQ(w[1]["check"], "slow");
  EXPECT_EQ(job_view("train")["state"], "Running");
  // The writer never waited on the hanging endpoint: a submission is answered meanwhile.
  r = post("/v1/jobs", job("other", "b"));
  EXPECT_EQ(r.status, 201) << r.body;
  // Deleting a check ends the wait on it; the other still holds the run.
  ASSERT_EQ(del("/v1/admission-checks/down").status, 204);
  EXPECT_EQ(waits("train"), std::vector<std::string>{"slow"});
  ASSERT_EQ(del("/v1/admission-checks/slow").status, 204);
  EXPECT_TRUE(waits("train").empty());
  hanging.hold(false);
}

TEST_F(ServerAdmissionChecks, MetricsCountTheRunsWaitingPerCheckAndTheTries) {
  CheckEndpoint endpoint;  // answers 503 until told otherwise
  http_check("gate", endpoint.url());
  http_check("other-team", "http://127.0.0.1:1/check", {{"teams", {"b"}}});
  EXPECT_EQ(metric("allot_admission_check_waiting_runs{check=\"gate\"}"), "0");
  ASSERT_EQ(post("/v1/jobs", job("train")).status, 201);
  // Failed tries are counted while the run waits; the check of another team has its series at 0 and is not asked.
  ASSERT_TRUE(eventually([&] {
    const std::string failed = metric("allot_admission_check_tries_total{result=\"failed\"}");
    return !failed.empty() && std::stoi(failed) >= 2;
  }));
  EXPECT_EQ(metric("allot_admission_check_waiting_runs{check=\"gate\"}"), "1");
  EXPECT_EQ(metric("allot_admission_check_waiting_runs{check=\"other-team\"}"), "0");
  EXPECT_EQ(metric("allot_admission_check_asks"), "1");
  EXPECT_EQ(metric("allot_admission_check_tries_total{result=\"answered\"}"), "0");
  endpoint.answer("ready");
  ASSERT_TRUE(eventually([&] { return metric("allot_admission_check_waiting_runs{check=\"gate\"}") == "0"; }));
  // The asking thread counts the try once the writer has taken the answer, so the count may trail the gauge a little.
  EXPECT_TRUE(eventually([&] { return metric("allot_admission_check_tries_total{result=\"answered\"}") == "1"; }))
      << metric("allot_admission_check_tries_total{result=\"answered\"}");
  ASSERT_TRUE(eventually([&] { return metric("allot_admission_check_asks") == "0"; }));
}

TEST_F(ServerAdmissionChecks, AWaitingJobStillWaitsAfterARestartAndIsAskedAgain) {
  options_.snapshot_min_records = 1;
  options_.snapshot_every_records = 1;
  restart();
  auto ep = std::make_unique<CheckEndpoint>();
  http_check("budget", ep->url(), {{"priority_classes", {"high"}}, {"description", "finance"}});
  auto r = post("/v1/jobs", json{{"name", "urgent"}, {"team", "a"}, {"priority", "high"}, {"replicas", 1},
                                 {"per_replica", {{"accelerators", 1}}}, {"command", "sleep 1"}});
  ASSERT_EQ(r.status, 201) << r.body;
  r = post("/v1/jobs", json{{"name", "casual"}, {"team", "b"}, {"priority", "low"}, {"replicas", 1},
                            {"per_replica", {{"accelerators", 1}}}, {"command", "sleep 1"}});
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(waits("urgent"), std::vector<std::string>{"budget"});
  EXPECT_TRUE(waits("casual").empty()) << "its priority class is not the check's";
  ASSERT_TRUE(eventually([&] { return ep->asks().size() >= 1; }));
  ASSERT_TRUE(eventually([&] { return server_->stats().snapshots_written >= 1; }));
  restart();
  // The check, and the wait, came back from the snapshot and the journal; the endpoint is asked again.
  auto list = get("/v1/admission-checks");
  ASSERT_EQ(list.json.size(), 1u) << list.body;
  EXPECT_EQ(list.json[0]["priority_classes"], json::array({"high"}));
  EXPECT_EQ(list.json[0]["description"], "finance");
  EXPECT_EQ(waits("urgent"), std::vector<std::string>{"budget"});
  const size_t before = ep->asks().size();
  ASSERT_TRUE(eventually([&] { return ep->asks().size() > before; }));
  ep->answer("ready");
  ASSERT_TRUE(eventually([&] { return waits("urgent").empty(); }));
  // Ready is journaled: after another restart the run is not held again.
  ep.reset();
  restart();
  EXPECT_TRUE(waits("urgent").empty());
  EXPECT_EQ(job_view("urgent")["state"], "Running");
}

TEST_F(ServerAdmissionChecks, ACheckMadeWhileJobsRunDoesNotHoldThem) {
  auto r = post("/v1/jobs", job("early"));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(eventually([&] { return job_view("early")["state"] == "Running"; })) << job_view("early");
  CheckEndpoint ep;
  http_check("budget", ep.url());
  EXPECT_TRUE(waits("early").empty());
  restart();
  EXPECT_TRUE(waits("early").empty()) << "also after a restart";
  r = post("/v1/jobs", job("late"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(waits("late"), std::vector<std::string>{"budget"});
}

TEST_F(ServerAdmissionChecks, TheCapacityPlanCheckRejectsAJobOnNoPlan) {
  auto r = put_check("on-plan", {{"kind", "capacity_plan_active"}, {"teams", {"a"}}});
  ASSERT_EQ(r.status, 201) << r.body;
  r = post("/v1/jobs", job("anywhere"));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(eventually([&] { return job_view("anywhere")["state"] == "Failed"; }));
  EXPECT_EQ(job_view("anywhere")["reason_code"], "admission_check_rejected");
  EXPECT_NE(job_view("anywhere")["reason"].get<std::string>().find("names no capacity plan"), std::string::npos);
  // Team b is not the check's: its job runs.
  r = post("/v1/jobs", job("free", "b"));
  ASSERT_EQ(r.status, 201) << r.body;
  // Eventually: under load a scheduling pass may be paced a few milliseconds after the batch (writer.h).
  EXPECT_TRUE(eventually([&] { return job_view("free")["state"] == "Running"; })) << job_view("free");
  EXPECT_TRUE(waits("free").empty());
}

TEST(AdmissionCheckRules, TheCapacityPlanCheckWaitsForThePlanThenSaysReady) {
  ClusterState s(Catalog::builtin());
  ASSERT_TRUE(add_plan(s, PlanSpec{"reserved", "ml.g5.8xlarge", 1, 1000, 9000, 100, "", {}}).ok());
  Job j;
  j.spec.plan = "reserved";
  EXPECT_FALSE(capacity_plan_answer(s, j)) << "Scheduled: it waits";
  ASSERT_TRUE(apply_plan_step(s, s.find_plan("reserved")->id, PlanState::kActive, 1000));
  auto a = capacity_plan_answer(s, j);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->answer, store::CheckAnswer::kReady);
  j.spec.plan = "gone";
  a = capacity_plan_answer(s, j);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->answer, store::CheckAnswer::kReject);
}

TEST(AdmissionCheckRules, AnAnswerIsAJsonObjectWithAState) {
  auto a = parse_check_reply(R"({"state": "retry", "message": "later\nplease"})");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->first, store::CheckAnswer::kRetry);
  EXPECT_EQ(a->second, "later please");
  EXPECT_FALSE(parse_check_reply("ok"));
  EXPECT_FALSE(parse_check_reply(R"({"state": "maybe"})"));
  EXPECT_FALSE(parse_check_reply(R"({"message": "no state"})"));
  EXPECT_FALSE(parse_check_reply(R"({"state": "ready", "message": 3})"));
  AdmissionCheckOptions o;
  o.retry_backoff_s = 10;
  o.retry_backoff_max_s = 60;
  EXPECT_EQ(check_retry_backoff_s(0, o), 10);
  EXPECT_EQ(check_retry_backoff_s(2, o), 40);
  EXPECT_EQ(check_retry_backoff_s(9, o), 60);
}

TEST_F(ServerAdmissionChecks, BadInputIsRefusedWithWhatWhereAndWhatIsAllowed) {
  struct Case {
    std::string name;
    json body;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"budget", json::object(), 400, "kind is required (allowed: capacity_plan_active, http)"},
      {"budget", {{"kind", "maybe"}}, 400, "kind 'maybe' is not allowed (allowed: capacity_plan_active, http)"},
      {"budget", {{"kind", "http"}}, 400, "url is required for kind http"},
      {"budget", {{"kind", "http"}, {"url", "ftp://x/y"}}, 400, "only http and https are allowed"},
      {"budget", {{"kind", "capacity_plan_active"}, {"url", "http://x/y"}}, 400, "url is for kind http only"},
      {"budget", {{"kind", "http"}, {"url", "http://x/y"}, {"teams", "a"}}, 400, "teams must be a list of team names"},
      {"budget", {{"kind", "http"}, {"url", "http://x/y"}, {"teams", {"nobody"}}}, 404, "no team named nobody"},
      {"budget", {{"kind", "http"}, {"url", "http://x/y"}, {"priority_classes", {"vip"}}}, 404, "no priority class named vip"},
      {"budget", {{"kind", "http"}, {"url", "http://x/y"}, {"color", "red"}}, 400, "color"},
      {"Bad_Name", {{"kind", "capacity_plan_active"}}, 400, "1..63 lowercase letters"},
  };
  for (const auto& c : cases) {
    auto r = put_check(c.name, c.body);
    EXPECT_EQ(r.status, c.status) << c.body << ": " << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.body << ": " << r.body;
  }
  EXPECT_EQ(get("/v1/admission-checks").json, json::array()) << "nothing was made";
  EXPECT_EQ(del("/v1/admission-checks/budget").status, 404);
}

TEST_F(ServerAdmissionChecks, AdminsWriteViewersReadAllMembersReadTheirTeamsChecks) {
  ASSERT_EQ(put_check("for-a", {{"kind", "http"}, {"url", "http://check.example.com/a"}, {"teams", {"a"}}}).status, 201);
  ASSERT_EQ(put_check("for-b", {{"kind", "http"}, {"url", "http://check.example.com/b"}, {"teams", {"b"}}}).status, 201);
  ASSERT_EQ(put_check("for-all", {{"kind", "capacity_plan_active"}}).status, 201);
  // Replacing answers 200.
  EXPECT_EQ(put_check("for-all", {{"kind", "capacity_plan_active"}, {"description", "plans only"}}).status, 200);
  auto member = as(token({{"role", "member"}, {"teams", {"a"}}}));
  auto viewer = as(token({{"role", "viewer"}}));
  auto m = member.Get("/v1/admission-checks");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  const json seen = json::parse(m->body);
  ASSERT_EQ(seen.size(), 2u) << m->body;
  EXPECT_EQ(seen[0]["name"], "for-a");
  EXPECT_EQ(seen[1]["name"], "for-all");
  EXPECT_FALSE(seen[0].contains("url")) << "a member does not read URLs";
  auto v = viewer.Get("/v1/admission-checks");
  ASSERT_TRUE(v);
  EXPECT_EQ(json::parse(v->body).size(), 3u);
  EXPECT_EQ(json::parse(v->body)[0]["url"], "http://check.example.com/a");
  auto put_m = member.Put("/v1/admission-checks/mine", R"({"kind": "capacity_plan_active"})", "application/json");
  ASSERT_TRUE(put_m);
  EXPECT_EQ(put_m->status, 403);
  auto del_v = viewer.Delete("/v1/admission-checks/for-a");
  ASSERT_TRUE(del_v);
  EXPECT_EQ(del_v->status, 403);
  EXPECT_EQ(get("/v1/admission-checks").json.size(), 3u);
}

}  // namespace
}  // namespace allot::server::test::server_admission_checks_test
