// The dashboard's server side in one process: its files at / (public, with a strict Content-Security-Policy),
// the /v1/dashboard views (queue order, estimates, members' view, teams' borrowing and lending, cluster counts,
// topology), and the metrics per instance type, team and priority, and rule.
#include <map>
#include <memory>
#include <set>

#include "server/views/wait_category.h"
#include "server_test_fixture.h"
#include "view/times.h"

namespace allot::server::test::server_dashboard_test {
namespace {

using nlohmann::json;
using ServerDashboard = ServerTest;

bool has(const std::string& text, const std::string& want) { return text.find(want) != std::string::npos; }


TEST_F(ServerDashboard, FilesArePublicAndLockedDown) {
  httplib::Client anon("127.0.0.1", server_->port());
  auto index = anon.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_TRUE(has(index->get_header_value("Content-Type"), "text/html"));
  EXPECT_TRUE(has(index->body, "/dashboard/app.js"));
  EXPECT_TRUE(has(index->get_header_value("Content-Security-Policy"), "script-src 'self'"));
  EXPECT_TRUE(has(index->get_header_value("Content-Security-Policy"), "frame-ancestors 'none'"));
  auto js = anon.Get("/dashboard/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_TRUE(has(js->get_header_value("Content-Type"), "text/javascript"));
  EXPECT_TRUE(has(js->body, "Authorization"));
  auto missing = anon.Get("/dashboard/nosuch.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(anon.Get("/dashboard/../server.log")->status, 404);
  // Brotli at cpp-httplib's quality costs a hundred times the sending; gzip is offered instead (http_server.cpp).
  auto br = anon.Get("/dashboard/app.js", {{"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(br);
  EXPECT_EQ(br->get_header_value("Content-Encoding"), "gzip");
  auto only_br = anon.Get("/dashboard/app.js", {{"Accept-Encoding", "br"}});
  ASSERT_TRUE(only_br);
  EXPECT_EQ(only_br->get_header_value("Content-Encoding"), "");
  EXPECT_TRUE(has(only_br->body, "Authorization"));
  // The data is not public.
  EXPECT_EQ(anon.Get("/v1/dashboard/cluster")->status, 401);
  EXPECT_EQ(anon.Get("/v1/dashboard/queue")->status, 401);
}

TEST_F(ServerDashboard, QueueInSchedulingOrderWithPositionsAndFilters) {
  small_cluster();
  json fill = job("fill", "a", 2);  // both nodes busy, in a class nothing preempts
  fill["priority"] = "high";
  ASSERT_EQ(post("/v1/jobs", fill).status, 201);
  json low = job("low-1");
  low["priority"] = "low";
  json high = job("high-1");
  high["priority"] = "high";
  ASSERT_EQ(post("/v1/jobs", low).status, 201);
  ASSERT_EQ(post("/v1/jobs", high).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("none-b", "b")).status, 201);
  auto q = get("/v1/dashboard/queue");
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_EQ(q.json["total"], 3);
  ASSERT_EQ(q.json["items"].size(), 3u);
  // task-ranking: the high class first, then arrival (the job without a class has weight 0, last).
  EXPECT_EQ(q.json["items"][0]["name"], "high-1");
  EXPECT_EQ(q.json["items"][0]["position"], 1);
  EXPECT_EQ(q.json["items"][1]["name"], "low-1");
  EXPECT_EQ(q.json["items"][2]["name"], "none-b");
  EXPECT_EQ(q.json["items"][2]["priority"], "none");
  EXPECT_FALSE(q.json["items"][0]["reason"].get<std::string>().empty());

  auto only_b = get("/v1/dashboard/queue?team=b");
  ASSERT_EQ(only_b.json["items"].size(), 1u);
  EXPECT_EQ(only_b.json["items"][0]["position"], 3) << "positions count the whole queue";
  EXPECT_EQ(get("/v1/dashboard/queue?priority=low").json["items"][0]["name"], "low-1");
  auto paged = get("/v1/dashboard/queue?offset=1&limit=1");
  ASSERT_EQ(paged.json["items"].size(), 1u);
  EXPECT_EQ(paged.json["items"][0]["name"], "low-1");
  EXPECT_EQ(paged.json["matched"], 3);
  EXPECT_EQ(get("/v1/dashboard/queue?state=Running").status, 400);
  EXPECT_EQ(get("/v1/dashboard/queue?limit=0").status, 400);
  EXPECT_EQ(get("/v1/dashboard/queue?team=nosuch").status, 404);

  // A member of team b sees its own job, and only how many of the others wait ahead.
  const std::string member = bearer({{"role", "member"}, {"teams", {"b"}}});
  auto mine = get_as(member, "/v1/dashboard/queue");
  ASSERT_EQ(mine.status, 200) << mine.body;
  ASSERT_EQ(mine.json["items"].size(), 1u);
  EXPECT_EQ(mine.json["items"][0]["name"], "none-b");
  EXPECT_EQ(mine.json["items"][0]["position"], 3);
  EXPECT_EQ(mine.json["hidden"], 2);
  // Asking for one job by name tells a member nothing of other teams' jobs: the same hidden count, named or not.
  auto named = get_as(member, "/v1/dashboard/queue?job=high-1");
  ASSERT_EQ(named.status, 200) << named.body;
  EXPECT_TRUE(named.json["items"].empty()) << named.body;
  EXPECT_EQ(named.json["hidden"], 2);
  EXPECT_EQ(get_as(member, "/v1/dashboard/queue?job=nosuch").json["hidden"], 2);
  EXPECT_EQ(get_as(member, "/v1/dashboard/queue?job=none-b").json["items"][0]["position"], 3);
}

TEST_F(ServerDashboard, EstimatedStartFromRunningJobsExpectedEnds) {
  small_cluster();
  json first = job("runs-100", "a", 1);
  first["duration"] = 100;
  json second = job("runs-300", "a", 1);
  second["duration"] = 300;
  ASSERT_EQ(post("/v1/jobs", first).status, 201);
  ASSERT_EQ(post("/v1/jobs", second).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("next", "a", 1)).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("after", "a", 1)).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("never", "a", 1)).status, 201);
  auto q = get("/v1/dashboard/queue");
  ASSERT_EQ(q.json["items"].size(), 3u) << q.body;
  auto started = view::parse_rfc3339(get("/v1/jobs/runs-100").json["started_at"].get<std::string>());
  ASSERT_TRUE(started.ok());
  // `next` takes the first GPU to come free, at the end of runs-100; `after` the second, at the end of runs-300;
  // the jobs ahead of `never` hold both from then on, as far as anything known says.
  EXPECT_EQ(q.json["items"][0]["estimated_start"], view::rfc3339(*started + 100));
  EXPECT_EQ(q.json["items"][1]["estimated_start"], view::rfc3339(*started + 300));
  EXPECT_EQ(q.json["items"][1]["estimate_from"], "durations");
  EXPECT_FALSE(q.json["items"][2].contains("estimated_start")) << q.body;
}

// With backfill on, the job holding the reservation shows it (GET /v1/jobs/{name}: `reservation`), and the queue's
// estimate for it is the reserved time, not one from declared durations (docs/scheduling.md, "Backfill").
TEST_F(ServerDashboard, TheBackfillHolderShowsItsReservationAndItsEstimateUsesIt) {
  small_cluster();
  ASSERT_EQ(put("/v1/policy", R"({"task_prioritization": "task-ranking", "backfill": true,
                                  "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]})").status, 200);
  json short_one = job("limit-300");
  short_one["time_limit"] = 300;
  json long_one = job("limit-600");
  long_one["time_limit"] = 600;
  ASSERT_EQ(post("/v1/jobs", short_one).status, 201);
  ASSERT_EQ(post("/v1/jobs", long_one).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("both", "a", 2)).status, 201);  // needs both nodes: from limit-600's end
  auto running = get("/v1/jobs/limit-600");
  ASSERT_EQ(running.json["state"], "Running") << running.body;
  auto started = view::parse_rfc3339(running.json["started_at"].get<std::string>());
  ASSERT_TRUE(started.ok());
  auto holder = get("/v1/jobs/both");
  ASSERT_EQ(holder.status, 200);
  ASSERT_TRUE(holder.json.contains("reservation")) << holder.body;
  EXPECT_EQ(holder.json["reservation"]["start_at"], view::rfc3339(*started + 600));
  EXPECT_EQ(holder.json["reservation"]["nodes"], json::array({"n1", "n2"}));
  EXPECT_FALSE(get("/v1/jobs/limit-600").json.contains("reservation")) << "only the holder has one";
  auto q = get("/v1/dashboard/queue");
  ASSERT_EQ(q.json["items"].size(), 1u) << q.body;
  EXPECT_EQ(q.json["items"][0]["estimated_start"], view::rfc3339(*started + 600));
  EXPECT_EQ(q.json["items"][0]["estimate_from"], "reservation");
  // Backfill off: the next pass plans no reservation, and nothing shows one.
  ASSERT_EQ(put("/v1/policy", R"({"task_prioritization": "task-ranking",
                                  "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]})").status, 200);
  EXPECT_FALSE(get("/v1/jobs/both").json.contains("reservation")) << get("/v1/jobs/both").body;
  EXPECT_FALSE(get("/v1/dashboard/queue").json["items"][0].contains("estimated_start"));
}

TEST_F(ServerDashboard, TeamsShowBorrowedAndLentPerInstanceType) {
  auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}},
                                           {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(post("/v1/nodes", R"([{"name": "n[1-2]", "instance_type": "ml.g5.8xlarge"}])").status, 201);
  // b (1 instance of quota) runs on both nodes: it borrows one of a's.
  ASSERT_EQ(post("/v1/jobs", job("wide", "b", 2)).status, 201);
  auto t = get("/v1/dashboard/teams");
  ASSERT_EQ(t.status, 200) << t.body;
  ASSERT_EQ(t.json["teams"].size(), 2u);
  const json& a = t.json["teams"][0];
  const json& b = t.json["teams"][1];
  EXPECT_EQ(b["name"], "b");
  EXPECT_EQ(b["borrowing"], true);
  EXPECT_EQ(b["jobs"]["running"], 1);
  ASSERT_EQ(b["instance_types"].size(), 1u);
  EXPECT_EQ(b["instance_types"][0]["instance_type"], "ml.g5.8xlarge");
  EXPECT_EQ(b["instance_types"][0]["borrowed"]["accelerators"], 1);
  EXPECT_EQ(b["instance_types"][0]["usage"]["accelerators"], 2);
  EXPECT_EQ(a["instance_types"][0]["lent"]["accelerators"], 1);
  EXPECT_EQ(a["borrowing"], false);
  ASSERT_EQ(t.json["cohort"].size(), 1u);
  EXPECT_EQ(t.json["cohort"][0]["capacity"]["accelerators"], 2);
}

TEST_F(ServerDashboard, ClusterCountsAndTopology) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("one")).status, 201);
  ASSERT_EQ(put("/v1/nodes/n2/health", R"({"health": "UnschedulablePendingReplacement"})").status, 200);
  auto c = get("/v1/dashboard/cluster");
  ASSERT_EQ(c.status, 200) << c.body;
  ASSERT_EQ(c.json["instance_types"].size(), 1u);
  const json& acc = c.json["instance_types"][0]["accelerators"];
  EXPECT_EQ(acc["total"], 2);
  EXPECT_EQ(acc["in_use"], 1);
  EXPECT_EQ(acc["free"], 0);
  EXPECT_EQ(acc["unhealthy"], 1);
  EXPECT_EQ(c.json["nodes_by_health"]["UnschedulablePendingReplacement"], 1);
  ASSERT_EQ(c.json["attention"].size(), 1u);
  EXPECT_EQ(c.json["attention"][0]["name"], "n2");
  EXPECT_EQ(c.json["jobs"]["Running"], 1);
  EXPECT_GT(c.json["events_last"].get<uint64_t>(), 0u);
  ASSERT_FALSE(c.json["utilisation"]["samples"].empty());
  EXPECT_EQ(c.json["utilisation"]["samples"].back()["in_use"][0], 1);

  auto t = get("/v1/dashboard/topology");
  ASSERT_EQ(t.status, 200) << t.body;
  ASSERT_EQ(t.json["domains"].size(), 1u);
  const json& leaves = t.json["domains"][0]["children"];
  ASSERT_EQ(leaves.size(), 2u) << t.body;
  EXPECT_EQ(leaves[1]["node"], "n2");
  EXPECT_EQ(leaves[1]["health"], "UnschedulablePendingReplacement");
  EXPECT_EQ(leaves[0]["in_use"], 1);
}

