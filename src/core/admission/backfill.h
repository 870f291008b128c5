#pragma once
// Backfill with a reservation (docs/scheduling.md, "Backfill"; policy.backfill). EASY backfilling, as Slurm's
// backfill scheduler treats the head of its queue: the first waiting job in queue order that cannot be admitted
// now (quota or capacity) gets a reservation, the earliest time at which the time limits of running jobs free room
// for it, and the nodes it would take then. A job after it in queue order may take those nodes only if its own
// time limit ends by that time; otherwise it goes elsewhere or waits. A running job without a time limit never
// ends for this reckoning, so a job that only such jobs block gets no reservation. The core has no clock: `now`
// is an argument.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/state.h"

namespace allot {

struct BackfillReservation {
  JobId holder;
  Time at = 0;                // when the running jobs' time limits have freed room for the holder
  std::vector<char> reserved; // by NodeId: 1 where the holder would run then
  std::vector<NodeId> nodes;  // the same nodes, sorted, for the reasons
  // Quota at `at`: what teams would hold once the running jobs ending by then have ended (jobs admitted later in
  // the pass that still run then are added to it), and what the holder asks per instance type there.
  UsageTable usage_at;
  std::vector<std::pair<TypeId, Resources>> need;
  // The holder would then run within its team's nominal quota (it borrows nothing): a job that reclaims its own
  // team's lent quota has no precedence over it.
  bool within_nominal = false;
};

// The reservation `holder` gets at `now`, or nullopt when no end of a running job's time limit frees room for it
// (or quota would not allow it then). Placement, quota and topology are the admission's own (try_admit), on the
// room and usage the cluster would have once the running jobs ending by that time have ended.
std::optional<BackfillReservation> plan_reservation(const ClusterState& s, const Job& holder, Time now);

// Whether a job's time limit ends by r.at (then it keeps clear of the reservation whatever it takes).
bool ends_by(const BackfillReservation& r, const Job& j, Time now);

// Whether a job admitted at `now` with placement `p` keeps clear of `r`'s nodes: it takes none of the reserved
// nodes, or its time limit ends by r.at.
bool clear_of(const BackfillReservation& r, const Job& j, const Placement& p, Time now);

// Whether the holder's quota at r.at still holds with `j` running then on `p` as well, `released` (jobs a
// preemption stops) no longer running: a job that does not end by r.at must not leave the holder waiting for
// quota at its reserved time. True when `j` ends by then. `r` is the same afterwards (counted and taken out).
bool quota_clear_of(const ClusterState& s, BackfillReservation& r, const Job& j, const Placement& p, Time now,
                    std::span<const JobId> released = {});

// Counts (sign 1) or takes out (-1) of the reservation's usage at r.at what `j` holds on `p`, if it would still run
// then: a pass admits, stops and resizes jobs after the reservation is planned.
void count_at(BackfillReservation& r, const Job& j, const Placement& p, Time now, int sign);

// `room` with the reserved nodes unusable: where a job that would still run at r.at may go instead.
RoomTable without_reserved(const RoomTable& room, const BackfillReservation& r);

// "nodes a, b and 3 more": the reserved nodes for a reason text.
std::string reserved_nodes_text(const ClusterState& s, const BackfillReservation& r);

}  // namespace allot
