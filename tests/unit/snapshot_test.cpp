// Snapshots (server/writer/state_snapshot.h, store/cluster_snapshot.h): the state restored from a snapshot at any
// journal position, with the records after it replayed, is the state a replay of the whole journal gives: the
// same jobs, nodes, teams, tokens, audit trail and counters, the same derived tables (room, usage, indexes), and
// the same next decisions. A damaged snapshot is an error naming its seq.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>

#include "core/pass/scheduler.h"
#include "server/writer/server_state.h"
#include "server/writer/state_snapshot.h"
#include "store/journal_checksum.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "view/state_json.h"

#include "spec_builders.h"

namespace allot::server::snapshot_test {
namespace {

using namespace allot::store;
using nlohmann::json;

using allot::test::job_spec;
using allot::test::JobBuilder;
// Every job here: one pod set "workers" of p5 replicas, checkpointed every minute.
JobBuilder p5_job(const std::string& name, const std::string& team) {
  return job_spec(name, team).pod_set_name("workers").instance_type("ml.p5.48xlarge").checkpoint_interval_s(60);
}

NodeSpec node(std::string name, std::string block) {
  return NodeSpec{std::move(name), "ml.p5.48xlarge", "", {{"network-node-layer-3", std::move(block)}}};
}

// A capacity plan's node (core/model/plans.h) and a job that names a plan.
NodeSpec plan_node(std::string name, std::string plan) {
  return NodeSpec{std::move(name), "ml.p5.48xlarge", "", {{"network-node-layer-3", "blk-p"}, {"allot.dev/plan", std::move(plan)}}};
}

// A journal written the way the server writes it: each operation applied to a live state, then the scheduler's
// decisions on it, every one a record. It leaves jobs in every state, removed and reused node names, a removed
// team, a priority class removed after use, tokens (one revoked) and audit entries.
class Journal {
 public:
  void op(Op o, Time at, Actor actor = {}) {
    Record r{live_.last_seq + 1, at, std::move(o), std::move(actor)};
    std::vector<Event> events;
    ASSERT_TRUE(apply(live_, r, events).ok()) << op_name(r.op) << " at seq " << r.seq;
    records_.push_back(r);
    const ScheduleResult sr = schedule(live_.cluster, at);
    for (const Decision& d : sr.decisions) {
      Record dr{live_.last_seq + 1, at, decision_record(live_.cluster, d), Actor{.token = "server", .role = Tokenless::kServer}};
      note_decision(live_, dr, events);
      records_.push_back(std::move(dr));
    }
    // As the writer journals them: jobs the pass ended because a dependency can never hold.
    for (const DependencyEnd& e : sr.dependency_ends) {
      const Job& j = live_.cluster.jobs[e.job.index()];
      Record dr{live_.last_seq + 1, at, DependencyNeverHolds{j.spec.name, j.spec.after[e.which].job, j.spec.after[e.which].condition},
                Actor{.token = "server", .role = Tokenless::kServer}};
      note_decision(live_, dr, events);
      records_.push_back(std::move(dr));
    }
  }
  const std::vector<Record>& records() const { return records_; }
  const ServerState& live() const { return live_; }

