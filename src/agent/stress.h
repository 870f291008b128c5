#pragma once
// allot's own deep health check for nodes without DCGM or NCCL tests (emulated nodes among them): a short,
// real stress of the CPUs and memory that checks its own results. It fills a buffer with a pseudo-random
// pattern and reads it back, and multiplies matrices in two loop orders that must agree bit for bit, over and
// over until the time is up. `inject_fault` flips one bit of the buffer between the write and the read-back,
// which the read-back then finds like it would find a real memory error (emulated faults,
// agent/emulated_faults.h: `deep-check fail`).
#include <iosfwd>

namespace allot::agent {

// 0: every round agreed; 1: a mismatch, described on `out`.
int run_stress(double seconds, bool inject_fault, std::ostream& out);

}  // namespace allot::agent
