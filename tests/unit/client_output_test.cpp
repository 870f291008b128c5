// The CLI client's pieces that need no server: tables, YAML output, request bodies that read back through
// the scenario readers, the explanation `allot describe` prints, and how errors become exit codes.
#include <gtest/gtest.h>

#include <sstream>

#include <cstdlib>

#include "client/http_client.h"
#include "client/output.h"
#include "client/render.h"
#include "client/spec_json.h"
#include "config/spec_yaml.h"

namespace allot::client::client_output_test {
namespace {

using nlohmann::json;

TEST(Client, TableAlignsColumns) {
  Table t({"NAME", "STATE"});
  t.add({"a-1", "Running"});
  t.add({"long-name", "Pending"});
  EXPECT_EQ(t.str(), "NAME       STATE\na-1        Running\nlong-name  Pending\n");
}

TEST(Client, YamlReadsBackToTheSameJson) {
  json j = {{"name", "a"}, {"count", 2}, {"ratio", 0.5}, {"flag", true}, {"none", nullptr},
            {"tricky", {"true", "10", "", "a: b", "no"}}, {"nested", {{"x", json::array()}}}};
  std::string y = to_yaml(j);
  YAML::Node n = YAML::Load(y);
  EXPECT_EQ(n["name"].Scalar(), "a");
  EXPECT_EQ(n["count"].as<int>(), 2);
  EXPECT_EQ(n["tricky"][0].Scalar(), "true");
  EXPECT_EQ(n["tricky"][0].Tag(), "!");  // quoted, so a YAML reader keeps it a string
  EXPECT_EQ(n["tricky"][1].Tag(), "!");
  EXPECT_EQ(n["tricky"][3].Scalar(), "a: b");
  EXPECT_TRUE(n["none"].IsNull());
}

TEST(Client, FormatNames) {
  EXPECT_EQ(*parse_format("json"), Format::kJson);
  EXPECT_EQ(*parse_format("yaml"), Format::kYaml);
  EXPECT_EQ(*parse_format("table"), Format::kTable);
  EXPECT_FALSE(parse_format("xml").ok());
}

TEST(Client, JobBodyReadsBackAsTheSameSpec) {
  JobSpec j;
  j.name = "a-1";
  j.team = "team-a";
  j.priority = "training";
  PodSetSpec ps;
  ps.replicas = 2;
  ps.instance_type = "ml.g5.8xlarge";
  ps.per_replica.accelerators = 1;
  ps.per_replica.vcpu_milli = 1500;
  ps.per_replica.memory_mib = 954;
  ps.topology.required = "network-node-layer-3";
  ps.topology.slice = SliceSpec{"hostname", 1};
  j.pod_sets = {ps};
  j.max_retries = 2;
  j.command = {"python", "train.py"};
  j.env = {{"LR", "0.1"}};
  j.labels = {{"app", "llm"}, {"kueue.x-k8s.io/queue-name", "team-a"}};
  j.plan = "reserved";  // `allot submit` lost a job's capacity plan before it was in the body
  auto back = parse_job_spec(YAML::Load(job_body(j).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, j);

  // Two pod sets go as `pod_sets`.
  PodSetSpec master = ps;
  master.name = "master";
  master.replicas = 1;
  j.pod_sets = {master, ps};
  j.pod_sets[1].name = "worker";
  back = parse_job_spec(YAML::Load(job_body(j).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, j);
}

TEST(Client, TeamAndPolicyBodiesReadBack) {
  TeamSpec t;
  t.name = "team-a";
  t.fair_share_weight = 10;
  AmountSpec two_instances, four_gpus;
  two_instances.instances = 2;
  four_gpus.accelerators = 4;
  four_gpus.vcpu_milli = 48000;
  t.allocation = {{"ml.g5.8xlarge", two_instances}, {"ml.p5.48xlarge", four_gpus}};
  t.strategy = SharingStrategy::kLend;
  t.borrow_limit = 80;
  auto back = parse_team(YAML::Load(team_body(t).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, t);

  PolicySpec p;
  p.task_prioritization = TaskPrioritization::kTaskRanking;
  p.idle_pool = true;
  p.priority_classes = {{"inference", 100}, {"training", 70}};
  p.min_runtime_s = 60;
  auto pb = parse_policy(YAML::Load(policy_body(p).dump()), {});
  ASSERT_TRUE(pb.ok()) << pb.error().message;
  EXPECT_EQ(*pb, p);
}

TEST(Client, TeamBodyFromViewKeepsOnlyWritableKeys) {
  json view = {{"name", "t"}, {"fair_share_weight", 1}, {"allocation", json::array()}, {"usage", json::object()},
               {"sharing", {{"strategy", "Lend"}, {"borrow_limit", 50}}}, {"jobs", json::object()}};
  json b = team_body_from_view(view);
  EXPECT_FALSE(b.contains("usage"));
  EXPECT_FALSE(b.contains("jobs"));
  EXPECT_EQ(b["sharing"]["strategy"], "Lend");
}

json running_job() {
  return json::parse(R"({
    "name": "a-1", "team": "team-a", "priority": "training", "priority_weight": 70, "state": "Running",
    "reason": "admitted on gpu-1, gpu-2", "submitted_at": "2023-11-14T22:13:20Z", "started_at": "2023-11-14T22:13:21Z",
    "nodes": ["gpu-1", "gpu-2"], "node_count": 2, "borrowing": true, "preemptions": 1, "restarts": 0,
    "pod_sets": [{"name": "main", "replicas": 2, "instance_type": "ml.g5.8xlarge",
                  "topology": {"required": "network-node-layer-3"}}],
    "placement": [{"instance_type": "ml.g5.8xlarge", "per_replica": {"accelerators": 1, "vcpu": 32, "memory_gib": 128},
                   "replicas": [{"rank": 0, "node": "gpu-1", "accelerators": [0], "numa_domains": [0], "cpus": "0-31"},
                                {"rank": 1, "node": "gpu-2", "accelerators": [0], "numa_domains": [0], "cpus": "0-31"}]}],
    "history": [{"at": "2023-11-14T22:13:20Z", "from": "Pending", "to": "Pending", "reason": "submitted"},
                {"at": "2023-11-14T22:13:21Z", "from": "Pending", "to": "Running", "reason": "admitted on gpu-1, gpu-2"}]})");
}

// Times are RFC 3339 (docs/api.md); a server from before them sent Unix seconds, which read the same.
TEST(Client, TimesReadAsRfc3339OrAnOlderServersSeconds) {
  json older = running_job();
  older["submitted_at"] = 1700000000;
  older["history"][0]["at"] = 1700000000;
  EXPECT_EQ(describe_job(older, 1700000060), describe_job(running_job(), 1700000060));
  EXPECT_NE(describe_job(running_job(), 1700000060).find("(60s ago)"), std::string::npos) << describe_job(running_job(), 1700000060);
  EXPECT_EQ(time_at(json{{"at", "2023-11-14T22:14:18.500Z"}}, "at"), 1700000058);
  EXPECT_EQ(time_at(json{{"at", "not a time"}}, "at", -1), -1);
  EXPECT_EQ(time_at(json::object(), "at", -1), -1);
}

TEST(Client, DescribeExplains) {
  std::string d = describe_job(running_job(), 1700000060);
  EXPECT_NE(d.find("State:       Running, borrowing idle capacity"), std::string::npos) << d;
  EXPECT_NE(d.find("Priority:    training (weight 70)"), std::string::npos) << d;
  EXPECT_NE(d.find("required network-node-layer-3"), std::string::npos) << d;
  EXPECT_NE(d.find("gpu-2"), std::string::npos) << d;
  EXPECT_NE(d.find("0-31"), std::string::npos) << d;
  EXPECT_NE(d.find("Pending  Running  admitted on gpu-1, gpu-2"), std::string::npos) << d;
}

// The backfill holder's reservation (docs/scheduling.md, "Backfill"): when, how soon, on which nodes.
TEST(Client, DescribeShowsTheBackfillReservation) {
  json j = running_job();
  j["state"] = "Pending";
  EXPECT_EQ(describe_job(j, 1700000060).find("Reserved:"), std::string::npos);
  j["reservation"] = {{"start_at", "2023-11-14T22:24:20Z"}, {"nodes", {"gpu-1", "gpu-2"}}};
  std::string d = describe_job(j, 1700000060);
  EXPECT_NE(d.find("Reserved:    from " + clock_time(1700000660) + " (in 600 s) on gpu-1, gpu-2 (backfill"), std::string::npos) << d;
}

// Every pod set's request, the retries (issue 28 item 14).
TEST(Client, DescribeShowsEachPodSetsRequestAndTheRetries) {
  json j = running_job();
  j["pod_sets"] = json::parse(R"([
    {"name": "launcher", "replicas": 1, "instance_type": "ml.m5.xlarge", "topology": {}, "per_replica": {"vcpu": 2}},
    {"name": "workers", "replicas": 4, "min_replicas": 2, "instance_type": "", "topology": {"preferred": "network-node-layer-3"},
     "per_replica": {"whole_node": true}},
    {"name": "eval", "replicas": 1, "instance_type": "ml.g5.8xlarge", "topology": {},
     "per_replica": {"accelerators": 1, "vcpu": 8, "memory_gib": 32}}])");
  j["max_retries"] = 3;
  j["retries_used"] = 1;
  const std::string d = describe_job(j, 1700000060);
  EXPECT_NE(d.find("PER_REPLICA"), std::string::npos) << d;
  EXPECT_NE(d.find("  launcher  1         ml.m5.xlarge   none                            vcpu 2 (rest in proportion)"), std::string::npos) << d;
  EXPECT_NE(d.find("  workers   2..4      any            preferred network-node-layer-3  whole node"), std::string::npos) << d;
  EXPECT_NE(d.find("accelerators 1, vcpu 8, memory_gib 32\n"), std::string::npos) << d;
  EXPECT_NE(d.find("Retries:     1 of 3 used (max_retries 3)"), std::string::npos) << d;
}

TEST(Client, DescribeShowsTheCpusAReplicaWasBoundToWhereReported) {
  EXPECT_EQ(describe_job(running_job(), 1700000060).find("BOUND"), std::string::npos) << "no column before any report";
  json j = running_job();
  j["placement"][0]["replicas"][0]["cpus_bound"] = "0-3";  // an emulated g5.8xlarge on a 4-CPU machine
  const std::string d = describe_job(j, 1700000060);
  EXPECT_NE(d.find("BOUND"), std::string::npos) << d;
  size_t at = d.find("gpu-1", d.find("Placement:"));
  ASSERT_NE(at, std::string::npos);
  const std::string row0 = d.substr(at, d.find('\n', at) - at);
  EXPECT_NE(row0.find("0-31  0-3"), std::string::npos) << d;
  at = d.find("gpu-2", d.find("Placement:"));
  const std::string row1 = d.substr(at, d.find('\n', at) - at);
  EXPECT_NE(row1.find("0-31  -"), std::string::npos) << "rank 1 has not reported yet:\n" << d;
}

TEST(Client, JobsAndNodesTables) {
  std::string t = jobs_table(json::array({running_job()}), 1700000060);
  EXPECT_NE(t.find("Running (borrowing)"), std::string::npos) << t;
  EXPECT_NE(t.find("gpu-1,gpu-2"), std::string::npos) << t;
  EXPECT_NE(t.find("60s"), std::string::npos) << t;
  json node = {{"name", "gpu-1"}, {"instance_type", "ml.g5.8xlarge"}, {"health", "Schedulable"}, {"cordoned", true},
               {"topology", {{"network-node-layer-3", "nn-3a"}, {"network-node-layer-1", "nn-1"}, {"zone", "z1"}}},
               {"capacity", {{"accelerators", 1}, {"vcpu", 32}, {"memory_gib", 128}}},
               {"free", {{"accelerators", 0}, {"vcpu", 0.5}, {"memory_gib", 0}}}, {"last_heartbeat", "2023-11-14T22:14:18.500Z"}};
  std::string n = nodes_table(json::array({node}), 1700000060);
  EXPECT_NE(n.find("Schedulable,Cordoned"), std::string::npos) << n;
  EXPECT_NE(n.find("z1/nn-1/nn-3a"), std::string::npos) << n;  // coarse to fine, not alphabetical
  EXPECT_NE(n.find("0.5/32"), std::string::npos) << n;
  EXPECT_NE(n.find("2s ago"), std::string::npos) << n;
}

// The first line of `text` that holds `what` ("" when none does).
std::string line_with(const std::string& text, const std::string& what) {
  size_t at = text.find(what);
  if (at == std::string::npos) return "";
  size_t start = text.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, text.find('\n', at) - start);
}

// Issue 15: amounts of different instance types are never added up; each type has its row.
TEST(Client, TeamsPerInstanceTypeWithFairShare) {
  json team = json::parse(R"({
    "name": "ml", "fair_share_weight": 2, "share": 0.25, "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100},
    "preempt_team_tasks": "LowerPriority",
    "allocation": [{"instance_type": "ml.p5.48xlarge", "instances": 1}, {"instance_type": "ml.g5.8xlarge", "accelerators": 4}],
    "nominal": {"accelerators": 12, "vcpu": 240, "memory_gib": 2560},
    "instance_types": [
      {"instance_type": "ml.p5.48xlarge", "nominal": {"accelerators": 8, "vcpu": 192, "memory_gib": 2048},
       "max": {"accelerators": 16, "vcpu": 384, "memory_gib": 4096}, "usage": {"accelerators": 8, "vcpu": 192, "memory_gib": 2048},
       "borrowed": {"accelerators": 0, "vcpu": 0, "memory_gib": 0}, "lent": {"accelerators": 0, "vcpu": 0, "memory_gib": 0}},
      {"instance_type": "ml.g5.8xlarge", "nominal": {"accelerators": 4, "vcpu": 48, "memory_gib": 512},
       "max": {"accelerators": 8, "vcpu": 96, "memory_gib": 1024}, "usage": {"accelerators": 0, "vcpu": 0, "memory_gib": 0},
       "borrowed": {"accelerators": 0, "vcpu": 0, "memory_gib": 0}, "lent": {"accelerators": 4, "vcpu": 48, "memory_gib": 512}}],
    "jobs": {"pending": 1, "running": 2, "suspended": 0}})");
  std::string t = teams_table(json::array({team}));
  EXPECT_EQ(t.find("12/240"), std::string::npos) << "types must not be summed: " << t;
  EXPECT_NE(line_with(t, "ml.p5.48xlarge").find("8/192/2048"), std::string::npos) << t;
  EXPECT_NE(line_with(t, "ml.g5.8xlarge").find("4/48/512"), std::string::npos) << t;
  EXPECT_EQ(line_with(t, "ml.g5.8xlarge").find("ml "), std::string::npos) << "the team's columns only on its first row: " << t;
  EXPECT_NE(t.find("0.25"), std::string::npos) << t;
  team["share"] = nullptr;
  team["fair_share_weight"] = 0;
  EXPECT_NE(teams_table(json::array({team})).find(" inf "), std::string::npos);
  std::string d = describe_team(team);
  EXPECT_NE(d.find("Weight:      0 (borrows only what no team of positive weight wants)"), std::string::npos) << d;
  EXPECT_NE(d.find("Fair share:  inf"), std::string::npos) << d;
  EXPECT_NE(d.find("Per instance type"), std::string::npos) << d;
  EXPECT_NE(d.find("4/48/512"), std::string::npos) << d;
}

// In a cohort tree `allot teams` shows the tree (docs/cli.md): each group a row ending in "/", its subgroups and
// teams under it indented two spaces a level; teams without a group at the top after the root groups. Without
// groups the table is the flat one, unchanged.
TEST(Client, TeamsTableShowsTheCohortTree) {
  auto team = [](const std::string& name, const std::string& group) {
    json t = {{"name", name}, {"fair_share_weight", 1}, {"share", 0}, {"strategy", "LendAndBorrow"}, {"borrow_limit", 50},
              {"jobs", {{"pending", 0}, {"running", 0}, {"suspended", 0}}}};
    if (!group.empty()) t["group"] = group;
    return t;
  };
  const json teams = json::array({team("a", "research"), team("c", "prod"), team("b", "research"), team("x", "")});
  const json groups = json::parse(R"([{"name": "org", "fair_share_weight": 2}, {"name": "research", "parent": "org", "fair_share_weight": 1},
                                      {"name": "prod", "parent": "org", "fair_share_weight": 3}])");
  const std::string t = teams_tree_table(teams, groups);
  std::vector<std::string> names;
  std::istringstream in(t);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line) && !line.starts_with("(")) names.push_back(line.substr(0, line.find(' ', line.find_first_not_of(' '))));
  EXPECT_EQ(names, (std::vector<std::string>{"org/", "  research/", "    a", "    b", "  prod/", "    c", "x"})) << t;
  EXPECT_NE(line_with(t, "prod/").find(" 3 "), std::string::npos) << "a group's row has its weight: " << t;
  EXPECT_NE(line_with(t, "prod/").find("group"), std::string::npos) << t;
  // Without groups: the flat table, in the order listed, no indentation.
  const std::string flat = teams_table(teams);
  EXPECT_EQ(flat, teams_tree_table(teams, json::array())) << flat;
  EXPECT_EQ(flat.find("org/"), std::string::npos) << flat;
  EXPECT_NE(flat.find("\nc "), std::string::npos) << flat;
}

