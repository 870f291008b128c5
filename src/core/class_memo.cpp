#include "core/class_memo.h"

namespace allot {

size_t ClassMemo::KeyHash::operator()(const Key& k) const {
  const uint64_t a = (uint64_t{k.team} << 32 | k.shape) * 0x9E3779B97F4A7C15ull;
  const uint64_t b = static_cast<uint64_t>(static_cast<uint32_t>(k.priority)) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<size_t>(a ^ (b >> 7) ^ b);
}

uint32_t ClassMemo::class_of(const Job& j, Key key, std::unordered_map<Key, uint32_t, KeyHash>& ids,
                             std::vector<uint32_t>& by_job) {
  const size_t i = j.id.index();
  if (i >= by_job.size()) by_job.resize(i + 1, 0);
  if (by_job[i] == 0) by_job[i] = ids.try_emplace(key, static_cast<uint32_t>(ids.size())).first->second + 1;
  return by_job[i] - 1;
}

ClassMemo::Admission& ClassMemo::admission(const Job& j, BorrowMode mode) {
  const uint32_t c = class_of(j, Key{j.team.value, j.shape, 0}, admission_ids_, admission_by_job_);
  if (2 * c + 1 >= admissions_.size()) admissions_.resize(2 * c + 2);
  return admissions_[2 * c + (mode == BorrowMode::kAllowBorrowing ? 1 : 0)];
}

ClassMemo::Preemption& ClassMemo::preemption(const Job& j) {
  const uint32_t c = class_of(j, Key{j.team.value, j.shape, j.priority}, preemption_ids_, preemption_by_job_);
  if (c >= preemptions_.size()) preemptions_.resize(c + 1);
  return preemptions_[c];
}

}  // namespace allot