 private:
  ServerState live_;
  std::vector<Record> records_;
};

Journal sample_journal() {
  Journal j;
  PolicySpec policy;
  policy.priority_classes = {{"high", 100}, {"low", 10}, {"temporary", 50}};
  j.op(SetPolicy{policy}, 100);
  TeamSpec a{.name = "a"}, b{.name = "b"}, c{.name = "c"};
  AmountSpec two, one;
  two.instances = 2;
  one.instances = 1;
  a.allocation = {{"ml.p5.48xlarge", two}};
  b.allocation = {{"ml.p5.48xlarge", one}};
  c.allocation = {{"ml.p5.48xlarge", one}};
  a.borrow_limit = b.borrow_limit = 100;
  j.op(UpsertTeam{a}, 100);
  j.op(UpsertTeam{b}, 100);
  j.op(UpsertTeam{c}, 100);
  j.op(RemoveTeam{"c"}, 101);
  j.op(AddNode{node("n1", "blk-a"), "10.0.0.1", true}, 102);
  j.op(AddNode{node("n2", "blk-a"), "10.0.0.2", true}, 102);
  j.op(AddNode{node("n3", "blk-b"), "10.0.0.3", true}, 102);
  j.op(AddNode{node("n4", "blk-b"), "", false}, 102);
  const Actor admin{.token = "adm1", .role = auth::Role::kAdmin};
  j.op(CreateToken{TokenRecord{"tok-a", std::string(64, 'a'), auth::Role::kMember, {"a"}, "", 0, "team a"}}, 103, admin);
  j.op(CreateToken{TokenRecord{"tok-n1", std::string(64, 'b'), auth::Role::kAgent, {}, "n1", 1900000000, ""}}, 103, admin);
  j.op(RevokeToken{"tok-a"}, 104, admin);
  j.op(Audit{"POST /v1/tokens", "tok-a", 201, ""}, 104, admin);
  j.op(Audit{"POST /v1/jobs", "x", 403, "needs a member token of team x"}, 104, Actor{.token = "tok-a", .role = auth::Role::kMember, .teams = {"a"}});
  j.op(Submit{p5_job("a-doomed", "a").accelerators(2)}, 109);
  j.op(Submit{p5_job("a-pair", "a").replicas(2).accelerators(4).priority("high")}, 110);
  j.op(Submit{p5_job("a-whole", "a").accelerators(8).max_retries(2)}, 111);
  j.op(Submit{p5_job("b-half", "b").accelerators(4).priority("low").max_retries(1)}, 112);
  j.op(Submit{p5_job("b-temp", "b").accelerators(2).priority("temporary")}, 113);
  j.op(Submit{p5_job("a-cancel", "a")}, 115);
  j.op(Finish{"b-temp", true, "exited 0"}, 130);
  policy.priority_classes = {{"high", 100}, {"low", 10}};  // b-temp's class goes once nothing active uses it
  j.op(SetPolicy{policy}, 131);
  j.op(Finish{"a-doomed", false, "replica 0 exited with code 1"}, 140);
  j.op(Cancel{"a-cancel"}, 141, admin);
  j.op(Submit{p5_job("a-huge", "a").replicas(3).accelerators(8)}, 150);  // more than the cluster has free: waits
  j.op(NodeHealthChange{"n2", NodeHealth::kUnschedulablePendingReboot, HealthCause::kTimeout, "", ""}, 160);
  j.op(Cordon{"n3", true}, 161);
  j.op(RemoveNode{"n4"}, 170);
  j.op(AddNode{node("n4", "blk-c"), "10.0.0.44", true}, 171);  // the name again, a new node
  j.op(NodeHealthChange{"n4", NodeHealth::kUnschedulable, HealthCause::kDeepCheck, "", "deep health check running"}, 172);
  j.op(NodeHealthChange{"n2", NodeHealth::kSchedulable, HealthCause::kAgent, "10.0.0.22", ""}, 175);
  j.op(NodeHealthChange{"n2", NodeHealth::kUnschedulablePendingReboot, HealthCause::kHealthCheck, "", "check gpu failed"}, 176);
  // No schedulable node is left: what the drain suspends stays Suspended, what runs on cordoned n3 keeps running.
  j.op(Drain{"n1"}, 180);
  j.op(Submit{p5_job("b-late", "b").accelerators(8)}, 200);
  // A held job, and a failed job deleted and its name submitted again (numbering its attempts after the old one's).
  j.op(HoldJob{"a-huge", true}, 201);
  j.op(DeleteJob{"a-doomed"}, 202);
  j.op(Submit{p5_job("a-doomed", "a")}, 203);
  // Retention: b-temp (Succeeded at 130) leaves, whatever finished later stays, and b-temp's name is taken again.
  j.op(CompactFinished{130}, 204);
  j.op(Submit{p5_job("b-temp", "b").accelerators(2)}, 205);
  // Capacity plans: "res" starts, its node joins and takes a job, its grace period suspends that job, it expires
  // and its node leaves; "spare" is deleted while Active with a job waiting for its second node, and its name is
  // taken again by a plan still Scheduled, which a job waits for.
  j.op(CreatePlan{PlanSpec{"res", "ml.p5.48xlarge", 1, 210, 260, 20, "b", {{"network-node-layer-3", "blk-p"}}}}, 205, admin);
  j.op(PlanStepRecord{"res", "Active"}, 210);
  j.op(Submit{p5_job("b-plan", "b").accelerators(8).plan("res")}, 210);
  j.op(AddNode{plan_node("res-1", "res"), "10.0.0.9", true}, 211);
  j.op(PlanStepRecord{"res", "Ending"}, 240);
  j.op(PlanStepRecord{"res", "Expired"}, 260);
  j.op(CreatePlan{PlanSpec{"spare", "ml.p5.48xlarge", 2, 265, 400, 0, "", {}}}, 262, admin);
  j.op(PlanStepRecord{"spare", "Active"}, 265);
  j.op(AddNode{plan_node("spare-1", "spare"), "10.0.0.10", true}, 266);
  j.op(Submit{p5_job("a-spare", "a").replicas(2).accelerators(8).plan("spare")}, 267);
  j.op(DeletePlan{"spare"}, 280, admin);
  j.op(CreatePlan{PlanSpec{"spare", "ml.p5.48xlarge", 1, 500, 600, 0, "a", {}}}, 281, admin);
  j.op(Submit{p5_job("a-later", "a").accelerators(8).plan("spare")}, 282);
  // Dependencies (core/model/dependency.h): one waits for a-pair to succeed (its resolved ID is kept), one named a
  // cancelled job and was ended for it.
  JobSpec waits = p5_job("a-after", "a").accelerators(1);
  waits.after = {{"a-pair", DependencyCondition::kSucceeded}, {"a-whole", DependencyCondition::kStarted}};
  j.op(Submit{waits}, 283);
  JobSpec never = p5_job("a-never", "a").accelerators(1);
  never.after = {{"a-cancel", DependencyCondition::kSucceeded}};
  j.op(Submit{never}, 284);  // its pass ends it: a dependency_never record follows
  // A manager's job in a worker cluster (core/lifecycle/remote_copy.h), one of its copy's events mirrored.
  JobSpec far = p5_job("a-far", "a").accelerators(1);
  far.multicluster = true;
  j.op(Submit{far}, 285);
  j.op(RemoteCopyStep{"a-far", RemoteStep::kDispatched, "east", "a-far-1", ""}, 286);
  j.op(RemoteCopyStep{"a-far", RemoteStep::kEvent, "east", "a-far-1", "submitted", 12, "submit"}, 287);
  j.op(RemoteCopyStep{"a-far", RemoteStep::kRunning, "east", "a-far-1", "admitted on gpu-1"}, 288);
  return j;
}

ServerState replay_prefix(const std::vector<Record>& records, size_t n) {
  ServerState st;
  std::vector<Event> events;
  for (size_t i = 0; i < n; ++i) {
    auto applied = apply(st, records[i], events);
    EXPECT_TRUE(applied.ok()) << "record " << records[i].seq << ": " << applied.error().message;
  }
  return st;
}

json room_json(const ClusterState& s) {
  json out = json::array();
  for (const NodeRoom& r : s.room)
    out.push_back({r.type.index(), view::resources_json(r.free), r.accelerators_free, r.replicas,
                   r.exclusive_owner.valid() ? static_cast<int64_t>(r.exclusive_owner.index()) : -1, r.usable});
  return out;
}

// The finished-jobs index as retention reads it: built on first use (core keep_finished_index), so a state
// restored from a snapshot may not have it yet where a full replay that compacted does; what it holds must agree.
std::set<std::pair<Time, uint32_t>> finished_index(const ClusterState& s) {
  ClusterState copy = s;
  keep_finished_index(copy);
  return copy.finished_jobs;
}

// Everything a reader or the scheduler can see of the two states, as one JSON for a readable diff.
json observable(const ServerState& st, Time now) {
  const ClusterState& s = st.cluster;
  json jobs = json::array(), nodes = json::array(), teams = json::array(), ids = json::object();
  // Every ID, freed chunks of the job table included (core/model/job_table.h: iteration skips those).
  for (size_t i = 0; i < s.jobs.size(); ++i)
    if (const Job& j = s.jobs[i]; j.compacted) jobs.push_back({{"compacted", i}, j.state == JobState::kCancelled, j.deleted, j.team.valid()});
    else jobs.push_back({view::job_json(s, j), j.shape, j.arrival, j.held, j.deleted, j.attempt_base, j.resizes.size(), j.plan.value});
  json plans = json::array(), plan_idle = json::array();
  for (const Plan& p : s.plans) plans.push_back({view::plan_json(s, p), p.deleted, p.type.index()});
  for (const auto& r : s.plan_idle) plan_idle.push_back(view::resources_json(r));
  for (const Node& n : s.nodes) nodes.push_back({view::node_json(s, n), n.plan.value});
  for (const Team& t : s.teams) {
    json cand = json::array();
    for (TypeId c : t.candidate_types) cand.push_back(c.index());
    json allocated = json::array(), nominal = json::array();
    for (const auto& r : t.allocated) allocated.push_back(view::resources_json(r));
    for (const auto& r : t.nominal) nominal.push_back(view::resources_json(r));
    teams.push_back({view::team_json(s, t), cand, allocated, nominal});
  }
  for (const auto& [name, id] : *s.node_by_name) ids["node " + name] = id.index();
  s.job_by_name.for_each([&](const std::string& name, JobId id) { ids["job " + name] = id.index(); });
  for (const auto& [name, id] : s.team_by_name) ids["team " + name] = id.index();
  for (const auto& [name, id] : s.plan_by_name) ids["plan " + name] = id.index();
  json usage = json::array();
  for (const auto& per_type : s.usage)
    for (const auto& r : per_type) usage.push_back(view::resources_json(r));
  json capacity = json::array();
  for (const auto& r : s.capacity) capacity.push_back(view::resources_json(r));
  json running = json::array(), waiting = json::array();
  for (JobId id : s.running_jobs.sorted()) running.push_back(id.index());
  for (JobId id : s.waiting_jobs.sorted()) waiting.push_back(id.index());
  // The next pass, on a copy: the same decisions, word for word.
  ClusterState copy = s;
  json decisions = json::array();
  for (const Decision& d : schedule(copy, now).decisions) decisions.push_back(record_body_json(Record{0, now, decision_record(copy, d)}));
  return {{"server", snapshot_document(encode_state_snapshot(st, {})).value()},
          {"jobs", jobs},
          {"nodes", nodes},
          {"teams", teams},
          {"ids", ids},
          {"room", room_json(s)},
          {"usage", usage},
          {"capacity", capacity},
          {"running", running},
          {"waiting", waiting},
          {"shapes", s.shape_ids.size()},
          {"next_arrival", s.next_arrival},
          {"attempts_used", s.attempts_used},
          {"attempts_folded", s.attempts_folded},
          {"finished_jobs", finished_index(s)},
          {"room_changed_at", s.room_changed_at},
          {"compacted", {s.compacted_before, s.compacted_at, s.compacted_jobs}},
          {"running_table", std::vector<uint32_t>(st.running.begin(), st.running.end())},
          {"decisions", decisions},
          {"plans", plans},
          {"plan_idle", plan_idle}};
}

TEST(Snapshot, TheSampleJournalLeavesJobsInEveryState) {
  const Journal j = sample_journal();
  // Every state, before retention took the one Succeeded job (b-temp).
  size_t compaction = 0;
  while (!std::holds_alternative<CompactFinished>(j.records()[compaction].op)) ++compaction;
  std::set<std::string> states;
  for (const Job& job : replay_prefix(j.records(), compaction).cluster.jobs) states.insert(job_state_name(job.state));
  EXPECT_EQ(states, (std::set<std::string>{"Pending", "Running", "Suspended", "Succeeded", "Failed", "Cancelled"}));
  EXPECT_EQ(j.live().tokens->size(), 2u);
  EXPECT_EQ(j.live().audit.size(), 2u);
  EXPECT_EQ(j.live().cluster.nodes.size(), 7u);  // n4 twice, res-1 and spare-1 (both left)
  std::set<std::string> plans;
  for (const Plan& p : j.live().cluster.plans) plans.insert(std::string(plan_state_name(p.state)) + (p.deleted ? " deleted" : ""));
  EXPECT_EQ(plans, (std::set<std::string>{"Expired", "Expired deleted", "Scheduled"}));
  EXPECT_EQ(j.live().cluster.compacted_jobs, 1u);  // the first b-temp
  EXPECT_EQ(j.live().cluster.find_job("b-temp")->attempt_base, 1);
}

// A snapshot holds compacted jobs as runs of IDs, not one entry each: its size follows the jobs kept.
TEST(Snapshot, CompactedJobsTakeOneEntryPerRun) {
  ServerState st;
  std::vector<Event> events;
  uint64_t seq = 0;
  auto op = [&](Op o, Time at) { ASSERT_TRUE(apply(st, Record{++seq, at, std::move(o)}, events).ok()) << seq; };
  TeamSpec a{.name = "a"};
  op(UpsertTeam{a}, 1);
  for (int i = 0; i < 500; ++i) {
    op(Submit{p5_job("j" + std::to_string(i), "a")}, 2);
    op(Cancel{"j" + std::to_string(i)}, 3);
  }
  op(Submit{p5_job("kept", "a")}, 4);  // waits: there is no node
  const size_t before = encode_state_snapshot(st, {}).size();
  op(CompactFinished{3}, 5);
  ASSERT_EQ(st.cluster.compacted_jobs, 500u);
  const std::string body = encode_state_snapshot(st, {});
  const json cluster_jobs = snapshot_document(body).value().at("cluster").at("jobs");
  ASSERT_EQ(cluster_jobs.size(), 2u);  // one run of 500 tombstones, and "kept"
  EXPECT_EQ(cluster_jobs[0].at("compacted"), 500);
  EXPECT_LT(body.size() * 20, before) << "500 cancelled jobs took " << before << " bytes, their tombstones " << body.size();
  auto restored = restore_state_snapshot(seq, body);
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->state.cluster.jobs.size(), 501u);
  EXPECT_EQ(restored->state.cluster.find_job("kept")->id.index(), 500u) << "IDs after a run of tombstones are kept";
  EXPECT_TRUE(restored->state.cluster.jobs[499].compacted);
  EXPECT_EQ(restored->state.cluster.find_job("j7"), nullptr);
  EXPECT_EQ(restored->state.cluster.attempts_used.at("j7"), 1);
}

// Format 2 is lines (state_snapshot.h): the first names the format and the checksum of the rest, the second is the
// header with the entries' counts, then one line per entry. Read back as a document and written again, the body is
// the same text, at every position of the journal; a newline inside a text stays inside its line (JSON escapes it).
TEST(Snapshot, TheBodyIsOneLinePerEntryAfterItsHeader) {
  const Journal j = sample_journal();
  for (size_t n = 1; n <= j.records().size(); ++n) {
    const ServerState st = replay_prefix(j.records(), n);
    const std::string body = encode_state_snapshot(st, {});
    ASSERT_EQ(body.rfind("allot-snapshot 2 ", 0), 0u) << body.substr(0, 40);
    ASSERT_EQ(body.back(), '\n');
    const json doc = snapshot_document(body).value();
    ASSERT_EQ(snapshot_from_document(doc), body) << "after record " << n;
    const size_t lines = static_cast<size_t>(std::count(body.begin(), body.end(), '\n'));
    ASSERT_EQ(lines, 2 + doc.at("cluster").at("jobs").size() + doc.at("accounts").size() + doc.at("audit").size() +
                         doc.at("events").size() + doc.at("usage_rows").size() + doc.at("usage_users").size());
    ASSERT_EQ(doc.at("audit").size(), st.audit.size());
  }
  ServerState st = j.live();
  AuditEntry two_lines = st.audit.back();  // entries are immutable once in the trail: a new one says it
  two_lines.audit.message = "two\nlines";
  st.audit.push_back(two_lines);
  const std::string body = encode_state_snapshot(st, {});
  auto restored = restore_state_snapshot(st.last_seq, body);
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->state.audit.back().audit.message, "two\nlines");
}

