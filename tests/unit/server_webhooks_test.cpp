// Webhooks end to end in one process: the server delivers to a receiver on loopback that checks each
// delivery's signature with the secret it was shown once; retries; a slow receiver; team scopes; restarts.
#include <condition_variable>
#include <mutex>

#include "auth/webhook_signature.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_webhooks_test {
namespace {

using nlohmann::json;

// An HTTP receiver on a free loopback port: records every delivery, answers 500 to the first `fail_first`, and
// while held keeps each request waiting (a slow receiver) until released.
class Receiver {
 public:
  explicit Receiver(int fail_first = 0) : fail_first_(fail_first) {
    http_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      hits_.push_back(Hit{req.body, req.headers, json::parse(req.body, nullptr, false)});
      cv_.notify_all();
      cv_.wait(lock, [this] { return !held_; });
      res.status = static_cast<int>(hits_.size()) <= fail_first_ ? 500 : 204;
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
  }
  ~Receiver() {
    release();
    http_.stop();
    thread_.join();
  }
  struct Hit {
    std::string body;
    httplib::Headers headers;
    json body_json;
    std::string header(const std::string& k) const {
      auto it = headers.find(k);
      return it == headers.end() ? "" : it->second;
    }
  };
  std::vector<Hit> hits() {
    std::lock_guard lock(mu_);
    return hits_;
  }
  size_t count() { return hits().size(); }
  void hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void release() {
    std::lock_guard lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

 private:
  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  const int fail_first_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Hit> hits_;
  bool held_ = false;
};

class ServerWebhooksTest : public ServerTest {
 protected:
  void SetUp() override {
    options_.webhooks.backoff = std::chrono::milliseconds(20);
    options_.webhooks.backoff_max = std::chrono::milliseconds(80);
    options_.webhooks.connect_timeout = std::chrono::milliseconds(2000);
    options_.webhooks.timeout = std::chrono::milliseconds(30000);
    options_.webhooks.hosts = {"127.0.0.1"};
    ServerTest::SetUp();
  }
  // The signature the receiver computes with the secret: it must be the header's.
  static void expect_signed(const Receiver::Hit& h, const std::string& secret) {
    EXPECT_EQ(h.header("X-Allot-Signature"), "sha256=" + auth::hmac_sha256_hex(secret, h.body));
    EXPECT_NE(h.header("X-Allot-Signature"), "sha256=" + auth::hmac_sha256_hex(secret + "x", h.body));
  }
  Response make_webhook(const json& body) { return post("/v1/webhooks", body); }
  void submit_and_cancel(const std::string& name, const std::string& team = "a") {
    auto r = post("/v1/jobs", job(name, team));
    ASSERT_EQ(r.status, 201) << r.body;
    r = post("/v1/jobs/" + name + "/cancel");
    ASSERT_EQ(r.status, 200) << r.body;
  }
};

TEST_F(ServerWebhooksTest, DeliversAFailedJobSignedWithTheSecretShownOnce) {
  small_cluster();
  Receiver rx;
  auto w = make_webhook({{"url", rx.url()}, {"events", {"job.failed", "node.unhealthy"}}, {"description", "on-call"}});
  ASSERT_EQ(w.status, 201) << w.body;
  const std::string secret = w.json["secret"], id = w.json["id"];
  EXPECT_EQ(secret.size(), 64u);
  EXPECT_TRUE(w.json["team"].is_null());
  // Lists never show the secret, nor does the event stream.
  auto list = get("/v1/webhooks");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.json.size(), 1u);
  EXPECT_FALSE(list.json[0].contains("secret"));
  EXPECT_EQ(list.body.find(secret), std::string::npos);
  EXPECT_EQ(get("/v1/events").body.find(secret), std::string::npos);
  EXPECT_EQ(get("/v1/audit").body.find(secret), std::string::npos);

