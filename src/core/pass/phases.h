#pragma once
// The phases of a scheduler pass (scheduler.h has the order in which a step tries them). Each returns whether
// it changed the state; each works on the pass (pass.h) and applies its decisions through it.
#include "core/pass/pass.h"

namespace allot {

// Phase 1 (and the within-nominal part of every step): admissions without preemption, in queue order
// (admit_in_order.cpp).
bool admit_in_order(Pass& p, BorrowMode mode);

// Phases 2 and 4: admissions that need preemption, in queue order, at most one per call; phase 2 takes the jobs
// that stay within their team's nominal quota, phase 4 the rest (preempt_in_order.cpp).
bool preempt_in_order(Pass& p, bool want_within_nominal);

// Phase 3: borrowers, teams in borrower order (admit_borrowers.cpp).
bool admit_borrowers(Pass& p);

// After the fixed point: elastic jobs below their max grow into capacity idle for the policy's delay that no
// waiting job could use (grow_elastic.cpp).
bool grow_elastic(Pass& p);

// The strict-FIFO baseline instead of the phases (strict_fifo.cpp).
void admit_strict_fifo(Pass& p);

}  // namespace allot
