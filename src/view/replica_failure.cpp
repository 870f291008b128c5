#include "view/replica_failure.h"

namespace allot::view {

const char* replica_failure_reason_name(ReplicaFailureReason r) {
  switch (r) {
    case ReplicaFailureReason::kImagePull: return "image_pull";
    case ReplicaFailureReason::kLogRule: return "log_rule";
    case ReplicaFailureReason::kOomKilled: return "oom_killed";
    case ReplicaFailureReason::kFenced: return "fenced";
  }
  return "?";
}

std::optional<ReplicaFailureReason> replica_failure_reason_named(std::string_view name) {
  for (ReplicaFailureReason r : kReplicaFailureReasons)
    if (name == replica_failure_reason_name(r)) return r;
  return std::nullopt;
}

}  // namespace allot::view
