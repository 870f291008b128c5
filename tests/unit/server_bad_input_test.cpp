// Bad input through the HTTP API: every case is a 4xx whose message says what is wrong, and afterwards the
// state (and the journal) is exactly as before.
#include <sys/resource.h>

#include "server_test_fixture.h"

namespace allot::server::test::server_bad_input_test {
namespace {

using nlohmann::json;

class ServerBadInput : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    small_cluster();
    ASSERT_EQ(post("/v1/jobs", job("existing")).status, 201);
    // The agents' credentials exist before any case runs (the fixture makes them on first use).
    for (const char* n : {"n1", "n2"}) ASSERT_EQ(post(std::string("/v1/agents/") + n + "/heartbeat", "{}").status, 200);
  }
  // Journal records other than the audit trail's: a refused request is audited, and changes nothing else.
  size_t changes_journaled() {
    size_t n = 0;
    for (const auto& r : journal_->records()) n += !std::holds_alternative<store::Audit>(r.op);
    return n;
  }
  json snapshot() {
    return {{"jobs", list_jobs()}, {"teams", get("/v1/teams").json}, {"nodes", get("/v1/nodes").json},
            {"policy", get("/v1/policy").json}, {"journal", changes_journaled()}};
  }
  struct Case {
    std::string what;
    std::string method;
    std::string path;
    std::string body;
    std::string type = "application/json";
    int status = 400;
    std::string message;  // a substring the error message must contain
  };
  void expect_rejected(const Case& c) {
    json before = snapshot();
    Response r;
    if (c.method == "POST") r = post(c.path, c.body, c.type);
    else if (c.method == "PUT") r = put(c.path, c.body, c.type);
    else if (c.method == "DELETE") r = del(c.path);
    else r = get(c.path);
    EXPECT_EQ(r.status, c.status) << c.what << ": " << r.body;
    ASSERT_TRUE(r.json.is_object()) << c.what << ": the error body is not JSON: " << r.body;
    ASSERT_TRUE(r.json.contains("error")) << c.what << ": " << r.body;
    const std::string message = r.json["error"]["message"];
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": message '" << message << "' lacks '" << c.message << "'";
    EXPECT_FALSE(r.json["error"]["code"].get<std::string>().empty());
    EXPECT_EQ(snapshot(), before) << c.what << " changed the state";
  }
};

TEST_F(ServerBadInput, Jobs) {
  const std::vector<Case> cases = {
      {"malformed JSON", "POST", "/v1/jobs", R"({"name": "x", "team": )", "application/json", 400, "cannot read"},
      {"malformed YAML", "POST", "/v1/jobs", "name: x\n  team: [a\n", "application/yaml", 400, "request body"},
      {"not a mapping", "POST", "/v1/jobs", "[1, 2]", "application/json", 400, "expected a mapping"},
      {"empty body", "POST", "/v1/jobs", "", "application/json", 400, "empty"},
      {"invalid UTF-8", "POST", "/v1/jobs",
       "{\"name\": \"x\", \"team\": \"a\", \"per_replica\": {\"accelerators\": 1}, \"env\": {\"A\": \"\xff\"}}",
       "application/json", 400, "not valid UTF-8 (at byte"},
      {"unknown team", "POST", "/v1/jobs", job("x", "nobody").dump(), "application/json", 400, "unknown team 'nobody'; teams: a, b"},
      {"unknown priority class", "POST", "/v1/jobs",
       R"({"name": "x", "team": "a", "priority": "urgent", "per_replica": {"accelerators": 1}})", "application/json", 400,
       "unknown priority class 'urgent'; priority classes: high, low"},
      {"negative accelerators", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "per_replica": {"accelerators": -1}})",
       "application/json", 400, "accelerators"},
      {"absurd replicas", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "replicas": 100000000, "per_replica": {"accelerators": 1}})",
       "application/json", 400, "replicas"},
      {"zero replicas", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "replicas": 0, "per_replica": {"accelerators": 1}})",
       "application/json", 400, "replicas"},
      {"absurd memory", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "per_replica": {"memory_gib": 1e30}})", "application/json",
       400, "memory_gib"},
      {"string number", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "replicas": "2", "per_replica": {"accelerators": 1}})",
       "application/json", 400, "replicas"},
      {"unknown field", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "gpus": 1, "per_replica": {"accelerators": 1}})",
       "application/json", 400, "unknown key 'gpus'"},
      {"unknown instance type", "POST", "/v1/jobs",
       R"({"name": "x", "team": "a", "instance_type": "ml.z9.huge", "per_replica": {"accelerators": 1}})", "application/json", 400,
       "ml.z9.huge"},
      {"unknown topology level", "POST", "/v1/jobs",
       R"({"name": "x", "team": "a", "per_replica": {"accelerators": 1}, "topology": {"required": "rack"}})", "application/json",
       400, "rack"},
      {"slash in name", "POST", "/v1/jobs", job("a/b").dump(), "application/json", 400, "'/'"},
      {"duplicate name", "POST", "/v1/jobs", job("existing").dump(), "application/json", 409, "already exists"},
      {"wrong content type", "POST", "/v1/jobs", job("x").dump(), "text/html", 415, "text/html"},
      {"oversize body", "POST", "/v1/jobs", std::string(2 << 20, 'x'), "application/json", 413, "larger than the limit"},
      {"cancel unknown", "POST", "/v1/jobs/nope/cancel", "", "application/json", 404, "no job named nope"},
      {"logs of a missing replica", "GET", "/v1/jobs/existing/logs?replica=5", "", "", 400, "replicas 0..0"},
      {"logs with a bad tail", "GET", "/v1/jobs/existing/logs?tail=-1", "", "", 400, "tail"},
      {"unknown state filter", "GET", "/v1/jobs?state=Done", "", "", 400, "states: Pending"},
      {"unknown endpoint", "GET", "/v1/jobz", "", "", 404, "no such endpoint"},
  };
  for (const auto& c : cases) expect_rejected(c);
}

