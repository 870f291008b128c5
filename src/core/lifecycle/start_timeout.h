#pragma once
// Gang start timeout (docs/resiliency.md, "Gang start timeout"; Kueue's waitForPodsReady). A run is admitted
// whole, but its replicas start on their nodes one by one: an image that will not pull, a node that takes the
// replica and never runs it. A run not every replica of which is running `policy.start_timeout_s` after the
// agents were given its replicas holds capacity for nothing and blocks the gang's peers: the server requeues it
// (state.h, time_out_start) without using a retry, since the job's code never ran, and the job then backs off
// before it may run again, doubling with each such requeue. The server measures the time (it alone hears the
// agents); this header holds the rule both it and journal replay read. The core has no clock: `now` is an
// argument.
#include <algorithm>
#include <cstdint>

#include "core/model/model.h"
#include "core/model/spec.h"

namespace allot {

// The backoff after a job's `nth` start timeout (nth >= 1): start_backoff_s x 2^(nth-1), at most
// start_backoff_max_s.
inline int64_t start_backoff_s(const PolicySpec& p, int nth) {
  int64_t b = std::max<int64_t>(0, p.start_backoff_s);
  for (int i = 1; i < nth && b < p.start_backoff_max_s; ++i) b *= 2;
  return std::min(b, std::max<int64_t>(0, p.start_backoff_max_s));
}

// The backoff the job's next start timeout earns (the server's requeue and the simulator's event both ask).
inline int64_t next_start_backoff_s(const PolicySpec& p, const Job& j) { return start_backoff_s(p, j.start_timeouts + 1); }

// Whether the scheduler passes over waiting job `j` at `now`: held by request, or backing off after a start
// timeout, or a manager's job that runs in a worker cluster (docs/multicluster.md). Such a job neither runs nor
// preempts, nor holds others back (strict FIFO, reservations).
inline bool passed_over(const Job& j, Time now) { return j.held || j.spec.multicluster || j.backoff_until > now; }

}  // namespace allot
