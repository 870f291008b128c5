#include "core/quota/user_limits.h"

#include <algorithm>
#include <set>

#include "core/admission/admission.h"

namespace allot {
namespace {

inline constexpr int64_t kMaxUserLimit = 1000000;

bool user_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '@';
}

std::string plural(int64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

Status check_user_name(std::string_view name, std::string_view where) {
  if (name.empty() || name.size() > kMaxUserName || !std::all_of(name.begin(), name.end(), user_char))
    return Error::invalid(std::string(where) + ": user name '" + printable(name) + "' is not allowed; a user name is 1.." +
                          std::to_string(kMaxUserName) + " characters of letters, digits, '.', '_', '-' and '@'");
  return ok_status();
}

Result<std::vector<UserLimits>> resolve_user_limits(const Catalog& catalog, const TeamSpec& team) {
  std::vector<UserLimits> out;
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < team.user_limits.size(); ++i) {
    const UserLimitSpec& e = team.user_limits[i];
    const std::string where = "team " + team.name + ", user_limits[" + std::to_string(i) + "]";
    if (auto st = check_user_name(e.user, where + ".user"); !st) return st.error();
    if (!seen.insert(e.user).second) return Error::invalid(where + ": user " + e.user + " is listed twice; give each user one entry");
    auto count = [&](const std::optional<int64_t>& v, const char* key) -> Status {
      if (v && (*v < 0 || *v > kMaxUserLimit))
        return Error::invalid(where + "." + key + " must be 0.." + std::to_string(kMaxUserLimit) + ", got " + std::to_string(*v));
      return ok_status();
    };
    if (auto st = count(e.running_jobs, "running_jobs"); !st) return st.error();
    if (auto st = count(e.pending_jobs, "pending_jobs"); !st) return st.error();
    UserLimits l{.user = e.user, .running_jobs = e.running_jobs, .pending_jobs = e.pending_jobs, .accelerators = {}};
    for (const auto& [type_name, n] : e.accelerators) {
      auto type = catalog.lookup(type_name);
      if (!type) return Error::invalid(where + ".accelerators: " + type.error().message);
      if (n < 0 || n > kMaxUserLimit)
        return Error::invalid(where + ".accelerators." + type_name + " must be 0.." + std::to_string(kMaxUserLimit) + ", got " +
                              std::to_string(n));
      if (std::any_of(l.accelerators.begin(), l.accelerators.end(), [&](const auto& p) { return p.first == *type; }))
        return Error::invalid(where + ".accelerators: instance type " + catalog.at(*type).name + " is listed twice");
      l.accelerators.emplace_back(*type, n);
    }
    if (!l.running_jobs && !l.pending_jobs && l.accelerators.empty())
      return Error::invalid(where + ": user " + e.user + " has no limit; give running_jobs, pending_jobs or accelerators");
    out.push_back(std::move(l));
  }
  return out;
}

const UserLimits* limits_of(const Team& team, std::string_view user) {
  if (user.empty()) return nullptr;
  for (const UserLimits& l : team.user_limits)
    if (l.user == user) return &l;
  return nullptr;
}

// --- The tally ---------------------------------------------------------------------------------------------------

std::string UserTally::key(TeamId team, std::string_view user) {
  std::string k = std::to_string(team.value);
  k += '/';
  k += user;
  return k;
}

UserTally UserTally::count(const ClusterState& s) {
  UserTally t;
  for (JobId id : s.running_jobs) t.add(s, s.jobs[id.index()]);
  return t;
}

void UserTally::add(const ClusterState& s, const Job& j) {
  if (!limits_of(s.teams[j.team.index()], j.spec.user)) return;
  Held& h = held_[key(j.team, j.spec.user)];
  h.accelerators.resize(s.catalog.size(), 0);
  ++h.running;
  for (const auto& ps : j.placement.pod_sets)
    h.accelerators[ps.type.index()] += ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size());
}

