// Reservations of existing nodes in the server (api_reservations.cpp, reservation_steps.cpp): who may create, read
// and delete them; bad input; the writer starts one when the clock passes its start, requeuing another team's job
// from its node; a restart (from the journal, and from a snapshot) keeps it Active without requeuing again;
// deleting it returns the node.
#include "server_test_fixture.h"
#include "view/times.h"

namespace allot::server::test::server_reservations_test {
namespace {

using nlohmann::json;

class ServerReservations : public ServerTest {
 protected:
  void SetUp() override {
    options_.snapshot_every_records = 4;
    options_.snapshot_min_records = 0;
    ServerTest::SetUp();
  }
  int64_t now_s() const { return now_ms_ / 1000; }
  Response put_reservation(const std::string& name, const json& body, const std::string& as = "") {
    if (as.empty()) return put("/v1/reservations/" + name, body.dump());
    return wrap(client_as(as)->Put(("/v1/reservations/" + name).c_str(), body.dump(), "application/json"));
  }
  json reservation(const std::string& team, const json& nodes, int64_t start, int64_t end) {
    return {{"team", team}, {"nodes", nodes}, {"start", view::rfc3339(start)}, {"end", view::rfc3339(end)}};
  }
};

TEST_F(ServerReservations, AdminsWriteAndEachTeamReadsItsOwn) {
  small_cluster();
  ASSERT_EQ(put_reservation("for-a", reservation("a", "n1", now_s() + 100, now_s() + 1000)).status, 201);
  for (const char* role : {"member", "viewer"}) {
    SCOPED_TRACE(role);
    const std::string in_a = bearer({{"role", role}, {"teams", {"a"}}});
    const std::string in_b = bearer({{"role", role}, {"teams", {"b"}}});
    EXPECT_EQ(put_reservation("mine", reservation("a", "n2", now_s() + 100, now_s() + 1000), in_a).status, 403);
    EXPECT_EQ(del_as(in_a, "/v1/reservations/for-a").status, 403);
    auto seen = get_as(in_a, "/v1/reservations");
    ASSERT_EQ(seen.status, 200) << seen.body;
    ASSERT_EQ(seen.json.size(), 1u);
    EXPECT_EQ(seen.json[0]["name"], "for-a");
    EXPECT_EQ(seen.json[0]["state"], "Scheduled");
    EXPECT_EQ(seen.json[0]["nodes"], json({"n1"}));
    EXPECT_EQ(get_as(in_a, "/v1/reservations/for-a").status, 200);
    EXPECT_EQ(get_as(in_b, "/v1/reservations").json, json::array()) << "another team's reservation is not listed";
    EXPECT_EQ(get_as(in_b, "/v1/reservations/for-a").status, 404);
  }
  EXPECT_EQ(get("/v1/reservations/mine").status, 404) << "a refused creation changes nothing";
  EXPECT_EQ(del("/v1/reservations/for-a").status, 204);
  EXPECT_EQ(get("/v1/reservations").json, json::array());
  EXPECT_EQ(del("/v1/reservations/for-a").status, 404);
}

TEST_F(ServerReservations, BadReservationsAreRefusedWithWhatWhereAndAllowed) {
  small_cluster();
  const int64_t t = now_s();
  auto expect_refused = [&](const std::string& name, const json& body, int status, const std::string& words) {
    auto r = put_reservation(name, body);
    EXPECT_EQ(r.status, status) << name << ": " << r.body;
    EXPECT_NE(r.body.find(words), std::string::npos) << name << ": " << r.body;
  };
  expect_refused("unknown", reservation("a", "n[1-3]", t + 10, t + 100), 400, "unknown node 'n3'");
  json typed = reservation("a", "n1", t + 10, t + 100);
  typed["instance_type"] = "ml.p4d.24xlarge";
  expect_refused("typed", typed, 400, "node n1 is of type ml.g5.8xlarge, not ml.p4d.24xlarge");
  expect_refused("team", reservation("zz", "n1", t + 10, t + 100), 400, "unknown team 'zz'");
  expect_refused("past", reservation("a", "n1", t - 100, t - 10), 400, "has passed");
  json garbled = reservation("a", "n1", t + 10, t + 100);
  garbled["start"] = "next tuesday";
  expect_refused("garbled", garbled, 400, "RFC 3339");
  json both = reservation("a", "n1", t + 10, t + 100);
  both["count"] = 1;
  both["instance_type"] = "ml.g5.8xlarge";
  expect_refused("both", both, 400, "either nodes or count");
  json other = reservation("a", "n1", t + 10, t + 100);
  other["name"] = "else";
  expect_refused("named", other, 400, "name must be the reservation's name in the path");
  json many = {{"team", "a"}, {"instance_type", "ml.g5.8xlarge"}, {"count", 3}, {"start", "now"}, {"end", view::rfc3339(t + 100)}};
  expect_refused("many", many, 400, "count must be 1..2");
  EXPECT_EQ(get("/v1/reservations").json, json::array()) << "nothing refused was created";
  ASSERT_EQ(put_reservation("first", reservation("a", "n1", t + 10, t + 100)).status, 201);
  expect_refused("second", reservation("b", "n[1-2]", t + 50, t + 200), 409, "node n1 is held by reservation first");
  expect_refused("first", reservation("a", "n2", t + 10, t + 100), 409, "already exists");
}

TEST_F(ServerReservations, ItsStartRequeuesAnotherTeamsJobOnceAndARestartKeepsIt) {
  small_cluster();
  // Team a (quota 2 instances) runs two one-GPU jobs on the two nodes; then one node is reserved for team b.
  ASSERT_EQ(post("/v1/jobs", job("a-1", "a")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("a-2", "a")).status, 201);
  ASSERT_TRUE(eventually([&] {
    return get("/v1/jobs/a-1").json["state"] == "Running" && get("/v1/jobs/a-2").json["state"] == "Running";
  }));
  const std::string node = get("/v1/jobs/a-2").json["placement"][0]["replicas"][0]["node"];
  const std::string victim = get("/v1/jobs/a-1").json["placement"][0]["replicas"][0]["node"] == node ? "a-1" : "a-2";
  ASSERT_EQ(put_reservation("for-b", reservation("b", node, now_s() + 10, now_s() + 1000)).status, 201);
  EXPECT_EQ(get("/v1/jobs/" + victim).json["state"], "Running") << "nothing happens before the start";

  advance(std::chrono::seconds(10));
  ASSERT_TRUE(eventually([&] { return get("/v1/reservations/for-b").json["state"] == "Active"; }));
  auto v = get("/v1/jobs/" + victim).json;
  EXPECT_EQ(v["state"], "Suspended") << v.dump();
  EXPECT_NE(v["reason"].get<std::string>().find("reservation for-b of team b started and holds node " + node), std::string::npos) << v.dump();
  const int preemptions = v.value("preemptions", 0);
  auto n = get("/v1/nodes/" + node).json;
  EXPECT_EQ(n["reservation"]["name"], "for-b") << n.dump();
  EXPECT_EQ(n["reservation"]["team"], "b");
  // b's job may run there; a's requeued job does not go back while the reservation lasts.
  ASSERT_EQ(post("/v1/jobs", job("b-1", "b")).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/b-1").json["state"] == "Running"; }));
  EXPECT_EQ(get("/v1/jobs/b-1").json["placement"][0]["replicas"][0]["node"], node);
  EXPECT_EQ(get("/v1/jobs/" + victim).json["state"], "Suspended");

  // A restart (from the latest snapshot, then from the whole journal) keeps it Active and requeues nothing again.
  for (bool snapshots : {true, false}) {
    SCOPED_TRACE(snapshots ? "from a snapshot" : "from the journal");
    options_.use_snapshots = snapshots;
    restart();
    EXPECT_EQ(get("/v1/reservations/for-b").json["state"], "Active");
    EXPECT_EQ(get("/v1/reservations/for-b").json["nodes"], json({node}));
    EXPECT_EQ(get("/v1/nodes/" + node).json["reservation"]["name"], "for-b");
    advance(std::chrono::seconds(1));
    EXPECT_EQ(get("/v1/jobs/b-1").json["state"], "Running") << "its team's job is not requeued";
    EXPECT_EQ(get("/v1/jobs/" + victim).json.value("preemptions", 0), preemptions) << "the start is not done twice";
  }

  // Deleted while Active: the node returns to the common pool.
  ASSERT_EQ(post("/v1/jobs/b-1/cancel").status, 200);
  ASSERT_EQ(del("/v1/reservations/for-b").status, 204);
  EXPECT_FALSE(get("/v1/nodes/" + node).json.contains("reservation"));
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/" + victim).json["state"] == "Running"; }));
}

TEST_F(ServerReservations, AnAmountChoosesItsNodesAtTheStartAndTheEndReturnsThem) {
  small_cluster();
  json body = {{"team", "b"}, {"instance_type", "ml.g5.8xlarge"}, {"count", 1}, {"start", view::rfc3339(now_s() + 10)},
               {"end", view::rfc3339(now_s() + 20)}};
  ASSERT_EQ(put_reservation("one", body).status, 201);
  EXPECT_EQ(get("/v1/reservations/one").json["nodes"], json::array()) << "chosen at the start";
  advance(std::chrono::seconds(10));
  ASSERT_TRUE(eventually([&] { return get("/v1/reservations/one").json["state"] == "Active"; }));
  EXPECT_EQ(get("/v1/reservations/one").json["nodes"].size(), 1u);
  advance(std::chrono::seconds(10));
  ASSERT_TRUE(eventually([&] { return get("/v1/reservations/one").status == 404; })) << "gone at its end";
  for (const char* n : {"n1", "n2"}) EXPECT_FALSE(get(std::string("/v1/nodes/") + n).json.contains("reservation"));
}

}  // namespace
}  // namespace allot::server::test::server_reservations_test

namespace allot::server::test::server_reservations_test {
namespace {

// A job that names a reservation over HTTP: refused unless the reservation admits it (changing nothing); waits for
// the start with its reason; runs on the reserved node; the name survives restarts (journal and snapshot) as
// `uses_reservation`.
TEST_F(ServerReservations, AJobNamingAReservationWaitsForItAndRunsOnItsNode) {
  small_cluster();
  ASSERT_EQ(put_reservation("for-a", reservation("a", "n2", now_s() + 10, now_s() + 1000)).status, 201);
  json in = job("in", "a");
  in["reservation"] = "for-a";
  json wrong = job("wrong", "b");
  wrong["reservation"] = "for-a";
  auto refused = post("/v1/jobs", wrong);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("reservation for-a is for team a"), std::string::npos) << refused.body;
  EXPECT_EQ(get("/v1/jobs/wrong").status, 404) << "a refused submission changes nothing";
  ASSERT_EQ(post("/v1/jobs", in).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/in").json.value("reason_code", "") == "reservation_pending"; }));
  auto waiting = get("/v1/jobs/in").json;
  EXPECT_EQ(waiting["state"], "Pending") << waiting.dump();
  EXPECT_EQ(waiting["uses_reservation"], "for-a");

  advance(std::chrono::seconds(10));
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/in").json["state"] == "Running"; }));
  EXPECT_EQ(get("/v1/jobs/in").json["placement"][0]["replicas"][0]["node"], "n2");
  for (bool snapshots : {true, false}) {
    SCOPED_TRACE(snapshots ? "from a snapshot" : "from the journal");
    options_.use_snapshots = snapshots;
    restart();
    auto v = get("/v1/jobs/in").json;
    EXPECT_EQ(v["uses_reservation"], "for-a") << v.dump();
    EXPECT_EQ(v["state"], "Running");
  }
}

}  // namespace
}  // namespace allot::server::test::server_reservations_test
