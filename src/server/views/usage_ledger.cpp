#include "server/views/usage_ledger.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "core/quota/quota.h"

namespace allot::server {

namespace {
constexpr Time kUsageHour = 3600;
// The start of the hour that holds `t`.
Time usage_hour_of(Time t) { return t >= 0 ? t / kUsageHour * kUsageHour : (t - kUsageHour + 1) / kUsageHour * kUsageHour; }
}  // namespace

UsageFigures& UsageFigures::operator+=(const UsageFigures& o) {
  used_s += o.used_s;
  borrowed_s += o.borrowed_s;
  lent_s += o.lent_s;
  lost_preemption_s += o.lost_preemption_s;
  lost_failure_s += o.lost_failure_s;
  queued_s += o.queued_s;
  admitted += o.admitted;
  return *this;
}

const char* usage_dim_name(UsageDim d) {
  switch (d) {
    case UsageDim::kTeam: return "team";
    case UsageDim::kUser: return "user";
    case UsageDim::kPriority: return "priority";
    case UsageDim::kInstanceType: return "instance_type";
  }
  return "team";
}

std::optional<UsageDim> parse_usage_dim(std::string_view name) {
  for (UsageDim d : kAllUsageDims)
    if (name == usage_dim_name(d)) return d;
  return std::nullopt;
}

Result<std::vector<UsageDim>> parse_usage_dims(std::string_view list) {
  std::vector<UsageDim> out;
  const std::string allowed = "team, user, priority, instance_type";
  if (list.empty()) return Error::invalid("by: empty; expected a comma-separated list of " + allowed);
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, comma - start);
    auto d = parse_usage_dim(item);
    if (!d) return Error::invalid("by: unknown key '" + std::string(item) + "'; expected some of " + allowed);
    if (std::find(out.begin(), out.end(), *d) != out.end())
      return Error::invalid("by: '" + std::string(item) + "' is listed twice");
    out.push_back(*d);
    start = comma + 1;
  }
  return out;
}

uint32_t UsageLedger::intern(const std::string& name) {
  auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (added) names_.push_back(name);
  return it->second;
}

void UsageLedger::spread_over(std::map<HourKey, UsageFigures>& rows, const Key& key, Time from, Time to, int64_t rate,
                              int64_t UsageFigures::*field) const {
  if (rate == 0) return;
  for (Time t = from; t < to;) {
    const Time hour = usage_hour_of(t);
    const Time end = std::min(to, hour + kUsageHour);
    rows[HourKey{hour, key}].*field += rate * (end - t);
    t = end;
  }
}

void UsageLedger::spread(const Key& key, Time from, Time to, int64_t rate, int64_t UsageFigures::*field) {
  spread_over(rows_, key, from, to, rate, field);
}

void UsageLedger::accrue_to(Time at) {
  if (at <= accrued_to_) return;  // the same second, or a clock that went back: nothing to add
  for (const auto& [key, accel] : held_) spread(key, accrued_to_, at, accel, &UsageFigures::used_s);
  for (const auto& [key, rates] : team_rates_) {
    spread(key, accrued_to_, at, rates.first, &UsageFigures::borrowed_s);
    spread(key, accrued_to_, at, rates.second, &UsageFigures::lent_s);
  }
  accrued_to_ = at;
}

void UsageLedger::submitted(const Job& j, const std::string& user) {
  users_.insert_or_assign(j.id.index(), JobInfo{intern(user.empty() ? kUnknownUser : user), j.submitted_at});
}