// Compact job entries leave out the fields at their usual values: the body is smaller than format 1's document
// of the same state, and both restore to it.
TEST(Snapshot, CompactEntriesAreSmallerThanFormatOnesAndRestoreTheSame) {
  const Journal j = sample_journal();
  const ServerState st = j.live();
  const std::string two = encode_state_snapshot(st, {}), one = encode_state_snapshot_format1(st, {});
  EXPECT_LT(two.size(), one.size());
  auto a = restore_state_snapshot(st.last_seq, two), b = restore_state_snapshot(st.last_seq, one);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(observable(a->state, 1000), observable(b->state, 1000));
  EXPECT_EQ(observable(a->state, 1000), observable(st, 1000));
}

// At every position of the journal: snapshot, restore, replay the rest; the result is the full replay's.
TEST(Snapshot, RestoredAtAnyRecordPlusTheTailEqualsAFullReplay) {
  const Journal j = sample_journal();
  const auto& records = j.records();
  const Time end = records.back().at;
  const ServerState full = replay_prefix(records, records.size());
  const json expected = observable(full, end);
  for (size_t cut = 0; cut <= records.size(); ++cut) {
    SCOPED_TRACE("snapshot after record " + std::to_string(cut));
    const ServerState prefix = replay_prefix(records, cut);
    const std::vector<Event> events = {{1, 100, "submit", "x", "", "submitted", "a"}};
    // Format 2, as this version writes it, and format 1, as earlier versions did: both still restore.
    for (const std::string& body : {encode_state_snapshot(prefix, cut ? events : std::vector<Event>{}),
                                    encode_state_snapshot_format1(prefix, cut ? events : std::vector<Event>{})}) {
      auto restored = restore_state_snapshot(cut, body);
      ASSERT_TRUE(restored.ok()) << restored.error().message;
      ServerState st = std::move(restored->state);
      std::vector<Event> tail_events;
      for (size_t i = cut; i < records.size(); ++i) ASSERT_TRUE(apply(st, records[i], tail_events).ok()) << records[i].seq;
      ASSERT_EQ(observable(st, end), expected) << body.substr(0, 20);
    }
  }
}

