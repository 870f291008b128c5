#pragma once
// An in-process `allot server` on an ephemeral loopback port for the Server* tests: an in-memory journal
// that outlives the server (so a test can restart it and see the replay), a clock the test moves, and a
// small HTTP client.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "eventually.h"
#include "server/server.h"
#include "store/mem_store.h"

namespace allot::server::test {

using allot::test::eventually;

// Forwards to a MemStore the test keeps, so the journal survives the server that wrote it.
class SharedStore final : public store::Store {
 public:
  explicit SharedStore(std::shared_ptr<store::MemStore> mem) : mem_(std::move(mem)) {}
  Status append(const std::vector<store::Record>& batch) override { return mem_->append(batch); }
  Status load_after(uint64_t after, const std::function<Status(const store::Record&)>& fn) override {
    return mem_->load_after(after, fn);
  }
  Status put_snapshot(uint64_t seq, const std::string& body) override { return mem_->put_snapshot(seq, body); }
  Result<std::optional<store::Snapshot>> latest_snapshot() override { return mem_->latest_snapshot(); }
  std::string describe() const override { return "shared-mem:"; }
  Status check_space() override { return mem_->check_space(); }

 private:
  std::shared_ptr<store::MemStore> mem_;
};

struct Response {
  int status = 0;
  std::string body;
  nlohmann::json json;  // null when the body is not JSON
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = std::filesystem::temp_directory_path() /
                ("allot-server-test-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(data_dir_);
    options_.listen = "127.0.0.1:0";
    options_.data_dir = data_dir_.string();
    options_.tick = std::chrono::milliseconds(10);
    options_.heartbeat_timeout = std::chrono::milliseconds(2000);
    options_.max_connections = 64;
    options_.clock = [this] { return read_clock(); };
    // Every server test also checks that each heartbeat answer off the writer is the one the writer would give.
    options_.verify_heartbeat_board = true;
    options_.verify_round_nodes = true;  // and that the writer's rounds miss no node they may act on
    start();
  }
  void TearDown() override {
    stop();
    std::filesystem::remove_all(data_dir_);
  }

  void start() {
    auto s = Server::open(options_, std::make_unique<SharedStore>(journal_));
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    auto st = server_->start();
    ASSERT_TRUE(st.ok()) << st.error().message;
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
    // Requests go out as the bootstrap admin; agents' requests as their nodes (see post()).
    std::ifstream in(data_dir_ / "admin-token");
    std::getline(in, admin_token_);
    ASSERT_FALSE(admin_token_.empty()) << "the server wrote no admin token into " << data_dir_;
    client_->set_bearer_token_auth(admin_token_.c_str());
    if (join_token_.empty()) {
      auto j = wrap(client_->Post("/v1/tokens", R"({"role": "agent-join"})", "application/json"));
      ASSERT_EQ(j.status, 201) << j.body;
      join_token_ = j.json["token"].get<std::string>();
    }
  }
  void stop() {
    client_.reset();
    if (server_) {
      EXPECT_EQ(server_->stats().heartbeat_board_mismatches, 0u) << "see the log: heartbeat board";
      EXPECT_EQ(server_->stats().round_nodes_missed, 0u) << "see the log: round nodes";
      server_->stop();
    }
    server_.reset();
  }
  void restart() {
    stop();
    start();
  }

