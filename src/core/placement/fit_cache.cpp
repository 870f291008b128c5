#include "core/placement/fit_cache.h"

#include "core/placement/placement.h"

namespace allot {

bool FitCache::never_fits(const ClusterState& s, const Job& job, TypeId type, const RoomTable& pristine, Explanation& why) {
  if (never_fits_version_ != s.shape_version) {
    never_fits_.clear();
    never_fits_version_ = s.shape_version;
  }
  const uint64_t key = uint64_t{job.shape} << 32 | type.index();
  auto it = never_fits_.find(key);
  if (it == never_fits_.end()) {
    PlacementOutcome p = place_job(s, pristine, job, type);  // once per shape: no scratch needed
    it = never_fits_.emplace(key, p.ok ? "" : "never fits: " + p.why.text.str() + "; the cluster does not have that capacity").first;
  }
  if (it->second.empty()) return false;
  why = explain(ReasonCode::kNeverFits, it->second, false);
  return true;
}

bool FitCache::waits_for_nodes(const ClusterState& s, const Job& job, TypeId type) {
  if (unusable_version_ != s.health_version) {
    waits_for_nodes_.clear();
    unusable_version_ = s.health_version;
    any_unusable_ = false;
    for (const Node& n : s.nodes) any_unusable_ |= !n.removed && !n.schedulable();
  }
  if (!any_unusable_) return false;
  const uint64_t key = uint64_t{job.shape} << 32 | type.index();
  auto it = waits_for_nodes_.find(key);
  if (it == waits_for_nodes_.end()) {
    RoomTable healthy = pristine_room(s);
    for (const Node& n : s.nodes) healthy[n.id.index()].usable = n.schedulable();
    it = waits_for_nodes_.emplace(key, !place_job(s, healthy, job, type).ok).first;
  }
  return it->second;
}

}  // namespace allot
