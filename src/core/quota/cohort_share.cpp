#include "core/quota/cohort_share.h"

#include "core/model/state.h"

namespace allot {

std::vector<GroupShare> group_shares(const ClusterState& s, const UsageTable& usage) {
  std::vector<GroupShare> out(s.cohorts.groups.size(), GroupShare{Share{0, 1}, Share{0, 1}});
  for (size_t i = 0; i < s.catalog.size(); ++i) {
    const TypeId type(static_cast<uint32_t>(i));
    const Resources pool = pool_capacity(s, type);
    const CohortFigures f = cohort_figures(s, usage, type, idle_capacity(s, type));
    for (size_t g = 0; g < out.size(); ++g) {
      const Resources b = max0(f.used[g] - f.subtree[g]);
      for (Resource r : kAllResources) {
        if (pool.get(r) <= 0 || b.get(r) <= 0) continue;
        const Share sh{b.get(r), pool.get(r)};
        if (out[g].borrowed < sh) out[g].borrowed = sh;
      }
    }
  }
  for (size_t g = 0; g < out.size(); ++g) {
    const int w = s.cohorts.groups[g].spec.fair_share_weight;
    out[g].share = w <= 0 ? Share{1, 0} : Share{out[g].borrowed.num, out[g].borrowed.den * w};
  }
  return out;
}

}  // namespace allot
