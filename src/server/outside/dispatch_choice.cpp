#include "server/outside/dispatch_choice.h"

namespace allot::server {
namespace {

long long at(const std::map<std::string, long long>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// Why `w` cannot admit the job now (empty: it can), and the free accelerators of the types the job would use.
std::string judge(const JobDemand& d, const WorkerView& w, long long& free_used) {
  if (!w.answered) return "it did not answer";
  if (!w.has_team) return "it has no such team";
  free_used = 0;
  for (const auto& [type, need] : d.accelerators) {
    if (type.empty()) continue;
    if (at(w.free, type) < need)
      return "capacity: " + std::to_string(at(w.free, type)) + " free accelerators of " + type + ", the job asks " + std::to_string(need);
    if (at(w.headroom, type) < need)
      return "quota: the team may take " + std::to_string(at(w.headroom, type)) + " more accelerators of " + type +
             ", the job asks " + std::to_string(need);
    free_used += at(w.free, type);
  }
  if (auto any = d.accelerators.find(""); any != d.accelerators.end() && any->second > 0) {
    long long best = -1;
    for (const auto& [type, free] : w.free)
      if (free >= any->second && at(w.headroom, type) >= any->second && free > best) best = free;
    if (best < 0) return "no instance type has " + std::to_string(any->second) + " free accelerators within the team's quota";
    free_used += best;
  }
  return "";
}

}  // namespace

DispatchChoice choose_worker(const JobDemand& demand, const std::vector<WorkerView>& workers,
                             const std::set<std::string>& refused) {
  DispatchChoice out;
  long long best = -1;
  for (const WorkerView& w : workers) {
    long long free_used = 0;
    std::string why = refused.count(w.name) ? "it refused the job" : judge(demand, w, free_used);
    if (!why.empty()) {
      out.why += (out.why.empty() ? "" : "; ") + w.name + ": " + why;
      continue;
    }
    // Strictly more: among equals the first listed (workers come in name order) keeps it.
    if (free_used > best) {
      best = free_used;
      out.worker = w.name;
    }
  }
  if (out.worker) out.why.clear();
  return out;
}

}  // namespace allot::server
