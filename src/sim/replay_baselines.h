#pragma once
// The comparison runs of `allot sim replay --baseline NAME`: the same trace on the same nodes, with one thing
// taken away from allot, so the difference shows what that thing is worth.
//   static-quota         every team DontLend: each team runs only within its own allocation; idle quota
//                        stays idle (no lending, no borrowing, no reclaim).
//   fifo                 one queue in arrival order, no preemption of any kind, and the first job that cannot
//                        run blocks all behind it (strict FIFO with head-of-line blocking), as a plain batch
//                        queue does. Borrowing idle quota is still allowed, so only ordering changes.
//   topology-oblivious   node labels removed and nodes in a seeded random order, so placement cannot see the
//                        network tree; locality is still judged on the real tree.
//   backfill-top-class   backfill on, but only jobs of the highest priority class may hold the reservation
//                        (policy.backfill_min_priority set to that class's weight, as Slurm's bf_min_prio_reserve):
//                        lower classes only fill in. Not part of "all" (it compares backfill policies, not allot's
//                        parts); with no priority classes it is plain backfill.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "sim/scenario.h"
#include "sim/trace_replay.h"

namespace allot::sim {

enum class Baseline { kStaticQuota, kFifo, kTopologyOblivious, kBackfillTopClass };

const char* baseline_name(Baseline b);
// "static-quota", "fifo", "topology-oblivious", "backfill-top-class"; "all" gives the first three.
Result<std::vector<Baseline>> parse_baselines(const std::vector<std::string>& names);

// The cluster and options of the baseline run, from those of the allot run.
void apply_baseline(Baseline b, Scenario& cluster, ReplayOptions& options, uint64_t seed);

}  // namespace allot::sim