TEST_F(ServerBadInput, Configuration) {
  const std::vector<Case> cases = {
      {"policy unknown key", "PUT", "/v1/policy", R"({"task_prioritisation": "fcfs"})", "application/json", 400,
       "unknown key 'task_prioritisation'"},
      {"policy bad choice", "PUT", "/v1/policy", R"({"task_prioritization": "random"})", "application/json", 400, "fcfs"},
      {"policy drops a class in use", "PUT", "/v1/policy", R"({"priority_classes": []})", "application/json", 200, ""},
      {"weight out of range", "PUT", "/v1/priority-classes/high", R"({"weight": 1000})", "application/json", 400, "weight"},
      {"weight missing", "PUT", "/v1/priority-classes/high", R"({})", "application/json", 400, "weight"},
      {"class name mismatch", "PUT", "/v1/priority-classes/high", R"({"name": "low", "weight": 1})", "application/json", 400,
       "path names high"},
      {"delete unknown class", "DELETE", "/v1/priority-classes/nope", "", "", 404, "priority classes: high, low"},
      {"team name mismatch", "PUT", "/v1/teams/a", R"({"name": "b"})", "application/json", 400, "path names a"},
      {"team negative quota", "PUT", "/v1/teams/a", R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "accelerators": -2}]})",
       "application/json", 400, "accelerators"},
      {"team absurd quota", "PUT", "/v1/teams/a", R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1e12}]})",
       "application/json", 400, "instances"},
      {"team unknown strategy", "PUT", "/v1/teams/a", R"({"sharing": {"strategy": "Hoard"}})", "application/json", 400, "Hoard"},
      {"team unknown field", "PUT", "/v1/teams/a", R"({"quota": 3})", "application/json", 400, "unknown key 'quota'"},
      {"delete unknown team", "DELETE", "/v1/teams/nope", "", "", 404, "teams: a, b"},
      {"delete busy team", "DELETE", "/v1/teams/a", "", "", 409, "existing"},
      {"apply with nodes", "POST", "/v1/apply", R"({"cluster": {"nodes": []}})", "application/json", 400, "unknown key 'cluster'"},
      {"apply with nothing", "POST", "/v1/apply", R"({"name": "x"})", "application/json", 400, "neither policy nor teams"},
      {"apply duplicate team", "POST", "/v1/apply", R"({"teams": [{"name": "a"}, {"name": "a"}]})", "application/json", 400,
       "defined twice"},
  };
  for (const auto& c : cases) {
    if (c.status == 200) continue;  // listed to show it is not an error while no job uses a class
    expect_rejected(c);
  }
}

