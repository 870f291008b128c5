// End to end: tokens and roles against a real `allot server` over raw HTTP (docs/security.md). Each attack of
// issue 9 is replayed and must be refused: a browser page posting a job, a member cancelling or reading another
// team's jobs or setting a quota, a forged heartbeat, a forged replica report, a rogue registration. Then the
// role matrix (each role x each endpoint family), revocation, expiry, the audit trail, and that tokens survive a
// restart while their secrets appear in no log.
#include <sys/stat.h>

#include <fstream>
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
  r = api.call("POST", "/v1/jobs/job-b/cancel", tok["member-a"]);
  E2E_CHECK(r.status == 403, "member-a cancels job-b: " << r.status << " " << r.body);
  E2E_CHECK(api.call("GET", "/v1/jobs/job-b", admin).json["state"] == "Running", "job-b must still run");
  r = api.call("PUT", "/v1/teams/b", tok["member-a"], R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 0}]})");
  E2E_CHECK(r.status == 403, "member-a zeroes team b's quota: " << r.status << " " << r.body);
  r = api.call("GET", "/v1/jobs/job-b/logs", tok["member-a"]);
  E2E_CHECK(r.status == 403, "member-a reads job-b's logs: " << r.status << " " << r.body);
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
  // 'U' 401.
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
      {"GET", "/v1/jobs/job-a", "", all('A', 'A', 'D', 'A', 'A', 'D', 'D', 'U')},
      {"GET", "/v1/jobs/job-a/logs", "", all('A', 'A', 'D', 'D', 'A', 'D', 'D', 'U')},
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
                                  : r.status == (want == 'D' ? 403 : 401);
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

  // The audit trail names who did what, refusals included.
  r = api.call("GET", "/v1/audit?team=b", admin);
  bool saw_refused_cancel = false;
  for (const auto& e : r.json)
    saw_refused_cancel |= e["action"] == "POST /v1/jobs/job-b/cancel" && e["status"] == 403 && e["role"] == "member";
  E2E_CHECK(saw_refused_cancel, "audit for team b lacks member-a's refused cancel of job-b: " << r.body);

  // Tokens survive a restart (kill -9); secrets appear in no log or answer except when made.
  server->kill9();
  server = std::make_unique<e2e::ServerProcess>(argv[1], dir.path());
  if (!server->start()) return 1;
  api.port = server->port();
  E2E_CHECK(server->admin_token() == admin, "a restart must not make a new admin token");
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
