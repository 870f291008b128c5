#pragma once
// Runs a parsed scenario on a virtual clock: events at the same `at` apply together in file order, jobs with a
// duration finish when their work is done, the scheduler runs to a fixed point after every change, and each
// `expect` is checked against the state after that.
#include <string>
#include <vector>

#include "core/preemption/preemption_record.h"
#include "core/model/state.h"
#include "sim/scenario.h"

namespace allot::sim {

struct ScenarioReport {
  bool passed = true;
  int checks = 0;                     // expectations evaluated (one per job or team entry)
  std::vector<std::string> failures;  // "line 42, t=20: job a-1: state is Pending, expected Running (...)"
  std::vector<std::string> log;       // what happened, in order, for people
  // For stderr: events ignored because their job or node was not in a state they apply to, and scheduler
  // passes that stopped at their step bound (a bug; ScheduleResult::bound_hit).
  std::vector<std::string> warnings;
  // Every preemption group, in the order the passes applied them, with the time of its pass.
  struct Preemption {
    Time at = 0;
    PreemptionGroup group;
  };
  std::vector<Preemption> preemptions;
  ClusterState final_state;
  Time end_time = 0;
};

// Fails (an Error, exit code 2) when the scenario cannot be run as written: an event names a job or node that
// does not exist, a submission is rejected, a team or node is invalid. An event on a job or node in a state it
// does not apply to is not an error: it is ignored and listed in `warnings`. Expectations that do not hold are
// not errors either: they are listed in the report.
Result<ScenarioReport> run_scenario(const Scenario& scenario);

// The state a scenario starts from: its instance types, topology levels, policy, nodes and teams.
Result<ClusterState> cluster_from_scenario(const Scenario& scenario);

// Applies one event other than `expect` at its time, and says what happened in `log`. An event whose job or node
// is not in a state it applies to (finish or fail of a job that is not running, cancel of an ended job, fail_node
// of a failed node, recover_node of a healthy one) changes nothing and adds a warning to `warnings`.
Status apply_event(ClusterState& s, const Event& e, std::vector<std::string>& log, std::vector<std::string>& warnings);

// Applies every plan step due by `now` (core/model/plans.h) in time order, adding a plan's nodes (<plan>-1 ..) as it
// starts, and says what happened in `log`. The scenario runner and the trace replay share it.
Status apply_due_plan_steps(ClusterState& s, Time now, std::vector<std::string>& log);
// The same for reservations of existing nodes (core/model/reservations.h): starts (requeuing the jobs a reservation does
// not admit from its nodes) and ends.
Status apply_due_reservation_steps(ClusterState& s, Time now, std::vector<std::string>& log);

}  // namespace allot::sim
