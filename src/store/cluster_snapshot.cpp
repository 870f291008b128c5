#include "store/cluster_snapshot.h"

#include <functional>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "core/lifecycle/job_restore.h"
#include "core/model/plans.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "store/spec_json.h"

namespace allot::store {
using nlohmann::json;

namespace {

NodeSpec spec_of(const Node& n, const Catalog& catalog) {
  return NodeSpec{n.name, catalog.at(n.type).name, n.instance_group, n.labels};
}

// The placement of a running job by names, as an admit record has it.
std::vector<PodSetRecord> placement_names(const ClusterState& s, const Placement& p) {
  std::vector<PodSetRecord> out;
  for (const auto& ps : p.pod_sets) {
    PodSetRecord r{s.catalog.at(ps.type).name, ps.per_replica, {}};
    for (const auto& b : ps.replicas) r.replicas.push_back({s.nodes[b.node.index()].name, b.accelerators, b.numa_domains, b.cpus});
    out.push_back(std::move(r));
  }
  return out;
}

// A plan's ID in a snapshot (a node's or a job's "plan"), checked against the plans restored.
PlanId plan_id_from(const ClusterState& s, const json& j, const std::string& what) {
  if (!j.contains("plan")) return PlanId();
  const auto id = j.at("plan").get<uint32_t>();
  if (id >= s.plans.size()) throw std::invalid_argument(what + " names plan " + std::to_string(id) + " of " + std::to_string(s.plans.size()));
  return PlanId(id);
}

JobState state_from(const json& j) {
  const auto name = j.get<std::string>();
  auto s = parse_job_state(name);
  if (!s) throw std::invalid_argument("unknown job state " + name);
  return *s;
}

ReasonCode code_from(const json& j) {
  const auto name = j.get<std::string>();
  auto c = parse_reason_code(name);
  if (!c) throw std::invalid_argument("unknown reason code " + name);
  return *c;
}

}  // namespace

// The pieces below throw (nlohmann::json::exception, std::invalid_argument) on malformed input; the public
// functions turn that into an Error.
Status ClusterRestore::begin_throwing(const json& j) {
  const auto levels = j.at("levels").get<std::vector<std::string>>();
  ClusterState& s = s_;
  s = ClusterState(*catalog_, levels);
  if (s.levels != levels) throw std::invalid_argument("topology levels are not in canonical form");
  if (auto st = set_policy(s, policy_from_json(j.at("policy"))); !st) return Error::invalid("policy: " + st.error().message);

  for (const auto& t : j.at("teams")) {
    const TeamSpec spec = team_from_json(t);
    if (s.find_team(spec.name)) return Error::invalid("team " + spec.name + " is listed twice");
    if (auto st = upsert_team(s, spec); !st) return Error::invalid(st.error().message);
  }

  // Capacity plans in ID order (absent in snapshots written before plans), in the state they had been stepped to.
  // A deleted plan's name is free again, so a later plan may hold it.
  for (const auto& pj : j.value("plans", json::array())) {
    const PlanSpec spec = plan_from_json(pj.at("spec"));
    if (auto st = add_plan(s, spec); !st) return Error::invalid(st.error().message);
    Plan& plan = s.plans.back();
    auto state = parse_plan_state(pj.at("state").get<std::string>());
    if (!state) throw std::invalid_argument("plan " + spec.name + ": unknown state " + pj.at("state").get<std::string>());
    plan.state = *state;
    if (pj.at("deleted").get<bool>()) {
      plan.deleted = true;
      s.plan_by_name.erase(spec.name);
    }
  }
  refresh_plan_quota(s);

  // Nodes in ID order. A removed node's name may have been taken again by a later node, so nodes are added in
  // runs without a repeated name, and each run's removed nodes are removed before the next run is added.
  const json& nodes = j.at("nodes");
  std::vector<NodeSpec> run;
  std::vector<bool> run_removed;
  std::set<std::string> run_names;
  auto flush = [&]() -> Status {
    if (run.empty()) return ok_status();
    if (auto st = add_nodes(s, run, 0); !st) return Error::invalid(st.error().message);
    for (size_t i = 0; i < run.size(); ++i)
      if (run_removed[i])
        if (auto st = remove_node(s, run[i].name, 0); !st) return Error::invalid(st.error().message);
    run.clear();
    run_removed.clear();
    run_names.clear();
    return ok_status();
  };
  // A plan's node joins only while its plan is Active and has a free place (core/model/plans.h); restored, it may belong
  // to a plan that has ended since, so it is added without its plan label, which is put back with the plan's ID.
  std::vector<PlanId> node_plans;
  for (const auto& n : nodes) {
    NodeSpec spec = node_from_json(n.at("spec"));
    node_plans.push_back(plan_id_from(s, n, "node " + spec.name));
    if (node_plans.back().valid() != (spec.labels.count(std::string(kPlanLabel)) > 0))
      throw std::invalid_argument("node " + spec.name + ": its plan and its " + std::string(kPlanLabel) + " label disagree");
    spec.labels.erase(std::string(kPlanLabel));
    if (run_names.count(spec.name))
      if (auto st = flush(); !st) return st.error();
    run_names.insert(spec.name);
    run.push_back(std::move(spec));
    run_removed.push_back(n.at("removed").get<bool>());
  }
  if (auto st = flush(); !st) return st.error();
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const json& n = nodes[i];
    if (node_plans[i].valid()) {
      s.nodes.edit(i).plan = node_plans[i];
      s.nodes.edit(i).labels[std::string(kPlanLabel)] = s.plans[node_plans[i].index()].spec.name;
    }
    const NodeHealth health = node_health_from_name(n.at("health").get<std::string>());
    const bool cordoned = n.at("cordoned").get<bool>();
    Node& node = s.nodes.edit(i);
    if (node.removed) {
      // A removed node takes no part in scheduling; its last health and cordon are kept for people only.
      node.health = health;
      node.cordoned = cordoned;
      continue;
    }
    if (health != NodeHealth::kSchedulable)
      if (auto st = set_node_health(s, node.name, health, 0); !st) return Error::invalid(st.error().message);
    if (cordoned)
      if (auto st = set_cordon(s, node.name, true); !st) return Error::invalid(st.error().message);
  }
  // Reservations (absent in snapshots written before them) as they were: their state and the nodes they hold by
  // ID, not checked again (a held node may have failed or left since, which is allowed), but each ID in range.
  for (const auto& rj : j.value("reservations", json::array())) {
    Reservation r;
    r.spec = reservation_from_json(rj.at("spec"));
    const Team* team = s.find_team(r.spec.team);
    if (!team) throw std::invalid_argument("reservation " + r.spec.name + " names unknown team " + r.spec.team);
    r.team = team->id;
    auto state = parse_reservation_state(rj.at("state").get<std::string>());
    if (!state || *state == ReservationState::kExpired)
      throw std::invalid_argument("reservation " + r.spec.name + ": bad state " + rj.at("state").dump());
    r.state = *state;
    for (const auto& id : rj.at("nodes")) {
      const auto n = id.get<uint32_t>();
      if (n >= s.nodes.size()) throw std::invalid_argument("reservation " + r.spec.name + " names node " + std::to_string(n) + " of " + std::to_string(s.nodes.size()));
      r.nodes.push_back(NodeId(n));
    }
    if (!s.reservations.emplace(r.spec.name, std::move(r)).second) throw std::invalid_argument("reservation " + rj.at("spec").at("name").dump() + " twice");
  }

