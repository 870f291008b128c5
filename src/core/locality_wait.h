#pragma once
// Waiting for locality (docs/scheduling.md, "Waiting for locality"). A job whose pod set has a `preferred: L`
// topology request is placed in one L domain when one has room, and spread over several otherwise. With a
// locality wait (policy.locality_wait_s, or its priority class's), a job that would run spread although one L
// domain of the empty cluster could hold it waits instead, for one domain to have room: for at most that long
// from the first pass of its waiting period that found it could run spread (Job::locality_wait_from, which the
// server journals); then it runs spread as before. While it waits, the domain closest to holding it is reserved
// for it: jobs behind it in queue order are placed outside that domain, or wait. Time is passed in: the core
// reads no clock.
#include <map>
#include <optional>
#include <tuple>

#include "core/admission.h"

namespace allot {

// The locality wait of `job`: its priority class's, else the policy's (0: none).
int64_t locality_wait_of(const ClusterState& s, const Job& job);

// Whether `job`, with every `preferred` request made `required`, fits the empty cluster on a type, at a size:
// asked once per (shape, type, size) and kept by the caller for as long as the cluster's shape is unchanged.
class OneDomainFits {
 public:
  bool ask(const ClusterState& s, const RoomTable& pristine, const Job& job, TypeId type, int size);

 private:
  std::map<std::tuple<uint32_t, uint32_t, int>, bool> known_;
};

// When admission `a` of `job` spreads a `preferred` pod set over several domains of its level although one
// domain of the empty cluster could hold the job, and `now` is before the end of its locality wait: the reason
// it waits (kLocality), with `until`, the time it stops waiting. Null otherwise: admit it as found.
// `from` is when its wait counts from: Job::locality_wait_from, or `now` when this pass is the first to find it
// could run spread.
struct LocalityHold {
  Time until = 0;
  int level = -1;    // the preferred level it waits for one domain of
  size_t pod_set = 0;  // the pod set spread over several domains of `level`
  Explanation why;
};
std::optional<LocalityHold> locality_hold(const ClusterState& s, const RoomTable& pristine, const Job& job,
                                          const AdmissionAttempt& a, Time now, Time from, OneDomainFits& fits);

// Locality reservations of one pass. A job held for locality reserves one domain of its level: among the
// domains the empty cluster's room lets hold its spread pod set and that no job ahead of it reserved, the one
// whose nodes have room for the most of its replicas now (then the most free accelerators of its type, then the
// first in the tree's order). Jobs behind it in queue order may not take room there until it is admitted or
// its wait ends (`until`): the reservation never outlasts the wait, so it delays nobody past it.
struct LocalityReservation {
  JobId holder;
  int level = -1;
  int domain = -1;  // index into s.tree.domains
  Time until = 0;
};
// What a job waiting for locality needs one domain to hold: `replicas` of `per_replica` on nodes of `type`,
// inside one domain of `level`, until `until`.
struct LocalityNeed {
  int level = -1;
  TypeId type;
  Resources per_replica;
  int64_t replicas = 0;
  Time until = 0;
};
// From admission `a` that found it spread (its spread pod set as placed).
LocalityNeed locality_need(const AdmissionAttempt& a, const LocalityHold& hold);
// A job whose wait began at an earlier pass (Job::locality_wait_from) and has not ended by `now`, which cannot
// run at all at this pass: its first pod set with a `preferred` request on a type it names (at its largest size).
// Null when it has no wait running, or no such pod set.
std::optional<LocalityNeed> locality_need_while_waiting(const ClusterState& s, const Job& job, Time now);
// The domain `holder` reserves for `need`, given the reservations made before it in this pass; null when no
// domain is left that could hold it.
std::optional<LocalityReservation> choose_locality_domain(const ClusterState& s, const RoomTable& pristine,
                                                          const Job& holder, const LocalityNeed& need,
                                                          const std::vector<LocalityReservation>& taken);
// Whether placement `p` puts a replica in the reserved domain.
bool touches(const ClusterState& s, const Placement& p, const LocalityReservation& r);

}  // namespace allot
