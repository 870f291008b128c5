#include "server/lifecycle/time_limits.h"

#include <spdlog/spdlog.h>

#include "core/lifecycle/time_limit.h"

namespace allot::server {

bool end_jobs_past_time_limit(Txn& txn) {
  const std::vector<JobId> due = past_time_limit(txn.cluster(), txn.now());
  if (due.empty()) return false;
  AsServer as(txn);
  bool any = false;
  for (JobId id : due) {
    const Job& j = txn.cluster().jobs[id.index()];
    const std::string name = j.spec.name;
    if (auto st = txn.apply(store::TimeLimitExceeded{name, j.time_limit_s}); !st) {
      spdlog::error("job {}: cannot end it at its time limit: {}", name, st.error().message);
      continue;
    }
    spdlog::info("job {} reached its time limit; stopped", name);
    any = true;
  }
  return any;
}

}  // namespace allot::server
