#pragma once
// Answers by job class, for one scheduler pass.
//
// try_admit answers every waiting job of one team with the same shape (model.h, Job::shape) alike, and
// plan_preemption every such job of the same priority: they read the team's quota and usage, the room and the
// policy, never the job's name or arrival (a waiting job holds no exclusive domain). So while the state is
// unchanged, the answer worked out for one job of a class is the answer for all of them, word for word.
// Thousands of queued jobs fall into a few hundred classes; the pass works each class out once per epoch (the
// number of changes the pass has made so far) and gives that answer to the rest of the class.
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/admission/admission.h"

namespace allot {

// An explanation as a pass hands it out: its text shared, so one reason for thousands of jobs is one string.
struct PooledReason {
  ReasonCode code = ReasonCode::kNone;
  bool feasible = true;
  SharedText text;
};

// Reasons of one pass, each stored once at a stable address; the pass hands out pointers to them and jobs
// keep a share of the text (model.h, Job::reason).
class TextPool {
 public:
  const PooledReason* add(Explanation why) {
    return &texts_.emplace_back(PooledReason{why.code, why.feasible, SharedText(std::move(why.text))});
  }

 private:
  std::deque<PooledReason> texts_;
};

class ClassMemo {
 public:
  static constexpr uint64_t kNoEpoch = UINT64_MAX;

  struct Admission {
    uint64_t epoch = kNoEpoch;
    AdmissionAttempt failure;  // only failures are kept: a job that fits is admitted at once
    const PooledReason* reason = nullptr;  // failure.why, pooled
  };
  struct Preemption {
    uint64_t epoch = kNoEpoch;
    bool within_nominal = false;  // the job fits within its team's nominal quota on some type
    bool tried = false;           // planned at this epoch: no plan, or one that would oscillate
    bool oscillates = false;
    const PooledReason* why_not = nullptr;
  };

  // Whether a job of an admission class fits within its team's nominal quota on some type, as worked out when its
  // team's Pass::usage_changes was `changes`. It reads the team's usage, its nominal quota and the job's shape,
  // neither the priority nor the rest of the state, so it holds across epochs, and for every preemption class
  // within the admission class, while that number stays.
  struct WithinNominal {
    uint64_t changes = kNoEpoch;
    bool within = false;
  };
  WithinNominal& within_nominal(uint32_t admission_class) { return within_[admission_class]; }

  // A job's classes, looked up once when it joins the pass's queue. `alone`: the job's answers may differ from its
  // classmates' for a reason the key does not hold (an Active reservation for one user of its team,
  // core/model/reservations.h, admits some users' jobs and not others), so it is a class of its own.
  struct Classes {
    uint32_t admission = 0, preemption = 0;
  };
  // One lookup per job: a preemption class (team, shape, priority) lies within one admission class (team, shape),
  // which is looked up only when the preemption class is new.
  Classes classes_of(const Job& j, bool alone = false) {
    const uint32_t job = alone ? j.id.value : kShared;
    auto [it, added] = preemption_ids_.try_emplace(Key{j.team.value, j.shape, j.priority, job});
    if (added) it->second = add_classes(Key{j.team.value, j.shape, 0, job});
    return it->second;
  }

  // The entries of a class, made with the class (the phases ask for them for every waiting job they visit); an
  // entry whose epoch is not the current one holds a stale answer.
  Admission& admission(uint32_t admission_class, BorrowMode mode) {
    return admissions_[2 * size_t{admission_class} + (mode == BorrowMode::kAllowBorrowing ? 1 : 0)];
  }
  Preemption& preemption(uint32_t preemption_class) { return preemptions_[preemption_class]; }

 private:
  static constexpr uint32_t kShared = UINT32_MAX;  // Key::job of a class shared by many jobs
  struct Key {
    uint32_t team, shape;
    int priority;
    uint32_t job;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  using Ids = std::unordered_map<Key, uint32_t, KeyHash>;
  // A new preemption class within the admission class `key`, that one made too when it is new, with their entries.
  Classes add_classes(Key key);

  Ids admission_ids_;
  std::unordered_map<Key, Classes, KeyHash> preemption_ids_;
  // Deques: entries handed out stay where they are while later classes are added.
  std::deque<Admission> admissions_;  // [2 * class + mode]
  std::deque<Preemption> preemptions_;
  std::vector<WithinNominal> within_;  // [admission class]; callers use an entry at once and keep no reference
};

}  // namespace allot