  static Response wrap(const httplib::Result& r) {
    Response out;
    if (!r) return out;
    out.status = r->status;
    out.body = r->body;
    out.json = nlohmann::json::parse(r->body, nullptr, false);
    if (out.json.is_discarded()) out.json = nullptr;
    return out;
  }
  Response get(const std::string& path) { return wrap(client_->Get(path.c_str())); }
  // A series' value in /metrics ("" when it is not there).
  std::string metric(const std::string& series) {
    auto r = get("/metrics");
    const size_t at = r.body.find("\n" + series + " ");
    if (at == std::string::npos) return "";
    const size_t from = at + series.size() + 2;
    return r.body.substr(from, r.body.find('\n', from) - from);
  }
  Response del(const std::string& path) { return wrap(client_->Delete(path.c_str())); }
  Response post(const std::string& path, const std::string& body = "", const std::string& type = "application/json") {
    if (path.rfind("/v1/agents/", 0) == 0) return agent_post(path, body, type);
    return wrap(client_->Post(path.c_str(), body, type.c_str()));
  }
  // The agents' endpoints as the node's agent would call them: registration with the join token (keeping the
  // credential it returns), or, for a node an admin added, with a join token made for that node alone (allot
  // node adopt); the rest with the node's credential (made by the admin for nodes that joined without an agent).
  // A node that does not exist gets the join token, which the server refuses.
  Response agent_post(const std::string& path, const std::string& body, const std::string& type) {
    std::string node;
    if (path == "/v1/agents/register") {
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_object() && j.contains("name") && j["name"].is_string()) node = j["name"].get<std::string>();
    } else {
      node = path.substr(11, path.find('/', 11) - 11);
      if (!credentials_.count(node)) {
        auto t = wrap(client_->Post("/v1/tokens", nlohmann::json{{"role", "agent"}, {"node", node}}.dump(), "application/json"));
        if (t.status == 201) credentials_[node] = t.json["token"].get<std::string>();
      }
    }
    auto it = credentials_.find(node);
    std::string join = join_token_;
    if (it == credentials_.end() && path == "/v1/agents/register" && !node.empty() && get("/v1/nodes/" + node).status == 200) {
      auto t = wrap(client_->Post("/v1/tokens", nlohmann::json{{"role", "agent-join"}, {"node", node}}.dump(), "application/json"));
      if (t.status == 201) join = t.json["token"].get<std::string>();
    }
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(30, 0);
    c.set_bearer_token_auth(it != credentials_.end() ? it->second.c_str() : join.c_str());
    Response r = wrap(c.Post(path.c_str(), body, type.c_str()));
    if (r.json.is_object() && r.json.contains("credential")) credentials_[node] = r.json["credential"].get<std::string>();
    return r;
  }
  Response put(const std::string& path, const std::string& body, const std::string& type = "application/json") {
    return wrap(client_->Put(path.c_str(), body, type.c_str()));
  }
  // GET /v1/jobs (with `query`, as "team=a"), every page of it: the jobs as one list, or null on an error.
  nlohmann::json list_jobs(const std::string& query = "") {
    nlohmann::json all = nlohmann::json::array();
    std::string token;
    for (int pages = 0; pages < 10000; ++pages) {
      std::string path = "/v1/jobs?" + query + (query.empty() ? "" : "&") + "limit=5000";
      if (!token.empty()) path += "&continue=" + token;
      auto r = get(path);
      if (r.status != 200 || !r.json.is_object()) return nullptr;
      for (auto& j : r.json["items"]) all.push_back(j);
      token = r.json.value("continue", "");
      if (token.empty()) return all;
    }
    return nullptr;
  }
  Response post(const std::string& path, const nlohmann::json& body) { return post(path, body.dump()); }
  Response post(const std::string& path, const char* body) { return post(path, std::string(body)); }

  // Calling as someone other than the admin. bearer(): the secret of a token the admin makes with `body` (e.g.
  // {"role": "member", "teams": ["b"]}), empty, and a test failure, when the server refuses it.
  std::string bearer(const nlohmann::json& body) {
    auto t = wrap(client_->Post("/v1/tokens", body.dump(), "application/json"));
    EXPECT_EQ(t.status, 201) << t.body;
    return t.json.is_object() ? t.json.value("token", "") : "";
  }
  std::unique_ptr<httplib::Client> client_as(const std::string& bearer) {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_bearer_token_auth(bearer.c_str());
    c->set_read_timeout(30, 0);
    return c;
  }
  Response get_as(const std::string& bearer, const std::string& path) { return wrap(client_as(bearer)->Get(path.c_str())); }
  Response del_as(const std::string& bearer, const std::string& path) { return wrap(client_as(bearer)->Delete(path.c_str())); }
  Response post_as(const std::string& bearer, const std::string& path, const std::string& body = "") {
    return wrap(client_as(bearer)->Post(path.c_str(), body, "application/json"));
  }
  Response post_as(const std::string& bearer, const std::string& path, const nlohmann::json& body) {
    return post_as(bearer, path, body.dump());
  }

  // A policy with two priority classes, team a (2 x g5.8xlarge, 1 GPU each) and team b (1 instance), and
  // two static nodes (no agent, so no heartbeat timeout).
  void small_cluster() {
    auto r = post("/v1/apply", R"({"policy": {"task_prioritization": "task-ranking",
                                               "priority_classes": [{"name": "high", "weight": 90}, {"name": "low", "weight": 10}]},
                                   "teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}]},
                                             {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    r = post("/v1/nodes", R"([{"name": "n[1-2]", "instance_type": "ml.g5.8xlarge", "labels": {"network-node-layer-3": "x"}}])");
    ASSERT_EQ(r.status, 201) << r.body;
  }
  static nlohmann::json job(const std::string& name, const std::string& team = "a", int replicas = 1) {
    return {{"name", name}, {"team", team}, {"replicas", replicas}, {"per_replica", {{"accelerators", 1}}}, {"command", "sleep 1"}};
  }
  // The server's clock (the writer's and the heartbeat board's). A test may override it to stop a thread at its
  // next reading of the clock (server_heartbeat_crossing_test.cpp).
  virtual int64_t read_clock() { return now_ms_.load(); }
  // Moves the clock and waits for the writer's next ticks to have seen it.
  void advance(std::chrono::milliseconds by) {
    now_ms_ += by.count();
    std::this_thread::sleep_for(options_.tick * 5);
  }
  std::filesystem::path data_dir_;
  ServerOptions options_;
  std::atomic<int64_t> now_ms_{1'700'000'000'000};
  std::shared_ptr<store::MemStore> journal_ = std::make_shared<store::MemStore>();
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
  std::string admin_token_, join_token_;
  std::map<std::string, std::string> credentials_;  // node -> its agent token
};

}  // namespace allot::server::test
