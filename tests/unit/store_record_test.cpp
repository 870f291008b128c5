// Round trips of every journal record kind through its JSON form: what is written reads back equal.
#include <gtest/gtest.h>

#include "store/journal_checksum.h"
#include "store/record_json.h"
#include "store/spec_json.h"
#include "store_samples.h"

namespace allot::store::store_record_test {
namespace {

TEST(StoreRecord, EveryKindRoundTripsThroughJson) {
  uint64_t seq = 0;
  std::set<std::string> kinds;
  for (const Op& op : every_kind()) {
    Record r{++seq, 1700000000 + static_cast<Time>(seq), op};
    // Through text too, as the store keeps it.
    auto text = record_to_json(r).dump();
    auto back = record_from_json(nlohmann::json::parse(text));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, r) << text;
    kinds.insert(op_name(op));
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<Op>) << "a record kind has no round-trip case";
}

TEST(StoreRecord, ActorsRoundTripAndOldRecordsHaveNone) {
  Record r{7, 1700000000, Cancel{"j"}, Actor{.token = "3f9a2c1b7e", .role = auth::Role::kMember, .teams = {"a", "b"}}};
  auto back = record_from_json(nlohmann::json::parse(record_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
  // A record written before actors existed reads back with none.
  auto old = record_from_json(nlohmann::json::parse(R"({"op": "cancel", "job": "j", "seq": 1, "at": 5})"));
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->actor, Actor{});
  auto bad = record_from_json(nlohmann::json::parse(R"({"op": "cancel", "job": "j", "seq": 1, "at": 5, "actor": 3})"));
  EXPECT_FALSE(bad.ok());
}

// Which node a replacement replaces is a field of its first health change. Journals from before the field said it
// in the reason only; they read back with the field filled, so what they retired stays retired.
TEST(StoreRecord, AReplacementNamesTheNodeItReplacesAsAFieldAndOldRecordsGetIt) {
  auto old = record_from_json(nlohmann::json::parse(
      R"({"op": "node_health", "seq": 1, "at": 5, "node": "gpu-5", "health": "Unschedulable", "cause": "deep-check",
          "address": "", "reason": "replacement of node gpu-1: deep health check running"})"));
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(std::get<NodeHealthChange>(old->op).replaces, "gpu-1");
  EXPECT_EQ(record_to_json(*old).at("replaces"), "gpu-1");
  // Only the legacy wording of a deep check's first change is read so; a reason worded so elsewhere names nothing.
  auto other = record_from_json(nlohmann::json::parse(
      R"({"op": "node_health", "seq": 2, "at": 6, "node": "gpu-6", "health": "Schedulable", "cause": "admin",
          "address": "", "reason": "replacement of node gpu-1: set by hand"})"));
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(std::get<NodeHealthChange>(other->op).replaces, "");
  // A record that carries the field is taken as written, whatever its reason says.
  auto now = record_from_json(nlohmann::json::parse(
      R"({"op": "node_health", "seq": 3, "at": 7, "node": "gpu-7", "health": "Unschedulable", "cause": "deep-check",
          "address": "", "reason": "deep health check running", "replaces": "gpu-2"})"));
  ASSERT_TRUE(now.ok()) << now.error().message;
  EXPECT_EQ(std::get<NodeHealthChange>(now->op).replaces, "gpu-2");
}

// An actor's role is the enum (a token's auth::Role, or the server, or nobody), written with the same spelling the
// string it replaced had: a record written before reads back to every role, and re-encodes to the same bytes, so
// its checksum (journal_checksum.h) still holds.
TEST(StoreRecord, EveryActorRoleReadsBackAndReEncodesToTheSameBytes) {
  const std::pair<const char*, ActorRole> roles[] = {
      {"admin", auth::Role::kAdmin},     {"member", auth::Role::kMember},   {"viewer", auth::Role::kViewer},
      {"agent", auth::Role::kAgent},     {"agent-join", auth::Role::kAgentJoin}, {"server", Tokenless::kServer},
      {"none", Tokenless::kStranger}};
  for (const auto& [spelling, role] : roles) {
    // The body as a journal written before the enum holds it (nlohmann's sorted keys, as dump() writes).
    const std::string old_body = std::string(R"({"actor":{"node":"n1","role":")") + spelling +
                                 R"(","teams":["a"],"token":"t1"},"job":"j","op":"cancel"})";
    auto rec = record_from_row(9, 1700000000, old_body, "test");
    ASSERT_TRUE(rec.ok()) << spelling << ": " << rec.error().message;
    EXPECT_EQ(rec->actor.role, role) << spelling;
    EXPECT_EQ(std::string(actor_role_name(rec->actor.role)), spelling);
    const std::string again = record_body_json(*rec).dump();
    EXPECT_EQ(again, old_body) << spelling;
    EXPECT_EQ(record_checksum(9, 1700000000, "cancel", again), record_checksum(9, 1700000000, "cancel", old_body));
    // And one made in code encodes to those bytes.
    const Record made{9, 1700000000, Cancel{"j"}, Actor{.token = "t1", .role = role, .teams = {"a"}, .node = "n1"}};
    EXPECT_EQ(record_body_json(made).dump(), old_body) << spelling;
  }
}