TEST_F(ServerDashboard, MetricsPerInstanceTypeAndRule) {
  auto r = post("/v1/apply", R"({"policy": {"task_prioritization": "task-ranking",
                                            "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]},
                                 "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1},
                                                                        {"instance_type": "ml.g5.12xlarge", "instances": 1}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}},
                                           {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = post("/v1/nodes", R"([{"name": "s[1-2]", "instance_type": "ml.g5.8xlarge"}, {"name": "m1", "instance_type": "ml.g5.12xlarge"}])");
  ASSERT_EQ(r.status, 201) << r.body;
  // a borrows b's idle GPU, then b takes it back: a reclaim.
  json wide = job("a-wide", "a", 2);
  wide["priority"] = "low";
  wide["instance_type"] = "ml.g5.8xlarge";
  ASSERT_EQ(post("/v1/jobs", wide).status, 201);
  json back = job("b-back", "b", 1);
  back["priority"] = "high";
  ASSERT_EQ(post("/v1/jobs", back).status, 201);
  auto m = get("/metrics").body;
  for (const char* want : {
           "allot_quota{team=\"a\",instance_type=\"ml.g5.8xlarge\",resource=\"accelerators\"} 1",
           "allot_quota{team=\"a\",instance_type=\"ml.g5.12xlarge\",resource=\"accelerators\"} 4",
           "allot_usage{team=\"b\",instance_type=\"ml.g5.8xlarge\",resource=\"accelerators\"} 1",
           "allot_borrowed{team=\"a\",instance_type=\"ml.g5.8xlarge\",resource=\"accelerators\"} 0",
           "allot_lent{team=\"a\",instance_type=\"ml.g5.8xlarge\",resource=\"accelerators\"} 0",
           // The jobs' series carry the instance type asked for (a-wide, waiting again) or held (b-back, which
           // named none); a's other type has its series from 0.
           "allot_queue_length{team=\"a\",priority=\"low\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_queue_wait_seconds_count{team=\"b\",priority=\"high\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_queue_wait_seconds_bucket{team=\"a\",priority=\"low\",instance_type=\"ml.g5.8xlarge\",le=\"+Inf\"} 1",
           "allot_jobs{team=\"b\",instance_type=\"ml.g5.8xlarge\",state=\"Running\"} 1",
           "allot_jobs{team=\"a\",instance_type=\"ml.g5.8xlarge\",state=\"Suspended\"} 1",
           "allot_jobs{team=\"a\",instance_type=\"ml.g5.12xlarge\",state=\"Pending\"} 0",
           "allot_job_restarts_total{team=\"a\",instance_type=\"ml.g5.12xlarge\"} 0",
           "allot_waiting_jobs{team=\"a\",state=\"Suspended\",reason=\"no_idle_quota\",instance_type=\"ml.g5.8xlarge\"} 1",
           // Decisions by rule carry the job's team and the instance type it was placed on (a-wide and b-back ran
           // on ml.g5.8xlarge; a holds ml.g5.12xlarge quota too, and its series start at 0).
           "allot_admissions_by_rule_total{rule=\"borrowing\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_admissions_by_rule_total{rule=\"within-nominal\",team=\"b\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_admissions_by_rule_total{rule=\"within-nominal\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 0",
           "allot_admissions_by_rule_total{rule=\"within-nominal\",team=\"a\",instance_type=\"ml.g5.12xlarge\"} 0",
           "allot_preemptions_by_rule_total{rule=\"reclaim\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_preemptions_by_rule_total{rule=\"reclaim\",team=\"a\",instance_type=\"ml.g5.12xlarge\"} 0",
           "allot_preemptions_by_rule_total{rule=\"reclaim\",team=\"b\",instance_type=\"ml.g5.8xlarge\"} 0",
           "allot_preemptions_by_rule_total{rule=\"priority\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 0",
           // Submission to first admission, per team and instance type: each job once, where it was placed.
           "allot_scheduling_latency_seconds_count{team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_scheduling_latency_seconds_count{team=\"b\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_scheduling_latency_seconds_bucket{team=\"b\",instance_type=\"ml.g5.8xlarge\",le=\"+Inf\"} 1",
           "allot_scheduler_pass_seconds_count ",
           "allot_accelerators{instance_type=\"ml.g5.8xlarge\",state=\"in_use\"} 1",
           "allot_accelerators{instance_type=\"ml.g5.12xlarge\",state=\"free\"} 4",
           "allot_nodes_by_type{instance_type=\"ml.g5.8xlarge\",health=\"Schedulable\"} 2"})
    EXPECT_TRUE(has(m, want)) << want << "\n" << m;
  // No quota series adds instance types together, and no decision counter is without a team or an instance type.
  EXPECT_FALSE(has(m, "allot_quota{team=\"a\",resource=")) << m;
  EXPECT_FALSE(has(m, "allot_admissions_by_rule_total{rule=\"borrowing\"}")) << m;
  EXPECT_FALSE(has(m, "allot_scheduling_latency_seconds_count{team=\"a\",instance_type=\"ml.g5.12xlarge\"}")) << m;
  EXPECT_FALSE(has(m, "allot_scheduling_latency_seconds_bucket{le=")) << m;
  EXPECT_FALSE(has(m, "instance_type=\"any\"")) << "every job here holds or names a type\n" << m;
  EXPECT_FALSE(has(m, "allot_jobs{team=\"a\",state=")) << m;
  // Waits and rule counters come from the journal: a restart rebuilds them.
  restart();
  auto again = get("/metrics").body;
  EXPECT_TRUE(has(again, "allot_preemptions_by_rule_total{rule=\"reclaim\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1")) << again;
  EXPECT_TRUE(has(again, "allot_admissions_by_rule_total{rule=\"borrowing\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1")) << again;
  EXPECT_TRUE(has(again, "allot_queue_wait_seconds_count{team=\"b\",priority=\"high\",instance_type=\"ml.g5.8xlarge\"} 1")) << again;
}

