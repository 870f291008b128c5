#include "sim/node_failures.h"

#include <algorithm>
#include <cmath>

namespace allot::sim {

double FailureDraws::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int64_t FailureDraws::time_to_failure() {
  // Inverse transform of the exponential distribution; 1 - u is in (0, 1], so the log is finite.
  double t = -mtbf_s_ * std::log(1.0 - uniform());
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::min(t, 1e15))));
}

}  // namespace allot::sim