// An actor whose role is none of them is an error naming the record, not an actor read as someone else.
TEST(StoreRecord, AnActorWithAnUnknownRoleIsRefusedNamingTheRecord) {
  auto bad = record_from_row(12, 5, R"({"actor":{"node":"","role":"root","teams":[],"token":"t1"},"job":"j","op":"cancel"})",
                             "journal");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("record 12"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("unknown role 'root'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("admin, member, viewer, agent, agent-join, server, none"), std::string::npos)
      << bad.error().message;
}

// A token's role is one of the five; a record naming another is refused, not read as a viewer's.
TEST(StoreRecord, ATokenRecordWithAnUnknownRoleIsRefused) {
  auto bad = record_from_json(nlohmann::json::parse(
      R"({"op": "create_token", "seq": 1, "at": 5, "token": {"id": "t1", "secret_hash": "x", "role": "root",
          "teams": [], "node": "", "expires_at": 0, "description": ""}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown role 'root'"), std::string::npos) << bad.error().message;
}

// The policy has one JSON writer (config/policy_json.h); journals written before it say min_runtime_s and
// starvation_threshold_s, and must still replay to the same policy.
TEST(StoreRecord, PolicyRecordsOfBothKeySpellingsReadTheSame) {
  auto old = record_from_json(nlohmann::json::parse(
      R"({"op": "set_policy", "seq": 1, "at": 5, "policy": {"task_prioritization": "task-ranking", "idle_compute": "fcfs",
          "idle_pool": true, "priority_classes": [{"name": "p", "weight": 10}], "min_runtime_s": 600,
          "starvation_threshold_s": 3600}})"));
  ASSERT_TRUE(old.ok()) << old.error().message;
  const auto& p = std::get<SetPolicy>(old->op).policy;
  EXPECT_EQ(p.min_runtime_s, 600);
  EXPECT_EQ(p.starvation_threshold_s, 3600);
  EXPECT_EQ(p.task_prioritization, TaskPrioritization::kTaskRanking);
  const nlohmann::json now = record_to_json(*old);
  EXPECT_EQ(now.at("policy").at("min_runtime"), 600) << now.dump();
  EXPECT_FALSE(now.at("policy").contains("min_runtime_s")) << now.dump();
  auto back = record_from_json(now);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<SetPolicy>(back->op).policy, p);
}

// Preempt records written before rules and groups were journaled have neither key: they still decode (and
// replay), with no rule and no group, and are written back without them.
TEST(StoreRecord, OldPreemptRecordsDecodeWithoutRuleOrGroup) {
  auto old = record_from_json(nlohmann::json::parse(
      R"({"op": "preempt", "seq": 4, "at": 9, "job": "b-2", "preemptor": "a-1",
          "reason": "preempted (reclaim): team a takes back its lent quota for job a-1; team b was above its nominal quota"})"));
  ASSERT_TRUE(old.ok()) << old.error().message;
  const auto& p = std::get<Preempt>(old->op);
  EXPECT_EQ(p.job, "b-2");
  EXPECT_EQ(p.preemptor, "a-1");
  EXPECT_FALSE(p.rule.has_value());
  EXPECT_FALSE(p.group.has_value());
  const nlohmann::json again = record_to_json(*old);
  EXPECT_FALSE(again.contains("rule")) << again.dump();
  EXPECT_FALSE(again.contains("group")) << again.dump();
}

TEST(StoreRecord, ARequeueKeepsItsCauseAndOldRecordsAreForTheRendezvousPort) {
  // A cause other than the first is written; the first is not, so records written before causes keep their bytes.
  Record deaf{5, 1700000000, Requeue{"j", "g1", 0, "fenced while the server could not hear", RequeueCause::kServerDeaf}};
  const nlohmann::json written = record_to_json(deaf);
  EXPECT_EQ(written.value("cause", ""), "server_deaf") << written.dump();
  auto back = record_from_json(nlohmann::json::parse(written.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, deaf);
  auto old = record_from_json(nlohmann::json::parse(
      R"({"op": "requeue", "seq": 6, "at": 9, "job": "j", "node": "g1", "port": 29500, "reason": "MASTER_PORT 29500 was in use"})"));
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(std::get<Requeue>(old->op).cause, RequeueCause::kRendezvousPort);
  EXPECT_FALSE(record_to_json(*old).contains("cause"));
  auto unknown = record_from_json(nlohmann::json::parse(
      R"({"op": "requeue", "seq": 7, "at": 9, "job": "j", "node": "g1", "port": 0, "reason": "r", "cause": "cosmic_ray"})"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("cosmic_ray"), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("server_deaf"), std::string::npos) << unknown.error().message;
}

TEST(StoreRecord, PreemptRecordsWithAnUnknownRuleOrABadShareAreErrors) {
  Record r{1, 5, Preempt{"train-1", "serve-1", "x", PreemptionRule::kReclaim, preemption_group()}};
  nlohmann::json j = record_to_json(r);
  nlohmann::json bad_rule = j;
  bad_rule["rule"] = "seniority";
  EXPECT_FALSE(record_from_json(bad_rule).ok());
  nlohmann::json bad_victim = j;
  bad_victim["group"]["victims"][0]["rule"] = "";
  EXPECT_FALSE(record_from_json(bad_victim).ok());
  nlohmann::json bad_share = j;
  bad_share["group"]["teams"][0]["share_before"] = nlohmann::json::array({1, -2});
  auto e = record_from_json(bad_share);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("share"), std::string::npos) << e.error().message;
  ASSERT_TRUE(record_from_json(j).ok());
}

// A preemption group's cohort groups (docs/states.md, "Preemption records") are written only when fair sharing
// compared any: a record of a cluster without groups reads and writes back without the key, as before it existed.
TEST(StoreRecord, PreemptionGroupsKeepTheirCohortGroupsAndOnlyThen) {
  Record r{1, 5, Preempt{"train-1", "serve-1", "x", PreemptionRule::kFairShare, preemption_group()}};
  const nlohmann::json j = record_to_json(r);
  ASSERT_TRUE(j["group"].contains("groups")) << j.dump();
  EXPECT_EQ(j["group"]["groups"][0]["group"], "research");
  auto back = record_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(std::get<Preempt>(back->op).group->groups, preemption_group().groups);
  nlohmann::json flat = j;
  flat["group"].erase("groups");
  auto old = record_from_json(flat);
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_TRUE(std::get<Preempt>(old->op).group->groups.empty());
  EXPECT_EQ(record_to_json(*old), flat);
  nlohmann::json bad = j;
  bad["group"]["groups"][0]["share_after"] = nlohmann::json::array({1, -9});
  EXPECT_FALSE(record_from_json(bad).ok());
}

TEST(StoreRecord, OptionalFieldsStayUnset) {
  JobSpec j;
  j.name = "x";
  j.team = "t";
  j.pod_sets = {PodSetSpec{}};
  j.pod_sets[0].per_replica.vcpu_milli = 500;
  Record r{1, 5, Submit{j}};
  auto back = record_from_json(record_to_json(r));
  ASSERT_TRUE(back.ok());
  const auto& got = std::get<Submit>(back->op).job;
  EXPECT_FALSE(got.duration_s.has_value());
  EXPECT_FALSE(got.pod_sets[0].per_replica.accelerators.has_value());
  EXPECT_FALSE(got.pod_sets[0].topology.slice.has_value());
  EXPECT_EQ(*back, r);
}

TEST(StoreRecord, MalformedRecordsAreErrorsNotGuesses) {
  for (const char* bad : {R"({"op":"launch","seq":1,"at":0})", R"({"op":"cancel","seq":1,"at":0})",
                          R"({"op":"cancel","job":7,"seq":1,"at":0})", R"({"op":"cordon","node":"n","seq":1,"at":0})",
                          R"({"op":"node_health","node":"n","health":"Sick","cause":"admin","address":"","seq":1,"at":0})",
                          R"({"job":"x","seq":1,"at":0})", R"({"op":"cancel","job":"x","at":0})"}) {
    auto r = record_from_json(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInternal);
    EXPECT_NE(r.error().message.find("malformed journal record"), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace allot::store::store_record_test

namespace allot::store::store_record_test {
namespace {

// Issue 28: a team's default request and a job's completion_index go through the journal; records without them
// (written before them) read as none and false.
TEST(StoreRecord, DefaultRequestAndCompletionIndexRoundTrip) {
  TeamSpec t;
  t.name = "lab";
  t.default_request.accelerators = 1;
  t.default_request.vcpu_milli = 4000;
  EXPECT_EQ(team_from_json(to_json(t)), t);
  TeamSpec bare;
  bare.name = "bare";
  EXPECT_FALSE(to_json(bare).contains("default_request"));
  EXPECT_EQ(team_from_json(to_json(bare)), bare);
  JobSpec j;
  j.name = "sweep";
  j.team = "lab";
  j.pod_sets = {PodSetSpec{}};  // asks for nothing: the team's default applies at submission
  j.completion_index = true;
  EXPECT_EQ(job_from_json(to_json(j)), j);
  j.completion_index = false;
  EXPECT_FALSE(to_json(j).contains("completion_index"));
  EXPECT_EQ(job_from_json(to_json(j)), j);
}

}  // namespace
}  // namespace allot::store::store_record_test