  return ok_status();
}

Status ClusterRestore::add_job_throwing(const json& jj) {
  ClusterState& s = s_;
  // Reasons are interned again: thousands of waiting jobs say the same few things.
  // A reason naming jobs keeps its references (record_json.h); one without them is read as refs_unknown.
  auto text = [&](std::string t, const json& refs = json()) -> SharedText {
    if (!refs.is_null()) return SharedText(store::ref_text_from_json(std::move(t), refs));
    if (t == s.submitted_reason.str()) return s.submitted_reason;
    if (t == s.submitted_history.str()) return s.submitted_history;
    auto it = texts_.find(t);
    if (it == texts_.end()) it = texts_.emplace(t, SharedText(RefText::refs_unknown(t))).first;
    return it->second;
  };
  // A run of jobs compacted by retention: only their IDs are kept (core/model/state.h, compact_finished).
  if (jj.contains("compacted")) {
    const auto n = jj.at("compacted").get<uint64_t>();
    if (n == 0 || n > UINT32_MAX - s.jobs.size()) return Error::invalid("a run of compacted jobs has a bad length " + jj.at("compacted").dump());
    s.jobs.append_compacted(n);
    return ok_status();
  }
  // A field at its usual value may be left out (JobEncoding::kCompact, job_to_json): format 1 writes every field.
  const JobSpec spec = job_from_json(jj.at("spec"));
  const Time submitted_at = jj.at("submitted_at").get<Time>();
  auto id = restore_submitted_job(s, spec, submitted_at, jj.value("priority", 0), plan_id_from(s, jj, "job " + spec.name));
  if (!id) return Error::invalid(id.error().message);
  Job& job = s.jobs[id->index()];
  s.waiting_jobs.erase(job.id);  // submission indexed it as Pending; it is indexed again by its own state
  job.arrival = jj.value("arrival", expected_arrival_);
  expected_arrival_ = job.arrival + 1;
  next_arrival_ = std::max(next_arrival_, job.arrival + 1);
  job.waiting_since = jj.value("waiting_since", submitted_at);
  if (jj.contains("locality_wait_from")) job.locality_wait_from = jj.at("locality_wait_from").get<Time>();
  job.state = state_from(jj.at("state"));
  job.reason = text(jj.at("reason").get<std::string>(), jj.contains("reason_refs") ? jj.at("reason_refs") : json());
  job.reason_code = code_from(jj.at("reason_code"));
  job.feasible = jj.value("feasible", true);
  job.borrowing = jj.value("borrowing", false);
  job.started_at = jj.value("started_at", Time{0});
  job.work_done_s = jj.value("work_done_s", int64_t{0});
  job.preemptions = jj.value("preemptions", 0);
  job.restarts = jj.value("restarts", 0);
  if (job.work_done_s < 0 || job.preemptions < 0 || job.restarts < 0)
    return Error::invalid("job " + spec.name + " has a negative counter");
  job.history.clear();
  for (const auto& h : jj.at("history"))
    job.history.push_back({h.at(0).get<Time>(), state_from(h.at(1)), state_from(h.at(2)),
                           text(h.at(3).get<std::string>(), h.size() > 4 ? h.at(4) : json())});
  // Held, deleted and resized since its submission (absent in snapshots written before these existed).
  job.held = jj.value("held", false);
  job.time_limit_s = jj.value("time_limit_s", int64_t{0});
  job.time_limit_resets = jj.value("time_limit_resets", false);
  job.run_before_s = jj.value("run_before_s", int64_t{0});
  if (job.time_limit_s < 0 || job.run_before_s < 0) return Error::invalid("job " + spec.name + " has a negative time limit or running time");
  job.start_timeouts = jj.value("start_timeouts", 0);  // absent unless a run timed out starting
  job.backoff_until = jj.value("backoff_until", Time{0});
  if (job.start_timeouts < 0) return Error::invalid("job " + spec.name + " has a negative start_timeouts");
  job.membership_epoch = jj.value("membership_epoch", 0);  // absent unless the run recovered in place
  if (job.membership_epoch < 0) return Error::invalid("job " + spec.name + " has a negative membership_epoch");
  job.recoveries.clear();
  for (const auto& r : jj.value("recoveries", json::array()))
    job.recoveries.push_back({r.at(0).get<Time>(), r.at(1).get<std::string>(), r.at(2).get<int>(), r.at(3).get<int>()});
  job.attempt_base = jj.value("attempt_base", 0);
  if (job.attempt_base < 0) return Error::invalid("job " + spec.name + " has a negative attempt_base");
  job.attempt_folded = jj.value("attempt_folded", 0);  // absent unless its base came from folded names
  if (job.attempt_folded < 0 || job.attempt_folded > job.attempt_base)
    return Error::invalid("job " + spec.name + " has attempt_folded " + std::to_string(job.attempt_folded) +
                          "; it must be between 0 and its attempt_base " + std::to_string(job.attempt_base));
  if (jj.contains("remote")) {  // absent unless a manager dispatched it (core/lifecycle/remote_copy.h)
    const json& r = jj.at("remote");
    auto ref = [](const json& c) { return RemoteCopyRef{c.at("worker").get<std::string>(), c.at("copy").get<std::string>()}; };
    job.remote.live = ref(r.at("live"));
    job.remote.last = ref(r.at("last"));
    job.remote.running = r.at("running").get<bool>();
    job.remote.dispatches = r.at("dispatches").get<int>();
    for (const auto& c : r.at("stale")) job.remote.stale.push_back(ref(c));
    job.remote.events_seen = r.value("events_seen", uint64_t{0});  // absent in snapshots before events were mirrored
    job.remote.waiting_since = r.value("waiting_since", Time{0});  // ... and before dispatch timeouts
  }
  // Dependencies: the jobs spec.after named at submission, by ID (absent without any, and in older snapshots).
  job.after.clear();
  for (const auto& a : jj.value("after_ids", json::array())) {
    const auto v = a.get<uint32_t>();
    if (v >= job.id.value) return Error::invalid("job " + spec.name + " depends on job ID " + std::to_string(v) + ", not submitted before it");
    job.after.push_back(JobId(v));
  }
  if (job.after.size() != spec.after.size())
    return Error::invalid("job " + spec.name + " names " + std::to_string(spec.after.size()) + " jobs in after, its snapshot " +
                          std::to_string(job.after.size()) + " IDs");
  job.depends = !job.after.empty();
  job.resizes.clear();
  for (const auto& r : jj.value("resizes", json::array())) {
    const auto cause = r.at(3).get<std::string>();
    if (cause != "grow" && cause != "shrink") throw std::invalid_argument("job " + spec.name + ": unknown resize cause " + cause);
    job.resizes.push_back({r.at(0).get<Time>(), r.at(1).get<int>(), r.at(2).get<int>(),
                           cause == "grow" ? ResizeCause::kGrow : ResizeCause::kShrink,
                           text(r.at(4).get<std::string>(), r.size() > 5 ? r.at(5) : json())});
  }
  if (jj.value("deleted", false)) {
    if (is_active(job.state)) return Error::invalid("job " + spec.name + " is deleted but " + job_state_name(job.state));
    job.deleted = true;
    s.job_by_name.erase(spec.name);  // its name is free: a later job may hold it
  }
  const auto placement = jj.contains("placement") ? placement_from_json(jj.at("placement")) : std::vector<PodSetRecord>{};
  if ((job.state == JobState::kRunning) != !placement.empty())
    return Error::invalid("job " + spec.name + " is " + job_state_name(job.state) +
                          (placement.empty() ? " without a placement" : " but holds a placement"));
  if (job.state == JobState::kRunning) {
    // The same checks as an admit record's: nodes exist, types match, accelerators are in range and free.
    auto p = placement_from_record(s, placement);
    if (!p) return Error::invalid("job " + spec.name + ": " + p.error().message);
    if (p->pod_sets.size() != job.pod_sets.size())
      return Error::invalid("job " + spec.name + " has " + std::to_string(job.pod_sets.size()) + " pod sets, its placement " +
                            std::to_string(p->pod_sets.size()));
    charge(s.room, s.usage, s, job, *p);
    job.placement = std::move(*p);
  }
  index_new_job(s, job);
  return ok_status();
}

