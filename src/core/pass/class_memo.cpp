#include "core/pass/class_memo.h"

namespace allot {

size_t ClassMemo::KeyHash::operator()(const Key& k) const {
  const uint64_t a = (uint64_t{k.team} << 32 | k.shape) * 0x9E3779B97F4A7C15ull;
  const uint64_t b = static_cast<uint64_t>(static_cast<uint32_t>(k.priority)) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<size_t>(a ^ (b >> 7) ^ b ^ (uint64_t{k.job} * 0x165667B19E3779F9ull));
}

ClassMemo::Admission& ClassMemo::admission(uint32_t c, BorrowMode mode) {
  if (2 * c + 1 >= admissions_.size()) admissions_.resize(2 * size_t{c} + 2);
  return admissions_[2 * size_t{c} + (mode == BorrowMode::kAllowBorrowing ? 1 : 0)];
}

ClassMemo::WithinNominal& ClassMemo::within_nominal(uint32_t c) {
  if (c >= within_.size()) within_.resize(size_t{c} + 1);
  return within_[c];
}

ClassMemo::Preemption& ClassMemo::preemption(uint32_t c) {
  if (c >= preemptions_.size()) preemptions_.resize(size_t{c} + 1);
  return preemptions_[c];
}

}  // namespace allot
