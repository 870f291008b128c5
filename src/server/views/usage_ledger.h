#pragma once
// Usage reports (docs/api.md, "Usage"; `allot usage`): accelerator-hours used, borrowed, lent and lost, and
// queueing, kept as hourly aggregates keyed by (hour, team, user, priority class, instance type), the way Slurm's
// sreport reads its accounting rollups.
//
// The aggregates are a pure function of the journal's records and their times. Before each record the ledger
// accrues, from the previous record's time to this one's, at the rates then in force:
//
//     used_s(key)      += held(key) * dt           held: accelerators the key's running jobs hold
//     borrowed_s(T, I) += borrowed_T,I * dt         borrowed_T = max(0, U_T - N_T)      (core/quota/quota.h)
//     lent_s(T, I)     += lent_T,I * dt             what T's idle quota lends to others  (core/quota/quota.h)
//
// each split over the hours [t, t + dt) crosses. After the record the rates are updated: held changes when a run
// starts or ends (server_state.cpp calls started() and stopped()), borrowed and lent are read again from the
// cluster (refresh_rates). When a run ends, the work it loses (since its last checkpoint) is charged over the
// seconds it was done in, to "lost to failures" when a failure ended it and to "lost to preemption" when the
// cluster did (preemption, drain, resize, requeue). An admission adds its queue wait (from when the job last
// began waiting) and counts one admission, in the hour of the admission.
//
// A replay, a standby and a snapshot restore therefore give the same aggregates; the aggregates are kept apart
// from the jobs, so compaction of finished jobs (retention) does not change them, and snapshots carry them.
// Memory follows the hours and the (team, user, class, type) combinations active in each, never the jobs: rows
// are hourly, and names are interned once.
//
// "User" is the job's user (JobSpec::user, the user name of the token that submitted it), or, for a job without
// one, the id of the token that submitted it (the Submit record's actor); journals written before tokens existed
// have none, which reports as "unknown". Borrowed and lent belong to a team, not to one user's
// or class's jobs: they are kept on the team's own row, user and priority class "(team)".
//
// Thread-safety: none; the writer owns the ledger in its ServerState, readers read their copy of the read view.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/state.h"

namespace allot::server {

// One hour's figures of one key: seconds are accelerator-seconds except queued_s (seconds jobs waited).
struct UsageFigures {
  int64_t used_s = 0;
  int64_t borrowed_s = 0;
  int64_t lent_s = 0;
  int64_t lost_preemption_s = 0;
  int64_t lost_failure_s = 0;
  int64_t queued_s = 0;
  int64_t admitted = 0;
  UsageFigures& operator+=(const UsageFigures& o);
  bool empty() const { return *this == UsageFigures{}; }
  friend bool operator==(const UsageFigures&, const UsageFigures&) = default;
};

// What a report may be grouped by (`by=`), one table of spellings for the API, the CLI and the dashboard.
enum class UsageDim { kTeam, kUser, kPriority, kInstanceType };
inline constexpr UsageDim kAllUsageDims[] = {UsageDim::kTeam, UsageDim::kUser, UsageDim::kPriority, UsageDim::kInstanceType};
const char* usage_dim_name(UsageDim d);  // team, user, priority, instance_type
std::optional<UsageDim> parse_usage_dim(std::string_view name);
// "team,user,priority,instance_type": a list as `by=` takes it, each once. Empty: an error.
Result<std::vector<UsageDim>> parse_usage_dims(std::string_view list);

// What a run ending loses is charged to: a failure (the job's restarts or its end Failed), or the cluster stopping
// it (preemption, drain, resize, requeue, start timeout, a node leaving).
enum class UsageLoss { kPreemption, kFailure };

// The name the team's own rows (borrowed, lent) carry as user and priority class.
inline constexpr const char* kTeamRow = "(team)";
// The user of a job submitted by a record with no token (journals written before tokens existed).
inline constexpr const char* kUnknownUser = "unknown";

struct UsageReportRow {
  // Only the dimensions grouped by are set; the others are empty.
  std::string team, user, priority, instance_type;
  UsageFigures figures;
};
struct UsageReport {
  Time since = 0, until = 0;  // since: the start of its hour
  std::vector<UsageDim> by;
  std::vector<UsageReportRow> rows;  // in name order of the grouped dimensions
  UsageFigures total;
};

class UsageLedger {
 public:
  // --- Driven by the server's apply() (server_state.cpp), live and on replay alike --------------------------
  // Accrues used, borrowed and lent from the last accrual to `at` at the rates in force (none if `at` is earlier).
  void accrue_to(Time at);
  // A job was submitted by `user` (a token id; empty: kUnknownUser).
  void submitted(const Job& j, const std::string& user);
  // A run of `j` began at its current placement: the key's held rate rises. `admitted_on`: for a new admission (not
  // a resize), the instance type of the Admit record's first pod set, under which its queue wait (from when the
  // ledger saw the job begin waiting: its submission or the end of its last run) and its count go, in the hour of
  // `at`. Both come from the records, not from the job: the writer notes a pass's decisions after the pass, when
  // a job admitted early in it may already have been preempted again.
  void started(const ClusterState& s, const Job& j, Time at, const std::optional<std::string>& admitted_on);
  // The run of job `job` ended at `at`, having lost `lost_s` seconds of work (at its size): the held rate falls and
  // the lost accelerator-seconds are charged over [at - lost_s, at).
  void stopped(uint32_t job, Time at, int64_t lost_s, UsageLoss cause);
  // Borrowed and lent per team and instance type, read again from the cluster after a record.
  void refresh_rates(const ClusterState& s);
  // Compacted jobs (retention): their users are no longer needed (they never run again).
  void forget_jobs(const ClusterState& s);
  // A restored cluster: the runs in progress, from the running jobs' placements (as started() counts them).
  void rebuild_runs(const ClusterState& s);