  json spec = job("a-1");
  spec["max_retries"] = 0;
  ASSERT_EQ(post("/v1/jobs", spec).status, 201);
  auto placed = get("/v1/jobs/a-1");
  ASSERT_EQ(placed.json["state"], "Running") << placed.body;
  const std::string node = placed.json["placement"][0]["replicas"][0]["node"];
  ASSERT_EQ(put("/v1/nodes/" + node + "/health", R"({"health": "Unschedulable"})").status, 200);
  ASSERT_TRUE(eventually([&] { return rx.count() >= 2; })) << rx.count();
  bool saw_failed = false, saw_node = false;
  for (const auto& h : rx.hits()) {
    expect_signed(h, secret);
    EXPECT_EQ(h.header("X-Allot-Webhook"), id);
    EXPECT_EQ(h.header("X-Allot-Delivery").size(), 32u);
    EXPECT_EQ(h.header("X-Allot-Event"), h.body_json["event"]);
    EXPECT_EQ(h.body_json["webhook"], id);
    EXPECT_EQ(h.body_json["attempt"], 1);
    EXPECT_TRUE(h.body_json["timestamp"].is_number_integer());  // signed with the body: a replay shows its age
    if (h.body_json["event"] == "job.failed") {
      saw_failed = true;
      EXPECT_EQ(h.body_json["job"], "a-1");
      EXPECT_EQ(h.body_json["team"], "a");
    }
    if (h.body_json["event"] == "node.unhealthy") {
      saw_node = true;
      EXPECT_EQ(h.body_json["node"], node);
    }
  }
  EXPECT_TRUE(saw_failed && saw_node) << rx.hits().front().body;
  ASSERT_TRUE(eventually([&] { return get("/v1/webhooks").json[0]["delivered"] == 2; }));
  auto last = get("/v1/webhooks").json[0]["last_delivery"];
  EXPECT_EQ(last["status"], 204);
  EXPECT_EQ(last["ok"], true);
  EXPECT_EQ(metric("allot_webhook_deliveries_total{result=\"delivered\"}"), "2");
}

TEST_F(ServerWebhooksTest, RetriesWithBackoffUntilTheReceiverAccepts) {
  small_cluster();
  Receiver rx(/*fail_first=*/2);
  auto w = make_webhook({{"url", rx.url()}, {"events", {"job.cancelled"}}});
  ASSERT_EQ(w.status, 201) << w.body;
  submit_and_cancel("a-1");
  ASSERT_TRUE(eventually([&] { return rx.count() >= 3; })) << rx.count();
  auto hits = rx.hits();
  ASSERT_EQ(hits.size(), 3u);
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(hits[i].body_json["attempt"], static_cast<int>(i) + 1);
    EXPECT_EQ(hits[i].header("X-Allot-Delivery"), hits[0].header("X-Allot-Delivery"));  // one delivery, three tries
    EXPECT_EQ(hits[i].body_json["job"], "a-1");
    expect_signed(hits[i], w.json["secret"]);
  }
  ASSERT_TRUE(eventually([&] { return get("/v1/webhooks").json[0]["delivered"] == 1; }));
  EXPECT_EQ(get("/v1/webhooks").json[0]["last_delivery"]["attempt"], 3);
  EXPECT_EQ(metric("allot_webhook_retries_total"), "2");
  EXPECT_EQ(metric("allot_webhook_deliveries_total{result=\"failed\"}"), "0");
}

TEST_F(ServerWebhooksTest, GivesUpAfterMaxAttemptsAndSaysWhy) {
  stop();
  options_.webhooks.max_attempts = 3;
  start();
  small_cluster();
  Receiver rx(/*fail_first=*/100);
  ASSERT_EQ(make_webhook({{"url", rx.url()}, {"events", {"job.cancelled"}}}).status, 201);
  submit_and_cancel("a-1");
  ASSERT_TRUE(eventually([&] { return metric("allot_webhook_deliveries_total{result=\"failed\"}") == "1"; }));
  EXPECT_EQ(rx.count(), 3u);
  auto hook = get("/v1/webhooks").json[0];
  EXPECT_EQ(hook["failed"], 1);
  EXPECT_EQ(hook["last_delivery"]["status"], 500);
  EXPECT_EQ(hook["last_delivery"]["ok"], false);
  EXPECT_NE(hook["last_delivery"]["error"].get<std::string>().find("500"), std::string::npos);
}

