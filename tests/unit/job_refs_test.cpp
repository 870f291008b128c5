// Job references in reasons as data (core/model/ref_text.h, view/job_refs.h): a reason names a job by its team only
// through job_ref(), which records where "job NAME of team TEAM" sits; a reader who may not see that team's jobs
// reads "a job of team TEAM" there, found from the references and never from the words. Texts stored without
// references (records and snapshots of earlier versions) are read the old way, by a scan of the words.
#include <gtest/gtest.h>

#include "core/model/explanation.h"
#include "core/pass/scheduler.h"
#include "server/writer/server_state.h"
#include "server/writer/state_snapshot.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "view/job_refs.h"
#include "view/state_json.h"

#include "spec_builders.h"

namespace allot::view::job_refs_test {
namespace {

using nlohmann::json;

const SeesTeamJobs kSeesOnlyA = [](const std::string& team) { return team == "a"; };
const SeesTeamJobs kSeesOnlyB = [](const std::string& team) { return team == "b"; };

// Every reference's words are where it says they are, in the text it came with.
void expect_refs_in_place(const RefText& t) {
  for (const JobRef& r : t.refs()) EXPECT_EQ(t.str().substr(r.at, r.size), "job " + r.job + " of team " + r.team) << t.str();
}

TEST(RefText, ConcatenationMovesEachReferenceWithItsWords) {
  RefText t = "admitted on n-1; after preempting x-1, " + job_ref("b-7", "b") + ", " + job_ref("a-2", "a") + ".";
  t += "; then " + job_ref("c.long-name", "c");
  ASSERT_EQ(t.refs().size(), 3u);
  EXPECT_EQ(t.refs()[0].job, "b-7");
  EXPECT_EQ(t.refs()[2].team, "c");
  expect_refs_in_place(t);
  // A text built from one whose references are unknown has unknown references too.
  EXPECT_FALSE((RefText::refs_unknown("held") + t).refs_known());
  EXPECT_TRUE((RefText("held") + t).refs_known());
}

TEST(JobRefs, HidesOnlyTheJobsOfTeamsTheReaderMayNotSee) {
  const RefText text = "admitted on n-1; after preempting x-1, " + job_ref("b-7", "b") + ", " + job_ref("a-2", "a") + ".";
  EXPECT_EQ(hide_job_refs(text, kSeesOnlyA), "admitted on n-1; after preempting x-1, a job of team b, job a-2 of team a.");
  EXPECT_EQ(hide_job_refs(text, kSeesOnlyB), "admitted on n-1; after preempting x-1, job b-7 of team b, a job of team a.");
  EXPECT_EQ(hide_job_refs(text, {}), text.str());  // an admin (or viewer) reads every name
}

// The words alone make no reference: a text that says "job x of team b" in words of its own (an admission check's
// message, an agent's exit reason) is not changed, and one that writes a reference where the old scan did not see
// it (right after a name's character) is hidden all the same.
TEST(JobRefs, TheReferencesDecideNotTheWords) {
  const RefText words = RefText("check quota-gate answered reject: job x of team b holds the license");
  EXPECT_EQ(hide_job_refs(words, kSeesOnlyA), words.str());
  EXPECT_EQ(scan_job_refs(words.str(), kSeesOnlyA), "check quota-gate answered reject: a job of team b holds the license")
      << "the old reading took the words for a reference";
  const RefText glued = "queue-" + job_ref("b-1", "b");
  EXPECT_EQ(scan_job_refs(glued.str(), kSeesOnlyA), glued.str()) << "the old reading missed it";
  EXPECT_EQ(hide_job_refs(glued, kSeesOnlyA), "queue-a job of team b");
}

TEST(JobRefs, ATextWhoseReferencesAreUnknownIsReadTheOldWay) {
  const RefText old = RefText::refs_unknown("preempted (reclaim): team b takes back its lent quota for job b-1 of team b");
  EXPECT_EQ(hide_job_refs(old, kSeesOnlyA), "preempted (reclaim): team b takes back its lent quota for a job of team b");
  EXPECT_EQ(hide_job_refs(old, kSeesOnlyB), old.str());
  for (const std::string text : {"preempted by job a-1 of the same team (priority high)", "the job of team b", "subjob x of team b",
                                 "job  of team b", "job x of team ", "team b is above its fair share"})
    EXPECT_EQ(scan_job_refs(text, kSeesOnlyA), text) << text;
}

// As records and snapshots store them: read back equal; references out of order are refused.
TEST(JobRefsJson, ReadBackEqualAndInTextOrderOnly) {
  const RefText t = job_ref("a-1", "a") + " and " + job_ref("b-1", "b");
  json refs = store::job_refs_to_json(t.refs());
  const RefText back = store::ref_text_from_json(t.str(), refs);
  EXPECT_EQ(back, t);
  EXPECT_TRUE(back.refs_known());
  const json first = refs[0];
  refs[0] = refs[1];
  refs[1] = first;
  EXPECT_THROW(store::ref_text_from_json(t.str(), refs), std::invalid_argument);
  EXPECT_FALSE(store::ref_text_from_json(t.str(), json()).refs_known());
}

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator: one replica per node

store::Op team_op(const std::string& name) {
  TeamSpec t{.name = name};
  AmountSpec one;
  one.instances = 1;
  t.allocation = {{kType, one}};
  t.borrow_limit = 100;
  return store::UpsertTeam{t};
}

// Teams a and b, one node of nominal quota each. b runs b1 and, borrowing a's idle node, b2; a's a-one then takes
// back its lent quota: b2 is preempted (its reason names a-one of team a) and a-one is admitted (its reason names
// b2 of team b). Applied as the server applies records and the scheduler's decisions, which are journaled.
class ReclaimJournal : public ::testing::Test {
 protected:
  void SetUp() override {
    op(team_op("a"), 1);
    op(team_op("b"), 1);
    for (const char* n : {"n1", "n2"}) op(store::AddNode{NodeSpec{n, kType, "", {}}, "", false}, 1);
    op(store::Submit{test::job_spec("b1", "b").instance_type(kType)}, 2);
    op(store::Submit{test::job_spec("b2", "b").instance_type(kType)}, 2);
    op(store::Submit{test::job_spec("a-one", "a").instance_type(kType)}, 3);
    ASSERT_EQ(job("b2").state, JobState::kSuspended) << job("b2").reason.str();
    ASSERT_EQ(job("a-one").state, JobState::kRunning) << job("a-one").reason.str();
  }
  void op(store::Op o, Time at) {
    std::vector<server::Event> ev;
    ASSERT_TRUE(server::apply(st, store::Record{st.last_seq + 1, at, std::move(o), {}}, ev).ok());
    events.insert(events.end(), ev.begin(), ev.end());
    for (const Decision& d : schedule(st.cluster, at).decisions) {
      store::Record r{st.last_seq + 1, at, store::decision_record(st.cluster, d), {}};
      ev.clear();
      server::note_decision(st, r, ev);
      events.insert(events.end(), ev.begin(), ev.end());
      journal.push_back(std::move(r));
    }
  }
  const Job& job(const std::string& name) const { return *st.cluster.find_job(name); }
  server::ServerState st;
  std::vector<server::Event> events;
  std::vector<store::Record> journal;  // the decisions' records
};

TEST_F(ReclaimJournal, TheSchedulersReasonsCarryTheirReferences) {
  // b2's preemption, in its history; its reason now goes on to say why it waits, which names no job.
  const SharedText& victim = job("b2").history.back().reason;
  ASSERT_EQ(victim.refs().size(), 1u) << victim.str();
  EXPECT_EQ(victim.refs()[0].job, "a-one");
  EXPECT_EQ(victim.refs()[0].team, "a");
  expect_refs_in_place(victim.ref_text());
  EXPECT_EQ(job("b2").reason.refs(), victim.refs());
  EXPECT_EQ(job("b2").reason.str().rfind(victim.str(), 0), 0u) << job("b2").reason.str();
  expect_refs_in_place(job("b2").reason.ref_text());
  const SharedText& preemptor = job("a-one").reason;
  ASSERT_EQ(preemptor.refs().size(), 1u) << preemptor.str();
  EXPECT_EQ(preemptor.refs()[0].job, "b2");
  expect_refs_in_place(preemptor.ref_text());

  // A member of b reads b2's reason without a-one's name; a member of a, and an admin, read it whole.
  EXPECT_EQ(hide_job_refs(victim, kSeesOnlyB),
            "preempted (reclaim): team a takes back its lent quota for a job of team a; team b was above its nominal quota");
  EXPECT_EQ(hide_job_refs(victim, kSeesOnlyA), victim.str());
  EXPECT_EQ(hide_job_refs(victim, {}), victim.str());
  EXPECT_EQ(hide_job_refs(preemptor, kSeesOnlyA).find("b2"), std::string::npos);

  // The job's view: reason and history, by the job's own references.
  json v = job_json(st.cluster, job("b2"), /*with_history=*/true, Times::kRfc3339);
  hide_job_refs(v, job("b2"), kSeesOnlyB);
  EXPECT_EQ(v.dump().find("a-one"), std::string::npos) << v.dump();
  EXPECT_EQ(v["reason"], hide_job_refs(job("b2").reason, kSeesOnlyB));
  EXPECT_EQ(v["history"].back()["reason"], hide_job_refs(victim, kSeesOnlyB));

  // The events say what the reasons say, references and all.
  bool preempt_event = false;
  for (const server::Event& e : events)
    if (e.kind == "preempt" && e.job == "b2") {
      preempt_event = true;
      EXPECT_EQ(hide_job_refs(e.message, kSeesOnlyB).find("a-one"), std::string::npos) << e.message.str();
      expect_refs_in_place(e.message);
    }
  EXPECT_TRUE(preempt_event);
}

TEST_F(ReclaimJournal, AJournalRoundTripKeepsTheReferences) {
  int named = 0;
  for (const store::Record& r : journal) {
    const json j = store::op_to_json(r.op);
    auto back = store::op_from_json(j);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, r.op) << j.dump();
    if (const auto* p = std::get_if<store::Preempt>(&*back)) {
      ++named;
      ASSERT_TRUE(j.contains("reason_refs")) << j.dump();
      EXPECT_EQ(p->reason.refs().size(), 1u);
      EXPECT_TRUE(p->reason.refs_known());
    }
  }
  EXPECT_EQ(named, 1);
  // Replayed from the journal, the jobs' reasons carry the references the live state has.
  server::ServerState replayed;
  std::vector<server::Event> ev;
  uint64_t seq = 0;
  auto op = [&](store::Op o, Time at) { ASSERT_TRUE(server::apply(replayed, store::Record{++seq, at, std::move(o), {}}, ev).ok()); };
  op(team_op("a"), 1);
  op(team_op("b"), 1);
  for (const char* n : {"n1", "n2"}) op(store::AddNode{NodeSpec{n, kType, "", {}}, "", false}, 1);
  op(store::Submit{test::job_spec("b1", "b").instance_type(kType)}, 2);
  op(store::Submit{test::job_spec("b2", "b").instance_type(kType)}, 2);
  op(store::Submit{test::job_spec("a-one", "a").instance_type(kType)}, 3);
  for (const store::Record& r : journal) {
    auto back = store::op_from_json(store::op_to_json(r.op));
    ASSERT_TRUE(back.ok());
    ASSERT_TRUE(server::apply(replayed, store::Record{++seq, r.at, std::move(*back), {}}, ev).ok());
  }
  EXPECT_EQ(replayed.cluster.find_job("b2")->reason.refs(), job("b2").reason.refs());
  EXPECT_EQ(replayed.cluster.find_job("a-one")->reason.refs(), job("a-one").reason.refs());
}

TEST_F(ReclaimJournal, ARecordWithoutReferencesIsReadTheOldWay) {
  for (const store::Record& r : journal) {
    json j = store::op_to_json(r.op);
    if (!std::holds_alternative<store::Preempt>(r.op)) continue;
    j.erase("reason_refs");  // as a version before references wrote it
    auto back = store::op_from_json(j);
    ASSERT_TRUE(back.ok()) << back.error().message;
    const RefText& reason = std::get<store::Preempt>(*back).reason;
    EXPECT_FALSE(reason.refs_known());
    EXPECT_TRUE(reason.refs().empty());
    // ... and hidden as those versions hid it: the same text the references give.
    EXPECT_EQ(hide_job_refs(reason, kSeesOnlyB), hide_job_refs(job("b2").history.back().reason, kSeesOnlyB));
    EXPECT_EQ(hide_job_refs(reason, kSeesOnlyB).find("a-one"), std::string::npos);
  }
}

TEST_F(ReclaimJournal, AReferenceThatIsNotItsWordsIsRefused) {
  for (const store::Record& r : journal) {
    if (!std::holds_alternative<store::Preempt>(r.op)) continue;
    json j = store::op_to_json(r.op);
    j["reason_refs"][0]["at"] = j["reason_refs"][0]["at"].get<int>() + 1;
    EXPECT_FALSE(store::op_from_json(j).ok());
    j = store::op_to_json(r.op);
    j["reason_refs"][0]["team"] = "c";
    EXPECT_FALSE(store::op_from_json(j).ok());
  }
}

TEST_F(ReclaimJournal, ASnapshotKeepsTheReferencesOfReasonsHistoryAndEvents) {
  for (bool format1 : {false, true}) {
    const std::string body = format1 ? server::encode_state_snapshot_format1(st, events) : server::encode_state_snapshot(st, events);
    auto restored = server::restore_state_snapshot(st.last_seq, body);
    ASSERT_TRUE(restored.ok()) << restored.error().message;
    for (const char* name : {"b2", "a-one"}) {
      const Job& was = job(name);
      const Job& is = *restored->state.cluster.find_job(name);
      EXPECT_EQ(is.reason.refs(), was.reason.refs()) << name;
      EXPECT_TRUE(is.reason.ref_text().refs_known()) << name;
      ASSERT_EQ(is.history.size(), was.history.size());
      for (size_t i = 0; i < is.history.size(); ++i) EXPECT_EQ(is.history[i].reason.refs(), was.history[i].reason.refs());
    }
    ASSERT_EQ(restored->events.size(), events.size());
    for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(restored->events[i].message.refs(), events[i].message.refs()) << i;
    // A waiting job's reason names no job: it reads back with its references unknown, which hides nothing.
    EXPECT_EQ(hide_job_refs(restored->state.cluster.find_job("b1")->reason, kSeesOnlyA), job("b1").reason.str());
  }
}

}  // namespace
}  // namespace allot::view::job_refs_test
