#pragma once
// Reservations of existing nodes (Slurm's `scontrol create reservation`): named nodes, or an amount of one
// instance type, held for one team (optionally one user of it) from a start to an end. Capacity plans
// (core/model/plans.h) reserve new capacity that joins for the period; a reservation sets aside nodes that are in the
// cluster already. Its state follows from time:
//
//   Scheduled --start--> Active --end--> (gone)
//
// Active: the reservation's nodes take only jobs it admits (its team's, or its user's); at the start every
// running job of another team with a replica there is checkpointed and requeued (Suspended, reason code
// reservation_start, the reason naming the reservation). A reservation of an amount chooses its nodes at the
// start (choose_reservation_nodes). At the end, or when it is deleted, the nodes return to the common pool. A
// reservation gives places, not quota: the team's jobs on its nodes count against the team's quota as anywhere.
//
// The core gets time as a value: drivers ask next_reservation_step() what is due and apply it with
// apply_reservation_step(), an operation they journal like any other.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/explanation.h"
#include "core/model/ids.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot {

struct ClusterState;
struct Job;
struct NodeRoom;

enum class ReservationState { kScheduled, kActive, kExpired };
const char* reservation_state_name(ReservationState s);
std::optional<ReservationState> parse_reservation_state(std::string_view s);

// What an administrator writes. Exactly one of `nodes` (named nodes, a host list expanded) and `count` (an amount
// of `instance_type`) is given; with `nodes`, `instance_type` is optional and, if given, every node must be of it.
struct ReservationSpec {
  std::string name;   // a DNS label
  std::string team;   // the team it is for
  std::string user;   // optional: only this user's jobs of the team (JobSpec::user, a token's user name)
  std::vector<std::string> nodes;
  std::string instance_type;
  int count = 0;
  Time start = 0, end = 0;
  friend bool operator==(const ReservationSpec&, const ReservationSpec&) = default;
};

struct Reservation {
  ReservationSpec spec;
  TeamId team;
  ReservationState state = ReservationState::kScheduled;
  // The nodes held: named nodes from creation; for an amount, those chosen at the start (none before). A node
  // that fails or leaves stays here (it takes no work anyway) and is not replaced; a node that joins again under
  // the same name is another node and is not in the reservation.
  std::vector<NodeId> nodes;
};

// Adds a reservation in state Scheduled. Checks the name (unique), the team (and that a user is given only with
// one), the times (0 <= start < end), the nodes (known, each once, of `instance_type` if given) or the amount
// (1 .. the nodes of the type in the cluster), and that no named node is held by another reservation whose
// period overlaps this one.
Status add_reservation(ClusterState& s, const ReservationSpec& spec);

struct ReservationStep {
  std::string name;
  ReservationState to = ReservationState::kActive;
  Time at = 0;
};
// The next step of any reservation, earliest first (ties: name).
std::optional<ReservationStep> next_reservation_step(const ClusterState& s);

// What a step did: the jobs it requeued (ID order) and the nodes it took or gave back.
struct ReservationOutcome {
  std::vector<JobId> preempted;
  std::vector<std::string> nodes;
};
// Moves a reservation one state on (`to` must follow its state). Active: an amount chooses its nodes, and the
// jobs the reservation does not admit are requeued from its nodes. Expired: it is forgotten and its nodes return
// to the common pool.
Result<ReservationOutcome> apply_reservation_step(ClusterState& s, std::string_view name, ReservationState to, Time now);
// Forgets a reservation whatever its state; its nodes return to the common pool at once.
Result<ReservationOutcome> delete_reservation(ClusterState& s, std::string_view name);

// The nodes an amount reservation takes at its start, best first: nodes of its type in the cluster that no other
// Active reservation holds and no other reservation overlapping its period names; schedulable before not; then
// those where no job it does not admit runs (no preemption needed), then by the highest priority of the jobs that
// would be requeued (lowest first), then fewest such jobs, then borrowing jobs before jobs within quota; then by
// name (natural order). At most `count`: fewer when fewer qualify.
std::vector<NodeId> choose_reservation_nodes(const ClusterState& s, const Reservation& r);

// Whether an Active reservation lets `job` use its nodes: a job of its team (and of its user, if it names one).
bool reservation_admits(const Reservation& r, const Job& job);
// The Active reservation that holds a node, if any.
const Reservation* reservation_holding(const ClusterState& s, NodeId node);
// Whether some Active reservation holds a node that `job` may not use, or the job names a reservation (then only
// that reservation's nodes are open to it): only then does placement need a room with nodes closed
// (close_reserved_nodes), so that a cluster without reservations places as before.
bool reserved_against(const ClusterState& s, const Job& job);
void close_reserved_nodes(const ClusterState& s, const Job& job, std::vector<NodeRoom>& room);

// A job that names a reservation (JobSpec::reservation; Slurm's --reservation) runs on its nodes only, and only
// while it is Active. Checked at submission: the reservation exists (Scheduled or Active) and admits the job
// (its team, and its user if the reservation names one).
Status check_named_reservation(const ClusterState& s, const JobSpec& spec, TeamId team);
// Why such a job cannot run now whatever quota and room say: its reservation has not started
// (reservation_pending), or it is gone, ended or deleted (reservation_ended, not feasible: the job never runs
// unless a reservation of that name is made again). nullopt: it names none, or its reservation is Active.
std::optional<Explanation> named_reservation_gate(const ClusterState& s, const Job& job);
// Whether an Active reservation for one user of `team` exists: then jobs of that team alike in all else may get
// different answers (ClassMemo, core/pass/class_memo.h, answers each such job on its own).
bool user_reservation_for(const ClusterState& s, TeamId team);

std::string reservation_names(const ClusterState& s);

}  // namespace allot