TEST(Client, NodeHealthChecksAndRestartsAreShown) {
  json node = {{"name", "gpu-2"}, {"instance_type", "ml.g5.8xlarge"}, {"health", "UnschedulablePendingReboot"},
               {"health_reason", "check gpu failed: XID 13 on GPU 0; rebooting it"}, {"boot", 1},
               {"checks", {{{"name", "gpu"}, {"status", "failed"}, {"detail", "XID 13 on GPU 0"}, {"on_failure", "reboot"}, {"at", "2023-11-14T22:14:19Z"}},
                           {{"name", "efa"}, {"status", "skipped"}, {"detail", "fi_info is not installed"}, {"on_failure", "reboot"}, {"at", "2023-11-14T22:14:19Z"}}}},
               {"health_history", {{{"at", "2023-11-14T22:13:20Z"}, {"from", ""}, {"to", "Schedulable"}, {"cause", "agent"}, {"reason", "joined the cluster"}},
                                   {{"at", "2023-11-14T22:14:19Z"}, {"from", "Schedulable"}, {"to", "UnschedulablePendingReboot"}, {"cause", "health-check"}, {"reason", "check gpu failed"}}}}};
  EXPECT_NE(nodes_table(json::array({node}), 1700000060).find("gpu FAILED"), std::string::npos);
  std::string d = describe_node(node, 1700000060);
  EXPECT_NE(d.find("Reason:      check gpu failed: XID 13 on GPU 0; rebooting it"), std::string::npos) << d;
  EXPECT_NE(d.find("fi_info is not installed"), std::string::npos) << d;
  EXPECT_NE(d.find("health-check"), std::string::npos) << d;
  json job = running_job();
  job["restart_history"] = {{{"at", "2023-11-14T22:14:19Z"}, {"attempt", 0}, {"cause", "node gpu-2 became UnschedulablePendingReboot"},
                             {"node", "gpu-2"}, {"run_s", 59}, {"work_lost_s", 9}}};
  job["goodput"] = 0.85;
  job["work_lost_s"] = 9;
  std::string j = describe_job(job, 1700000060);
  EXPECT_NE(j.find("Restarts:"), std::string::npos) << j;
  EXPECT_NE(j.find("node gpu-2 became UnschedulablePendingReboot"), std::string::npos) << j;
  EXPECT_NE(j.find("Goodput:     0.850 (work lost to restarts and preemptions: 9 s)"), std::string::npos) << j;
}

