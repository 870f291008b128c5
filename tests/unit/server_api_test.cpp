// The HTTP API end to end in one process: configuration, jobs, nodes, events, metrics, restart and replay.
#include "server_test_fixture.h"
#include "view/times.h"

namespace allot::server::test::server_api_test {
namespace {

using nlohmann::json;
using ServerApi = ServerTest;

TEST_F(ServerApi, HealthAndPolicyRoundTrip) {
  auto h = get("/v1/health");
  ASSERT_EQ(h.status, 200);
  EXPECT_EQ(h.json["ok"], true);
  small_cluster();
  auto p = get("/v1/policy");
  ASSERT_EQ(p.status, 200);
  EXPECT_EQ(p.json["task_prioritization"], "task-ranking");
  // What GET answers, PUT takes back unchanged.
  auto again = put("/v1/policy", p.body);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json, p.json);
  auto yaml = put("/v1/policy", "task_prioritization: fcfs\nidle_pool: true\npriority_classes: [{name: high, weight: 90}]\n",
                  "application/yaml");
  ASSERT_EQ(yaml.status, 200) << yaml.body;
  EXPECT_EQ(yaml.json["idle_pool"], true);
}

TEST_F(ServerApi, PriorityClasses) {
  small_cluster();
  ASSERT_EQ(put("/v1/priority-classes/urgent", R"({"weight": 100})").status, 200);
  auto list = get("/v1/priority-classes");
  ASSERT_EQ(list.json.size(), 3u);
  auto j = job("j1");
  j["priority"] = "urgent";
  ASSERT_EQ(post("/v1/jobs", j).status, 201);
  auto busy = del("/v1/priority-classes/urgent");
  EXPECT_EQ(busy.status, 409) << busy.body;
  EXPECT_NE(busy.body.find("j1"), std::string::npos);
  ASSERT_EQ(post("/v1/jobs/j1/cancel").status, 200);
  EXPECT_EQ(del("/v1/priority-classes/urgent").status, 204);
  EXPECT_EQ(del("/v1/priority-classes/urgent").status, 404);
}

TEST_F(ServerApi, TeamsPutGetDelete) {
  small_cluster();
  auto t = put("/v1/teams/c", "allocation: [{instance_type: g5.8xlarge, accelerators: 1}]\nfair_share_weight: 5\n", "application/yaml");
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.json["name"], "c");
  EXPECT_EQ(t.json["nominal"]["accelerators"], 1);
  EXPECT_EQ(get("/v1/teams").json.size(), 3u);
  EXPECT_EQ(get("/v1/teams/c").json["fair_share_weight"], 5);
  ASSERT_EQ(post("/v1/jobs", job("a1")).status, 201);
  EXPECT_EQ(del("/v1/teams/a").status, 409);
  EXPECT_EQ(del("/v1/teams/c").status, 204);
  EXPECT_EQ(get("/v1/teams/c").status, 404);
  EXPECT_EQ(get("/v1/teams").json.size(), 2u);
  auto refused = post("/v1/jobs", job("c1", "c"));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("removed"), std::string::npos);
  // A removed team can be created again.
  EXPECT_EQ(put("/v1/teams/c", R"({"allocation": []})").status, 200);
  EXPECT_EQ(post("/v1/jobs", job("c1", "c")).status, 201);
}

