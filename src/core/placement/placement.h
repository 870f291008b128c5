#pragma once
// Gang placement: every replica of every pod set on a schedulable node with room, at once, following the
// topology rules of DESIGN.md ("Topology"):
//  - required L: one domain of level L; preferred L: one domain of L if any can hold it, else the tightest
//    domain of the next coarser level, and so on up; no request: the tightest host in the cluster when one
//    host holds the pod set (ties to the tighter leaf domain, then name), else preferred at the lowest
//    labelled level.
//  - Among domains that can hold a request the tightest wins (least free capacity that still fits; in slices,
//    fewer replicas of room among equal slices; then name). Where a request must span domains: the fewest,
//    the roomiest first (the same tie-break among equals), the last one by best fit; the same rule level by
//    level on the way down, over all children of the domains chosen so far together.
//  - slice {level S, size N}: capacity at and above S counts whole slices; each slice stays in one S domain,
//    and at S (the hostname level included) slices become replicas again: all of them are placed.
//  - exclusive X: only X domains with no other job's replicas; the domains used are then held by the job.
//  - inside a node, accelerators on as few NUMA domains as possible, CPUs from the same domains (numa.h).
// Placement reads a room table and never changes the state; trials pass a scratch copy.
#include <optional>
#include <string>

#include "core/model/explanation.h"
#include "core/model/state.h"

namespace allot {

class RoomCapacity;

struct PlacementOutcome {
  bool ok = false;
  Placement placement;
  Explanation why;  // why it does not fit: kCapacity, kTopology or kInstanceType
};

// Working memory of placement, kept by a caller that places many jobs (a scheduler pass, a preemption plan), so
// that a placement does not allocate and free tables the size of the topology tree every time.
struct PlacementScratch {
  std::vector<int64_t> replicas, slices;
  std::vector<char> closed;
  // Optional: the caller's cache of capacity for the one room table it keeps telling of every change (a pass and
  // its live room, room_capacity.h). Placements against that table read it instead of every node.
  RoomCapacity* live = nullptr;
};

// Places all pod sets of `job`. Pod sets without an instance type use `type`. Telling "blocked now" from "never
// fits" is admission's part (admission.h): it places the job again on pristine_room().
PlacementOutcome place_job(const ClusterState& s, const RoomTable& room, const Job& job, TypeId type,
                           PlacementScratch* work = nullptr);

// The room of the cluster as if empty and healthy (removed nodes stay unusable).
RoomTable pristine_room(const ClusterState& s);

// The resources one replica of `ps` takes on a node of `type`, or an error if that type cannot serve it.
Result<Resources> replica_resources(const ClusterState& s, const PodSet& ps, TypeId type);

}  // namespace allot
