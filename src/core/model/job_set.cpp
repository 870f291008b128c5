#include "core/model/job_set.h"

#include <algorithm>

namespace allot {

std::vector<JobId> JobSet::sorted() const {
  std::vector<JobId> out = members_;
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace allot