// Found by long fuzzing (issue 33): node lists that expand to gigabytes (3.19 GB before a 400; a 40 KB name gave
// 500 std::bad_alloc). Each is refused at once, naming the bound, and the server's peak memory hardly moves.
TEST_F(ServerBadInput, NodeListsAreBoundedBeforeTheyAreExpanded) {
  const std::string long_name(12000, 'a');
  std::string aliased = "- {name: &h \"n[0-199999]\", instance_type: ml.g5.8xlarge}\n";
  for (int i = 0; i < 20; ++i) aliased += "- {name: *h, instance_type: ml.g5.8xlarge}\n";
  std::string label_bomb = "- {name: \"n[0-199999]\", instance_type: ml.g5.8xlarge, labels: {";
  for (int i = 0; i < 40; ++i) label_bomb += "k" + std::to_string(i) + ": v, ";
  label_bomb += "last: v}}\n";
  const std::vector<Case> cases = {
      {"12 KB names", "POST", "/v1/nodes", json::array({{{"name", long_name + "[0-199999]"}, {"instance_type", "ml.g5.8xlarge"}}}).dump(),
       "application/json", 400, "gives names of 12006 characters; a node name is at most 253"},
      {"a 40 KB name", "POST", "/v1/nodes", json::array({{{"name", std::string(40000, 'b')}, {"instance_type", "ml.g5.8xlarge"}}}).dump(),
       "application/json", 400, "a node name is at most 253"},
      {"more names than the bound", "POST", "/v1/nodes", R"([{"name": "n[0-199999],m[0-9]", "instance_type": "ml.g5.8xlarge"}])",
       "application/json", 400, "names more than 200000 hosts"},
      {"aliased host lists", "POST", "/v1/nodes", aliased, "application/yaml", 400, "more than 200000 nodes"},
      {"labels times names", "POST", "/v1/nodes", label_bomb, "application/yaml", 400, "more than 4000000 labels in all"},
  };
  struct rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  for (const auto& c : cases) expect_rejected(c);
  struct rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  // ru_maxrss is the peak in KiB: the cases above once took gigabytes; 256 MiB covers the 200,000 short names
  // the label case reads before it counts their labels.
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 256 * 1024) << "peak RSS grew by " << (after.ru_maxrss - before.ru_maxrss) << " KiB";
}

TEST_F(ServerBadInput, NodesAndAgents) {
  const std::vector<Case> cases = {
      {"node exists", "POST", "/v1/nodes", R"([{"name": "n1", "instance_type": "ml.g5.8xlarge"}])", "application/json", 409,
       "already in the cluster"},
      {"node bad type", "POST", "/v1/nodes", R"([{"name": "n9", "instance_type": "ml.q1.tiny"}])", "application/json", 400, "ml.q1.tiny"},
      {"node unknown key", "POST", "/v1/nodes", R"([{"name": "n9", "instance_type": "ml.g5.8xlarge", "gpus": 1}])",
       "application/json", 400, "unknown key 'gpus'"},
      {"health unknown", "PUT", "/v1/nodes/n1/health", R"({"health": "Sick"})", "application/json", 400, "Schedulable"},
      {"health unknown node", "PUT", "/v1/nodes/ghost/health", R"({"health": "Unschedulable"})", "application/json", 404, "ghost"},
      {"drain unknown node", "POST", "/v1/nodes/ghost/drain", "", "application/json", 404, "ghost"},
      {"register without type", "POST", "/v1/agents/register", R"({"name": "n9"})", "application/json", 400, "instance_type"},
      {"register unknown key", "POST", "/v1/agents/register", R"({"name": "n9", "instance_type": "ml.g5.8xlarge", "cpu": 3})",
       "application/json", 400, "unknown key 'cpu'"},
      {"register as another type", "POST", "/v1/agents/register", R"({"name": "n1", "instance_type": "ml.p5.48xlarge"})",
       "application/json", 409, "registered as ml.g5.8xlarge"},
      {"register not JSON", "POST", "/v1/agents/register", "name: n9", "application/json", 400, "not valid JSON"},
      {"heartbeat unknown node", "POST", "/v1/agents/ghost/heartbeat", R"({"replicas": []})", "application/json", 403,
       "needs the agent token of node ghost"},
      {"heartbeat bad state", "POST", "/v1/agents/n1/heartbeat", R"({"replicas": [{"job": "existing", "rank": 0, "state": "zombie"}]})",
       "application/json", 400, "running, pulling, exited, lost or not_started"},
      {"heartbeat exit without code", "POST", "/v1/agents/n1/heartbeat",
       R"({"replicas": [{"job": "existing", "rank": 0, "state": "exited"}]})", "application/json", 400, "exit_code"},
      {"logs unknown job", "POST", "/v1/agents/n1/logs", R"({"job": "nope", "rank": 0, "data": "x"})", "application/json", 404, "nope"},
      {"logs bad rank", "POST", "/v1/agents/n1/logs", R"({"job": "existing", "rank": -1, "data": "x"})", "application/json", 400, "rank"},
  };
  for (const auto& c : cases) expect_rejected(c);
}

}  // namespace
}  // namespace allot::server::test::server_bad_input_test