TEST_F(ServerWebhooksTest, ASlowReceiverBlocksNoSubmissionAndAFullQueueDropsTheOldest) {
  stop();
  options_.webhooks.senders = 1;
  options_.webhooks.queue = 3;
  start();
  small_cluster();
  Receiver rx;
  rx.hold();
  ASSERT_EQ(make_webhook({{"url", rx.url()}, {"events", {"job.cancelled"}}}).status, 201);
  submit_and_cancel("a-0");
  ASSERT_TRUE(eventually([&] { return rx.count() == 1; }));  // the one sender waits on the receiver now
  // Every change is answered while the receiver holds the only sender: the writer never waits for it.
  for (int i = 1; i <= 10; ++i) submit_and_cancel("a-" + std::to_string(i));
  EXPECT_EQ(rx.count(), 1u);
  ASSERT_TRUE(eventually([&] { return metric("allot_webhook_deliveries_total{result=\"dropped\"}") == "7"; }))
      << get("/metrics").body;
  EXPECT_EQ(metric("allot_webhook_queue_length"), "3");
  rx.release();
  ASSERT_TRUE(eventually([&] { return rx.count() == 4; }));
  // The oldest events' deliveries were dropped: the newest three came.
  std::set<std::string> jobs;
  for (const auto& h : rx.hits()) jobs.insert(h.body_json["job"].get<std::string>());
  EXPECT_EQ(jobs, (std::set<std::string>{"a-0", "a-8", "a-9", "a-10"}));
}

TEST_F(ServerWebhooksTest, ATeamsWebhookSeesOnlyItsTeamsJobs) {
  small_cluster();
  Receiver rx_a, rx_all;
  const std::string ma = bearer({{"role", "member"}, {"teams", {"a"}}});
  auto made = post_as(ma, "/v1/webhooks", json{{"url", rx_a.url()}, {"team", "a"}, {"events", {"job.cancelled"}}});
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(made.json["team"], "a");
  const std::string secret_a = made.json["secret"];
  ASSERT_EQ(make_webhook({{"url", rx_all.url()}, {"events", {"job.cancelled"}}}).status, 201);
  // What a member may not make: another team's, a cluster-wide one, one to a host the server does not allow.
  auto r = post_as(ma, "/v1/webhooks", json{{"url", rx_a.url()}, {"team", "b"}, {"events", {"job.cancelled"}}});
  EXPECT_EQ(r.status, 403) << r.body;
  r = post_as(ma, "/v1/webhooks", json{{"url", rx_a.url()}, {"events", {"job.cancelled"}}});
  EXPECT_EQ(r.status, 403) << r.body;
  r = post_as(ma, "/v1/webhooks", json{{"url", "http://169.254.169.254/latest"}, {"team", "a"}, {"events", {"job.failed"}}});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("--webhook-hosts"), std::string::npos) << r.body;
  // A team's webhook takes job kinds only.
  r = post_as(ma, "/v1/webhooks", json{{"url", rx_a.url()}, {"team", "a"}, {"events", {"node.unhealthy"}}});
  EXPECT_EQ(r.status, 400) << r.body;

  submit_and_cancel("b-1", "b");
  submit_and_cancel("a-1", "a");
  ASSERT_TRUE(eventually([&] { return rx_all.count() == 2 && rx_a.count() >= 1; }));
  std::this_thread::sleep_for(options_.tick * 10);  // had b-1's gone to team a's receiver, it would be there by now
  ASSERT_EQ(rx_a.count(), 1u);
  EXPECT_EQ(rx_a.hits()[0].body_json["job"], "a-1");
  expect_signed(rx_a.hits()[0], secret_a);
  // The member lists its team's webhook only, and cannot delete the cluster's (it reads as missing).
  auto listed = get_as(ma, "/v1/webhooks");
  ASSERT_EQ(listed.json.size(), 1u);
  EXPECT_EQ(listed.json[0]["id"], made.json["id"]);
  const std::string cluster_id = [&] {
    for (const auto& w : get("/v1/webhooks").json)
      if (w["team"].is_null()) return w["id"].get<std::string>();
    return std::string();
  }();
  EXPECT_EQ(del_as(ma, "/v1/webhooks/" + cluster_id).status, 404);
  EXPECT_EQ(get_as(bearer({{"role", "viewer"}}), "/v1/webhooks").status, 403);
  // Deleted, it gets nothing more.
  EXPECT_EQ(del_as(ma, "/v1/webhooks/" + made.json["id"].get<std::string>()).status, 204);
  submit_and_cancel("a-2", "a");
  ASSERT_TRUE(eventually([&] { return rx_all.count() == 3; }));
  std::this_thread::sleep_for(options_.tick * 10);
  EXPECT_EQ(rx_a.count(), 1u);
}

