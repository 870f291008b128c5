// End to end: tokens and roles against a real `allot server` over raw HTTP (docs/security.md). Each attack of
// issue 9 is replayed and must be refused: a browser page posting a job, a member cancelling or reading another
// team's jobs or setting a quota, a forged heartbeat, a forged replica report, a rogue registration. Then the
// role matrix (each role x each endpoint family), revocation, expiry, the audit trail, and that tokens survive a
// restart while their secrets appear in no log.
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "durability_harness.h"

namespace {

using nlohmann::json;

struct Api {
  int port;
  e2e::Reply call(const std::string& method, const std::string& path, const std::string& token, const std::string& body = "",
                  const std::string& type = "application/json", const httplib::Headers& extra = {}) {
    auto c = e2e::client(port, token);
    c.set_default_headers(extra);
    if (method == "GET") return e2e::wrap(c.Get(path.c_str()));
    if (method == "DELETE") return e2e::wrap(c.Delete(path.c_str()));
    if (method == "PUT") return e2e::wrap(c.Put(path.c_str(), body, type.c_str()));
    return e2e::wrap(c.Post(path.c_str(), body, type.c_str()));
  }
  std::string token(const std::string& admin, const json& req) {
    auto r = call("POST", "/v1/tokens", admin, req.dump());
    E2E_CHECK(r.status == 201, "token create " << req.dump() << ": " << r.status << " " << r.body);
    return r.status == 201 ? r.json["token"].get<std::string>() : "";
  }
};

json register_body(const std::string& name, const std::string& address = "127.0.0.1") {
  return {{"name", name}, {"instance_type", "ml.g5.8xlarge"}, {"address", address}};
}

// A CPU node, where the test's GPU jobs are never placed.
json cpu_node(const std::string& name) { return {{"name", name}, {"instance_type", "ml.m5.xlarge"}}; }

std::string job_body(const std::string& name, const std::string& team) {
  return json{{"name", name},
              {"team", team},
              {"per_replica", {{"accelerators", 1}}},
              {"command", {"sh", "-c", "echo HF_TOKEN=$HF_TOKEN"}},
              {"env", {{"HF_TOKEN", "hf_secret_of_" + team}}}}
      .dump();
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::cerr << "usage: auth_test PATH/TO/allot\n", 2;
  signal(SIGPIPE, SIG_IGN);
  e2e::TempDir dir;
  auto server = std::make_unique<e2e::ServerProcess>(argv[1], dir.path());
  if (!server->start()) return 1;
  Api api{server->port()};

  // The bootstrap token: in the data directory, readable by its owner only.
  struct stat st {};
  E2E_CHECK(::stat((dir.path() + "/admin-token").c_str(), &st) == 0 && (st.st_mode & 0777) == 0600,
            "admin-token must exist with mode 0600, has " << std::oct << (st.st_mode & 0777));
  const std::string admin = server->admin_token();
  E2E_CHECK(admin.rfind("allot_", 0) == 0, "admin token: '" << admin << "'");

  auto r = api.call("POST", "/v1/apply", admin, R"({"teams": [
      {"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]},
      {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]}]})");
  E2E_CHECK(r.status == 200, "apply: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/nodes", admin, R"([{"name": "static-1", "instance_type": "ml.m5.xlarge"}])");
  E2E_CHECK(r.status == 201, "add node: " << r.status << " " << r.body);

  std::map<std::string, std::string> tok;
  tok["admin"] = admin;
  tok["member-a"] = api.token(admin, {{"role", "member"}, {"teams", {"a"}}});
  tok["member-b"] = api.token(admin, {{"role", "member"}, {"teams", {"b"}}});
  tok["viewer"] = api.token(admin, {{"role", "viewer"}});
  tok["viewer-a"] = api.token(admin, {{"role", "viewer"}, {"teams", {"a"}}});
  tok["join"] = api.token(admin, {{"role", "agent-join"}});

  // Two nodes join with the join token and get credentials bound to their names.
  for (const char* node : {"x1", "x2"}) {
    r = api.call("POST", "/v1/agents/register", tok["join"], register_body(node).dump());
    E2E_CHECK(r.status == 200 && r.json.contains("credential"), "join " << node << ": " << r.status << " " << r.body);
    if (r.status == 200) tok[std::string("agent-") + node] = r.json["credential"].get<std::string>();
  }
  // The credential is shown once: a second join of the same node is refused, and nobody can take it over.
  r = api.call("POST", "/v1/agents/register", tok["join"], register_body("x1", "10.6.6.6").dump());
  E2E_CHECK(r.status == 409, "rogue join of x1 with the join token: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/agents/register", tok["agent-x2"], register_body("x1", "10.6.6.6").dump());
  E2E_CHECK(r.status == 403, "x2's credential registering x1: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/agents/register", tok["agent-x1"], register_body("x1", "10.6.6.6").dump());
  E2E_CHECK(r.status == 409, "x1 moving its own address: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/agents/register", tok["agent-x1"], register_body("x1").dump());
  E2E_CHECK(r.status == 200 && !r.json.contains("credential"), "x1 registering again: " << r.status << " " << r.body);

  // Join tokens register new names only: a node an admin added is adopted with a token made for it alone, which
  // registers that one node once.
  r = api.call("POST", "/v1/agents/register", tok["join"], register_body("static-1").dump());
  E2E_CHECK(r.status == 409 && r.body.find("allot node adopt static-1") != std::string::npos,
            "the join token takes over the admin's node static-1: " << r.status << " " << r.body);
  const std::string adopt = api.token(admin, {{"role", "agent-join"}, {"node", "static-1"}});
  r = api.call("POST", "/v1/agents/register", adopt, cpu_node("rogue-1").dump());
  E2E_CHECK(r.status == 403, "static-1's adoption token registers another name: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/agents/register", adopt, cpu_node("static-1").dump());
  E2E_CHECK(r.status == 200 && r.json.contains("credential"), "static-1 adopted: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/agents/register", adopt, cpu_node("static-1").dump());
  E2E_CHECK(r.status == 403, "the adoption token used twice: " << r.status << " " << r.body);
  // --max-nodes: a join token registers at most that many nodes.
  const std::string two = api.token(admin, {{"role", "agent-join"}, {"max_nodes", 2}});
  for (const char* node : {"y1", "y2"}) {
    r = api.call("POST", "/v1/agents/register", two, cpu_node(node).dump());
    E2E_CHECK(r.status == 200, "join " << node << " with the 2-node token: " << r.status << " " << r.body);
    if (r.status == 200) tok[std::string("agent-") + node] = r.json["credential"].get<std::string>();
  }
  r = api.call("POST", "/v1/agents/register", two, cpu_node("y3").dump());
  E2E_CHECK(r.status == 403 && r.body.find("--max-nodes 2") != std::string::npos, "a third join with the 2-node token: " << r.status << " " << r.body);
  E2E_CHECK(api.call("GET", "/v1/nodes/y3", admin).status == 404, "the refused join added y3");
  r = api.call("GET", "/v1/tokens", admin);
  bool counted = false;
  for (const auto& t : r.json) counted |= t["id"] == two.substr(6, 10) && t.value("nodes_joined", -1) == 2 && t.value("max_nodes", 0) == 2;
  E2E_CHECK(counted, "the token list should show the 2-node token's 2 of 2 joins: " << r.body);
  // A revoked credential locks its node out: its thief cannot join again with any join token, not even after the
  // node is removed, until an admin adopts the name.
  E2E_CHECK(api.call("DELETE", "/v1/tokens/" + tok["agent-y1"].substr(6, 10), admin).status == 204, "revoke y1's credential");
  E2E_CHECK(api.call("POST", "/v1/agents/y1/heartbeat", tok["agent-y1"], "{}").status == 401, "y1's revoked credential still works");
  r = api.call("POST", "/v1/agents/register", tok["join"], cpu_node("y1").dump());
  E2E_CHECK(r.status == 409, "the join token re-registers y1 after its credential was revoked: " << r.status << " " << r.body);
  E2E_CHECK(api.call("DELETE", "/v1/nodes/y1", admin).status == 204, "remove y1");
  r = api.call("POST", "/v1/agents/register", tok["join"], cpu_node("y1").dump());
  E2E_CHECK(r.status == 403 && r.body.find("was revoked") != std::string::npos,
            "the join token registers the removed y1 whose credential was revoked: " << r.status << " " << r.body);
  const std::string readopt = api.token(admin, {{"role", "agent-join"}, {"node", "y1"}});
  r = api.call("POST", "/v1/agents/register", readopt, cpu_node("y1").dump());
  E2E_CHECK(r.status == 200 && r.json.contains("credential"), "y1 adopted again by the admin: " << r.status << " " << r.body);
  // An adoption token is not made for a node whose agent holds a live credential.
  r = api.call("POST", "/v1/tokens", admin, json{{"role", "agent-join"}, {"node", "y2"}}.dump());
  E2E_CHECK(r.status == 409 && r.body.find("allot token revoke") != std::string::npos, "adoption of y2 with a live credential: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/tokens", admin, json{{"role", "member"}, {"teams", {"a"}}, {"max_nodes", 2}}.dump());
  E2E_CHECK(r.status == 400, "max_nodes on a member token: " << r.status << " " << r.body);

  // Jobs: each member submits for its own team only.
  r = api.call("POST", "/v1/jobs", tok["member-a"], job_body("job-a", "a"));
  E2E_CHECK(r.status == 201, "member-a submits job-a: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/jobs", tok["member-b"], job_body("job-b", "b"));
  E2E_CHECK(r.status == 201, "member-b submits job-b: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/jobs", tok["member-b"], job_body("job-b2", "a"));
  E2E_CHECK(r.status == 403, "member-b submits for team a: " << r.status << " " << r.body);
  r = api.call("GET", "/v1/jobs/job-a", admin);
  E2E_CHECK(r.status == 200 && r.json["state"] == "Running", "job-a: " << r.body);
  const std::string home = r.status == 200 && !r.json["nodes"].empty() ? r.json["nodes"][0].get<std::string>() : "x1";
  const std::string other = home == "x1" ? "x2" : "x1";

  // Attack: a web page's cross-origin form post (no credentials, text/plain) cannot submit a job.
  r = api.call("POST", "/v1/jobs", "", job_body("evil", "a"), "text/plain", {{"Origin", "http://evil.example"}});
  E2E_CHECK(r.status == 401 || r.status == 403, "cross-origin text/plain post: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/jobs", tok["member-a"], job_body("evil", "a"), "text/plain");
  E2E_CHECK(r.status == 415, "text/plain body with a token: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/jobs", tok["member-a"], job_body("evil", "a"), "application/json", {{"Origin", "http://evil.example"}});
  E2E_CHECK(r.status == 403, "cross-origin post with a token: " << r.status << " " << r.body);
  r = api.call("GET", "/v1/jobs?token=" + tok["member-a"], "");
  E2E_CHECK(r.status == 400, "token in the query string: " << r.status << " " << r.body);
  E2E_CHECK(api.call("GET", "/v1/jobs/evil", admin).status == 404, "no job 'evil' may exist");

  // Attack: a member cancels another team's job, sets a quota to zero, reads another team's logs.
  // A member gets the answer a missing job gets for another team's job (no 403-versus-404 oracle).
  auto same_as_missing = [&](const std::string& method, const std::string& path_of_b, const std::string& path_of_none) {
    const auto of_b = api.call(method, path_of_b, tok["member-a"]);
    const auto of_none = api.call(method, path_of_none, tok["member-a"]);
    std::string expected = of_none.body;
    for (size_t at = expected.find("job-zz"); at != std::string::npos; at = expected.find("job-zz", at + 1)) expected.replace(at, 6, "job-b");
    E2E_CHECK(of_b.status == 404 && of_none.status == 404 && of_b.body == expected,
              "member-a: " << method << " " << path_of_b << " answers " << of_b.status << " " << of_b.body << ", a missing job "
                           << of_none.status << " " << of_none.body);
  };
  same_as_missing("POST", "/v1/jobs/job-b/cancel", "/v1/jobs/job-zz/cancel");
  same_as_missing("GET", "/v1/jobs/job-b", "/v1/jobs/job-zz");
  same_as_missing("GET", "/v1/jobs/job-b/logs", "/v1/jobs/job-zz/logs");
  same_as_missing("POST", "/v1/jobs/job-b/hold", "/v1/jobs/job-zz/hold");
  same_as_missing("DELETE", "/v1/jobs/job-b", "/v1/jobs/job-zz");
  E2E_CHECK(api.call("GET", "/v1/jobs/job-b", admin).json["state"] == "Running", "job-b must still run");
  r = api.call("PUT", "/v1/teams/b", tok["member-a"], R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 0}]})");
  E2E_CHECK(r.status == 403, "member-a zeroes team b's quota: " << r.status << " " << r.body);
  r = api.call("GET", "/v1/jobs", tok["member-a"]);
  E2E_CHECK(r.status == 200 && r.json.dump().find("job-b") == std::string::npos, "member-a's job list shows job-b: " << r.body);
  r = api.call("GET", "/v1/events?since=0", tok["member-a"]);
  E2E_CHECK(r.status == 200 && r.body.find("job-a") != std::string::npos && r.body.find("job-b") == std::string::npos,
            "member-a's events must show job-a and not job-b: " << r.body);

  // Attack: a forged heartbeat gets nothing, and another node's credential gets nothing of this node's.
  r = api.call("POST", "/v1/agents/" + home + "/heartbeat", "", "{}");
  E2E_CHECK(r.status == 401 && r.body.find("hf_secret") == std::string::npos, "heartbeat without a token: " << r.status);
  r = api.call("POST", "/v1/agents/" + home + "/heartbeat", tok["agent-" + other], "{}");
  E2E_CHECK(r.status == 403 && r.body.find("hf_secret") == std::string::npos, "heartbeat with another node's token: " << r.status);
  r = api.call("POST", "/v1/agents/" + home + "/heartbeat", tok["member-a"], "{}");
  E2E_CHECK(r.status == 403, "heartbeat with a member token: " << r.status);
  r = api.call("POST", "/v1/agents/" + home + "/heartbeat", tok["agent-" + home], "{}");
  E2E_CHECK(r.status == 200 && r.body.find("hf_secret_of_a") != std::string::npos, "own heartbeat: " << r.status << " " << r.body);

  // Attack: a forged replica report (another node claims job-a's replica succeeded) changes nothing.
  const std::string report = R"({"replicas": [{"job": "job-a", "rank": 0, "state": "exited", "exit_code": 0}]})";
  r = api.call("POST", "/v1/agents/" + other + "/heartbeat", tok["agent-" + other], report);
  E2E_CHECK(r.status == 200, "other node's heartbeat: " << r.status << " " << r.body);
  E2E_CHECK(api.call("GET", "/v1/jobs/job-a", admin).json["state"] == "Running", "a forged report finished job-a");
  r = api.call("POST", "/v1/agents/" + other + "/logs", tok["agent-" + other], R"({"job": "job-a", "rank": 0, "data": "forged\n"})");
  E2E_CHECK(r.status == 403, "other node posts job-a's logs: " << r.status << " " << r.body);
  r = api.call("POST", "/v1/agents/" + home + "/logs", tok["agent-" + home], R"({"job": "job-a", "rank": 0, "data": "real line\n"})");
  E2E_CHECK(r.status == 204, "own node posts job-a's logs: " << r.status << " " << r.body);

  // The role matrix: every role against every endpoint family. 'A' allowed (any answer but 401/403), 'D' 403,
  // 'U' 401, 'N' 404 (another team's job, answered as a missing one).
  struct Row {
    std::string method, path, body;
    std::map<std::string, char> expect;  // by token name; "none" = no token
  };
  auto all = [](char admin, char member_a, char member_b, char viewer, char viewer_a, char agent, char join, char none) {
    return std::map<std::string, char>{{"admin", admin},   {"member-a", member_a}, {"member-b", member_b}, {"viewer", viewer},
                                       {"viewer-a", viewer_a}, {"agent-x1", agent}, {"join", join},         {"none", none}};
  };
  const std::vector<Row> matrix = {
      {"GET", "/v1/health", "", all('A', 'A', 'A', 'A', 'A', 'A', 'A', 'A')},
      {"GET", "/v1/teams", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/nodes", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/policy", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/topology", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/events", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/metrics", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/jobs", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/", "", all('A', 'A', 'A', 'A', 'A', 'A', 'A', 'A')},
      {"GET", "/dashboard/app.js", "", all('A', 'A', 'A', 'A', 'A', 'A', 'A', 'A')},
      {"GET", "/v1/dashboard/cluster", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/dashboard/teams", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/dashboard/queue", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/dashboard/topology", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/jobs/job-a", "", all('A', 'A', 'N', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/jobs/job-a/logs", "", all('A', 'A', 'N', 'D', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/plans", "", all('A', 'A', 'A', 'A', 'A', 'D', 'D', 'U')},
      {"POST", "/v1/jobs", job_body("m", "a"), all('A', 'A', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"POST", "/v1/jobs/job-none/cancel", "", all('A', 'A', 'A', 'D', 'D', 'D', 'D', 'U')},
      {"PUT", "/v1/policy", R"({"priority_classes": []})", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"PUT", "/v1/teams/a", R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]})",
       all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"POST", "/v1/apply", R"({"teams": []})", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"PUT", "/v1/priority-classes/p", R"({"weight": 10})", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"POST", "/v1/nodes/static-1/cordon", "", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"PUT", "/v1/nodes/static-1/health", R"({"health": "Schedulable"})", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"POST", "/v1/nodes", R"([{"name": "static-2", "instance_type": "ml.m5.xlarge"}])", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"GET", "/v1/tokens", "", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"POST", "/v1/tokens", R"({"role": "viewer"})", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"GET", "/v1/audit", "", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"DELETE", "/v1/tokens/0000000000", "", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"DELETE", "/v1/teams/nosuch", "", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"DELETE", "/v1/nodes/nosuch", "", all('A', 'D', 'D', 'D', 'D', 'D', 'D', 'U')},
      {"POST", "/v1/agents/x1/heartbeat", "{}", all('D', 'D', 'D', 'D', 'D', 'A', 'D', 'U')},
      {"POST", "/v1/agents/x1/logs", R"({"job": "job-a", "rank": 0, "data": ""})", all('D', 'D', 'D', 'D', 'D', 'A', 'D', 'U')},
      {"POST", "/v1/agents/register", register_body("x1").dump(), all('D', 'D', 'D', 'D', 'D', 'A', 'A', 'U')},
  };
  int cells = 0;
  for (const Row& row : matrix)
    for (const auto& [who, want] : row.expect) {
      const std::string token = who == "none" ? "" : tok[who];
      r = api.call(row.method, row.path, token, row.body);
      ++cells;
      const bool ok = want == 'A' ? (r.status != 401 && r.status != 403 && r.status != 0)
                                  : r.status == (want == 'D' ? 403 : want == 'N' ? 404 : 401);
      E2E_CHECK(ok, row.method << " " << row.path << " as " << who << ": " << r.status << " (want " << want << ") " << r.body);
    }
  std::cerr << "role matrix: " << cells << " cells checked\n";

  // Revocation works at once; the last admin token cannot be revoked; expiry.
  const std::string doomed = api.token(admin, {{"role", "viewer"}});
  E2E_CHECK(api.call("GET", "/v1/teams", doomed).status == 200, "fresh viewer token");
  const std::string doomed_id = doomed.substr(6, 10);
  E2E_CHECK(api.call("DELETE", "/v1/tokens/" + doomed_id, admin).status == 204, "revoke");
  r = api.call("GET", "/v1/teams", doomed);
  E2E_CHECK(r.status == 401 && r.body.find("revoked") != std::string::npos, "revoked token: " << r.status << " " << r.body);
  r = api.call("DELETE", "/v1/tokens/" + admin.substr(6, 10), admin);
  E2E_CHECK(r.status == 409, "revoking the last admin token: " << r.status << " " << r.body);
  const std::string brief = api.token(admin, {{"role", "viewer"}, {"ttl_s", 1}});
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  r = api.call("GET", "/v1/teams", brief);
  E2E_CHECK(r.status == 401 && r.body.find("expired") != std::string::npos, "expired token: " << r.status << " " << r.body);
  r = api.call("GET", "/v1/teams", "Basic dXNlcjpwYXNz");
  E2E_CHECK(r.status == 401, "garbage token: " << r.status);

  // The audit trail names who did what, refusals included: every refused write (401 and 403, the cross-team
  // cancel answered 404 recorded as the 403 it is) with the client's address and the object it named; joins
  // and submissions name their node or job.
  r = api.call("GET", "/v1/audit?team=b", admin);
  bool saw_refused_cancel = false;
  for (const auto& e : r.json)
    saw_refused_cancel |= e["action"] == "POST /v1/jobs/job-b/cancel" && e["status"] == 403 && e["role"] == "member" &&
                          e["target"] == "job-b" && e.value("source", "") == "127.0.0.1";
  E2E_CHECK(saw_refused_cancel, "audit for team b lacks member-a's refused cancel of job-b (403, from 127.0.0.1): " << r.body);
  r = api.call("GET", "/v1/audit?limit=100000", admin);
  auto audited = [&](const std::function<bool(const json&)>& match) {
    for (const auto& e : r.json)
      if (match(e)) return true;
    return false;
  };
  E2E_CHECK(audited([](const json& e) {
              return e["action"] == "POST /v1/agents/x1/heartbeat" && e["status"] == 401 && e["role"] == "none" &&
                     e["target"] == "x1" && e.value("source", "") == "127.0.0.1";
            }),
            "the audit trail lacks the heartbeat without a token (401, target x1, source): " << r.body);
  E2E_CHECK(audited([](const json& e) {
              return e["action"] == "POST /v1/jobs" && e["status"] == 403 && e.value("message", "").find("cross-origin") != std::string::npos &&
                     e.value("source", "") == "127.0.0.1";
            }),
            "the audit trail lacks the cross-origin submission (403): " << r.body);
  E2E_CHECK(audited([](const json& e) { return e["action"] == "POST /v1/jobs" && e["status"] == 403 && e["target"] == "job-b2"; }),
            "the audit trail lacks member-b's refused submission naming job-b2: " << r.body);
  E2E_CHECK(audited([](const json& e) { return e["action"] == "POST /v1/jobs" && e["status"] == 201 && e["target"] == "job-a"; }),
            "the audit trail's submission of job-a must name it: " << r.body);
  E2E_CHECK(audited([](const json& e) { return e["action"] == "POST /v1/agents/register" && e["status"] == 200 && e["target"] == "x1"; }),
            "the audit trail's join of x1 must name it: " << r.body);
  E2E_CHECK(audited([](const json& e) { return e["action"] == "POST /v1/agents/register" && e["status"] == 403 && e["role"] == "member"; }),
            "the audit trail lacks a member's refused registration: " << r.body);
  E2E_CHECK(audited([](const json& e) { return e["action"] == "DELETE /v1/tokens/0000000000" && e["status"] == 401 && e["role"] == "none"; }),
            "the audit trail lacks the token revocation without a token (401): " << r.body);
  E2E_CHECK(audited([&](const json& e) {
              return e["action"] == "POST /v1/agents/" + other + "/logs" && e["status"] == 403 && e["target"] == "job-a" &&
                     e["role"] == "agent";
            }),
            "the audit trail lacks " << other << "'s refused shipping of job-a's logs: " << r.body);
  E2E_CHECK(!audited([&](const json& e) { return e["action"] == "POST /v1/agents/" + home + "/logs" && e["status"] == 204; }),
            "log shipping that was accepted must not be audited: " << r.body);

  // Files at rest: the data directory passable but not listable by others (the default checkpoint directory
  // lies inside it: 0711), the database, its WAL and the token file the owner's alone, the log directory 0700.
  auto mode_of = [](const std::string& path) -> int {
    struct stat m {};
    return ::stat(path.c_str(), &m) == 0 ? static_cast<int>(m.st_mode & 07777) : -1;
  };
  // At most these bits (the test's own directory was made 0700, which the server leaves as it is).
  const std::map<std::string, int> modes = {{"", 0711}, {"/allot.db", 0600}, {"/admin-token", 0600}, {"/logs", 0700}};
  auto within = [&](const std::string& file, int most) { const int m = mode_of(dir.path() + file); return m != -1 && (m & ~most) == 0; };
  for (const auto& [file, want] : modes)
    E2E_CHECK(within(file, want), dir.path() << file << " has mode " << std::oct << mode_of(dir.path() + file) << ", want at most " << want << std::dec);
  const int wal = mode_of(dir.path() + "/allot.db-wal");
  E2E_CHECK(wal == -1 || wal == 0600, "allot.db-wal has mode " << std::oct << wal << std::dec);

  // Tokens survive a restart (kill -9); secrets appear in no log or answer except when made. A data directory
  // left readable by others is tightened at the start, and the log says so.
  server->kill9();
  for (const auto& [file, want] : modes) ::chmod((dir.path() + file).c_str(), file.empty() || file == "/logs" ? 0755 : 0644);
  server = std::make_unique<e2e::ServerProcess>(argv[1], dir.path());
  if (!server->start()) return 1;
  api.port = server->port();
  E2E_CHECK(server->admin_token() == admin, "a restart must not make a new admin token");
  for (const auto& [file, want] : modes)
    E2E_CHECK(within(file, want), "after the restart " << dir.path() << file << " has mode " << std::oct
                                                       << mode_of(dir.path() + file) << ", want at most " << want << std::dec);
  E2E_CHECK(file_text(dir.path() + "/server.log").find(dir.path() + "/allot.db was mode 0644, readable by others: tightened to 0600") !=
                std::string::npos,
            "the server log should say it tightened allot.db");
  E2E_CHECK(api.call("GET", "/v1/jobs/job-a", tok["member-a"]).status == 200, "member-a after restart");
  E2E_CHECK(api.call("GET", "/v1/teams", doomed).status == 401, "revoked token after restart");
  E2E_CHECK(api.call("POST", "/v1/agents/" + home + "/heartbeat", tok["agent-" + home], "{}").status == 200, "agent after restart");
  r = api.call("GET", "/v1/tokens", admin);
  E2E_CHECK(r.status == 200 && r.body.find(admin.substr(17)) == std::string::npos, "token list shows a secret: " << r.body);
  const std::string logs = file_text(dir.path() + "/server.log");
  for (const auto& [who, t] : tok)
    E2E_CHECK(t.size() > 17 && logs.find(t.substr(17)) == std::string::npos, "the server log holds " << who << "'s secret");
  r = api.call("GET", "/v1/events?since=0", admin);
  for (const auto& [who, t] : tok)
    E2E_CHECK(r.body.find(t.substr(17)) == std::string::npos, "the event stream holds " << who << "'s secret");

  if (e2e::failures) return std::cerr << e2e::failures << " check(s) failed\n", 1;
  std::cerr << "auth: all checks passed\n";
  return 0;
}