// Members follow their own teams' jobs and the cluster's events, but not token records: those name token ids and
// the teams other tokens act for (item 9 of issue 30). Admins and viewers see them. The dashboard learns whom it
// acts for from /v1/dashboard/cluster, so that its filters offer a member its own teams only.
TEST_F(ServerDashboard, MembersSeeNoTokenEventsAndKnowTheirOwnTeams) {
  small_cluster();
  auto member_token = post("/v1/tokens", R"({"role": "member", "teams": ["b"]})");
  ASSERT_EQ(member_token.status, 201) << member_token.body;
  auto viewer_token = post("/v1/tokens", R"({"role": "viewer"})");
  ASSERT_EQ(viewer_token.status, 201) << viewer_token.body;
  auto other = post("/v1/tokens", R"({"role": "member", "teams": ["a"]})");
  ASSERT_EQ(other.status, 201) << other.body;
  const std::string other_id = other.json["id"].get<std::string>();
  ASSERT_EQ(del("/v1/tokens/" + other_id).status, 204);
  ASSERT_EQ(post("/v1/jobs", job("a-job", "a")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("b-job", "b")).status, 201);
  auto as = [&](const nlohmann::json& token) { return client_as(token["token"].get<std::string>()); };
  auto member = as(member_token.json);
  auto viewer = as(viewer_token.json);
  auto kinds = [](const Response& r) {
    std::set<std::string> out;
    for (const json& e : r.json["events"]) out.insert(e["kind"].get<std::string>());
    return out;
  };
  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    auto admin_events = get("/v1/events?since=0");
    ASSERT_EQ(admin_events.status, 200);
    EXPECT_TRUE(kinds(admin_events).count("create_token")) << admin_events.body;
    EXPECT_TRUE(has(admin_events.body, other_id)) << admin_events.body;
    auto viewer_events = wrap(viewer->Get("/v1/events?since=0"));
    EXPECT_TRUE(kinds(viewer_events).count("revoke_token")) << viewer_events.body;
    auto mine = wrap(member->Get("/v1/events?since=0"));
    ASSERT_EQ(mine.status, 200) << mine.body;
    EXPECT_FALSE(kinds(mine).count("create_token")) << mine.body;
    EXPECT_FALSE(kinds(mine).count("revoke_token")) << mine.body;
    EXPECT_FALSE(has(mine.body, other_id)) << mine.body;
    EXPECT_FALSE(has(mine.body, member_token.json["id"].get<std::string>())) << mine.body;
    EXPECT_FALSE(has(mine.body, "a-job")) << mine.body;
    EXPECT_TRUE(has(mine.body, "b-job")) << mine.body;  // its own team's job events, and the cluster's
    EXPECT_TRUE(kinds(mine).count("add_node")) << mine.body;
  };
  check("live");
  // The events in memory go through the state snapshot on a restart; their audience goes with them.
  restart();
  member = as(member_token.json);
  viewer = as(viewer_token.json);
  check("after a restart");

  auto c = wrap(member->Get("/v1/dashboard/cluster"));
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json["caller"], json({{"role", "member"}, {"teams", {"b"}}}));
  EXPECT_EQ(get("/v1/dashboard/cluster").json["caller"]["role"], "admin");
}

