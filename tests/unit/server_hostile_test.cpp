// Hostile input through the API: JSON surrogate-pair escapes, names that break the naming rule, commands and
// environments past their bounds, and GET /v1/jobs in pages.
#include "client/http_client.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_hostile_test {
namespace {

using nlohmann::json;

class ServerHostile : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    small_cluster();
    auto reg = post("/v1/agents/register", json{{"name", "g1"}, {"instance_type", "g5.8xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}});
    ASSERT_EQ(reg.status, 200) << reg.body;
  }
  // The assignments of every node the test knows, by job name.
  std::map<std::string, json> assignments() {
    std::map<std::string, json> out;
    auto r = post("/v1/agents/g1/heartbeat", json{{"replicas", json::array()}});
    EXPECT_EQ(r.status, 200) << r.body;
    for (const auto& a : r.json["run"]) out[a["job"].get<std::string>()] = a;
    return out;
  }
  static std::string message(const Response& r) { return r.json.is_object() ? r.json["error"].value("message", "") : r.body; }
};

TEST_F(ServerHostile, SurrogatePairEscapesBecomeOneCharacter) {
  // Cordon the static nodes so that the job runs on the agent's node g1, whose assignment shows env and argv.
  ASSERT_EQ(post("/v1/nodes/n1/cordon").status, 200);
  ASSERT_EQ(post("/v1/nodes/n2/cordon").status, 200);
  const std::string body = R"({"name": "smile", "team": "b", "per_replica": {"accelerators": 1},
      "command": ["echo", "\ud83d\ude00", "\\ud83d"], "env": {"FACE": "a\uD83D\uDE00b", "PLAIN": "\u00e9"}})";
  auto r = post("/v1/jobs", body);
  ASSERT_EQ(r.status, 201) << r.body;
  auto a = assignments();
  ASSERT_TRUE(a.count("smile")) << "the job should run on g1";
  const std::string face = a["smile"]["env"]["FACE"];
  EXPECT_EQ(face, "a\xF0\x9F\x98\x80" "b") << "U+1F600 is 4 bytes of UTF-8";
  EXPECT_EQ(a["smile"]["env"]["PLAIN"], "\xC3\xA9");
  EXPECT_EQ(a["smile"]["command"], json({"echo", "\xF0\x9F\x98\x80", "\\ud83d"})) << "an escaped backslash stays a backslash";
}

TEST_F(ServerHostile, LoneSurrogateEscapesAreRefused) {
  for (const char* bad : {R"("\ud83d")", R"("\ude00")", R"("\ud83dx")", R"("\ud83d\u0041")", R"("\ude00\ud83d")"}) {
    const std::string body = std::string(R"({"name": "lone", "team": "a", "per_replica": {"accelerators": 1},)") +
                             "\n\"env\": {\"X\": " + bad + "}}";
    auto r = post("/v1/jobs", body);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_NE(message(r).find("surrogate"), std::string::npos) << bad << ": " << r.body;
    EXPECT_NE(message(r).find("request body:2"), std::string::npos) << "the line of the escape: " << r.body;
  }
  EXPECT_EQ(get("/v1/jobs/lone").status, 404);
  // The agents' JSON endpoints say why the body is not JSON.
  auto reg = post("/v1/agents/register", R"({"name": "g2", "instance_type": "g5.8xlarge", "instance_group": "\ud800"})");
  EXPECT_EQ(reg.status, 400);
  EXPECT_NE(message(reg).find("surrogate"), std::string::npos) << reg.body;
}

TEST_F(ServerHostile, NamesFollowTheRule) {
  struct Case {
    std::string what, method, path, body, expected;
  };
  const std::vector<Case> cases = {
      {"upper-case team", "PUT", "/v1/teams/Team-A", R"({"allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]})",
       "upper-case letter 'T'"},
      {"team with '_'", "POST", "/v1/apply", R"({"teams": [{"name": "team_a"}]})", "character '_'"},
      {"team too long", "PUT", "/v1/teams/" + std::string(64, 't'), "{}", "64 characters long"},
      {"job with a bidi override", "POST", "/v1/jobs", job("ab\xE2\x80\xAE" "cd").dump(), "beyond ASCII"},
      {"job with a newline", "POST", "/v1/jobs", job("a\nb").dump(), "control character"},
      {"job ending in '-'", "POST", "/v1/jobs", job("train-").dump(), "begin and end"},
      {"job with an empty part", "POST", "/v1/jobs", job("a..b").dump(), "empty part"},
      {"node with '_'", "POST", "/v1/nodes", R"([{"name": "n_1", "instance_type": "ml.g5.8xlarge"}])", "character '_'"},
      {"agent node in upper case", "POST", "/v1/agents/register", R"({"name": "G9", "instance_type": "g5.8xlarge"})",
       "upper-case"},
      {"priority class in upper case", "PUT", "/v1/priority-classes/High", R"({"weight": 5})", "upper-case"},
  };
  for (const auto& c : cases) {
    auto r = c.method == "PUT" ? put(c.path, c.body) : post(c.path, c.body);
    EXPECT_EQ(r.status, 400) << c.what << ": " << r.body;
    EXPECT_NE(message(r).find(c.expected), std::string::npos) << c.what << ": " << r.body;
    EXPECT_EQ(message(r).find("\xE2\x80\xAE"), std::string::npos) << c.what << ": the message repeats a bidi character";
  }
  // Dots, digits and 253 characters are fine for jobs and nodes.
  EXPECT_EQ(post("/v1/jobs", job("llama-3.1-sft")).status, 201);
  EXPECT_EQ(post("/v1/jobs", job("0" + std::string(251, 'x') + "9")).status, 201);
  EXPECT_EQ(post("/v1/jobs", job(std::string(254, 'x'))).status, 400);
  EXPECT_EQ(post("/v1/nodes", R"([{"name": "ip-10-0-0-1.ec2.internal", "instance_type": "ml.g5.8xlarge"}])").status, 201);
}

