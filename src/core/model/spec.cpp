#include "core/model/spec.h"

#include <algorithm>

namespace allot {
namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Why `label` is not a DNS label (up to `max` characters), or an empty text.
std::string label_problem(std::string_view label, size_t max) {
  if (label.empty()) return "has an empty part (between two dots, or at an end)";
  if (label.size() > max) return "has a part longer than " + std::to_string(max) + " characters";
  for (char c : label)
    if (!lower_alnum(c) && c != '-') {
      if (c >= 'A' && c <= 'Z') return "has the upper-case letter '" + std::string(1, c) + "'";
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) return "has a control character";
      if (u >= 0x80) return "has a character beyond ASCII";
      return "has the character '" + std::string(1, c) + "'";
    }
  if (!lower_alnum(label.front()) || !lower_alnum(label.back())) return "does not begin and end with a letter or digit";
  return "";
}

}  // namespace

const char* name_kind_word(NameKind kind) {
  switch (kind) {
    case NameKind::kTeam: return "team";
    case NameKind::kJob: return "job";
    case NameKind::kNode: return "node";
    case NameKind::kPriorityClass: return "priority class";
    case NameKind::kPlan: return "plan";
    case NameKind::kReservation: return "reservation";
    case NameKind::kGroup: return "group";
  }
  return "?";
}

std::string printable(std::string_view text, size_t max) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

Status check_name(NameKind kind, std::string_view name) {
  const bool label = kind == NameKind::kTeam || kind == NameKind::kPlan || kind == NameKind::kReservation ||
                     kind == NameKind::kGroup;
  const size_t max = label ? kMaxLabelName : kMaxSubdomainName;
  std::string problem;
  if (name.empty()) {
    problem = "is empty";
  } else if (name.size() > max) {
    problem = "is " + std::to_string(name.size()) + " characters long";
  } else if (label) {
    problem = label_problem(name, max);
  } else {
    for (size_t start = 0; problem.empty() && start <= name.size();) {
      const size_t dot = std::min(name.find('.', start), name.size());
      problem = label_problem(name.substr(start, dot - start), kMaxSubdomainName);
      start = dot + 1;
    }
  }
  if (problem.empty()) return ok_status();
  const std::string rule = label ? "at most 63 lowercase letters, digits and '-', beginning and ending with a letter or digit"
                                 : "at most 253 characters: lowercase letters, digits, '-' and '.', each part between dots "
                                   "beginning and ending with a letter or digit";
  return Error::invalid(std::string(name_kind_word(kind)) + " name '" + printable(name) + "' " + problem + "; a " +
                        name_kind_word(kind) + " name is " + rule + " (as Kubernetes names are)");
}

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
  switch (t) {
    case TaskPrioritization::kFcfs: return "fcfs";
    case TaskPrioritization::kTaskRanking: return "task-ranking";
  }
  return "?";
}

const char* idle_compute_name(IdleCompute i) {
  switch (i) {
    case IdleCompute::kFairShare: return "fair-share";
    case IdleCompute::kFcfs: return "fcfs";
  }
  return "?";
}

std::optional<TaskPrioritization> parse_task_prioritization(std::string_view name) {
  for (TaskPrioritization t : kTaskPrioritizations)
    if (name == task_prioritization_name(t)) return t;
  return std::nullopt;
}

std::optional<IdleCompute> parse_idle_compute(std::string_view name) {
  for (IdleCompute i : kIdleComputes)
    if (name == idle_compute_name(i)) return i;
  return std::nullopt;
}

const char* capability_name(Capability c) {
  switch (c) {
    case Capability::kChown: return "CHOWN";
    case Capability::kDacOverride: return "DAC_OVERRIDE";
    case Capability::kDacReadSearch: return "DAC_READ_SEARCH";
    case Capability::kFowner: return "FOWNER";
    case Capability::kFsetid: return "FSETID";
    case Capability::kKill: return "KILL";
    case Capability::kSetgid: return "SETGID";
    case Capability::kSetuid: return "SETUID";
    case Capability::kSetpcap: return "SETPCAP";
    case Capability::kLinuxImmutable: return "LINUX_IMMUTABLE";
    case Capability::kNetBindService: return "NET_BIND_SERVICE";
    case Capability::kNetBroadcast: return "NET_BROADCAST";
    case Capability::kNetAdmin: return "NET_ADMIN";
    case Capability::kNetRaw: return "NET_RAW";
    case Capability::kIpcLock: return "IPC_LOCK";
    case Capability::kIpcOwner: return "IPC_OWNER";
    case Capability::kSysModule: return "SYS_MODULE";
    case Capability::kSysRawio: return "SYS_RAWIO";
    case Capability::kSysChroot: return "SYS_CHROOT";
    case Capability::kSysPtrace: return "SYS_PTRACE";
    case Capability::kSysPacct: return "SYS_PACCT";
    case Capability::kSysAdmin: return "SYS_ADMIN";
    case Capability::kSysBoot: return "SYS_BOOT";
    case Capability::kSysNice: return "SYS_NICE";
    case Capability::kSysResource: return "SYS_RESOURCE";
    case Capability::kSysTime: return "SYS_TIME";
    case Capability::kSysTtyConfig: return "SYS_TTY_CONFIG";
    case Capability::kMknod: return "MKNOD";
    case Capability::kLease: return "LEASE";
    case Capability::kAuditWrite: return "AUDIT_WRITE";
    case Capability::kAuditControl: return "AUDIT_CONTROL";
    case Capability::kSetfcap: return "SETFCAP";
    case Capability::kMacOverride: return "MAC_OVERRIDE";
    case Capability::kMacAdmin: return "MAC_ADMIN";
    case Capability::kSyslog: return "SYSLOG";
    case Capability::kWakeAlarm: return "WAKE_ALARM";
    case Capability::kBlockSuspend: return "BLOCK_SUSPEND";
    case Capability::kAuditRead: return "AUDIT_READ";
    case Capability::kPerfmon: return "PERFMON";
    case Capability::kBpf: return "BPF";
    case Capability::kCheckpointRestore: return "CHECKPOINT_RESTORE";
  }
  return "?";
}

const char* dependency_condition_name(DependencyCondition c) {
  switch (c) {
    case DependencyCondition::kSucceeded: return "succeeded";
    case DependencyCondition::kEnded: return "ended";
    case DependencyCondition::kStarted: return "started";
  }
  return "ended";
}

const char* recovery_name(Recovery r) {
  switch (r) {
    case Recovery::kRestart: return "restart";
    case Recovery::kInPlace: return "in_place";
  }
  return "restart";
}

const char* pull_policy_name(PullPolicy p) {
  switch (p) {
    case PullPolicy::kIfNotPresent: return "IfNotPresent";
    case PullPolicy::kAlways: return "Always";
    case PullPolicy::kNever: return "Never";
  }
  return "?";
}

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