void UsageLedger::started(const ClusterState& s, const Job& j, Time at, const std::optional<std::string>& admitted_on) {
  const uint32_t job = j.id.index();
  const JobInfo* user = users_.find(job);
  // A job restored from a snapshot written before users were kept cannot be: such snapshots are refused.
  const uint32_t user_id = user ? user->user : intern(kUnknownUser);
  const uint32_t team = intern(s.teams[j.team.index()].spec.name);
  const uint32_t priority = intern(j.spec.priority.empty() ? "none" : j.spec.priority);
  auto& run = runs_[job];
  for (const auto& [key, accel] : run) held_[key] -= accel;  // a run in progress is replaced (never so, defensively)
  run.clear();
  for (const auto& ps : j.placement.pod_sets) {
    const int64_t accel = ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size());
    if (accel == 0) continue;
    const Key key{team, user_id, priority, intern(s.catalog.at(ps.type).name)};
    auto same = std::find_if(run.begin(), run.end(), [&](const auto& r) { return r.first == key; });
    if (same == run.end()) run.emplace_back(key, accel);
    else same->second += accel;
    held_[key] += accel;
  }
  if (admitted_on) {
    // A job's wait is counted once, under the instance type of its first pod set.
    const Key key{team, user_id, priority, intern(*admitted_on)};
    UsageFigures& f = rows_[HourKey{usage_hour_of(at), key}];
    f.queued_s += user ? std::max<Time>(0, at - user->waiting_since) : 0;
    ++f.admitted;
  }
}

void UsageLedger::stopped(uint32_t job, Time at, int64_t lost_s, UsageLoss cause) {
  if (JobInfo* u = users_.find_mutable(job)) u->waiting_since = at;  // it waits again, or has ended
  auto it = runs_.find(job);
  if (it == runs_.end()) return;
  int64_t UsageFigures::*field = nullptr;
  switch (cause) {
    case UsageLoss::kPreemption: field = &UsageFigures::lost_preemption_s; break;
    case UsageLoss::kFailure: field = &UsageFigures::lost_failure_s; break;
  }
  for (const auto& [key, accel] : it->second) {
    auto h = held_.find(key);
    if (h != held_.end() && (h->second -= accel) == 0) held_.erase(h);
    spread(key, at - std::max<int64_t>(0, lost_s), at, accel, field);
  }
  runs_.erase(it);
}

void UsageLedger::refresh_rates(const ClusterState& s) {
  team_rates_.clear();
  const uint32_t team_row = intern(kTeamRow);
  for (size_t t = 0; t < s.capacity.size(); ++t) {
    const TypeId type(static_cast<uint32_t>(t));
    // Borrowing needs capacity of the type, in the cluster or in an ownerless plan's pool.
    if (s.capacity[t].accelerators == 0 && (t >= s.plan_idle.size() || s.plan_idle[t].accelerators == 0)) continue;
    const std::vector<Resources> lent = lent_by_team(s, s.usage, type);
    for (const Team& team : s.teams) {
      const int64_t b = borrowed(s, s.usage, team.id, type).accelerators;
      const int64_t l = team.id.index() < lent.size() ? lent[team.id.index()].accelerators : 0;
      if (b == 0 && l == 0) continue;
      team_rates_[Key{intern(team.spec.name), team_row, team_row, intern(s.catalog.at(type).name)}] = {b, l};
    }
  }
}

void UsageLedger::forget_jobs(const ClusterState& s) {
  users_.erase_if([&](uint32_t job, const JobInfo&) { return job < s.jobs.size() && s.jobs[job].compacted; });
}

void UsageLedger::rebuild_runs(const ClusterState& s) {
  runs_.clear();
  held_.clear();
  for (const Job& j : s.jobs)
    if (j.state == JobState::kRunning) started(s, j, 0, std::nullopt);
  refresh_rates(s);
}

