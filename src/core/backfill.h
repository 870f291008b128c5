#pragma once
// Backfill with a reservation (docs/scheduling.md, "Backfill"; policy.backfill). EASY backfilling, as Slurm's
// backfill scheduler treats the head of its queue: the first waiting job in queue order that cannot be admitted
// now (quota or capacity) gets a reservation, the earliest time at which the time limits of running jobs free room
// for it, and the nodes it would take then. A job after it in queue order may take those nodes only if its own
// time limit ends by that time; otherwise it goes elsewhere or waits. A running job without a time limit never
// ends for this reckoning, so a job that only such jobs block gets no reservation. The core has no clock: `now`
// is an argument.
#include <optional>
#include <string>
#include <vector>

#include "core/state.h"

namespace allot {

struct BackfillReservation {
  JobId holder;
  Time at = 0;                // when the running jobs' time limits have freed room for the holder
  std::vector<char> reserved; // by NodeId: 1 where the holder would run then
  std::vector<NodeId> nodes;  // the same nodes, sorted, for the reasons
};

// The reservation `holder` gets at `now`, or nullopt when no end of a running job's time limit frees room for it
// (or quota would not allow it then). Placement, quota and topology are the admission's own (try_admit), on the
// room and usage the cluster would have once the running jobs ending by that time have ended.
std::optional<BackfillReservation> plan_reservation(const ClusterState& s, const Job& holder, Time now);

// Whether a job admitted at `now` with placement `p` keeps clear of `r`: it takes none of the reserved nodes, or
// its time limit ends by r.at.
bool clear_of(const BackfillReservation& r, const Job& j, const Placement& p, Time now);

// `room` with the reserved nodes unusable: where a job that would still run at r.at may go instead.
RoomTable without_reserved(const RoomTable& room, const BackfillReservation& r);

// "nodes a, b and 3 more": the reserved nodes for a reason text.
std::string reserved_nodes_text(const ClusterState& s, const BackfillReservation& r);

}  // namespace allot
