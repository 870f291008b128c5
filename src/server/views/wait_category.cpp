#include "server/views/wait_category.h"

namespace allot::server {

WaitCategory wait_category(ReasonCode code, bool feasible) {
  if (!feasible) return WaitCategory::kNeverFits;
  // No default: a new reason code does not compile until it has a category here.
  switch (code) {
    case ReasonCode::kNone:
    case ReasonCode::kSubmitted:
    case ReasonCode::kPreempted:
    case ReasonCode::kDrained:
    case ReasonCode::kNodeFailed:
    case ReasonCode::kNodeRemoved:
    case ReasonCode::kRendezvousPort:
    case ReasonCode::kHung:        // restarting after a log rule fired (a retry), as after a failure
    case ReasonCode::kLogRestart:
    case ReasonCode::kStartTimeout:  // backing off: the scheduler passes it over until its backoff ends
    case ReasonCode::kAdmissionCheckRetry:  // the same, after an admission check answered retry
    case ReasonCode::kReservationStart:  // requeued from a reservation's node; the next pass places it elsewhere
    case ReasonCode::kNeedsBorrow:  // never shown to people; a job left with it is decided by the next pass
      return WaitCategory::kScheduling;
    case ReasonCode::kQuota:
    case ReasonCode::kQuotaLentOut:
      return WaitCategory::kQuota;
    case ReasonCode::kBorrowLimit:
    case ReasonCode::kNoIdleQuota:
      return WaitCategory::kBorrowLimit;
    case ReasonCode::kCapacity:
    case ReasonCode::kOscillation:
    case ReasonCode::kNoPreemption:
      return WaitCategory::kCapacity;
    case ReasonCode::kTopology:
    case ReasonCode::kLocality:
      return WaitCategory::kTopology;
    case ReasonCode::kUnhealthyNodes:
      return WaitCategory::kUnhealthyNodes;
    case ReasonCode::kStrictFifo:
    case ReasonCode::kReserved:
      return WaitCategory::kOrder;
    case ReasonCode::kHeld:
      return WaitCategory::kHeld;
    case ReasonCode::kPlanPending:
    case ReasonCode::kPlanEnding:
    case ReasonCode::kReservationPending:  // a place set aside from a start, as a plan's nodes are
      return WaitCategory::kPlan;
    case ReasonCode::kDependency:
      return WaitCategory::kDependency;
    case ReasonCode::kUserLimit:
      return WaitCategory::kUserLimit;
    case ReasonCode::kArrayThrottle:
      return WaitCategory::kArrayThrottle;
    case ReasonCode::kDispatched:
    case ReasonCode::kRemoteRunning:
      return WaitCategory::kRemote;
    case ReasonCode::kNeverFits:
    case ReasonCode::kInstanceType:
    case ReasonCode::kPlanEnded:
    case ReasonCode::kReservationEnded:
      return WaitCategory::kNeverFits;
    case ReasonCode::kAdmitted:
    case ReasonCode::kFinished:
    case ReasonCode::kFailed:
    case ReasonCode::kCancelled:
    case ReasonCode::kDeadlineExceeded:
    case ReasonCode::kLogFail:
    case ReasonCode::kDependencyNever:
    case ReasonCode::kAdmissionCheckRejected:
      return WaitCategory::kNotWaiting;
  }
  return WaitCategory::kScheduling;  // unreachable: every code is handled above
}

std::string_view wait_category_name(WaitCategory c) {
  switch (c) {
    case WaitCategory::kScheduling: return "scheduling";
    case WaitCategory::kQuota: return "quota";
    case WaitCategory::kBorrowLimit: return "borrow_limit";
    case WaitCategory::kCapacity: return "capacity";
    case WaitCategory::kTopology: return "topology";
    case WaitCategory::kUnhealthyNodes: return "unhealthy_nodes";
    case WaitCategory::kOrder: return "order";
    case WaitCategory::kHeld: return "held";
    case WaitCategory::kPlan: return "plan";
    case WaitCategory::kDependency: return "dependency";
    case WaitCategory::kUserLimit: return "user_limit";
    case WaitCategory::kArrayThrottle: return "array_throttle";
    case WaitCategory::kRemote: return "remote";
    case WaitCategory::kNeverFits: return "never_fits";
    case WaitCategory::kNotWaiting: return "not_waiting";
  }
  return "scheduling";
}

std::string_view wait_category_label(WaitCategory c) {
  switch (c) {
    case WaitCategory::kScheduling: return "scheduling";
    case WaitCategory::kQuota: return "quota";
    case WaitCategory::kBorrowLimit: return "borrow limit";
    case WaitCategory::kCapacity: return "capacity";
    case WaitCategory::kTopology: return "topology";
    case WaitCategory::kUnhealthyNodes: return "unhealthy nodes";
    case WaitCategory::kOrder: return "in line";
    case WaitCategory::kHeld: return "held";
    case WaitCategory::kPlan: return "capacity plan";
    case WaitCategory::kDependency: return "dependency";
    case WaitCategory::kUserLimit: return "user limit";
    case WaitCategory::kArrayThrottle: return "array throttle";
    case WaitCategory::kRemote: return "worker cluster";
    case WaitCategory::kNeverFits: return "never fits";
    case WaitCategory::kNotWaiting: return "not waiting";
  }
  return "scheduling";
}

}  // namespace allot::server
