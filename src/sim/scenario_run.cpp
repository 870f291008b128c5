#include "sim/scenario_run.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "core/lifecycle/in_place.h"
#include "core/model/array.h"
#include "core/model/overloaded.h"
#include "core/model/plans.h"
#include "core/pass/scheduler.h"
#include "core/lifecycle/start_timeout.h"
#include "core/lifecycle/time_limit.h"
#include "sim/completions.h"
#include "sim/scenario_expect.h"

namespace allot::sim {
namespace {

Error at_line(const Event& e, const Error& err) {
  return Error{err.code, "line " + std::to_string(e.line) + " (" + event_kind_name(e.kind) + " at " +
                             std::to_string(e.at) + "): " + err.message};
}

std::string share_text(const Share& s) {
  if (s.den == 0) return "infinite";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", static_cast<double>(s.num) / static_cast<double>(s.den));
  return buf;
}

// One line per group after its admission: the victims by rule, then each team's accelerators, borrowed
// accelerators and share before -> after (the whole record is in `allot sim run --json`).
std::string group_text(const PreemptionGroup& g) {
  std::string out = g.preemptor + " preempted";
  for (size_t i = 0; i < g.victims.size(); ++i)
    out += (i ? ", " : " ") + g.victims[i].job + " of team " + g.victims[i].team + " (" + preemption_rule_name(g.victims[i].rule) +
           (g.victims[i].to > 0 ? ", shrunk from " + std::to_string(g.victims[i].from) + " to " + std::to_string(g.victims[i].to) : "") + ")";
  for (const auto& t : g.teams) {
    int64_t ub = 0, ua = 0, bb = 0, ba = 0;
    for (const auto& f : t.types) {
      ub += f.usage_before.accelerators, ua += f.usage_after.accelerators;
      bb += f.borrowed_before.accelerators, ba += f.borrowed_after.accelerators;
    }
    out += "; team " + t.team + ": accelerators " + std::to_string(ub) + " -> " + std::to_string(ua) + ", borrowed " +
           std::to_string(bb) + " -> " + std::to_string(ba) + ", share " + share_text(t.share_before) + " -> " +
           share_text(t.share_after);
  }
  for (const auto& f : g.groups)  // the cohort groups fair sharing compared (none without groups)
    out += "; group " + f.group + ": share " + share_text(f.share_before) + " -> " + share_text(f.share_after);
  return out;
}

void log_decisions(const ClusterState& s, const ScheduleResult& r, Time now, std::vector<std::string>& log,
                   std::vector<ScenarioReport::Preemption>& preemptions) {
  for (const auto& d : r.decisions) {
    log.push_back("t=" + std::to_string(now) + "  " +
                  std::visit(Overloaded{[](const AdmitDecision&) { return "admit   "; },
                                        [](const PreemptDecision&) { return "preempt "; },
                                        [](const ResizeDecision&) { return "resize  "; }},
                             d) +
                  s.jobs[decision_job(d).index()].spec.name + ": " +
                  std::visit([](const auto& x) -> const std::string& { return x.reason.str(); }, d));
    // A group's admission follows its victims' preemptions: the group's record is logged after it.
    // The victims may be preempted or shrunk (a shrink is a resize with the group's record).
    const PreemptionRecord* record = nullptr;
    if (&d != r.decisions.data())
      std::visit(Overloaded{[&](const PreemptDecision& v) { record = v.record.get(); },
                            [&](const ResizeDecision& v) { record = v.record.get(); }, [](const AdmitDecision&) {}},
                 *(&d - 1));
    if (std::holds_alternative<AdmitDecision>(d) && record && record->preemptor == decision_job(d)) {
      preemptions.push_back({now, named(s, *record)});
      log.push_back("t=" + std::to_string(now) + "  record  " + group_text(preemptions.back().group));
    }
  }
  // Jobs the pass ended because a dependency can never hold (core/model/dependency.h), after its decisions.
  for (const DependencyEnd& e : r.dependency_ends)
    log.push_back("t=" + std::to_string(now) + "  cancel  " + s.jobs[e.job.index()].spec.name + ": " +
                  s.jobs[e.job.index()].reason.str());
}

}  // namespace

Status apply_event(ClusterState& s, const Event& e, std::vector<std::string>& log, std::vector<std::string>& warnings) {
  const std::string t = "t=" + std::to_string(e.at) + "  ";
  // An event whose job or node is not in a state it applies to (a finish of a pending job, a recovery of a
  // healthy node) is ignored with a warning: the scenario goes on, and the warning says what was skipped.
  auto ignore = [&](const std::string& why) {
    log.push_back(t + "ignored " + event_kind_name(e.kind) + " " + e.target + ": " + why);
    warnings.push_back("line " + std::to_string(e.line) + " (" + event_kind_name(e.kind) + " at " + std::to_string(e.at) +
                       "): " + why + "; the event is ignored");
    return ok_status();
  };
  auto on_job = [&](Status st) {
    if (!st && st.error().code == ErrorCode::kFailedPrecondition) return ignore(st.error().message);
    return st;
  };
  switch (e.kind) {
    case EventKind::kSubmit: {
      if (e.submit.array) {  // a job array (core/model/array.h): its tasks, all or none
        auto ids = submit_array(s, e.submit, e.at);
        if (!ids) return ids.error();
        log.push_back(t + "submit  " + e.submit.name + " (team " + e.submit.team +
                      (e.submit.priority.empty() ? "" : ", priority " + e.submit.priority) + ", array of " +
                      std::to_string(e.submit.array->count) + " tasks, parallel " + std::to_string(e.submit.array->parallel) + ")");
        return ok_status();
      }
      auto id = submit_job(s, e.submit, e.at);
      if (!id) return id.error();
      log.push_back(t + "submit  " + e.submit.name + " (team " + e.submit.team +
                    (e.submit.priority.empty() ? "" : ", priority " + e.submit.priority) + ")");
      return ok_status();
    }
    case EventKind::kCancel:
      log.push_back(t + "cancel  " + e.target);
      return on_job(cancel_job(s, e.target, e.at));
    case EventKind::kFinish:
      log.push_back(t + "finish  " + e.target);
      return on_job(finish_job(s, e.target, e.at, true));
    case EventKind::kFail:
      log.push_back(t + "fail    " + e.target);
      return on_job(finish_job(s, e.target, e.at, false, "the job's process failed"));
    case EventKind::kFailNode:
      log.push_back(t + "node    " + e.target + " failed");
      if (const Node* n = s.find_node(e.target); n && n->health == NodeHealth::kUnschedulablePendingReplacement)
        return ignore("node " + e.target + " has already failed (" + node_health_name(n->health) + ")");
      return fail_node_in_place(s, e.target, e.at, NodeHealth::kUnschedulablePendingReplacement);
    case EventKind::kRecoverNode:
      log.push_back(t + "node    " + e.target + " recovered");
      if (const Node* n = s.find_node(e.target); n && n->health == NodeHealth::kSchedulable)
        return ignore("node " + e.target + " is healthy (Schedulable)");
      return set_node_health(s, e.target, NodeHealth::kSchedulable, e.at);
    case EventKind::kAddNodes: {
      // One batch, so the topology tree is built once however many nodes join (issue 33: one node at a time
      // cost the square of their number).
      if (auto st = add_nodes(s, e.nodes, e.at); !st) return st;
      for (const auto& n : e.nodes) log.push_back(t + "node    " + n.name + " joined");
      return ok_status();
    }
    case EventKind::kRemoveNodes:
      for (const auto& n : e.nodes) {
        auto st = remove_node(s, n.name, e.at);
        if (!st) return st;
        log.push_back(t + "node    " + n.name + " left");
      }
      return ok_status();
    case EventKind::kPlanDelete: {
      auto out = delete_plan(s, e.target, e.at);
      if (!out) return out.error();
      log.push_back(t + "plan    " + e.target + " deleted (" + std::to_string(out->suspended.size()) + " jobs suspended, " +
                    std::to_string(out->nodes_left.size()) + " nodes left)");
      return ok_status();
    }
    case EventKind::kStartTimeout: {
      // What the server decides when a replica does not start in time (it alone hears the agents): the job is
      // requeued without a retry and backs off by the policy (core/lifecycle/start_timeout.h).
      const Job* j = s.find_job(e.target);
      const int64_t backoff = j ? next_start_backoff_s(s.policy, *j) : start_backoff_s(s.policy, 1);
      log.push_back(t + "start   " + e.target + " timed out; backoff " + std::to_string(backoff) + " s");
      return on_job(time_out_start(s, e.target, e.at, backoff, "a replica did not start in time (scenario event)"));
    }
    case EventKind::kLogRule:
      // What the server does when an agent reports that a rule on the job's output fired (core/lifecycle/log_rules.h).
      log.push_back(t + "logrule " + e.target + " " + log_rule_kind_name(e.log_rule.kind) + " (" +
                    log_rule_name(e.log_rule.kind, e.log_rule.index) + ", rank " + std::to_string(e.log_rule.rank) + ")");
      return on_job(fire_log_rule(s, e.target, e.at, e.log_rule));
    case EventKind::kExpect:
      return ok_status();
  }
  return ok_status();
}

Status apply_due_plan_steps(ClusterState& s, Time now, std::vector<std::string>& log) {
  while (auto step = next_plan_step(s)) {
    if (step->at > now) break;
    const std::string name = s.plans[step->plan.index()].spec.name;
    auto out = apply_plan_step(s, step->plan, step->to, now);
    if (!out) return Error::internal("plan " + name + ": " + out.error().message);
    const std::string t = "t=" + std::to_string(now) + "  plan    " + name + " ";
    log.push_back(t + plan_state_name(step->to));
    for (JobId id : out->suspended) log.push_back(t + "ends: " + s.jobs[id.index()].spec.name + " checkpointed and requeued");
    for (const auto& n : out->nodes_left) log.push_back(t + "ends: node " + n + " left");
    if (step->to == PlanState::kActive) {
      // In a scenario the plan's nodes join as it starts (the server waits for their agents instead).
      const std::vector<NodeSpec> nodes = plan_node_specs(s, s.plans[step->plan.index()]);
      if (auto st = add_nodes(s, nodes, now); !st) return Error::invalid("plan " + name + ": its nodes cannot join: " + st.error().message);
      for (const auto& n : nodes) log.push_back(t + "starts: node " + n.name + " joined");
    }
  }
  return ok_status();
}

Status apply_due_reservation_steps(ClusterState& s, Time now, std::vector<std::string>& log) {
  while (auto step = next_reservation_step(s)) {
    if (step->at > now) break;
    auto out = apply_reservation_step(s, step->name, step->to, now);
    if (!out) return Error::internal("reservation " + step->name + ": " + out.error().message);
    const std::string t = "t=" + std::to_string(now) + "  reserve " + step->name + " ";
    std::string nodes;
    for (const auto& n : out->nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    log.push_back(t + reservation_state_name(step->to) + (nodes.empty() ? "" : " (nodes " + nodes + ")"));
    for (JobId id : out->preempted) log.push_back(t + "starts: " + s.jobs[id.index()].spec.name + " checkpointed and requeued");
  }
  return ok_status();
}

Result<ClusterState> cluster_from_scenario(const Scenario& sc) {
  Catalog catalog = Catalog::builtin();
  for (const auto& t : sc.instance_types) {
    auto id = catalog.put(t);  // scenario_parse checked the entries (a built-in replaced only when stated)
    if (!id) return Error::invalid("instance_types: " + id.error().message);
  }
  ClusterState s(std::move(catalog), sc.topology_levels);
  if (auto st = set_policy(s, sc.policy); !st) return Error::invalid("policy: " + st.error().message);
  if (auto st = add_nodes(s, sc.nodes, 0); !st) return Error::invalid("cluster.nodes: " + st.error().message);
  for (const auto& t : sc.teams)
    if (auto st = upsert_team(s, t); !st) return Error::invalid("teams: " + st.error().message);
  for (const auto& p : sc.plans)
    if (auto st = add_plan(s, p); !st) return Error::invalid("plans: " + st.error().message);
  for (const auto& r : sc.reservations)
    if (auto st = add_reservation(s, r); !st) return Error::invalid("reservations: " + st.error().message);
  return s;
}

Result<ScenarioReport> run_scenario(const Scenario& sc) {
  ScenarioReport rep;
  auto built = cluster_from_scenario(sc);
  if (!built) return built.error();
  ClusterState s = std::move(*built);
  FitCache fits;  // what the passes on `s` remember of job shapes (core/placement/fit_cache.h)

  size_t next = 0;
  Time now = 0;
  std::optional<Time> wakeup;
  while (true) {
    std::optional<Time> t;
    auto consider = [&](std::optional<Time> x) {
      if (x && (!t || *x < *t)) t = x;
    };
    if (next < sc.events.size()) consider(sc.events[next].at);
    else break;  // the scenario ends with its last event
    consider(next_completion(s, now));
    consider(next_time_limit(s));
    consider(wakeup);
    if (auto step = next_plan_step(s)) consider(step->at);
    if (auto step = next_reservation_step(s)) consider(step->at);
    now = *t;
    // Work that completes by now ends first, in completion order, then the events of this instant.
    for (JobId id : completed_by(s, now)) {
      const std::string name = s.jobs[id.index()].spec.name;
      rep.log.push_back("t=" + std::to_string(now) + "  done    " + name);
      if (auto st = finish_job(s, name, now, true, "finished its work"); !st)
        return Error::internal("finishing " + name + ": " + st.error().message);
    }
    // Then the running jobs that reached their wall-time limit (a job whose work completes at the same second
    // finished above, within its limit).
    for (JobId id : past_time_limit(s, now)) {
      const std::string name = s.jobs[id.index()].spec.name;
      rep.log.push_back("t=" + std::to_string(now) + "  limit   " + name + " reached its time limit of " +
                        std::to_string(s.jobs[id.index()].time_limit_s) + " s: Failed (deadline_exceeded)");
      if (auto st = exceed_time_limit(s, name, now); !st) return Error::internal("ending " + name + ": " + st.error().message);
    }
    // Then the plans' steps that are due (a plan starting, ending, expiring), then the events of this instant.
    if (auto st = apply_due_plan_steps(s, now, rep.log); !st) return st.error();
    // Then the reservations' (one starting requeues other teams' jobs from its nodes, one ending frees them).
    if (auto st = apply_due_reservation_steps(s, now, rep.log); !st) return st.error();
    std::vector<const Event*> expects;
    while (next < sc.events.size() && sc.events[next].at == now) {
      const Event& e = sc.events[next++];
      if (e.kind == EventKind::kExpect) {
        expects.push_back(&e);
        continue;
      }
      if (auto st = apply_event(s, e, rep.log, rep.warnings); !st) return at_line(e, st.error());
    }
    ScheduleResult r = schedule(s, now, ScheduleOptions{.fit_cache = &fits});
    log_decisions(s, r, now, rep.log, rep.preemptions);
    if (r.bound_hit) {
      rep.log.push_back("t=" + std::to_string(now) + "  error   " + r.bound_hit->message);
      rep.warnings.push_back("t=" + std::to_string(now) + ": " + r.bound_hit->message);
    }
    wakeup = r.next_wakeup;
    // A job ended for a dependency may be what another job waits for (`after: ended`): pass again at this instant.
    if (!r.dependency_ends.empty()) wakeup = now;
    for (const Event* e : expects) {
      size_t before = rep.failures.size();
      rep.checks += check_expect(s, *e, rep.failures);
      rep.log.push_back("t=" + std::to_string(now) + "  expect  line " + std::to_string(e->line) + ": " +
                        (rep.failures.size() == before ? "ok" : "FAILED"));
    }
  }
  rep.passed = rep.failures.empty();
  rep.end_time = now;
  rep.final_state = std::move(s);
  return rep;
}

}  // namespace allot::sim