TEST(Snapshot, EventsInMemoryComeBackInOrder) {
  const Journal j = sample_journal();
  const std::vector<Event> events = {{7, 100, "submit", "a-pair", "", "submitted by team a", "a"},
                                     {8, 101, "node_health", "", "n2", "health Schedulable (by agent)", ""}};
  ServerState st = replay_prefix(j.records(), j.records().size());
  st.last_event = 8;
  auto restored = restore_state_snapshot(st.last_seq, encode_state_snapshot(st, events));
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  ASSERT_EQ(restored->events.size(), 2u);
  EXPECT_EQ(restored->events[1].node, "n2");
  EXPECT_EQ(restored->state.last_event, 8u);
}

// Who may read an event goes through the snapshot. A snapshot written before events carried it keeps token
// events to the roles that read the whole cluster; an audience this version does not know is an error.
TEST(Snapshot, EventsKeepTheirAudience) {
  const Journal j = sample_journal();
  std::vector<Event> events = {{7, 100, "create_token", "", "", "token 0123456789 created (role member, teams a)", ""},
                               {8, 101, "submit", "a-pair", "", "submitted by team a", "a"}};
  events[0].audience = EventAudience::kWholeClusterReaders;
  ServerState st = replay_prefix(j.records(), j.records().size());
  st.last_event = 8;
  const std::string text = encode_state_snapshot(st, events);
  auto restored = restore_state_snapshot(st.last_seq, text);
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->events[0].audience, EventAudience::kWholeClusterReaders);
  EXPECT_EQ(restored->events[1].audience, EventAudience::kEveryReader);

  json before = snapshot_document(text).value();  // as a snapshot of an earlier version had it: eight fields per event
  for (json& e : before["events"]) e.erase(8);
  auto legacy = restore_state_snapshot(st.last_seq, snapshot_from_document(before));
  ASSERT_TRUE(legacy.ok()) << legacy.error().message;
  EXPECT_EQ(legacy->events[0].audience, EventAudience::kWholeClusterReaders);
  EXPECT_EQ(legacy->events[1].audience, EventAudience::kEveryReader);

  json unknown = snapshot_document(text).value();
  unknown["events"][1][8] = "everyone-and-their-dog";
  auto bad = restore_state_snapshot(st.last_seq, snapshot_from_document(unknown));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown audience"), std::string::npos) << bad.error().message;
}

