#include "store/replay.h"

#include "core/drain.h"
#include "core/overloaded.h"

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
  Status operator()(const RemoveNode& o) const { return remove_node(s, o.node, at); }
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
    return apply_decision(s, PreemptDecision{.job = *id, .preemptor = by ? by->id : JobId{}, .reason = o.reason}, at);
  }
  // Tokens and the audit trail are the server's; the cluster does not change.
  Status operator()(const CreateToken&) const { return ok_status(); }
  Status operator()(const RevokeToken&) const { return ok_status(); }
  Status operator()(const Audit&) const { return ok_status(); }
};

}  // namespace

Status apply_record(ClusterState& s, const Record& r) { return std::visit(Apply{s, r.at}, r.op); }

Result<Placement> placement_from_record(const ClusterState& s, const std::vector<PodSetRecord>& placement) {
  Placement p;
  for (const auto& ps : placement) {
    auto type = s.catalog.lookup(ps.instance_type);
    if (!type) return type.error();
    PodSetPlacement out{*type, ps.per_replica, {}};
    for (const auto& r : ps.replicas) {
      const Node* n = s.find_node(r.node);
      if (!n) return Error::not_found("admission names node " + r.node + ", which is not in the cluster");
      out.replicas.push_back({n->id, r.accelerators, r.numa_domains, r.cpus});
    }
    p.pod_sets.push_back(std::move(out));
  }
  return p;
}

Op decision_record(const ClusterState& s, const Decision& d) {
  return std::visit(
      Overloaded{
          [&](const AdmitDecision& d) -> Op {
            Admit a{s.jobs[d.job.index()].spec.name, {}, d.borrowing, d.reason};
            for (const auto& ps : d.placement.pod_sets) {
              PodSetRecord out{s.catalog.at(ps.type).name, ps.per_replica, {}};
              for (const auto& r : ps.replicas)
                out.replicas.push_back({s.nodes[r.node.index()].name, r.accelerators, r.numa_domains, r.cpus});
              a.placement.push_back(std::move(out));
            }
            return a;
          },
          [&](const PreemptDecision& d) -> Op {
            std::string preemptor = d.preemptor.valid() ? s.jobs[d.preemptor.index()].spec.name : "";
            return Preempt{s.jobs[d.job.index()].spec.name, preemptor, d.reason};
          },
      },
      d);
}

}  // namespace allot::store