void UserTally::remove(const ClusterState& s, const Job& j) {
  auto it = held_.find(key(j.team, j.spec.user));
  if (it == held_.end()) return;
  Held& h = it->second;
  --h.running;
  for (const auto& ps : j.placement.pod_sets)
    h.accelerators[ps.type.index()] -= ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size());
}

const UserTally::Held& UserTally::of(TeamId team, std::string_view user) const {
  auto it = held_.find(key(team, user));
  return it == held_.end() ? none_ : it->second;
}

// --- The gate ----------------------------------------------------------------------------------------------------

UserGate judge_user_limits(const ClusterState& s, const UserTally& tally, const Job& job) {
  UserGate g;
  const Team& team = s.teams[job.team.index()];
  const UserLimits* l = limits_of(team, job.spec.user);
  if (!l) return g;
  const UserTally::Held& h = tally.of(job.team, job.spec.user);
  const std::string who = "user " + job.spec.user + " of team " + team.spec.name;
  if (l->running_jobs && h.running + 1 > *l->running_jobs) {
    g.closed = true;
    g.why = explain(ReasonCode::kUserLimit, "waiting: " + who + " has " + plural(h.running, "running job", "running jobs") +
                                                ", at its limit of " + std::to_string(*l->running_jobs) + " (running_jobs)");
    return g;
  }
  if (l->accelerators.empty()) return g;
  auto held_of = [&](TypeId t) { return t.index() < h.accelerators.size() ? h.accelerators[t.index()] : 0; };
  // Each type the job may use: open there when every type its pod sets would take stays within the user's limit.
  std::string first_over;
  size_t served = 0;
  for (TypeId type : candidate_types(s, job)) {
    const auto request = job_request(s, job, type, nullptr);
    if (request.empty()) continue;  // the type cannot serve it: placement says why
    ++served;
    std::string over;
    for (const auto& [t, r] : request)
      for (const auto& [lt, limit] : l->accelerators)
        if (lt == t && r.accelerators > 0 && held_of(t) + r.accelerators > limit && over.empty())
          over = who + " holds " + plural(held_of(t), "accelerator", "accelerators") + " of " + s.catalog.at(t).name +
                 " and this job needs " + std::to_string(r.accelerators) + " more, over its limit of " +
                 std::to_string(limit) + " (accelerators)";
    if (over.empty()) g.only_types.push_back(type);
    else if (first_over.empty()) first_over = std::move(over);
  }
  if (g.only_types.empty() && served > 0) {
    g.closed = true;
    g.why = explain(ReasonCode::kUserLimit, "waiting: " + first_over);
  } else if (g.only_types.size() == served) {
    g.only_types.clear();  // open on every type it may use
  }
  return g;
}

Status check_pending_limit(const ClusterState& s, const Team& team, const JobSpec& spec, int64_t jobs) {
  const UserLimits* l = limits_of(team, spec.user);
  if (!l || !l->pending_jobs) return ok_status();
  int64_t waiting = 0;
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    waiting += j.team == team.id && j.spec.user == spec.user;
  }
  if (waiting + jobs <= *l->pending_jobs) return ok_status();
  if (jobs > 1)
    return Error::precondition("job " + spec.name + ": user " + spec.user + " of team " + team.spec.name + " has " +
                               plural(waiting, "waiting job", "waiting jobs") + ", and the " + std::to_string(jobs) +
                               " tasks of this array would take it past its limit of " + std::to_string(*l->pending_jobs) +
                               " (user_limits pending_jobs); submit a smaller array, or ask an admin to raise it");
  return Error::precondition("job " + spec.name + ": user " + spec.user + " of team " + team.spec.name + " has " +
                             plural(waiting, "waiting job", "waiting jobs") + ", at its limit of " +
                             std::to_string(*l->pending_jobs) +
                             " (user_limits pending_jobs); submit again once one runs or ends, or ask an admin to raise it");
}

}  // namespace allot
