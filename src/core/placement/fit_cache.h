#pragma once
// What whoever runs scheduler passes remembers between them about job shapes (model.h, Job::shape): whether a shape
// can never be placed on an instance type, even on the empty cluster, and, while some node is unschedulable,
// whether it waits for nodes (it fits the cluster as built but not its schedulable nodes even when empty).
// Thousands of queued jobs share a few shapes, and each answer costs a placement on an empty cluster.
//
// Kept apart from ClusterState, by its owner (the server's writer, the simulator, a benchmark) and handed to
// schedule() (scheduler.h, ScheduleOptions::fit_cache): admission never writes to the ClusterState it reads, so a
// state shared read-only between threads (the server's read view) may be admitted against. The answers are valid
// for the ClusterState they were computed on as long as its shape_version and health_version (state.h) are those
// remembered: an owner that replaces its state (a rebuild from the journal) starts a new cache with it.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/model/state.h"

namespace allot {

class FitCache {
 public:
  // Whether `job` can never be placed on `type`, even on the empty cluster `pristine` (placement.h,
  // pristine_room); if so, `why` says so.
  bool never_fits(const ClusterState& s, const Job& job, TypeId type, const RoomTable& pristine, Explanation& why);
  // Whether a job the cluster as built can hold (never_fits() said no) waits for nodes to become schedulable again:
  // it cannot be placed on the schedulable nodes even when they are empty. Only asked while some node is
  // unschedulable, so a healthy cluster pays nothing for it.
  bool waits_for_nodes(const ClusterState& s, const Job& job, TypeId type);

 private:
  // "" when the shape fits the type, else why not; by (shape, type), valid for never_fits_version_.
  std::unordered_map<uint64_t, std::string> never_fits_;
  uint64_t never_fits_version_ = UINT64_MAX;
  // Whether some node is unschedulable, and "waits for nodes" by (shape, type), valid for unusable_version_.
  bool any_unusable_ = false;
  std::unordered_map<uint64_t, bool> waits_for_nodes_;
  uint64_t unusable_version_ = UINT64_MAX;
};

}  // namespace allot