TEST_F(ServerHostile, CommandsAndEnvironmentsAreBounded) {
  json many_args = job("args");
  many_args["command"] = json::array();
  for (int i = 0; i < 5000; ++i) many_args["command"].push_back("x");
  auto r = post("/v1/jobs", many_args);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("5000 arguments"), std::string::npos) << r.body;

  json long_command = job("long");
  long_command["command"] = std::string(200 * 1024, 'x');
  r = post("/v1/jobs", long_command);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("at most 131072 bytes"), std::string::npos) << r.body;

  json many_vars = job("vars");
  for (int i = 0; i < 1100; ++i) many_vars["env"]["V" + std::to_string(i)] = "1";
  r = post("/v1/jobs", many_vars);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("1100 variables"), std::string::npos) << r.body;

  json big_env = job("big-env");
  big_env["env"]["A"] = std::string(100 * 1024, 'x');
  big_env["env"]["B"] = std::string(100 * 1024, 'x');
  r = post("/v1/jobs", big_env);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("NAME=value"), std::string::npos) << r.body;

  for (const char* bad_name : {"A=B", "1X", "", "A B"}) {
    json bad = job("bad-env");
    bad["env"][bad_name] = "1";
    r = post("/v1/jobs", bad);
    EXPECT_EQ(r.status, 400) << bad_name << ": " << r.body;
  }
  json nul = job("nul");
  nul["env"]["X"] = std::string("a\0b", 3);
  r = post("/v1/jobs", nul);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("control character U+0000"), std::string::npos) << r.body;

  json fine = job("fine");
  fine["env"] = {{"NCCL_DEBUG", "INFO"}, {"my.var-1", "x"}, {"_X", ""}};
  EXPECT_EQ(post("/v1/jobs", fine).status, 201);
}

TEST_F(ServerHostile, JobListingIsPaged) {
  for (int i = 0; i < 7; ++i) ASSERT_EQ(post("/v1/jobs", job("p" + std::to_string(i), i % 2 ? "b" : "a")).status, 201);
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    auto r = get("/v1/jobs?limit=3" + (token.empty() ? "" : "&continue=" + token));
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_TRUE(r.json["items"].is_array()) << r.body;
    EXPECT_LE(r.json["items"].size(), 3u);
    for (const auto& j : r.json["items"]) names.push_back(j["name"]);
    token = r.json.value("continue", "");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"})) << "submission order";

  // A filtered listing pages over the jobs that match, with no empty last page.
  auto b1 = get("/v1/jobs?team=b&limit=2");
  ASSERT_EQ(b1.json["items"].size(), 2u);
  auto b2 = get("/v1/jobs?team=b&limit=2&continue=" + b1.json.value("continue", ""));
  ASSERT_EQ(b2.status, 200) << b2.body;
  EXPECT_EQ(b2.json["items"].size(), 1u);
  EXPECT_FALSE(b2.json.contains("continue")) << b2.body;

  EXPECT_EQ(get("/v1/jobs?limit=0").status, 400);
  EXPECT_EQ(get("/v1/jobs?limit=5001").status, 400);
  EXPECT_EQ(get("/v1/jobs?continue=bogus").status, 400);
  EXPECT_EQ(get("/v1/jobs?continue=j999999").status, 400);
  EXPECT_FALSE(get("/v1/jobs").json.contains("continue")) << "7 jobs fit the default page";

  // The CLI's client follows the pages.
  auto api = client::ApiClient::connect("http://127.0.0.1:" + std::to_string(server_->port()),
                                       {.ca_file = {}, .token = admin_token_});
  ASSERT_TRUE(api.ok());
  auto all = client::get_all_pages(*api, "/v1/jobs", {{"limit", "2"}, {"team", "a"}});
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[3]["name"], "p6");
}

}  // namespace
}  // namespace allot::server::test::server_hostile_test