// A job placed on two instance types counts once under each, with its team, in the decision counters and in the
// submission-to-admission histogram (docs/dashboard.md, "Metrics and Grafana"); its preemption too.
TEST_F(ServerDashboard, MetricsCountAJobOnTwoInstanceTypesUnderEach) {
  auto r = post("/v1/apply", R"({"policy": {"task_prioritization": "task-ranking",
                                             "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]},
                                 "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1},
                                                                        {"instance_type": "ml.g5.12xlarge", "instances": 1}]},
                                           {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = post("/v1/nodes", R"([{"name": "s1", "instance_type": "ml.g5.8xlarge"}, {"name": "m1", "instance_type": "ml.g5.12xlarge"}])");
  ASSERT_EQ(r.status, 201) << r.body;
  json mixed = {{"name", "mixed"}, {"team", "a"}, {"priority", "low"}, {"command", "sleep 1"},
                {"pod_sets", {{{"name", "launcher"}, {"replicas", 1}, {"per_replica", {{"accelerators", 1}}}, {"instance_type", "ml.g5.8xlarge"}},
                              {{"name", "workers"}, {"replicas", 1}, {"per_replica", {{"accelerators", 1}}}, {"instance_type", "ml.g5.12xlarge"}}}}};
  r = post("/v1/jobs", mixed);
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(get("/v1/jobs/mixed").json["state"], "Running");
  json urgent = job("urgent", "a");
  urgent["priority"] = "high";
  urgent["instance_type"] = "ml.g5.8xlarge";
  ASSERT_EQ(post("/v1/jobs", urgent).status, 201);  // takes the 8xlarge GPU from mixed: a preemption by priority
  ASSERT_EQ(get("/v1/jobs/urgent").json["state"], "Running");
  auto m = get("/metrics").body;
  for (const char* want : {
           "allot_admissions_by_rule_total{rule=\"within-nominal\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 2",
           "allot_admissions_by_rule_total{rule=\"within-nominal\",team=\"a\",instance_type=\"ml.g5.12xlarge\"} 1",
           "allot_preemptions_by_rule_total{rule=\"priority\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1",
           "allot_preemptions_by_rule_total{rule=\"priority\",team=\"a\",instance_type=\"ml.g5.12xlarge\"} 1",
           "allot_scheduling_latency_seconds_count{team=\"a\",instance_type=\"ml.g5.8xlarge\"} 2",
           "allot_scheduling_latency_seconds_count{team=\"a\",instance_type=\"ml.g5.12xlarge\"} 1",
           "allot_admissions_total 2", "allot_preemptions_total 1"})
    EXPECT_TRUE(has(m, want)) << want << "\n" << m;
  // Team b ran nothing: its counters are there, at 0, and only for the type it holds quota of.
  EXPECT_TRUE(has(m, "allot_admissions_by_rule_total{rule=\"borrowing\",team=\"b\",instance_type=\"ml.g5.8xlarge\"} 0")) << m;
  EXPECT_FALSE(has(m, "team=\"b\",instance_type=\"ml.g5.12xlarge\"")) << m;
  // A restart rebuilds the counters from the journal, the victim's instance types included.
  restart();
  auto again = get("/metrics").body;
  EXPECT_TRUE(has(again, "allot_preemptions_by_rule_total{rule=\"priority\",team=\"a\",instance_type=\"ml.g5.12xlarge\"} 1")) << again;
  EXPECT_TRUE(has(again, "allot_admissions_by_rule_total{rule=\"within-nominal\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 2")) << again;
}

