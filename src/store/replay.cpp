#include "store/replay.h"

#include <unordered_map>

#include "core/model/dependency.h"
#include "core/lifecycle/drain.h"
#include "core/lifecycle/in_place.h"
#include "core/model/overloaded.h"
#include "core/model/plans.h"

namespace allot::store {

namespace {

Result<JobId> job_id(const ClusterState& s, const std::string& name) {
  const Job* j = s.find_job(name);
  if (!j) return Error::not_found("no job named " + name);
  return j->id;
}

struct Apply {
  ClusterState& s;
  Time at;
  Status operator()(const SetPolicy& o) const { return set_policy(s, o.policy); }
  Status operator()(const UpsertTeam& o) const { return upsert_team(s, o.team); }
  Status operator()(const RemoveTeam& o) const { return remove_team(s, o.team); }
  Status operator()(const AddNode& o) const { return add_node(s, o.node, at); }
  Status operator()(const RemoveNode& o) const { return remove_node(s, o.node, at, o.cause); }
  Status operator()(const NodeHealthChange& o) const { return set_node_health(s, o.node, o.health, at); }
  Status operator()(const Cordon& o) const { return set_cordon(s, o.node, o.cordoned); }
  Status operator()(const Drain& o) const {
    auto r = drain_node(s, o.node, at);
    if (!r) return r.error();
    return ok_status();
  }
  Status operator()(const Submit& o) const {
    auto r = submit_job(s, o.job, at);
    if (!r) return r.error();
    return ok_status();
  }
  Status operator()(const Cancel& o) const { return cancel_job(s, o.job, at); }
  Status operator()(const Finish& o) const { return finish_job(s, o.job, at, o.succeeded, o.reason); }
  Status operator()(const Admit& o) const {
    auto id = job_id(s, o.job);
    if (!id) return id.error();
    auto p = placement_from_record(s, o.placement);
    if (!p) return p.error();
    return apply_decision(s, AdmitDecision{.job = *id, .placement = std::move(*p), .borrowing = o.borrowing, .reason = o.reason}, at);
  }
  Status operator()(const Preempt& o) const {
    auto id = job_id(s, o.job);
    if (!id) return id.error();
    // Records written before preemptors were named, or whose preemptor is gone, name none.
    const Job* by = o.preemptor.empty() ? nullptr : s.find_job(o.preemptor);
    PreemptDecision d{.job = *id,
                      .preemptor = by ? by->id : JobId{},
                      .rule = o.rule.value_or(PreemptionRule::kReclaim),  // none recorded: not read on replay
                      .reason = o.reason,
                      .record = nullptr};
    return apply_decision(s, d, at);
  }
  Status operator()(const Requeue& o) const {
    auto id = job_id(s, o.job);
    if (!id) return id.error();
    switch (o.cause) {
      case RequeueCause::kRendezvousPort: return preempt_job(s, *id, at, o.reason, ReasonCode::kRendezvousPort);
      case RequeueCause::kServerDeaf: return preempt_job(s, *id, at, o.reason, ReasonCode::kNodeFailed);
    }
    return Error::invalid("requeue of job " + o.job + ": unknown cause");
  }
  Status operator()(const TimeLimitExceeded& o) const { return exceed_time_limit(s, o.job, at); }
  Status operator()(const LocalityWaitBegan& o) const {
    auto id = job_id(s, o.job);
    if (!id) return id.error();
    return start_locality_wait(s, *id, at);
  }
  Status operator()(const StartTimeout& o) const { return time_out_start(s, o.job, at, o.backoff_s, o.reason); }
  Status operator()(const LogRuleFired& o) const { return fire_log_rule(s, o.job, at, o.firing); }
  Status operator()(const DependencyNeverHolds& o) const { return end_for_dependency(s, o.job, o.after, at); }
  Status operator()(const SetNetworkLayers& o) const { return set_network_layers(s, o.nodes); }
  Status operator()(const Resize& o) const {
    auto id = job_id(s, o.job);
    if (!id) return id.error();
    const Job& j = s.jobs[id->index()];
    if (j.state != JobState::kRunning) return Error::precondition("resize of job " + o.job + ", which is not running");
    // The new placement is checked against the room the job leaves behind: a resize restarts every replica.
    auto p = placement_from_record(s, o.placement, &j);
    if (!p) return p.error();
    ResizeCause cause;
    if (o.cause == resize_cause_name(ResizeCause::kGrow)) cause = ResizeCause::kGrow;
    else if (o.cause == resize_cause_name(ResizeCause::kShrink)) cause = ResizeCause::kShrink;
    else return Error::invalid("resize of job " + o.job + ": unknown cause '" + o.cause + "' (grow or shrink)");
    const Job* by = o.for_job.empty() ? nullptr : s.find_job(o.for_job);
    return apply_decision(s, ResizeDecision{.job = *id, .placement = std::move(*p), .borrowing = o.borrowing, .from = o.from,
                                            .to = o.to, .cause = cause, .for_job = by ? by->id : JobId{},
                                            .rule = o.rule.value_or(PreemptionRule::kReclaim), .reason = o.reason,
                                            .record = nullptr},
                          at);
  }
  // Tokens and the audit trail are the server's; the cluster does not change.
  Status operator()(const CreateToken&) const { return ok_status(); }
  Status operator()(const RevokeToken&) const { return ok_status(); }
  Status operator()(const CreateWebhook&) const { return ok_status(); }  // the server's table (server_state.h)
  Status operator()(const DeleteWebhook&) const { return ok_status(); }
  // Admission checks are the server's table (server_state.h); an answer changes the cluster when it stops the run.
  Status operator()(const PutAdmissionCheck&) const { return ok_status(); }
  Status operator()(const DeleteAdmissionCheck&) const { return ok_status(); }
  Status operator()(const AdmissionCheckAnswered& o) const {
    switch (o.answer) {
      case CheckAnswer::kReady: return ok_status();
      case CheckAnswer::kRetry: return requeue_for_admission_check(s, o.job, at, o.backoff_s, o.check, o.message);
      case CheckAnswer::kReject: return reject_by_admission_check(s, o.job, at, o.check, o.message);
    }
    return ok_status();
  }
  Status operator()(const Audit&) const { return ok_status(); }
  Status operator()(const RemoteCopyStep& o) const {
    return step_remote_copy(s, o.job, o.step, RemoteCopyRef{o.worker, o.copy}, o.reason, at, o.worker_seq);
  }
  Status operator()(const HoldJob& o) const { return set_job_held(s, o.job, o.held, at); }
  Status operator()(const SetJobPriority& o) const { return set_job_priority(s, o.job, o.priority, at); }
  Status operator()(const DeleteJob& o) const { return delete_job(s, o.job); }
  Status operator()(const CreatePlan& o) const { return add_plan(s, o.plan); }
  Status operator()(const PlanStepRecord& o) const {
    const Plan* p = s.find_plan(o.plan);
    if (!p) return Error::not_found("no plan named " + o.plan);
    auto to = parse_plan_state(o.state);
    if (!to) return Error::invalid("plan " + o.plan + ": unknown state '" + o.state + "'");
    auto r = apply_plan_step(s, p->id, *to, at);
    if (!r) return r.error();
    return ok_status();
  }
  Status operator()(const DeletePlan& o) const {
    auto r = delete_plan(s, o.plan, at);
    if (!r) return r.error();
    return ok_status();
  }
  Status operator()(const CreateReservation& o) const { return add_reservation(s, o.reservation); }
  Status operator()(const ReservationStepRecord& o) const {
    auto to = parse_reservation_state(o.state);
    if (!to) return Error::invalid("reservation " + o.reservation + ": unknown state '" + o.state + "'");
    auto r = apply_reservation_step(s, o.reservation, *to, at);
    return r ? ok_status() : Status(r.error());
  }
  Status operator()(const DeleteReservation& o) const {
    auto r = delete_reservation(s, o.reservation);
    return r ? ok_status() : Status(r.error());
  }
  Status operator()(const RecoverInPlace& o) const {
    auto id = job_id(s, o.job);
    if (!id) return id.error();
    const Node* failed = s.find_node(o.node);
    if (!failed) return Error::not_found("recover_in_place of job " + o.job + " names node " + o.node + ", which is not in the cluster");
    InPlaceRecovery r{.job = *id, .failed = failed->id, .moves = {}};
    for (const auto& m : o.moves) {
      const Node* to = s.find_node(m.to.node);
      if (!to) return Error::not_found("recover_in_place of job " + o.job + " names node " + m.to.node + ", which is not in the cluster");
      if (m.pod_set < 0 || m.index < 0) return Error::invalid("recover_in_place of job " + o.job + " names a negative replica");
      r.moves.push_back({.pod_set = static_cast<size_t>(m.pod_set), .index = static_cast<size_t>(m.index),
                         .to = ReplicaBinding{to->id, m.to.accelerators, m.to.numa_domains, m.to.cpus}});
    }
    // Checked before it is applied, so that a record out of step with the state changes nothing.
    if (s.jobs[id->index()].membership_epoch + 1 != o.epoch)
      return Error::invalid("recover_in_place of job " + o.job + " says epoch " + std::to_string(o.epoch) + ", replay is at " +
                            std::to_string(s.jobs[id->index()].membership_epoch));
    return recover_in_place(s, r, at);
  }
  Status operator()(const InPlaceFallback& o) const { return fall_back_from_in_place(s, o.job, at, o.reason); }
  Status operator()(const CompactFinished& o) const {
    auto compacted = compact_finished(s, o.finished_before, at);
    return compacted ? ok_status() : Status(compacted.error());
  }
};

}  // namespace

Status apply_record(ClusterState& s, const Record& r) { return std::visit(Apply{s, r.at}, r.op); }

// The journal is read as untrusted input (a damaged disk, a hand-edited database, a bug of another version): an
// admission is checked against the state before it is applied, so that a bad one is an error and never indexes
// past a table or shifts a bit out of a 64-bit mask. What a valid journal holds always passes: the scheduler made
// each admission against the same state that replay rebuilds.
Result<Placement> placement_from_record(const ClusterState& s, const std::vector<PodSetRecord>& placement, const Job* leaving) {
  Placement p;
  // What this admission's earlier replicas already take on each node (by node index).
  std::unordered_map<uint32_t, NodeRoom> taken;
  for (const auto& ps : placement) {
    auto type = s.catalog.lookup(ps.instance_type);
    if (!type) return type.error();
    const InstanceType& it = s.catalog.at(*type);
    if (ps.per_replica.accelerators < 0 || ps.per_replica.vcpu_milli < 0 || ps.per_replica.memory_mib < 0)
      return Error::invalid("admission asks for a negative amount per replica (" + format_resources(ps.per_replica) + ")");
    PodSetPlacement out{*type, ps.per_replica, {}};
    for (const auto& r : ps.replicas) {
      const Node* n = s.find_node(r.node);
      if (!n) return Error::not_found("admission names node " + r.node + ", which is not in the cluster");
      if (n->removed) return Error::invalid("admission places a replica on node " + r.node + ", which was removed");
      if (n->type != *type)
        return Error::invalid("admission places a replica of instance type " + it.name + " on node " + r.node + ", which is " +
                              s.catalog.at(n->type).name);
      NodeRoom room = s.room[n->id.index()];
      if (leaving)
        for (const auto& held : leaving->placement.pod_sets)
          for (const auto& hr : held.replicas)
            if (hr.node == n->id) {
              room.free += held.per_replica;
              for (int a : hr.accelerators) room.accelerators_free |= uint64_t{1} << a;
            }
      NodeRoom& mine = taken[n->id.index()];
      for (int a : r.accelerators) {
        if (a < 0 || a >= it.accelerators || a >= 64)
          return Error::invalid("admission binds accelerator " + std::to_string(a) + " of node " + r.node + ", which has " +
                                std::to_string(it.accelerators) + (it.accelerators ? " (0.." + std::to_string(it.accelerators - 1) + ")" : ""));
        const uint64_t bit = uint64_t{1} << a;
        if (!(room.accelerators_free & bit) || (mine.accelerators_free & bit))
          return Error::invalid("admission binds accelerator " + std::to_string(a) + " of node " + r.node +
                                ", which another replica holds");
        mine.accelerators_free |= bit;
      }
      for (int d : r.numa_domains)
        if (d < 0 || d >= static_cast<int>(it.numa.size()))
          return Error::invalid("admission binds NUMA domain " + std::to_string(d) + " of node " + r.node + ", which has " +
                                std::to_string(it.numa.size()));
      mine.free += ps.per_replica;
      if (!mine.free.fits_in(room.free))
        return Error::invalid("admission needs " + format_resources(mine.free) + " on node " + r.node + ", which has " +
                              format_resources(room.free) + " free");
      out.replicas.push_back({n->id, r.accelerators, r.numa_domains, r.cpus});
    }
    p.pod_sets.push_back(std::move(out));
  }
  return p;
}

static std::vector<PodSetRecord> placement_records(const ClusterState& s, const Placement& p) {
  std::vector<PodSetRecord> records;
  for (const auto& ps : p.pod_sets) {
    PodSetRecord out{s.catalog.at(ps.type).name, ps.per_replica, {}};
    for (const auto& r : ps.replicas)
      out.replicas.push_back({s.nodes[r.node.index()].name, r.accelerators, r.numa_domains, r.cpus});
    records.push_back(std::move(out));
  }
  return records;
}

Op decision_record(const ClusterState& s, const Decision& d) {
  return std::visit(
      Overloaded{
          [&](const AdmitDecision& d) -> Op {
            return Admit{s.jobs[d.job.index()].spec.name, placement_records(s, d.placement), d.borrowing, d.reason};
          },
          [&](const PreemptDecision& d) -> Op {
            std::string preemptor = d.preemptor.valid() ? s.jobs[d.preemptor.index()].spec.name : "";
            Preempt p{s.jobs[d.job.index()].spec.name, preemptor, d.reason, d.rule, std::nullopt};
            if (d.record) p.group = named(s, *d.record);
            return p;
          },
          [&](const ResizeDecision& d) -> Op {
            std::string for_job = d.for_job.valid() ? s.jobs[d.for_job.index()].spec.name : "";
            Resize r{s.jobs[d.job.index()].spec.name, placement_records(s, d.placement), d.borrowing, d.from, d.to,
                     resize_cause_name(d.cause), for_job, d.reason, std::nullopt, std::nullopt};
            if (d.cause == ResizeCause::kShrink) r.rule = d.rule;
            if (d.record) r.group = named(s, *d.record);
            return r;
          },
      },
      d);
}

}  // namespace allot::store
