#include "core/placement/numa.h"

#include <algorithm>
#include <bit>
#include <string>

namespace allot {
namespace {

int free_in(const NumaDomain& d, uint64_t mask) {
  int n = 0;
  for (int a : d.accelerators) n += (mask >> a) & 1;
  return n;
}

std::string cpu_ranges(const InstanceType& type, const std::vector<int>& domains) {
  std::vector<std::pair<int, int>> ranges;
  for (int d : domains) ranges.emplace_back(type.numa[d].first_vcpu, type.numa[d].first_vcpu + type.numa[d].vcpus - 1);
  std::sort(ranges.begin(), ranges.end());
  std::string out;
  for (size_t i = 0; i < ranges.size(); ++i) {
    // Adjacent domains merge into one range: 0-95 and 96-191 print as 0-191.
    int lo = ranges[i].first, hi = ranges[i].second;
    while (i + 1 < ranges.size() && ranges[i + 1].first == hi + 1) hi = ranges[++i].second;
    out += (out.empty() ? "" : ",") + std::to_string(lo) + "-" + std::to_string(hi);
  }
  return out;
}

}  // namespace

void bind_replica(const InstanceType& type, uint64_t free_mask, int count, bool whole_node, ReplicaBinding& b) {
  b.accelerators.clear();
  b.numa_domains.clear();
  const int domains = static_cast<int>(type.numa.size());
  if (whole_node) {
    for (int a = 0; a < type.accelerators; ++a) b.accelerators.push_back(a);
    for (int d = 0; d < domains; ++d) b.numa_domains.push_back(d);
    b.cpus = cpu_ranges(type, b.numa_domains);
    return;
  }
  std::vector<int> order(domains);
  for (int d = 0; d < domains; ++d) order[d] = d;
  if (count == 0) {
    // A CPU-only replica goes to the domain with the most free accelerators' CPUs left alone: the emptiest.
    int best = 0;
    for (int d = 1; d < domains; ++d)
      if (free_in(type.numa[d], free_mask) > free_in(type.numa[best], free_mask)) best = d;
    b.numa_domains = {best};
    b.cpus = cpu_ranges(type, b.numa_domains);
    return;
  }
  // One domain if any can hold the replica: the tightest such (best fit keeps whole domains free for later).
  int single = -1;
  for (int d = 0; d < domains; ++d) {
    int f = free_in(type.numa[d], free_mask);
    if (f >= count && (single < 0 || f < free_in(type.numa[single], free_mask))) single = d;
  }
  if (single >= 0) {
    order = {single};
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return free_in(type.numa[x], free_mask) > free_in(type.numa[y], free_mask);
    });
  }
  int left = count;
  for (int d : order) {
    if (left == 0) break;
    bool used = false;
    for (int a : type.numa[d].accelerators) {
      if (left == 0) break;
      if ((free_mask >> a) & 1) {
        b.accelerators.push_back(a);
        --left;
        used = true;
      }
    }
    if (used) b.numa_domains.push_back(d);
  }
  std::sort(b.accelerators.begin(), b.accelerators.end());
  std::sort(b.numa_domains.begin(), b.numa_domains.end());
  b.cpus = cpu_ranges(type, b.numa_domains);
}

}  // namespace allot