// The metrics renamed in this release come under their new names, and under the old ones for one more release;
// the health-check status has its own state-set gauge; the build and the waiting jobs by reason are exported.
TEST_F(ServerDashboard, MetricsNamesBuildInfoAndWaitingByReason) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("fill", "a", 2)).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("waits", "b")).status, 201);
  auto m = get("/metrics").body;
  for (const char* want : {"allot_goodput_ratio{team=\"a\",instance_type=\"ml.g5.8xlarge\"} 1", "allot_goodput{team=\"a\"} 1",
                           "allot_work_lost_accelerator_seconds_total{team=\"a\",instance_type=\"ml.g5.8xlarge\"} 0",
                           "allot_work_lost_seconds_total{team=\"a\"} 0",
                           "# HELP allot_goodput Deprecated", "# HELP allot_work_lost_seconds_total Deprecated",
                           "allot_build_info{version=\"", "allot_waiting_jobs{team=\"b\",state=\"Pending\",reason=\"",
                           "allot_scheduling_latency_seconds_bucket{team=\"a\",instance_type=\"ml.g5.8xlarge\",le=\"86400\"}",
                           "allot_scheduling_latency_seconds_bucket{team=\"a\",instance_type=\"ml.g5.8xlarge\",le=\"604800\"}"})
    EXPECT_TRUE(has(m, want)) << want << "\n" << m;
  auto q = get("/v1/jobs/waits");
  ASSERT_EQ(q.status, 200);
  // It names no instance type: it counts under "any" while it waits, and a's running job under the type it holds.
  EXPECT_TRUE(has(m, "allot_waiting_jobs{team=\"b\",state=\"Pending\",reason=\"" + q.json["reason_code"].get<std::string>() +
                         "\",instance_type=\"any\"} 1"))
      << q.body << "\n" << m;
  EXPECT_TRUE(has(m, "allot_queue_length{team=\"b\",priority=\"none\",instance_type=\"any\"} 1")) << m;
  EXPECT_TRUE(has(m, "allot_jobs{team=\"b\",instance_type=\"any\",state=\"Pending\"} 1")) << m;
  EXPECT_TRUE(has(m, "allot_jobs{team=\"a\",instance_type=\"ml.g5.8xlarge\",state=\"Running\"} 1")) << m;
}