TEST(Client, TopologyTree) {
  json topo = json::parse(R"({"levels": ["network-node-layer-1", "network-node-layer-3", "hostname"],
    "domains": [{"level": "network-node-layer-1", "name": "nn-1", "children": [
      {"level": "network-node-layer-3", "name": "a", "children": [{"node": "gpu-1"}, {"node": "gpu-2"}]},
      {"level": "network-node-layer-3", "name": "b", "children": [{"node": "gpu-3"}]}]}]})");
  EXPECT_EQ(topology_text(topo),
            "levels: network-node-layer-1 > network-node-layer-3 > hostname\n"
            "network-node-layer-1=nn-1\n"
            "  network-node-layer-3=a: gpu-1, gpu-2\n"
            "  network-node-layer-3=b: gpu-3\n");
}

TEST(Client, UrlsAndQueries) {
  EXPECT_EQ(url_encode("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(with_query("/v1/jobs", {{"team", "team a"}, {"state", ""}}), "/v1/jobs?team=team%20a");
  EXPECT_EQ(resolve_server_url("http://x:1"), "http://x:1");
  setenv("ALLOT_SERVER", "http://from-env:7", 1);
  EXPECT_EQ(resolve_server_url(""), "http://from-env:7");
  unsetenv("ALLOT_SERVER");
  EXPECT_EQ(resolve_server_url(""), "http://127.0.0.1:7070");
  EXPECT_FALSE(ApiClient::connect("ftp://x").ok());
}

TEST(Client, ErrorsBecomeExitCodes) {
  Error e = error_from_response({404, R"({"error": {"code": "NotFound", "message": "no job named x"}})", ""});
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_EQ(e.message, "no job named x");
  EXPECT_EQ(exit_code_for(e), 2);
  Error s = error_from_response({503, "busy", ""});
  EXPECT_EQ(exit_code_for(s), 3);
  EXPECT_NE(s.message.find("503"), std::string::npos);
}

TEST(Client, UnreachableServerNamesTheUrl) {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  auto c = ApiClient::connect("http://127.0.0.1:1");
  ASSERT_TRUE(c.ok());
  auto r = c->get("/v1/jobs");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("http://127.0.0.1:1"), std::string::npos) << r.error().message;
  EXPECT_EQ(exit_code_for(r.error()), 3);
}

}  // namespace
}  // namespace allot::client::client_output_test
