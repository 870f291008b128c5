#include "core/pass/class_memo.h"

namespace allot {

size_t ClassMemo::KeyHash::operator()(const Key& k) const {
  const uint64_t a = (uint64_t{k.team} << 32 | k.shape) * 0x9E3779B97F4A7C15ull;
  const uint64_t b = static_cast<uint64_t>(static_cast<uint32_t>(k.priority)) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<size_t>(a ^ (b >> 7) ^ b ^ (uint64_t{k.job} * 0x165667B19E3779F9ull));
}

ClassMemo::Classes ClassMemo::add_classes(Key key) {
  const auto [it, added] = admission_ids_.try_emplace(key, static_cast<uint32_t>(admission_ids_.size()));
  if (added) {
    admissions_.resize(2 * admission_ids_.size());
    within_.resize(admission_ids_.size());
  }
  preemptions_.emplace_back();
  return Classes{.admission = it->second, .preemption = static_cast<uint32_t>(preemptions_.size() - 1)};
}

}  // namespace allot