// The decision counters by rule carry the job's team and instance type (server/views/observed.h, RuleKey). A snapshot
// written before they did holds them by rule alone: it is read, and those counts, which name no team or type,
// are left out (the counters count from the snapshot on; docs/api.md, "Metrics").
TEST(Snapshot, DecisionCountersByRuleCarryTeamAndTypeAndOldOnesAreLeftOut) {
  const Journal j = sample_journal();
  const ServerState st = replay_prefix(j.records(), j.records().size());
  ASSERT_FALSE(st.observed.admissions_by_rule.empty());
  for (const auto& [key, n] : st.observed.admissions_by_rule) {
    EXPECT_EQ(key.instance_type, "ml.p5.48xlarge");
    EXPECT_TRUE(key.team == "a" || key.team == "b") << key.team;
  }
  json body = snapshot_document(encode_state_snapshot(st, {})).value();
  auto same = restore_state_snapshot(st.last_seq, snapshot_from_document(body));
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->state.observed.admissions_by_rule, st.observed.admissions_by_rule);
  EXPECT_EQ(same->state.observed.preemptions_by_rule, st.observed.preemptions_by_rule);
  body["observed"]["admissions_by_rule"] = {{"borrowing", 2}, {"within-nominal", 5}};
  body["observed"]["preemptions_by_rule"] = {{"reclaim", 1}};
  auto old = restore_state_snapshot(st.last_seq, snapshot_from_document(body));
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_TRUE(old->state.observed.admissions_by_rule.empty());
  EXPECT_TRUE(old->state.observed.preemptions_by_rule.empty());
  // A running job's instance types come back from its placement: a preemption after the snapshot counts under them.
  for (const Job& job : old->state.cluster.jobs)
    if (!job.compacted && job.state == JobState::kRunning) {
      ASSERT_TRUE(old->state.accounts.find(job.id.index()) && st.accounts.find(job.id.index())) << job.spec.name;
      EXPECT_EQ(old->state.accounts.find(job.id.index())->run_types, st.accounts.find(job.id.index())->run_types) << job.spec.name;
    }
}

