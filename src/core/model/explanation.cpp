#include "core/model/explanation.h"

#include <array>
#include <utility>

namespace allot {
namespace {

constexpr std::array<std::pair<ReasonCode, const char*>, 46> kNames = {{
    {ReasonCode::kNone, "none"},
    {ReasonCode::kSubmitted, "submitted"},
    {ReasonCode::kQuota, "quota"},
    {ReasonCode::kBorrowLimit, "borrow_limit"},
    {ReasonCode::kQuotaLentOut, "quota_lent_out"},
    {ReasonCode::kNoIdleQuota, "no_idle_quota"},
    {ReasonCode::kNeedsBorrow, "needs_borrow"},
    {ReasonCode::kCapacity, "capacity"},
    {ReasonCode::kUnhealthyNodes, "unhealthy_nodes"},
    {ReasonCode::kTopology, "topology"},
    {ReasonCode::kLocality, "locality"},
    {ReasonCode::kNeverFits, "never_fits"},
    {ReasonCode::kInstanceType, "instance_type"},
    {ReasonCode::kReserved, "reserved"},
    {ReasonCode::kStrictFifo, "strict_fifo"},
    {ReasonCode::kOscillation, "oscillation"},
    {ReasonCode::kNoPreemption, "no_preemption"},
    {ReasonCode::kAdmitted, "admitted"},
    {ReasonCode::kPreempted, "preempted"},
    {ReasonCode::kDrained, "drained"},
    {ReasonCode::kNodeFailed, "node_failed"},
    {ReasonCode::kNodeRemoved, "node_removed"},
    {ReasonCode::kFinished, "finished"},
    {ReasonCode::kFailed, "failed"},
    {ReasonCode::kCancelled, "cancelled"},
    {ReasonCode::kHeld, "held"},
    {ReasonCode::kPlanPending, "plan_pending"},
    {ReasonCode::kPlanEnded, "plan_ended"},
    {ReasonCode::kPlanEnding, "plan_ending"},
    {ReasonCode::kRendezvousPort, "rendezvous_port"},
    {ReasonCode::kDeadlineExceeded, "deadline_exceeded"},
    {ReasonCode::kStartTimeout, "start_timeout"},
    {ReasonCode::kHung, "hung"},
    {ReasonCode::kLogRestart, "log_restart"},
    {ReasonCode::kLogFail, "log_fail"},
    {ReasonCode::kDependency, "dependency"},
    {ReasonCode::kDependencyNever, "dependency_never"},
    {ReasonCode::kUserLimit, "user_limit"},
    {ReasonCode::kAdmissionCheckRetry, "admission_check_retry"},
    {ReasonCode::kAdmissionCheckRejected, "admission_check_rejected"},
    {ReasonCode::kReservationStart, "reservation_start"},
    {ReasonCode::kArrayThrottle, "array_throttle"},
    {ReasonCode::kReservationPending, "reservation_pending"},
    {ReasonCode::kReservationEnded, "reservation_ended"},
    {ReasonCode::kDispatched, "dispatched"},
    {ReasonCode::kRemoteRunning, "remote_running"},
}};

// Every code once, in the enum's order, the newest last: a code added to the enum without its name here (or a name
// out of place) does not compile.
constexpr bool in_enum_order() {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (static_cast<size_t>(kNames[i].first) != i) return false;
  return true;
}
static_assert(in_enum_order() && kNames.back().first == ReasonCode::kRemoteRunning);

}  // namespace

const char* reason_code_name(ReasonCode c) {
  for (const auto& [code, name] : kNames)
    if (code == c) return name;
  return "none";
}

std::optional<ReasonCode> parse_reason_code(std::string_view name) {
  for (const auto& [code, n] : kNames)
    if (name == n) return code;
  return std::nullopt;
}

std::string reason_code_names() {
  std::string out;
  for (const auto& [code, name] : kNames) {
    if (code == ReasonCode::kNone) continue;
    out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

}  // namespace allot