UsageReport UsageLedger::report(Time since, Time until, Time now, const std::vector<UsageDim>& by,
                                const std::function<bool(const std::string&)>& visible) const {
  UsageReport out;
  out.since = usage_hour_of(since);
  out.until = until;
  out.by = by;
  // What the rates in force add from the last record up to now (not kept: the next record accrues it).
  std::map<HourKey, UsageFigures> pending;
  if (now > accrued_to_) {
    for (const auto& [key, accel] : held_) spread_over(pending, key, accrued_to_, now, accel, &UsageFigures::used_s);
    for (const auto& [key, rates] : team_rates_) {
      spread_over(pending, key, accrued_to_, now, rates.first, &UsageFigures::borrowed_s);
      spread_over(pending, key, accrued_to_, now, rates.second, &UsageFigures::lent_s);
    }
  }
  auto wants = [&](UsageDim d) { return std::find(by.begin(), by.end(), d) != by.end(); };
  using Group = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Group, UsageFigures> groups;
  std::unordered_map<uint32_t, bool> team_visible;
  auto add = [&](const std::map<HourKey, UsageFigures>& rows) {
    for (auto it = rows.lower_bound(HourKey{out.since, Key{}}); it != rows.end() && it->first.hour < until; ++it) {
      const Key& k = it->first.key;
      if (visible) {
        auto [v, fresh] = team_visible.try_emplace(k.team, false);
        if (fresh) v->second = visible(names_[k.team]);
        if (!v->second) continue;
      }
      Group g{wants(UsageDim::kTeam) ? names_[k.team] : "", wants(UsageDim::kUser) ? names_[k.user] : "",
              wants(UsageDim::kPriority) ? names_[k.priority] : "",
              wants(UsageDim::kInstanceType) ? names_[k.type] : ""};
      groups[std::move(g)] += it->second;
      out.total += it->second;
    }
  };
  add(rows_);
  add(pending);
  for (auto& [g, f] : groups)
    out.rows.push_back(UsageReportRow{std::get<0>(g), std::get<1>(g), std::get<2>(g), std::get<3>(g), f});
  return out;
}

std::vector<UsageLedger::Row> UsageLedger::rows() const {
  std::vector<Row> out;
  out.reserve(rows_.size());
  for (const auto& [hk, f] : rows_)
    out.push_back(Row{hk.hour, names_[hk.key.team], names_[hk.key.user], names_[hk.key.priority], names_[hk.key.type], f});
  // By names, not interned IDs: a restored ledger interns in another order and must encode to the same text.
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
    return std::tie(a.hour, a.team, a.user, a.priority, a.instance_type) < std::tie(b.hour, b.team, b.user, b.priority, b.instance_type);
  });
  return out;
}

void UsageLedger::add_row(const Row& r) {
  if (usage_hour_of(r.hour) != r.hour) throw std::invalid_argument("a usage row's hour " + std::to_string(r.hour) + " is not the start of an hour");
  const HourKey hk{r.hour, Key{intern(r.team), intern(r.user), intern(r.priority), intern(r.instance_type)}};
  if (!rows_.emplace(hk, r.figures).second)
    throw std::invalid_argument("the usage row of hour " + std::to_string(r.hour) + ", team " + r.team + ", user " + r.user +
                                " is listed twice");
}

std::vector<UsageLedger::JobUser> UsageLedger::users() const {
  std::vector<JobUser> out;
  out.reserve(users_.size());
  users_.for_each([&](uint32_t job, const JobInfo& info) { out.push_back(JobUser{job, names_[info.user], info.waiting_since}); });
  std::sort(out.begin(), out.end(), [](const JobUser& a, const JobUser& b) { return a.job < b.job; });
  return out;
}

size_t UsageLedger::memory_bytes() const {
  // A std::map node: the value plus three pointers and a colour; an unordered_map node: the value, a next pointer
  // and a bucket slot.
  constexpr size_t kMapNode = 4 * sizeof(void*);
  size_t bytes = rows_.size() * (sizeof(HourKey) + sizeof(UsageFigures) + kMapNode);
  for (const auto& n : names_) bytes += sizeof(std::string) + n.capacity() + sizeof(uint32_t) + 3 * sizeof(void*);
  bytes += users_.size() * (sizeof(uint32_t) + sizeof(JobInfo) + 2 * sizeof(void*));
  for (const auto& [job, run] : runs_) bytes += sizeof(job) + sizeof(run) + 2 * sizeof(void*) + run.capacity() * sizeof(run[0]);
  bytes += (held_.size() + team_rates_.size()) * (sizeof(Key) + 2 * sizeof(int64_t) + kMapNode);
  return bytes;
}

}  // namespace allot::server