// The Queue page's categories come from one table over every reason code (issue 30, item 6): each code has one,
// the six the page is about are spelled as the docs say, and a job the scheduler found infeasible never fits
// whatever its code.
TEST(WaitCategory, EveryReasonCodeHasOneAndInfeasibleNeverFits) {
  std::set<std::string> names;
  for (int c = 0; c <= static_cast<int>(ReasonCode::kRendezvousPort); ++c) {
    const auto code = static_cast<ReasonCode>(c);
    const WaitCategory w = wait_category(code, true);
    EXPECT_FALSE(wait_category_name(w).empty()) << reason_code_name(code);
    EXPECT_FALSE(wait_category_label(w).empty()) << reason_code_name(code);
    names.insert(std::string(wait_category_name(w)));
    EXPECT_EQ(wait_category(code, false), WaitCategory::kNeverFits) << reason_code_name(code);
  }
  for (const char* want : {"quota", "borrow_limit", "capacity", "topology", "unhealthy_nodes", "never_fits"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_EQ(wait_category(ReasonCode::kQuota, true), WaitCategory::kQuota);
  EXPECT_EQ(wait_category(ReasonCode::kQuotaLentOut, true), WaitCategory::kQuota);
  EXPECT_EQ(wait_category(ReasonCode::kBorrowLimit, true), WaitCategory::kBorrowLimit);
  EXPECT_EQ(wait_category(ReasonCode::kCapacity, true), WaitCategory::kCapacity);
  EXPECT_EQ(wait_category(ReasonCode::kTopology, true), WaitCategory::kTopology);
  EXPECT_EQ(wait_category(ReasonCode::kUnhealthyNodes, true), WaitCategory::kUnhealthyNodes);
  EXPECT_EQ(wait_category(ReasonCode::kNeverFits, true), WaitCategory::kNeverFits);
  EXPECT_EQ(wait_category(ReasonCode::kInstanceType, true), WaitCategory::kNeverFits);
  EXPECT_EQ(wait_category_label(WaitCategory::kBorrowLimit), "borrow limit");
}

TEST_F(ServerDashboard, QueueRowsCarryTheirCategoryTypesAndOneJobByName) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("fill", "a", 2)).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("waits", "a")).status, 201);
  json huge = job("huge", "a", 1);
  huge["per_replica"]["accelerators"] = 8;  // no node of the cluster has 8 GPUs
  auto r = post("/v1/jobs", huge);
  ASSERT_EQ(r.status, 201) << r.body;
  auto q = get("/v1/dashboard/queue");
  ASSERT_EQ(q.status, 200) << q.body;
  ASSERT_EQ(q.json["items"].size(), 2u) << q.body;
  for (const json& item : q.json["items"]) {
    const std::string name = item["name"];
    auto j = get("/v1/jobs/" + name).json;
    EXPECT_EQ(item["reason_code"], j["reason_code"]) << name;
    EXPECT_EQ(item["wait"]["category"], wait_category_name(wait_category(*parse_reason_code(j["reason_code"].get<std::string>()),
                                                                         j["feasible"].get<bool>()))) << name;
    EXPECT_EQ(item["never_fits"], name == "huge") << q.body;
    EXPECT_EQ(item["instance_types"], json::array({"ml.g5.8xlarge"})) << q.body;
  }
  EXPECT_EQ(q.json["items"][1]["wait"]["category"], "never_fits") << q.body;
  EXPECT_EQ(q.json["items"][1]["wait"]["label"], "never fits") << q.body;
  EXPECT_NE(q.json["items"][0]["wait"]["category"], "never_fits") << q.body;
  // The Job page asks for one job's place: the position still counts the whole queue.
  auto one = get("/v1/dashboard/queue?limit=1&job=huge");
  ASSERT_EQ(one.json["items"].size(), 1u) << one.body;
  EXPECT_EQ(one.json["items"][0]["position"], 2);
  EXPECT_EQ(one.json["total"], 2);
  EXPECT_TRUE(get("/v1/dashboard/queue?job=nosuch").json["items"].empty());
}