Status ClusterRestore::finish_throwing(const json& j) {
  ClusterState& s = s_;
  const auto recorded_next = j.at("next_arrival").get<uint64_t>();
  if (recorded_next < next_arrival_)
    return Error::invalid("next_arrival " + std::to_string(recorded_next) + " is not after every job's arrival");
  s.next_arrival = recorded_next;
  for (const auto& name : j.value("removed_teams", json::array()))
    if (auto st = remove_team(s, name.get<std::string>()); !st) return Error::invalid("removed team: " + st.error().message);
  s.attempts_used = j.value("attempts_used", std::unordered_map<std::string, int>{});
  s.attempts_folded = j.value("attempts_folded", 0);  // absent until attempts_used first outgrew its bound
  if (s.attempts_folded < 0) return Error::invalid("attempts_folded is negative");
  if (j.contains("compacted")) {  // absent in snapshots written before retention existed
    const json& c = j.at("compacted");
    s.compacted_before = c.at("before").get<Time>();
    s.compacted_at = c.at("at").get<Time>();
    s.compacted_jobs = c.at("jobs").get<uint64_t>();
  }
  if (j.contains("room_changed_at")) {
    auto room = j.at("room_changed_at").get<std::vector<Time>>();
    if (room.size() != s.nodes.size())
      return Error::invalid("room_changed_at has " + std::to_string(room.size()) + " entries for " + std::to_string(s.nodes.size()) + " nodes");
    s.room_changed_at = std::move(room);
  }
  return ok_status();
}