  // --- Reading ---------------------------------------------------------------------------------------------
  // The report over the hours from the one holding `since` up to `until`, with what the rates in force add from
  // the last record to `now`. `visible`: teams the reader may see (null: all).
  UsageReport report(Time since, Time until, Time now, const std::vector<UsageDim>& by,
                     const std::function<bool(const std::string&)>& visible) const;

  // --- Snapshots (state_snapshot.cpp) ----------------------------------------------------------------------
  struct Row {
    Time hour = 0;
    std::string team, user, priority, instance_type;
    UsageFigures figures;
  };
  std::vector<Row> rows() const;  // in (hour, team, user, priority, type) order
  void add_row(const Row& r);     // throws std::invalid_argument for a row listed twice or a bad hour
  struct JobUser {
    uint32_t job = 0;
    std::string user;
    Time waiting_since = 0;
  };
  std::vector<JobUser> users() const;  // by job index
  void set_user(const JobUser& u) { users_.insert_or_assign(u.job, JobInfo{intern(u.user), u.waiting_since}); }
  Time accrued_to() const { return accrued_to_; }
  void set_accrued_to(Time t) { accrued_to_ = t; }

  size_t row_count() const { return rows_.size(); }
  size_t memory_bytes() const;  // an estimate: rows, names, users and runs

 private:
  struct Key {  // interned names
    uint32_t team = 0, user = 0, priority = 0, type = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct HourKey {
    Time hour = 0;
    Key key;
    auto operator<=>(const HourKey&) const = default;
  };
  uint32_t intern(const std::string& name);
  // Adds `rate` per second over [from, to) to `field` of the key's rows, split at hour boundaries.
  void spread(const Key& key, Time from, Time to, int64_t rate, int64_t UsageFigures::*field);
  void spread_over(std::map<HourKey, UsageFigures>& rows, const Key& key, Time from, Time to, int64_t rate,
                   int64_t UsageFigures::*field) const;

  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::map<HourKey, UsageFigures> rows_;
  Time accrued_to_ = 0;  // the last record's time (nothing accrues before the first: every rate is 0)
  std::map<Key, int64_t> held_;                               // accelerators held now, per key
  std::map<Key, std::pair<int64_t, int64_t>> team_rates_;     // (team, kTeamRow, kTeamRow, type): borrowed, lent now
  struct JobInfo {
    uint32_t user = 0;
    Time waiting_since = 0;  // its submission, or the end of its last run
  };
  // job index -> user (jobs not compacted); shared shard by shard with the state's copies (core/model/cow_map.h)
  CowMap<uint32_t, JobInfo> users_;
  std::unordered_map<uint32_t, std::vector<std::pair<Key, int64_t>>> runs_;  // running job -> what it holds
};

}  // namespace allot::server