// Who lends to whom: every borrower's flows add up to what it borrows, every lender's to what it lent.
TEST_F(ServerDashboard, LendingFlowsPairLendersWithBorrowers) {
  auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}},
                                           {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}},
                                           {"name": "c", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}],
                                            "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(post("/v1/nodes", R"([{"name": "n[1-4]", "instance_type": "ml.g5.8xlarge"}])").status, 201);
  auto none = get("/v1/dashboard/teams");
  EXPECT_EQ(none.json["cohort"][0]["lending"], json::array()) << none.body;
  // c (2 of quota) runs on all four nodes: it borrows a's and b's idle GPU, one each.
  ASSERT_EQ(post("/v1/jobs", job("wide", "c", 4)).status, 201);
  auto t = get("/v1/dashboard/teams");
  ASSERT_EQ(t.status, 200) << t.body;
  const json& lending = t.json["cohort"][0]["lending"];
  ASSERT_EQ(lending.size(), 2u) << t.body;
  EXPECT_EQ(lending[0]["from"], "a");
  EXPECT_EQ(lending[0]["to"], "c");
  EXPECT_EQ(lending[0]["amount"]["accelerators"], 1);
  EXPECT_EQ(lending[1]["from"], "b");
  EXPECT_EQ(lending[1]["to"], "c");
  EXPECT_EQ(lending[1]["amount"]["accelerators"], 1);

  // Every resource adds up: what flows to a team is what it borrows, what flows from one is what it lent.
  std::map<std::string, int64_t> to, from;
  for (const json& f : lending) {
    to[f["to"]] += f["amount"]["vcpu"].get<int64_t>();
    if (!f["from"].is_null()) from[f["from"]] += f["amount"]["vcpu"].get<int64_t>();
  }
  for (const json& team : t.json["teams"]) {
    const json& ty = team["instance_types"][0];
    EXPECT_EQ(to[team["name"]], ty["borrowed"]["vcpu"].get<int64_t>()) << team.dump();
    EXPECT_EQ(from[team["name"]], ty["lent"]["vcpu"].get<int64_t>()) << team.dump();
  }
}

