// Bad input against the real `allot server` binary: malformed and hostile requests each get a 4xx with a JSON
// error that says what is wrong, the state is unchanged afterwards, and the server stays up (including after
// bytes that are not HTTP at all).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "durability_harness.h"

namespace {

using nlohmann::json;

json snapshot(httplib::Client& c) {
  json out;
  for (const char* path : {"/v1/jobs", "/v1/teams", "/v1/nodes", "/v1/policy"}) out[path] = e2e::wrap(c.Get(path)).json;
  return out;
}

void send_raw(int port, const std::string& bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    (void)!write(fd, bytes.data(), bytes.size());
    char buf[512];
    (void)!read(fd, buf, sizeof buf);
  }
  close(fd);
}

struct Case {
  std::string what, method, path, body, type;
  int status;
  std::string message;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: api_bad_input_test PATH/TO/allot\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  e2e::TempDir dir;
  e2e::ServerProcess server(argv[1], dir.path());
  if (!server.start()) return 1;
  auto c = e2e::client(server.port(), server.admin_token());
  auto ok = e2e::wrap(c.Post("/v1/apply", R"({"policy": {"priority_classes": [{"name": "high", "weight": 90}]},
      "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]}]})", "application/json"));
  E2E_CHECK(ok.status == 200, "apply: " << ok.body);
  ok = e2e::wrap(c.Post("/v1/nodes", R"([{"name": "n1", "instance_type": "ml.g5.8xlarge"}])", "application/json"));
  E2E_CHECK(ok.status == 201, "nodes: " << ok.body);
  ok = e2e::wrap(c.Post("/v1/jobs", R"({"name": "j", "team": "a", "per_replica": {"accelerators": 1}})", "application/json"));
  E2E_CHECK(ok.status == 201, "submit: " << ok.body);
  const json before = snapshot(c);

  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::vector<Case> cases = {
      {"malformed JSON", "POST", "/v1/jobs", R"({"name": "x",)", "application/json", 400, "request body"},
      {"malformed YAML", "POST", "/v1/jobs", "name: x\n team: : :\n", "application/yaml", 400, "request body"},
      {"deeply nested", "POST", "/v1/jobs", deep, "application/json", 400, "request body"},
      {"invalid UTF-8", "POST", "/v1/jobs",
       "{\"name\": \"x\", \"team\": \"a\", \"per_replica\": {\"accelerators\": 1}, \"command\": \"\xc3\x28\"}", "application/json",
       400, "not valid UTF-8"},
      {"binary garbage", "POST", "/v1/jobs", std::string("\x00\x01\x02\x03\xff", 5), "application/json", 400, ""},
      {"unknown team", "POST", "/v1/jobs", R"({"name": "x", "team": "zz", "per_replica": {"accelerators": 1}})", "application/json",
       400, "unknown team 'zz'"},
      {"unknown priority class", "POST", "/v1/jobs",
       R"({"name": "x", "team": "a", "priority": "low", "per_replica": {"accelerators": 1}})", "application/json", 400,
       "unknown priority class 'low'"},
      {"negative quantity", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "per_replica": {"vcpu": -4}})", "application/json", 400,
       "vcpu"},
      {"absurd quantity", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "per_replica": {"accelerators": 99999999999}})",
       "application/json", 400, "accelerators"},
      {"unknown field", "POST", "/v1/jobs", R"({"name": "x", "team": "a", "per_replica": {"accelerators": 1}, "queue": "q"})",
       "application/json", 400, "unknown key 'queue'"},
      {"oversize body", "POST", "/v1/jobs", std::string(3 << 20, ' '), "application/json", 413, "larger than the limit"},
      {"wrong content type", "POST", "/v1/jobs", "{}", "image/png", 415, "image/png"},
      {"team with negative quota", "PUT", "/v1/teams/a", R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "instances": -1}]})",
       "application/json", 400, "instances"},
      {"unknown endpoint", "POST", "/v1/nope", "{}", "application/json", 404, "no such endpoint"},
  };
  for (const auto& k : cases) {
    auto r = k.method == "POST" ? e2e::wrap(c.Post(k.path.c_str(), k.body, k.type.c_str()))
                                : e2e::wrap(c.Put(k.path.c_str(), k.body, k.type.c_str()));
    E2E_CHECK(r.status == k.status, k.what << ": status " << r.status << ", wanted " << k.status << ": " << r.body.substr(0, 300));
    const bool has_error = r.json.is_object() && r.json.contains("error") && r.json["error"].contains("message");
    E2E_CHECK(has_error, k.what << ": no JSON error body: " << r.body.substr(0, 300));
    if (has_error)
      E2E_CHECK(r.json["error"]["message"].get<std::string>().find(k.message) != std::string::npos,
                k.what << ": message lacks '" << k.message << "': " << r.json["error"]["message"]);
    E2E_CHECK(snapshot(c) == before, k.what << " changed the state");
  }

  // Bytes that are not HTTP, an endless header line, and a connection that hangs up halfway.
  send_raw(server.port(), std::string("\x16\x03\x01\x02\x00garbage\r\n\r\n", 16));
  send_raw(server.port(), "GET /v1/health HTTP/1.1\r\nX-Long: " + std::string(100000, 'a') + "\r\n\r\n");
  send_raw(server.port(), "POST /v1/jobs HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":");
  E2E_CHECK(server.alive(), "the server died on raw bad input");
  auto health = e2e::wrap(c.Get("/v1/health"));
  E2E_CHECK(health.status == 200, "health after bad input: " << health.status);
  E2E_CHECK(snapshot(c) == before, "raw bad input changed the state");
  E2E_CHECK(server.terminate() == 0, "the server did not stop cleanly on SIGTERM");
  std::cerr << (e2e::failures ? "FAILED" : "PASSED") << "\n";
  return e2e::failures ? 1 : 0;
}