// The queue-wait histograms are per team, priority class and the instance type a job was placed on; rows of a
// snapshot written before they had a type cannot be split by type and are left out (docs/api.md, "Metrics").
TEST(Snapshot, QueueWaitsCarryTheInstanceTypeAndOldRowsAreLeftOut) {
  const Journal j = sample_journal();
  const ServerState st = replay_prefix(j.records(), j.records().size());
  ASSERT_FALSE(st.observed.queue_wait.empty());
  for (const auto& [key, h] : st.observed.queue_wait) EXPECT_EQ(key.instance_type, "ml.p5.48xlarge") << key.team;
  json body = snapshot_document(encode_state_snapshot(st, {})).value();
  auto same = restore_state_snapshot(st.last_seq, snapshot_from_document(body));
  ASSERT_TRUE(same.ok()) << same.error().message;
  ASSERT_EQ(same->state.observed.queue_wait.size(), st.observed.queue_wait.size());
  for (const auto& [key, h] : st.observed.queue_wait) EXPECT_EQ(same->state.observed.queue_wait.at(key).count(), h.count()) << key.team;
  for (json& row : body["observed"]["queue_wait"]) row.erase("instance_type");
  auto old = restore_state_snapshot(st.last_seq, snapshot_from_document(body));
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_TRUE(old->state.observed.queue_wait.empty());
}