// Points in time are RFC 3339 in UTC everywhere in the API (the fixture's clock starts at 1,700,000,000 s,
// 2023-11-14T22:13:20Z); durations stay numbers of seconds.
TEST_F(ServerApi, TimesAreRfc3339) {
  small_cluster();
  advance(std::chrono::milliseconds(5000));
  auto r = post("/v1/jobs", job("j1"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json["submitted_at"], "2023-11-14T22:13:25Z") << r.body;
  // On a loaded machine the pass that starts it may come a batch after the answer (writer.h, the pacing).
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/j1").json["state"] == "Running"; }));
  r = get("/v1/jobs/j1");
  EXPECT_EQ(r.json["started_at"], "2023-11-14T22:13:25Z") << r.body;
  EXPECT_EQ(r.json["work_done_s"], 0);
  // Bound first: a range-for over a member of a temporary answer would read it after it is gone (TSan found it).
  const auto history = get("/v1/jobs/j1").json["history"];
  for (const auto& h : history) EXPECT_EQ(h["at"], "2023-11-14T22:13:25Z") << h;
  EXPECT_EQ(list_jobs()[0]["submitted_at"], "2023-11-14T22:13:25Z");
  const auto events = get("/v1/events?since=0").json["events"];
  for (const auto& e : events) EXPECT_TRUE(view::parse_rfc3339(e["at"].get<std::string>()).ok()) << e;
  auto tokens = get("/v1/tokens").json;
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens[0]["created_at"], "2023-11-14T22:13:20Z") << tokens;
  EXPECT_EQ(get("/v1/dashboard/cluster").json["now"], "2023-11-14T22:13:25Z");
  EXPECT_EQ(get("/v1/dashboard/queue").json["items"].size(), 0u);

  // The audit trail's since: RFC 3339, or Unix seconds as older clients send; anything else is refused.
  auto all = get("/v1/audit");
  ASSERT_EQ(all.status, 200) << all.body;
  ASSERT_FALSE(all.json.empty());
  for (const auto& e : all.json) EXPECT_TRUE(view::parse_rfc3339(e["at"].get<std::string>()).ok()) << e;
  EXPECT_EQ(get("/v1/audit?since=2023-11-14T22:13:20Z").json, all.json);
  auto later = get("/v1/audit?since=2023-11-14T22:13:25Z").json;  // the submission, not the set-up before it
  ASSERT_EQ(later.size(), 1u) << later;
  EXPECT_EQ(later[0]["at"], "2023-11-14T22:13:25Z");
  EXPECT_EQ(get("/v1/audit?since=1700000005").json, later);
  EXPECT_EQ(get("/v1/audit?since=2023-11-14T23:13:26%2B01:00").json.size(), 0u);
  EXPECT_EQ(get("/v1/audit?since=1700000006").json.size(), 0u);
  auto bad = get("/v1/audit?since=yesterday");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("query parameter since: 'yesterday' is not an RFC 3339 time"), std::string::npos) << bad.body;
}

TEST_F(ServerApi, SubmitListGetCancel) {
  small_cluster();
  auto r = post("/v1/jobs", job("j1", "a", 2));
  ASSERT_EQ(r.status, 201) << r.body;
  // The answer comes after the scheduler ran on the batch: the job is already placed.
  EXPECT_EQ(r.json["state"], "Running");
  EXPECT_EQ(r.json["node_count"], 2);
  ASSERT_EQ(post("/v1/jobs", job("j2")).status, 201);
  EXPECT_EQ(get("/v1/jobs/j2").json["state"], "Pending");
  EXPECT_EQ(post("/v1/jobs", job("j1")).status, 409);

  auto all = list_jobs();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_FALSE(all[0].contains("history"));
  EXPECT_EQ(list_jobs("state=Running").size(), 1u);
  EXPECT_EQ(list_jobs("team=b").size(), 0u);
  EXPECT_EQ(get("/v1/jobs?team=nobody").status, 404);
  EXPECT_EQ(get("/v1/jobs?state=Sleeping").status, 400);

  auto one = get("/v1/jobs/j2");
  ASSERT_EQ(one.status, 200);
  EXPECT_TRUE(one.json.contains("history"));
  EXPECT_FALSE(one.json["reason"].get<std::string>().empty());
  EXPECT_EQ(get("/v1/jobs/nope").status, 404);

  auto c = post("/v1/jobs/j1/cancel");
  ASSERT_EQ(c.status, 200);
  EXPECT_EQ(c.json["state"], "Cancelled");
  EXPECT_EQ(get("/v1/jobs/j2").json["state"], "Running") << "the freed nodes go to the waiting job";
  EXPECT_EQ(post("/v1/jobs/j1/cancel").status, 409);
  EXPECT_EQ(post("/v1/jobs/nope/cancel").status, 404);
}

TEST_F(ServerApi, ApplyIsAllOrNothing) {
  small_cluster();
  auto before = get("/v1/teams").json;
  auto policy_before = get("/v1/policy").json;
  auto r = post("/v1/apply", R"({"policy": {"task_prioritization": "fcfs"},
                                 "teams": [{"name": "a", "fair_share_weight": 50},
                                           {"name": "z", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
                                            "fair_share_weight": 101}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("fair_share_weight"), std::string::npos) << r.body;
  EXPECT_EQ(get("/v1/teams").json, before);
  EXPECT_EQ(get("/v1/policy").json, policy_before);
  // Valid teams with a policy the live state refuses (an active job uses the class it drops): nothing applies.
  auto j = job("hi");
  j["priority"] = "high";
  ASSERT_EQ(post("/v1/jobs", j).status, 201);
  before = get("/v1/teams").json;
  r = post("/v1/apply", R"({"policy": {"priority_classes": [{"name": "low", "weight": 10}]},
                            "teams": [{"name": "a", "fair_share_weight": 50}, {"name": "new-team"}]})");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("hi"), std::string::npos) << r.body;
  EXPECT_EQ(get("/v1/teams").json, before);
  EXPECT_EQ(get("/v1/teams/new-team").status, 404);
}

