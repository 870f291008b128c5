#pragma once
// The server's whole state at a journal position as a snapshot body, and back (store.h, Snapshot): the cluster
// (store/cluster_snapshot.h) plus the tables the server rebuilds from the journal (node lifecycle, removed
// teams, goodput accounts, retired nodes, counters, queue-wait histograms, tokens, the audit trail) and the
// events in memory for /v1/events. What replay does not rebuild either (heartbeat times, exit reports, live
// latency and pass measurements) is not written.
//
// restore_state_snapshot gives the state that replaying the journal up to the snapshot's seq gives; replaying the
// records after it then gives the state a full replay gives (tests/unit/snapshot_test.cpp). The body is read as
// untrusted input: a bad one is an error naming the snapshot's seq. Both functions are pure.
#include <string>
#include <vector>

#include "core/result.h"
#include "server/server_state.h"

namespace allot::server {

// `events`: the newest events in memory, oldest first.
std::string encode_state_snapshot(const ServerState& st, const std::vector<Event>& events);

struct RestoredState {
  ServerState state;
  std::vector<Event> events;
};
// `seq`: the snapshot's position, as the store has it; the body must say the same.
// `catalog`: the server's instance types (the built-in ones and the policy file's); the snapshot names types.
Result<RestoredState> restore_state_snapshot(uint64_t seq, const std::string& body, const Catalog& catalog = Catalog::builtin());

}  // namespace allot::server