// A snapshot is untrusted input: each damage is an error that names the snapshot's seq and what is wrong.
TEST(Snapshot, ADamagedSnapshotIsAnErrorNamingItsSeq) {
  const Journal j = sample_journal();
  const ServerState st = replay_prefix(j.records(), j.records().size());
  const uint64_t seq = st.last_seq;
  const std::string body = encode_state_snapshot(st, {});
  const json good = snapshot_document(body).value();
  struct Case {
    std::string what;
    std::function<void(json&)> damage;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"an accelerator out of range", [&](json& b) {
         for (json& job : b["cluster"]["jobs"])
           if (job["state"] == "Running") { job["placement"][0]["replicas"][0]["accelerators"][0] = 99; break; }
       }, "accelerator 99"},
      {"a placement on a node that is not there", [&](json& b) {
         for (json& job : b["cluster"]["jobs"])
           if (job["state"] == "Running") { job["placement"][0]["replicas"][0]["node"] = "ghost"; break; }
       }, "ghost"},
      {"one accelerator bound twice", [&](json& b) {
         for (json& job : b["cluster"]["jobs"])
           if (job["state"] == "Running") {
             json& accelerators = job["placement"][0]["replicas"][0]["accelerators"];
             accelerators.push_back(accelerators[0]);
             break;
           }
       }, "which another replica holds"},
      {"an unknown job state", [](json& b) { b["cluster"]["jobs"][0]["state"] = "Sleeping"; }, "unknown job state Sleeping"},
      {"a running job without a placement", [&](json& b) {
         for (json& job : b["cluster"]["jobs"])
           if (job["state"] == "Running") { job["placement"] = json::array(); break; }
       }, "without a placement"},
      {"a job of an unknown team", [](json& b) { b["cluster"]["jobs"][0]["spec"]["team"] = "nobody"; }, "unknown team"},
      {"a node of an unknown type", [](json& b) { b["cluster"]["nodes"][0]["spec"]["instance_type"] = "ml.x.large"; }, "ml.x.large"},
      {"two live nodes of one name", [](json& b) { b["cluster"]["nodes"][1]["spec"]["name"] = "n1"; }, "already in the cluster"},
      {"a missing field", [](json& b) { b["cluster"].erase("teams"); }, "malformed"},
      {"a field of the wrong type", [](json& b) { b["admissions_total"] = "many"; }, "malformed"},
      {"another position", [](json& b) { b["last_seq"] = 3; }, "it says it is the state after record 3"},
      {"another format", [](json& b) { b["format"] = 99; }, "format 99"},
      {"a histogram that does not add up", [](json& b) { b["observed"]["queue_wait"][0]["histogram"]["count"] = 12345; }, "do not match"},
      {"an account of a job that is not there", [](json& b) { b["accounts"][0]["job"] = 4000; }, "beyond the jobs"},
      {"a decision counter listed twice", [](json& b) {
         json& rows = b["observed"]["admissions_by_rule"];
         rows.push_back(rows[0]);
       }, "listed twice"},
      {"a decision counter without its instance type", [](json& b) { b["observed"]["admissions_by_rule"][0].erase(2); }, "malformed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json bad = good;
    c.damage(bad);
    // Both formats: format 2 sealed with a fresh checksum (the damage is valid-looking), and format 1's document.
    json one = bad;
    if (one.value("format", 0) == 2) one["format"] = 1;
    for (const std::string& text : {snapshot_from_document(bad), one.dump()}) {
      auto r = restore_state_snapshot(seq, text);
      ASSERT_FALSE(r.ok()) << text.substr(0, 20);
      EXPECT_NE(r.error().message.find("snapshot at journal record " + std::to_string(seq)), std::string::npos) << r.error().message;
      EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    }
  }
  auto truncated = restore_state_snapshot(seq, encode_state_snapshot_format1(st, {}).substr(0, 100));
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("snapshot at journal record " + std::to_string(seq) + " is not valid JSON"), std::string::npos);
}

