#pragma once
// The tables the server keeps per job for its current run only (server_state.h: ReplicaCpus, ReplicaStarts,
// ImagePulls): each entry carries the attempt it belongs to, so an entry left from an earlier attempt is never read
// as the current run's, and is started afresh when the current run writes to it. One home for that rule.
#include <cstdint>

namespace allot::server {

// The entry of job `index`'s run `attempt`, created or (if left from another attempt) reset.
template <class Table>
typename Table::mapped_type& run_entry(Table& table, uint32_t index, int attempt) {
  auto& e = table[index];
  if (e.attempt != attempt) {
    e = typename Table::mapped_type{};
    e.attempt = attempt;
  }
  return e;
}

// The entry of job `index`'s run `attempt`, or null when there is none for that attempt.
template <class Table>
const typename Table::mapped_type* find_run(const Table& table, uint32_t index, int attempt) {
  auto it = table.find(index);
  return it != table.end() && it->second.attempt == attempt ? &it->second : nullptr;
}

}  // namespace allot::server
