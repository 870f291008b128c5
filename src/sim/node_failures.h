#pragma once
// Seeded node-failure draws for trace replays: when each node fails next, and whether the failure needs a
// replacement. Exactly reproducible on every platform: std::mt19937_64's output is fixed by the standard, and
// the uniform and exponential draws below are computed here rather than by the standard library's
// distributions, whose algorithms each library chooses for itself.
#include <cstdint>
#include <random>

namespace allot::sim {

class FailureDraws {
 public:
  FailureDraws(uint64_t seed, double mtbf_s, double replace_share)
      : rng_(seed ^ 0x9e3779b97f4a7c15ULL), mtbf_s_(mtbf_s), replace_share_(replace_share) {}

  // Seconds until the next failure of a node that is up now; at least 1.
  int64_t time_to_failure();
  // True when this failure needs a replacement (else a reboot fixes it).
  bool needs_replacement() { return uniform() < replace_share_; }

 private:
  double uniform();  // in [0, 1), 53 random bits
  std::mt19937_64 rng_;
  double mtbf_s_;
  double replace_share_;
};

}  // namespace allot::sim
