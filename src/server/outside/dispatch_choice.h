#pragma once
// Which worker cluster a manager's job goes to (docs/multicluster.md, "Choosing a worker"): a pure function of what
// the job asks for and what each worker's read endpoints answered this round, so that it is tested without servers.
//
// A worker can admit the job now when it answered, has the job's team, was not refused for the job before, and for
// every instance type the job names both its free accelerators (GET /v1/dashboard/cluster) and the team's headroom
// there (its `max`, nominal quota plus what it may borrow, less its usage: GET /v1/teams/{team}) hold what the job
// asks of that type. A job that names no type asks its accelerators of any one type that holds them. Among the
// workers that can, the one with the most free accelerators of the job's types takes it (ties: the first by name),
// which spreads jobs over workers as they fill. No worker may: the job waits, and `why` names each worker's reason.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace allot::server {

// What a job asks for, in accelerators: per instance type it names, and (key "") what its pod sets without a type
// ask of any one type.
struct JobDemand {
  std::map<std::string, long long> accelerators;
};

// One worker as its read endpoints answered this round.
struct WorkerView {
  std::string name;
  bool answered = false;  // both views came back
  bool has_team = false;  // GET /v1/teams/{team} found the team
  std::map<std::string, long long> free;      // free accelerators per instance type (schedulable nodes)
  std::map<std::string, long long> headroom;  // the team's max less its usage, per instance type it has quota of
};

struct DispatchChoice {
  std::optional<std::string> worker;  // the worker to dispatch to; none: the job waits
  std::string why;                    // when none: each worker's reason, "east: ...; west: ..."
};

DispatchChoice choose_worker(const JobDemand& demand, const std::vector<WorkerView>& workers,
                             const std::set<std::string>& refused);

}  // namespace allot::server