// The Cluster page's failures: counted for everyone, listed (with their reason) to those who may read the job.
TEST_F(ServerDashboard, ClusterCountsFailuresAndListsThemToTheirTeams) {
  small_cluster();
  json doomed = job("doomed", "a");
  doomed["max_retries"] = 0;
  ASSERT_EQ(post("/v1/jobs", doomed).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("b-runs", "b")).status, 201);
  const std::string node = get("/v1/jobs/doomed").json["nodes"][0];
  ASSERT_EQ(put("/v1/nodes/" + node + "/health", R"({"health": "Unschedulable"})").status, 200);
  auto j = get("/v1/jobs/doomed");
  ASSERT_EQ(j.json["state"], "Failed") << j.body;
  auto c = get("/v1/dashboard/cluster");
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json["jobs"]["Failed"], 1) << c.body;
  EXPECT_EQ(c.json["jobs"]["Succeeded"], 0) << c.body;
  EXPECT_EQ(c.json["jobs"]["total"], 2) << c.body;
  EXPECT_EQ(c.json["failed"]["last_hour"], 1) << c.body;
  EXPECT_EQ(c.json["failed"]["last_day"], 1) << c.body;
  ASSERT_EQ(c.json["recent_failures"].size(), 1u) << c.body;
  EXPECT_EQ(c.json["recent_failures"][0]["name"], "doomed");
  EXPECT_EQ(c.json["recent_failures"][0]["reason_code"], j.json["reason_code"]);
  EXPECT_EQ(c.json["recent_failures"][0]["reason"], j.json["reason"]);
  EXPECT_FALSE(c.json["attention"][0]["reason"].get<std::string>().empty()) << c.body;
  EXPECT_EQ(c.json["attention"][0]["suspect"], false) << c.body;

  // A member of b: the counts are the cluster's, the list its own team's only.
  auto mine = get_as(bearer({{"role", "member"}, {"teams", {"b"}}}), "/v1/dashboard/cluster");
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.json["failed"]["last_hour"], 1);
  EXPECT_TRUE(mine.json["recent_failures"].empty()) << mine.body;
  EXPECT_FALSE(has(mine.body, "doomed")) << mine.body;
}

// The Jobs page's listing: GET /v1/jobs filtered by priority class and instance type too, members' own teams.
TEST_F(ServerDashboard, JobListingFiltersByPriorityAndInstanceType) {
  small_cluster();
  ASSERT_EQ(post("/v1/nodes", R"([{"name": "m1", "instance_type": "ml.g5.12xlarge"}])").status, 201);
  json high = job("high-1");
  high["priority"] = "high";
  ASSERT_EQ(post("/v1/jobs", high).status, 201);
  json typed = job("typed", "b");
  typed["instance_type"] = "ml.g5.12xlarge";
  ASSERT_EQ(post("/v1/jobs", typed).status, 201);
  auto names = [](const Response& r) {
    std::set<std::string> out;
    for (const json& j : r.json["items"]) out.insert(j["name"].get<std::string>());
    return out;
  };
  EXPECT_EQ(names(get("/v1/jobs?priority=high")), std::set<std::string>{"high-1"});
  EXPECT_EQ(names(get("/v1/jobs?priority=none")), std::set<std::string>{"typed"});
  EXPECT_EQ(names(get("/v1/jobs?instance_type=ml.g5.12xlarge")), std::set<std::string>{"typed"});
  // high-1 names no type; it runs on a g5.8xlarge.
  EXPECT_EQ(names(get("/v1/jobs?instance_type=ml.g5.8xlarge&state=Running")), std::set<std::string>{"high-1"});
  auto bad = get("/v1/jobs?instance_type=nosuch");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_TRUE(has(bad.body, "nosuch")) << bad.body;
  const std::string member = bearer({{"role", "member"}, {"teams", {"b"}}});
  EXPECT_EQ(names(get_as(member, "/v1/jobs")), std::set<std::string>{"typed"});
  EXPECT_EQ(names(get_as(member, "/v1/jobs?priority=high")), std::set<std::string>{});
  EXPECT_EQ(get_as(member, "/v1/jobs?team=a").status, 403);
}

}  // namespace
}  // namespace allot::server::test::server_dashboard_test