Result<ClusterRestore> ClusterRestore::begin(const json& doc, const Catalog& catalog) {
  ClusterRestore r(catalog);
  try {
    if (auto st = r.begin_throwing(doc); !st) return st.error();
  } catch (const std::exception& e) {
    return Error::invalid(std::string("malformed: ") + e.what());
  }
  return r;
}

Status ClusterRestore::add_job_entry(const json& entry) {
  try {
    return add_job_throwing(entry);
  } catch (const std::exception& e) {
    return Error::invalid(std::string("malformed job entry: ") + e.what());
  }
}

Result<ClusterState> ClusterRestore::finish(const json& doc) && {
  try {
    if (auto st = finish_throwing(doc); !st) return st.error();
  } catch (const std::exception& e) {
    return Error::invalid(std::string("malformed: ") + e.what());
  }
  return std::move(s_);
}

namespace {

// The journal's JSON of a job's spec, without the fields at their defaults (job_from_json reads them back so).
json compact_spec(const JobSpec& spec) {
  json j = to_json(spec);
  for (const char* key : {"checkpoint_interval_s", "max_retries"})
    if (j.contains(key) && j.at(key) == 0) j.erase(key);
  for (const char* key : {"env", "labels"})
    if (j.contains(key) && j.at(key).empty()) j.erase(key);
  for (const char* key : {"priority", "plan"})
    if (j.contains(key) && j.at(key) == "") j.erase(key);
  return j;
}

// The job's fields that both encodings write only when set, so that snapshots of jobs without them read as they
// always have: a locality wait (core/placement/locality_wait.h), a plan, folded attempts, the wall-time limit resolved at
// submission and the running time toward it (core/lifecycle/time_limit.h), gang start timeouts (core/lifecycle/start_timeout.h).
// The jobs a reason names (core/model/ref_text.h), only when it names any: "reason_refs" beside the job's reason, and a
// last element of a history or resize entry. Entries without them read back as refs_unknown (record_json.h).
void put_refs(json& out, const Job& j) {
  if (!j.reason.refs().empty()) out["reason_refs"] = job_refs_to_json(j.reason.refs());
}
json history_json(const Transition& h) {
  json out = {h.at, job_state_name(h.from), job_state_name(h.to), h.reason.str()};
  if (!h.reason.refs().empty()) out.push_back(job_refs_to_json(h.reason.refs()));
  return out;
}
json resize_json(const ResizeEvent& r) {
  json out = {r.at, r.from, r.to, resize_cause_name(r.cause), r.reason.str()};
  if (!r.reason.refs().empty()) out.push_back(job_refs_to_json(r.reason.refs()));
  return out;
}

void put_fields_when_set(json& out, const Job& j) {
  if (j.locality_wait_from) out["locality_wait_from"] = *j.locality_wait_from;
  if (j.plan.valid()) out["plan"] = j.plan.value;
  if (j.attempt_folded != 0) out["attempt_folded"] = j.attempt_folded;
  if (j.time_limit_s != 0) out["time_limit_s"] = j.time_limit_s;
  if (j.time_limit_resets) out["time_limit_resets"] = true;
  if (j.run_before_s != 0) out["run_before_s"] = j.run_before_s;
  if (j.start_timeouts != 0) out["start_timeouts"] = j.start_timeouts;
  if (j.backoff_until != 0) out["backoff_until"] = j.backoff_until;
  // Recovery in place (core/lifecycle/in_place.h): the current run's membership epoch and every recovery.
  if (j.membership_epoch != 0) out["membership_epoch"] = j.membership_epoch;
  if (!j.recoveries.empty()) {
    json list = json::array();
    for (const auto& r : j.recoveries) list.push_back({r.at, r.node, r.epoch, r.replicas});
    out["recoveries"] = std::move(list);
  }
  if (j.remote != RemoteCopy{}) {  // a manager's job in worker clusters (core/lifecycle/remote_copy.h)
    auto ref = [](const RemoteCopyRef& c) { return json{{"worker", c.worker}, {"copy", c.copy}}; };
    json stale = json::array();
    for (const auto& c : j.remote.stale) stale.push_back(ref(c));
    out["remote"] = {{"live", ref(j.remote.live)}, {"last", ref(j.remote.last)}, {"running", j.remote.running},
                     {"dispatches", j.remote.dispatches}, {"stale", std::move(stale)}, {"events_seen", j.remote.events_seen},
                     {"waiting_since", j.remote.waiting_since}};
  }
  if (!j.after.empty()) {  // the IDs spec.after was resolved to at submission (core/model/dependency.h)
    json ids = json::array();
    for (JobId id : j.after) ids.push_back(id.value);
    out["after_ids"] = std::move(ids);
  }
}

// kCompact leaves out each field at the value ClusterRestore::add_job_throwing takes when it is missing: most jobs
// are finished jobs that were never held, resized, preempted or restarted.
json job_to_json(const ClusterState& s, const Job& j, JobEncoding encoding, uint64_t expected_arrival) {
  if (encoding == JobEncoding::kCompact) {
    json out = {{"spec", compact_spec(j.spec)},
                {"submitted_at", j.submitted_at},
                {"state", job_state_name(j.state)},
                {"reason", j.reason.str()},
                {"reason_code", reason_code_name(j.reason_code)}};
    put_refs(out, j);
    json history = json::array();
    for (const auto& h : j.history) history.push_back(history_json(h));
    out["history"] = std::move(history);
    if (j.priority != 0) out["priority"] = j.priority;
    if (j.arrival != expected_arrival) out["arrival"] = j.arrival;
    if (j.waiting_since != j.submitted_at) out["waiting_since"] = j.waiting_since;
    if (!j.feasible) out["feasible"] = false;
    if (!j.placement.pod_sets.empty()) out["placement"] = placement_to_json(placement_names(s, j.placement));
    if (j.borrowing) out["borrowing"] = true;
    if (j.started_at != 0) out["started_at"] = j.started_at;
    if (j.work_done_s != 0) out["work_done_s"] = j.work_done_s;
    if (j.preemptions != 0) out["preemptions"] = j.preemptions;
    if (j.restarts != 0) out["restarts"] = j.restarts;
    if (j.held) out["held"] = true;
    if (j.deleted) out["deleted"] = true;
    if (j.attempt_base != 0) out["attempt_base"] = j.attempt_base;
    if (!j.resizes.empty()) {
      json resizes = json::array();
      for (const auto& r : j.resizes) resizes.push_back(resize_json(r));
      out["resizes"] = std::move(resizes);
    }
    put_fields_when_set(out, j);
    return out;
  }
  json history = json::array();
  for (const auto& h : j.history) history.push_back(history_json(h));
  json resizes = json::array();
  for (const auto& r : j.resizes) resizes.push_back(resize_json(r));
  json out = {{"spec", to_json(j.spec)},
              {"priority", j.priority},
              {"arrival", j.arrival},
              {"submitted_at", j.submitted_at},
              {"waiting_since", j.waiting_since},
              {"state", job_state_name(j.state)},
              {"reason", j.reason.str()},
              {"reason_code", reason_code_name(j.reason_code)},
              {"feasible", j.feasible},
              {"placement", placement_to_json(placement_names(s, j.placement))},
              {"borrowing", j.borrowing},
              {"started_at", j.started_at},
              {"work_done_s", j.work_done_s},
              {"preemptions", j.preemptions},
              {"restarts", j.restarts},
              {"history", std::move(history)},
              {"held", j.held},
              {"deleted", j.deleted},
              {"attempt_base", j.attempt_base},
                  {"resizes", std::move(resizes)}};
  put_refs(out, j);
  put_fields_when_set(out, j);
  return out;
}

}  // namespace

