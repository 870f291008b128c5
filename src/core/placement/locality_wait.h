#pragma once
// Waiting for locality (docs/scheduling.md, "Waiting for locality"). A job whose pod set has a `preferred: L`
// topology request is placed in one L domain when one has room, and spread over several otherwise. With a
// locality wait (policy.locality_wait_s, or its priority class's), a job that would run spread although one L
// domain of the empty cluster could hold it waits instead, for one domain to have room: for at most that long
// from the first pass of its waiting period that found it could run spread (Job::locality_wait_from, which the
// server journals); then it runs spread as before. While it waits it may preempt, by the ordinary rules, to
// run in one domain (in_one_domain below). Time is passed in: the core reads no clock.
#include <map>
#include <optional>
#include <tuple>

#include "core/admission/admission.h"

namespace allot {

// The locality wait of `job`: its priority class's, else the policy's (0: none).
int64_t locality_wait_of(const ClusterState& s, const Job& job);

// `job` with every `preferred` request made `required`: the job as it runs in one domain of each such level.
Job in_one_domain(const Job& job);

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
  Explanation why;
};
std::optional<LocalityHold> locality_hold(const ClusterState& s, const RoomTable& pristine, const Job& job,
                                          const AdmissionAttempt& a, Time now, Time from, OneDomainFits& fits);

}  // namespace allot