TEST_F(ServerApi, NodesCordonDrainHealthTopology) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("j1", "a", 2)).status, 201);
  auto nodes = get("/v1/nodes");
  ASSERT_EQ(nodes.json.size(), 2u);
  EXPECT_EQ(nodes.json[0]["name"], "n1");

  auto d = post("/v1/nodes/n1/drain");
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.json["cordoned"], true);
  auto j = get("/v1/jobs/j1").json;
  EXPECT_EQ(j["state"], "Suspended");
  EXPECT_EQ(j["preemptions"], 1);
  EXPECT_NE(j["reason"].get<std::string>().find("drain"), std::string::npos);

  ASSERT_EQ(post("/v1/nodes/n1/uncordon").status, 200);
  EXPECT_EQ(get("/v1/jobs/j1").json["state"], "Running") << "uncordoning lets the suspended job resume";
  ASSERT_EQ(post("/v1/nodes/n2/cordon").json["cordoned"], true);

  auto h = put("/v1/nodes/n1/health", R"({"health": "UnschedulablePendingReplacement"})");
  ASSERT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.json["health"], "UnschedulablePendingReplacement");
  EXPECT_NE(get("/v1/jobs/j1").json["state"], "Running");
  EXPECT_EQ(post("/v1/nodes/ghost/cordon").status, 404);

  auto topo = get("/v1/topology");
  ASSERT_EQ(topo.status, 200);
  EXPECT_EQ(topo.json["domains"][0]["name"], "x");
  EXPECT_EQ(topo.json["domains"][0]["children"].size(), 2u);

  EXPECT_EQ(del("/v1/nodes/n2").status, 204);
  EXPECT_EQ(get("/v1/nodes").json.size(), 1u);
}

TEST_F(ServerApi, RestartReplaysEverythingAcknowledged) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("j1")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("j2")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("j3")).status, 201);
  ASSERT_EQ(post("/v1/jobs/j2/cancel").status, 200);
  auto jobs = list_jobs();
  auto teams = get("/v1/teams").json;
  auto nodes = get("/v1/nodes").json;
  auto events = get("/v1/events?since=0").json;
  auto metrics = get("/metrics").body;
  restart();
  EXPECT_EQ(list_jobs(), jobs);
  EXPECT_EQ(get("/v1/teams").json, teams);
  EXPECT_EQ(get("/v1/nodes").json, nodes);
  EXPECT_EQ(get("/v1/events?since=0").json, events) << "events are rebuilt from the journal";
  auto m = get("/metrics").body;
  EXPECT_NE(m.find("allot_admissions_total 3"), std::string::npos) << m;
}

TEST_F(ServerApi, EventsLongPoll) {
  small_cluster();
  auto first = get("/v1/events?since=0").json;
  const uint64_t next = first["next"];
  EXPECT_GT(next, 0u);
  std::thread later([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    httplib::Client c("127.0.0.1", server_->port());
    c.set_bearer_token_auth(admin_token_.c_str());
    c.Post("/v1/jobs", job("late").dump(), "application/json");
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = get("/v1/events?since=" + std::to_string(next) + "&wait=10");
  later.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_EQ(r.status, 200);
  ASSERT_FALSE(r.json["events"].empty());
  EXPECT_EQ(r.json["events"][0]["job"], "late");
  EXPECT_EQ(r.json["events"][0]["kind"], "submit");
  EXPECT_EQ(get("/v1/events?since=" + std::to_string(next) + "&wait=100").status, 400);
}

TEST_F(ServerApi, MetricsExposition) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("j1")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("j2", "b", 3)).status, 201);
  auto m = get("/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* want : {"allot_jobs{team=\"a\",instance_type=\"ml.g5.8xlarge\",state=\"Running\"} 1",
                           "allot_jobs{team=\"b\",instance_type=\"any\",state=\"Pending\"} 1",
                           "allot_quota{team=\"a\",instance_type=\"ml.g5.8xlarge\",resource=\"accelerators\"} 2",
                           "allot_usage{team=\"a\",instance_type=\"ml.g5.8xlarge\",resource=\"vcpu\"} 32",
                           "allot_borrowed{team=\"a\",instance_type=\"ml.g5.8xlarge\",resource=\"memory_gib\"} 0",
                           "allot_lent{team=\"b\",instance_type=\"ml.g5.8xlarge\",resource=\"accelerators\"}",
                           "allot_admissions_total 1", "allot_preemptions_total 0",
                           "allot_scheduling_latency_seconds_bucket{team=\"a\",instance_type=\"ml.g5.8xlarge\",le=\"+Inf\"} 1",
                           "allot_scheduling_latency_seconds_count{team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1",
                           "allot_nodes{health=\"Schedulable\"} 2"})
    EXPECT_NE(m.body.find(want), std::string::npos) << want << "\n" << m.body;
}

}  // namespace
}  // namespace allot::server::test::server_api_test