// Format 2's framing: a body cut anywhere, or changed in any byte after its first line, does not match its
// checksum; a first line of another format, or cut short, is refused before anything is read; and a body whose
// lines do not match its header's counts (resealed, so the checksum matches) says which section ran short.
TEST(Snapshot, ATornOrChangedBodyIsRefusedByItsChecksum) {
  const Journal j = sample_journal();
  const ServerState st = replay_prefix(j.records(), j.records().size());
  const uint64_t seq = st.last_seq;
  const std::string body = encode_state_snapshot(st, {});
  const size_t first = body.find('\n') + 1;
  for (size_t cut : {first, first + 1, body.size() / 3, body.size() / 2, body.size() - 1}) {
    auto r = restore_state_snapshot(seq, body.substr(0, cut));
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_NE(r.error().message.find("does not match its checksum"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("torn"), std::string::npos) << r.error().message;
  }
  for (size_t at = first; at < body.size(); at += 97) {
    std::string changed = body;
    changed[at] = changed[at] == '1' ? '2' : '1';
    auto r = restore_state_snapshot(seq, changed);
    ASSERT_FALSE(r.ok()) << at;
    EXPECT_NE(r.error().message.find("does not match its checksum"), std::string::npos) << r.error().message;
  }
  auto other = restore_state_snapshot(seq, "allot-snapshot 3 " + body.substr(17));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("format 3, this version reads 1 and 2"), std::string::npos) << other.error().message;
  auto short_line = restore_state_snapshot(seq, "allot-snapshot 2");
  ASSERT_FALSE(short_line.ok());
  EXPECT_NE(short_line.error().message.find("cut short"), std::string::npos) << short_line.error().message;

  json doc = snapshot_document(body).value();
  doc["audit"].erase(doc["audit"].size() - 1);
  // The sections after the audit trail left out too, so that the text ends inside it.
  doc["usage_rows"] = json::array();
  doc["usage_users"] = json::array();
  std::string sealed = snapshot_from_document(doc);
  // The counts now say one fewer audit entry: put the header of the full body back, and reseal the text.
  const std::string full_header = body.substr(first, body.find('\n', first) - first + 1);
  const size_t sealed_first = sealed.find('\n') + 1;
  const std::string text = full_header + sealed.substr(sealed.find('\n', sealed_first) + 1);
  auto short_section = restore_state_snapshot(seq, "allot-snapshot 2 " + store::snapshot_checksum(text) + "\n" + text);
  ASSERT_FALSE(short_section.ok());
  EXPECT_NE(short_section.error().message.find("audit entries"), std::string::npos) << short_section.error().message;
}

}  // namespace
}  // namespace allot::server::snapshot_test
