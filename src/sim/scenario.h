#pragma once
// A scenario file (DESIGN.md, "Scenario files"), parsed but not yet run: policy, cluster, teams and a list of
// timed events. Parsing checks everything that can be checked without running (unknown keys, types, ranges,
// host lists, instance types, event shapes) and reports the line of what is wrong.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/explanation.h"
#include "core/model/reservations.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::sim {

// A resource expectation: only the named resources are checked. Values in the external units
// (accelerators, vCPU, GiB), kept as milli-units/MiB so comparison is exact.
struct ResourceExpect {
  std::optional<int64_t> accelerators;
  std::optional<int64_t> vcpu_milli;
  std::optional<int64_t> memory_mib;
};

struct JobExpect {
  int line = 0;
  std::optional<std::string> state;  // Pending, Running, Suspended, Succeeded, Failed, Cancelled
  std::optional<std::vector<std::string>> nodes;  // exact set
  std::optional<int> node_count;
  std::map<std::string, int> distinct;  // level name (short or full) -> number of distinct domains
  std::optional<bool> borrowing;
  std::optional<int> preemptions;
  std::optional<int> restarts;
  std::optional<int> replicas;  // held now: of the elastic pod set, or of all pod sets of a fixed job
  std::optional<int> resizes;
  std::optional<int> membership_epoch;  // of the current run (core/lifecycle/in_place.h): its in-place recoveries
  std::optional<std::string> reason;  // case-insensitive substring
  std::optional<ReasonCode> reason_code;
  std::optional<int64_t> time_left;  // seconds before its wall-time limit, at the expect's time (core/lifecycle/time_limit.h)
};

struct TeamExpect {
  int line = 0;
  std::optional<ResourceExpect> usage, borrowed, lent;
  std::optional<ResourceExpect> quota;  // the nominal quota: the allocation plus the team's Active plans
};

struct PlanExpect {
  int line = 0;
  std::optional<std::string> state;  // Scheduled, Active, Ending, Expired
  std::optional<int> nodes;          // nodes of the plan in the cluster
};

struct Expect {
  std::map<std::string, JobExpect> jobs;   // in file order is not needed: checked all together
  std::map<std::string, TeamExpect> teams;
  std::map<std::string, PlanExpect> plans;
};

enum class EventKind { kSubmit, kCancel, kFinish, kFail, kFailNode, kRecoverNode, kAddNodes, kRemoveNodes, kExpect, kPlanDelete, kStartTimeout, kLogRule };
const char* event_kind_name(EventKind k);

// The most events a scenario file may hold (docs/scenarios.md, "Limits"): each keeps a job spec or a node list
// in memory for the whole run, and YAML aliases can repeat one event many times in a few bytes.
inline constexpr size_t kMaxScenarioEvents = 100'000;

struct Event {
  int64_t at = 0;
  int line = 0;  // 1-based line of the event entry in the file
  EventKind kind = EventKind::kExpect;
  JobSpec submit;                   // kSubmit
  std::string target;               // kCancel, kFinish, kFail, kStartTimeout, kLogRule (job); kFailNode, kRecoverNode (node); kPlanDelete
  LogRuleFiring log_rule;           // kLogRule: which rule fired, on which rank (the line is the scenario's own)
  std::vector<NodeSpec> nodes;      // kAddNodes; kRemoveNodes uses only the names
  Expect expect;                    // kExpect
};

struct Scenario {
  std::string name;
  PolicySpec policy;
  std::vector<InstanceType> instance_types;  // user-defined types (optional `instance_types:` section)
  std::vector<std::string> topology_levels;  // optional `cluster.topology_levels`; empty: the defaults
  std::vector<NodeSpec> nodes;
  std::vector<TeamSpec> teams;
  std::vector<PlanSpec> plans;  // optional `plans:` section (core/model/plans.h); times are virtual seconds
  // Optional `reservations:` section (core/model/reservations.h); times are virtual seconds.
  std::vector<ReservationSpec> reservations;
  std::vector<Event> events;  // sorted by `at`, file order kept among equal times
};

// Parses YAML text. `origin` names the file in error messages ("scenarios/x.yaml:12: ...").
Result<Scenario> parse_scenario(const std::string& yaml_text, const std::string& origin);
Result<Scenario> load_scenario_file(const std::string& path);

}  // namespace allot::sim