TEST_F(ServerWebhooksTest, RefusesBadRequestsAndChangesNothing) {
  small_cluster();
  for (const json& bad : {json{{"url", "ftp://127.0.0.1/x"}, {"events", {"job.failed"}}},
                          json{{"url", "http://u:p@127.0.0.1/x"}, {"events", {"job.failed"}}},
                          json{{"url", "http://127.0.0.1/x"}, {"events", {"job.exploded"}}},
                          json{{"url", "http://127.0.0.1/x"}, {"events", json::array()}},
                          json{{"url", "http://127.0.0.1/x"}, {"events", {"job.failed", "job.failed"}}},
                          json{{"url", "http://127.0.0.1/x"}},
                          json{{"url", "http://127.0.0.1/x"}, {"events", {"job.failed"}}, {"secret", "mine"}}}) {
    auto r = make_webhook(bad);
    EXPECT_EQ(r.status, 400) << bad.dump() << " -> " << r.body;
  }
  auto r = make_webhook({{"url", "http://127.0.0.1/x"}, {"events", {"job.failed"}}, {"team", "nope"}});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(get("/v1/webhooks").json.size(), 0u);
  EXPECT_EQ(del("/v1/webhooks/0123456789").status, 404);
}

TEST_F(ServerWebhooksTest, AWebhookOutlivesRestartsFromTheJournalAndFromASnapshot) {
  small_cluster();
  Receiver rx;
  auto w = make_webhook({{"url", rx.url()}, {"events", {"job.cancelled"}}, {"team", "a"}});
  ASSERT_EQ(w.status, 201);
  const std::string id = w.json["id"], secret = w.json["secret"];
  restart();  // the journal replayed from its start
  auto list = get("/v1/webhooks");
  ASSERT_EQ(list.json.size(), 1u) << list.body;
  EXPECT_EQ(list.json[0]["id"], id);
  EXPECT_EQ(list.json[0]["team"], "a");
  submit_and_cancel("a-1");
  ASSERT_TRUE(eventually([&] { return rx.count() == 1; }));
  expect_signed(rx.hits()[0], secret);  // the same secret after the restart

  // A snapshot holds it too: restart from one written after it.
  stop();
  options_.snapshot_every_records = 1;
  options_.snapshot_min_records = 0;  // this journal is far below the size where snapshots pay
  start();
  submit_and_cancel("a-2");
  ASSERT_TRUE(eventually([&] {
    auto snap = journal_->latest_snapshot();
    return snap.ok() && *snap && (*snap)->body.find(id) != std::string::npos;
  }));
  restart();
  list = get("/v1/webhooks");
  ASSERT_EQ(list.json.size(), 1u) << list.body;
  EXPECT_EQ(list.json[0]["id"], id);
  submit_and_cancel("a-3");
  ASSERT_TRUE(eventually([&] {
    for (const auto& h : rx.hits())
      if (h.body_json["job"] == "a-3") return true;
    return false;
  }));
  for (const auto& h : rx.hits()) expect_signed(h, secret);
  // Deleted, and restarted: gone.
  ASSERT_EQ(del("/v1/webhooks/" + id).status, 204);
  restart();
  EXPECT_EQ(get("/v1/webhooks").json.size(), 0u);
}

}  // namespace
}  // namespace allot::server::test::server_webhooks_test
