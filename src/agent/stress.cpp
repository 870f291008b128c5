#include "agent/stress.h"

#include <chrono>
#include <cstdint>
#include <ostream>
#include <vector>

namespace allot::agent {

namespace {

uint64_t next(uint64_t& x) {  // xorshift64*
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 2685821657736338717ULL;
}

// The same product in i-j-k and i-k-j order; integer arithmetic, so both orders must agree exactly.
bool matrices_agree(uint64_t seed, int n) {
  std::vector<uint32_t> a(n * n), b(n * n);
  for (auto& v : a) v = static_cast<uint32_t>(next(seed));
  for (auto& v : b) v = static_cast<uint32_t>(next(seed));
  std::vector<uint64_t> c1(n * n, 0), c2(n * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      uint64_t s = 0;
      for (int k = 0; k < n; ++k) s += static_cast<uint64_t>(a[i * n + k]) * b[k * n + j];
      c1[i * n + j] = s;
    }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const uint64_t aik = a[i * n + k];
      for (int j = 0; j < n; ++j) c2[i * n + j] += aik * b[k * n + j];
    }
  return c1 == c2;
}

}  // namespace

int run_stress(double seconds, bool inject_fault, std::ostream& out) {
  constexpr size_t kWords = 8 * 1024 * 1024;  // 64 MiB
  std::vector<uint64_t> buf(kWords);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  int rounds = 0;
  do {
    const uint64_t start = seed;
    uint64_t x = start;
    for (auto& w : buf) w = next(x);
    if (inject_fault && rounds == 0) buf[kWords / 3] ^= uint64_t{1} << 17;
    x = start;
    for (size_t i = 0; i < kWords; ++i) {
      if (buf[i] != next(x)) {
        out << "deep check: memory pattern mismatch at word " << i << " in round " << rounds + 1 << "\n";
        return 1;
      }
    }
    if (!matrices_agree(seed, 96)) {
      out << "deep check: matrix products disagree in round " << rounds + 1 << "\n";
      return 1;
    }
    seed = next(x) | 1;
    ++rounds;
  } while (std::chrono::steady_clock::now() < until);
  out << "deep check: " << rounds << " rounds of memory pattern and matrix checks agreed\n";
  return 0;
}

}  // namespace allot::agent
