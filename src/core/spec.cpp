#include "core/spec.h"

namespace allot {

const char* sharing_strategy_name(SharingStrategy s) {
  switch (s) {
    case SharingStrategy::kLendAndBorrow: return "LendAndBorrow";
    case SharingStrategy::kLend: return "Lend";
    case SharingStrategy::kDontLend: return "DontLend";
  }
  return "?";
}

const char* preempt_team_tasks_name(PreemptTeamTasks p) {
  return p == PreemptTeamTasks::kNever ? "Never" : "LowerPriority";
}

const char* task_prioritization_name(TaskPrioritization t) {
  return t == TaskPrioritization::kTaskRanking ? "task-ranking" : "fcfs";
}

const char* idle_compute_name(IdleCompute i) { return i == IdleCompute::kFcfs ? "fcfs" : "fair-share"; }

const char* node_health_name(NodeHealth h) {
  switch (h) {
    case NodeHealth::kSchedulable: return "Schedulable";
    case NodeHealth::kUnschedulable: return "Unschedulable";
    case NodeHealth::kUnschedulablePendingReboot: return "UnschedulablePendingReboot";
    case NodeHealth::kUnschedulablePendingReplacement: return "UnschedulablePendingReplacement";
  }
  return "?";
}

}  // namespace allot