void for_each_job_entry(const ClusterState& s, const std::function<void(const json&)>& f, JobEncoding encoding) {
  // Compacted jobs as runs of IDs, so that a snapshot follows the jobs kept, not every job ever submitted.
  // Iteration skips the table's freed chunks (core/model/job_table.h): the IDs it skips are tombstones too.
  uint64_t next_id = 0;
  uint64_t expected_arrival = 0;  // the previous job entry's arrival + 1, as ClusterRestore expects it
  auto tombstones_up_to = [&](uint64_t id) {
    if (id <= next_id) return;
    f(json{{"compacted", id - next_id}});
    next_id = id;
  };
  for (const Job& j : s.jobs) {
    if (j.compacted) continue;  // part of the run before the next job kept
    tombstones_up_to(j.id.index());
    next_id = j.id.index() + 1;
    f(job_to_json(s, j, encoding, expected_arrival));
    expected_arrival = j.arrival + 1;
  }
  tombstones_up_to(s.jobs.size());
}

json cluster_to_json(const ClusterState& s, bool with_jobs) {
  json teams = json::array();
  for (const Team& t : s.teams) teams.push_back(to_json(t.spec));
  json plans = json::array();
  for (const Plan& p : s.plans)
    plans.push_back({{"spec", to_json(p.spec)}, {"state", plan_state_name(p.state)}, {"deleted", p.deleted}});
  json nodes = json::array();
  for (const Node& n : s.nodes) {
    nodes.push_back({{"spec", to_json(spec_of(n, s.catalog))},
                     {"health", node_health_name(n.health)},
                     {"cordoned", n.cordoned},
                     {"removed", n.removed}});
    if (n.plan.valid()) nodes.back()["plan"] = n.plan.value;
  }
  json jobs = json::array();
  if (with_jobs) for_each_job_entry(s, [&](const json& e) { jobs.push_back(e); });
  json removed_teams = json::array();
  for (const Team& t : s.teams)
    if (t.removed) removed_teams.push_back(t.spec.name);
  json out = {{"levels", s.levels}, {"policy", to_json(s.policy)}, {"teams", std::move(teams)},
          {"nodes", std::move(nodes)}, {"jobs", std::move(jobs)}, {"next_arrival", s.next_arrival},
          {"removed_teams", std::move(removed_teams)}, {"attempts_used", s.attempts_used},
          {"room_changed_at", s.room_changed_at},
          {"compacted", {{"before", s.compacted_before}, {"at", s.compacted_at}, {"jobs", s.compacted_jobs}}}};
  if (s.attempts_folded > 0) out["attempts_folded"] = s.attempts_folded;  // only once attempts_used was folded
  if (!plans.empty()) out["plans"] = std::move(plans);  // only clusters with plans have the key
  if (!s.reservations.empty()) {  // only clusters with reservations have the key
    json reservations = json::array();
    for (const auto& [name, r] : s.reservations) {
      json nodes = json::array();
      for (NodeId n : r.nodes) nodes.push_back(n.value);
      reservations.push_back({{"spec", to_json(r.spec)}, {"state", reservation_state_name(r.state)}, {"nodes", std::move(nodes)}});
    }
    out["reservations"] = std::move(reservations);
  }
  return out;
}

Result<ClusterState> cluster_from_json(const json& j, const Catalog& catalog) {
  auto r = ClusterRestore::begin(j, catalog);
  if (!r) return r.error();
  try {
    for (const auto& entry : j.at("jobs"))
      if (auto st = r->add_job_entry(entry); !st) return st.error();
  } catch (const std::exception& e) {
    return Error::invalid(std::string("malformed: ") + e.what());
  }
  return std::move(*r).finish(j);
}

}  // namespace allot::store
