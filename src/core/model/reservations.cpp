#include "core/model/reservations.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/model/hostlist.h"
#include "core/model/state.h"

namespace allot {
namespace {

ReservationState next_reservation_state(ReservationState s) {
  switch (s) {
    case ReservationState::kScheduled: return ReservationState::kActive;
    case ReservationState::kActive:
    case ReservationState::kExpired: return ReservationState::kExpired;
  }
  return ReservationState::kExpired;
}

bool periods_overlap(const ReservationSpec& a, const ReservationSpec& b) { return a.start < b.end && b.start < a.end; }

// Whether reservation `r` holds or will hold the node named `name` (named nodes, or an Active amount's choice).
bool holds_name(const ClusterState& s, const Reservation& r, const std::string& name) {
  if (std::find(r.spec.nodes.begin(), r.spec.nodes.end(), name) != r.spec.nodes.end()) return true;
  for (NodeId n : r.nodes)
    if (s.nodes[n.index()].name == name) return true;
  return false;
}

std::string period_text(const ReservationSpec& r) {
  return std::to_string(r.start) + ".." + std::to_string(r.end);
}

// The jobs running on `nodes` that `r` does not admit, in ID order.
std::vector<JobId> jobs_to_requeue(const ClusterState& s, const Reservation& r, const std::vector<NodeId>& nodes) {
  std::vector<JobId> out;
  for (JobId id : s.running_jobs.sorted()) {
    const Job& j = s.jobs[id.index()];
    if (reservation_admits(r, j)) continue;
    for (NodeId n : j.placement.nodes())
      if (std::find(nodes.begin(), nodes.end(), n) != nodes.end()) {
        out.push_back(id);
        break;
      }
  }
  return out;
}

}  // namespace

const char* reservation_state_name(ReservationState s) {
  switch (s) {
    case ReservationState::kScheduled: return "Scheduled";
    case ReservationState::kActive: return "Active";
    case ReservationState::kExpired: return "Expired";
  }
  return "?";
}

std::optional<ReservationState> parse_reservation_state(std::string_view s) {
  for (ReservationState st : {ReservationState::kScheduled, ReservationState::kActive, ReservationState::kExpired})
    if (s == reservation_state_name(st)) return st;
  return std::nullopt;
}

std::string reservation_names(const ClusterState& s) {
  if (s.reservations.empty()) return "(none)";
  std::string out;
  for (const auto& [name, r] : s.reservations) out += (out.empty() ? "" : ", ") + name;
  return out;
}

Status add_reservation(ClusterState& s, const ReservationSpec& spec) {
  if (auto st = check_name(NameKind::kReservation, spec.name); !st) return st;
  const std::string where = "reservation " + spec.name;
  if (s.reservations.count(spec.name)) return Error::exists(where + " already exists; delete it first or choose another name");
  const Team* team = s.find_team(spec.team);
  if (!team) return Error::invalid(where + ": team: unknown team '" + spec.team + "'; teams: " + s.team_names());
  if (spec.start < 0 || spec.end <= spec.start)
    return Error::invalid(where + ": end (" + std::to_string(spec.end) + ") must come after start (" +
                          std::to_string(spec.start) + "), and start must not be negative");
  std::optional<TypeId> type;
  if (!spec.instance_type.empty()) {
    auto t = s.catalog.lookup(spec.instance_type);
    if (!t) return Error::invalid(where + ": instance_type: " + t.error().message);
    type = *t;
  }
  Reservation r;
  r.spec = spec;
  r.team = team->id;
  if (spec.nodes.empty() == (spec.count == 0))
    return Error::invalid(where + ": give either nodes (named nodes, a host list such as gpu-[1-4]) or count with "
                                  "instance_type (an amount of one type), not both and not neither");
  if (!spec.nodes.empty()) {
    std::set<std::string> seen;
    for (const std::string& name : spec.nodes) {
      if (!seen.insert(name).second) return Error::invalid(where + ": nodes: node " + name + " is named twice");
      const Node* n = s.find_node(name);
      if (!n || n->removed)
        return Error::invalid(where + ": nodes: unknown node '" + name + "'; a reservation holds nodes that are in the "
                              "cluster (allot nodes lists them)");
      if (type && n->type != *type)
        return Error::invalid(where + ": nodes: node " + name + " is of type " + s.catalog.at(n->type).name +
                              ", not " + spec.instance_type + "; name nodes of that type only, or leave instance_type out");
      if (n->plan.valid())
        return Error::invalid(where + ": nodes: node " + name + " belongs to capacity plan " +
                              s.plans[n->plan.index()].spec.name + "; reserve the cluster's own nodes only");
      r.nodes.push_back(n->id);
    }
    for (const auto& [other_name, other] : s.reservations) {
      if (!periods_overlap(spec, other.spec)) continue;
      for (const std::string& name : spec.nodes)
        if (holds_name(s, other, name))
          return Error::precondition(where + ": node " + name + " is held by reservation " + other_name + " (team " +
                                     other.spec.team + ", " + period_text(other.spec) + ") whose period overlaps " +
                                     period_text(spec) + "; a node is in one reservation at a time");
    }
  } else {
    if (!type) return Error::invalid(where + ": count needs instance_type (the type of the nodes to reserve)");
    int of_type = 0;
    for (const Node& n : s.nodes) of_type += !n.removed && !n.plan.valid() && n.type == *type;
    if (spec.count < 0 || spec.count > of_type)
      return Error::invalid(where + ": count must be 1.." + std::to_string(of_type) + " (the " + spec.instance_type +
                            " nodes in the cluster), got " + std::to_string(spec.count));
  }
  if (!spec.user.empty() && spec.user.size() > kMaxSubdomainName)
    return Error::invalid(where + ": user is longer than " + std::to_string(kMaxSubdomainName) + " characters");
  s.reservations.emplace(spec.name, std::move(r));
  return ok_status();
}

std::optional<ReservationStep> next_reservation_step(const ClusterState& s) {
  std::optional<ReservationStep> best;
  for (const auto& [name, r] : s.reservations) {  // by name: ties go to the first name
    const ReservationState to = next_reservation_state(r.state);
    const Time at = to == ReservationState::kActive ? r.spec.start : r.spec.end;
    if (!best || at < best->at) best = ReservationStep{name, to, at};
  }
  return best;
}

bool reservation_admits(const Reservation& r, const Job& job) {
  return job.team == r.team && (r.spec.user.empty() || job.spec.user == r.spec.user);
}

const Reservation* reservation_holding(const ClusterState& s, NodeId node) {
  for (const auto& [name, r] : s.reservations)
    if (r.state == ReservationState::kActive && std::find(r.nodes.begin(), r.nodes.end(), node) != r.nodes.end()) return &r;
  return nullptr;
}

bool reserved_against(const ClusterState& s, const Job& job) {
  if (!job.spec.reservation.empty()) return true;
  for (const auto& [name, r] : s.reservations)
    if (r.state == ReservationState::kActive && !r.nodes.empty() && !reservation_admits(r, job)) return true;
  return false;
}

bool user_reservation_for(const ClusterState& s, TeamId team) {
  for (const auto& [name, r] : s.reservations)
    if (r.state == ReservationState::kActive && r.team == team && !r.spec.user.empty()) return true;
  return false;
}

void close_reserved_nodes(const ClusterState& s, const Job& job, std::vector<NodeRoom>& room) {
  if (!job.spec.reservation.empty()) {  // its reservation's nodes only (named_reservation_gate: it is Active)
    auto it = s.reservations.find(job.spec.reservation);
    std::vector<bool> open(room.size(), false);
    if (it != s.reservations.end() && it->second.state == ReservationState::kActive)
      for (NodeId n : it->second.nodes)
        if (n.index() < open.size()) open[n.index()] = true;
    for (size_t i = 0; i < room.size(); ++i)
      if (!open[i]) room[i].usable = false;
    return;
  }
  for (const auto& [name, r] : s.reservations) {
    if (r.state != ReservationState::kActive || reservation_admits(r, job)) continue;
    for (NodeId n : r.nodes)
      if (n.index() < room.size()) room[n.index()].usable = false;
  }
}

Status check_named_reservation(const ClusterState& s, const JobSpec& spec, TeamId team) {
  if (spec.reservation.empty()) return ok_status();
  auto it = s.reservations.find(spec.reservation);
  if (it == s.reservations.end())
    return Error::invalid("job " + spec.name + ": unknown reservation '" + spec.reservation + "'; reservations: " + reservation_names(s));
  const Reservation& r = it->second;
  if (r.team != team || (!r.spec.user.empty() && spec.user != r.spec.user))
    return Error::invalid("job " + spec.name + ": reservation " + r.spec.name + " is for " +
                          (r.spec.user.empty() ? "" : "user " + r.spec.user + " of ") + "team " + r.spec.team +
                          "; a job may name only a reservation that admits it");
  return ok_status();
}

std::optional<Explanation> named_reservation_gate(const ClusterState& s, const Job& job) {
  if (job.spec.reservation.empty()) return std::nullopt;
  const std::string name = "reservation " + job.spec.reservation;
  auto it = s.reservations.find(job.spec.reservation);
  if (it == s.reservations.end())
    return explain(ReasonCode::kReservationEnded,
                   name + " no longer exists (it ended or was deleted); the job cannot run: cancel it, or submit it again naming another reservation",
                   false);
  switch (it->second.state) {
    case ReservationState::kScheduled:
      return explain(ReasonCode::kReservationPending, "waits for " + name + " to start at t=" + std::to_string(it->second.spec.start) + " (it is Scheduled)");
    case ReservationState::kActive: return std::nullopt;
    case ReservationState::kExpired:
      return explain(ReasonCode::kReservationEnded, name + " has ended; the job cannot run: cancel it, or submit it again naming another reservation", false);
  }
  return std::nullopt;
}

std::vector<NodeId> choose_reservation_nodes(const ClusterState& s, const Reservation& r) {
  auto type = s.catalog.lookup(r.spec.instance_type);
  if (!type) return {};
  // Per node: what taking it would cost, smallest first (the comment in reservations.h gives the order).
  using Cost = std::tuple<bool, bool, int, int, bool>;
  std::vector<std::pair<Cost, NodeId>> candidates;
  for (const Node& n : s.nodes) {
    if (n.removed || n.plan.valid() || n.type != *type) continue;
    if (reservation_holding(s, n.id)) continue;
    bool named_elsewhere = false;
    for (const auto& [name, other] : s.reservations)
      if (name != r.spec.name && periods_overlap(r.spec, other.spec) && holds_name(s, other, n.name)) named_elsewhere = true;
    if (named_elsewhere) continue;
    candidates.push_back({Cost{!n.schedulable(), false, 0, 0, false}, n.id});
  }
  // The jobs that would be requeued, charged to the nodes they run on.
  for (JobId id : s.running_jobs.sorted()) {
    const Job& j = s.jobs[id.index()];
    if (reservation_admits(r, j)) continue;
    for (NodeId n : j.placement.nodes())
      for (auto& [cost, node] : candidates)
        if (node == n) {
          std::get<1>(cost) = true;
          std::get<2>(cost) = std::max(std::get<2>(cost), j.priority);
          ++std::get<3>(cost);
          std::get<4>(cost) = std::get<4>(cost) || !j.borrowing;
        }
  }
  std::sort(candidates.begin(), candidates.end(), [&s](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return natural_less(s.nodes[a.second.index()].name, s.nodes[b.second.index()].name);
  });
  std::vector<NodeId> out;
  for (const auto& [cost, node] : candidates) {
    if (static_cast<int>(out.size()) == r.spec.count) break;
    out.push_back(node);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<ReservationOutcome> apply_reservation_step(ClusterState& s, std::string_view name, ReservationState to, Time now) {
  auto it = s.reservations.find(std::string(name));
  if (it == s.reservations.end()) return Error::not_found("no reservation named " + std::string(name) + "; reservations: " + reservation_names(s));
  Reservation& r = it->second;
  if (r.state == ReservationState::kExpired || to != next_reservation_state(r.state))
    return Error::precondition("reservation " + r.spec.name + " is " + reservation_state_name(r.state) + "; it cannot move to " +
                               reservation_state_name(to) + " (Scheduled, Active, Expired, one step at a time)");
  ReservationOutcome out;
  if (to == ReservationState::kExpired) {
    for (NodeId n : r.nodes) out.nodes.push_back(s.nodes[n.index()].name);
    s.reservations.erase(it);
    return out;
  }
  if (r.spec.count > 0) r.nodes = choose_reservation_nodes(s, r);
  r.state = ReservationState::kActive;
  for (NodeId n : r.nodes) out.nodes.push_back(s.nodes[n.index()].name);
  out.preempted = jobs_to_requeue(s, r, r.nodes);
  const std::string who = "team " + r.spec.team + (r.spec.user.empty() ? "" : ", user " + r.spec.user);
  for (JobId id : out.preempted) {
    std::string where;
    for (NodeId n : s.jobs[id.index()].placement.nodes())
      if (std::find(r.nodes.begin(), r.nodes.end(), n) != r.nodes.end()) where += (where.empty() ? "" : ", ") + s.nodes[n.index()].name;
    auto st = preempt_job(s, id, now,
                          "reservation " + r.spec.name + " of " + who + " started and holds node " + where +
                              ": the job was checkpointed and requeued; it resumes from its last checkpoint",
                          ReasonCode::kReservationStart);
    if (!st) return st.error();
  }
  return out;
}

Result<ReservationOutcome> delete_reservation(ClusterState& s, std::string_view name) {
  auto it = s.reservations.find(std::string(name));
  if (it == s.reservations.end()) return Error::not_found("no reservation named " + std::string(name) + "; reservations: " + reservation_names(s));
  ReservationOutcome out;
  for (NodeId n : it->second.nodes) out.nodes.push_back(s.nodes[n.index()].name);
  s.reservations.erase(it);
  return out;
}

}  // namespace allot
