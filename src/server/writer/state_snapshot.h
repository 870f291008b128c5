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
//
// The body (format 2, docs/deployment.md "Snapshots") is UTF-8 text in lines, each ended by a newline:
//
//     allot-snapshot 2 <checksum>          the format, and the checksum of everything after this line
//     {"format":2,"last_seq":...,"cluster":{...},"nodes":{...},...,"usage":{"accrued_to":T},
//      "entries":{"jobs":J,"accounts":A,"audit":U,"events":E,"usage_rows":R,"usage_users":W}}
//     J lines: a job kept ({"spec":...,"state":...}, compact: fields at their usual values left out) or a run
//              of compacted job IDs ({"compacted":N}), in ID order
//     A lines: a job's goodput account; U lines: an audit entry, oldest first; E lines: an event, oldest first
//     R lines: an hourly usage row (usage_ledger.h); W lines: the user who submitted a job kept, and when it last
//              began waiting
//
// A snapshot without "usage" (written before usage reports) is refused: start-up replays the journal instead.
//
// so that it is restored one line at a time, never as one tree of the whole state: parsing and freeing that tree
// was most of a start-up with a snapshot, which took longer than replaying the journal (issue 25 item 6). The
// checksum is SHA-256 (store/journal_checksum.h, snapshot_checksum): a torn or changed body is an error. Format 1,
// one JSON document with the entries in arrays, as versions before this one wrote it, is still read.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "server/writer/server_state.h"

namespace allot::server {

// `events`: the newest events in memory, oldest first.
std::string encode_state_snapshot(const ServerState& st, const std::vector<Event>& events);

// Format 1, as versions before format 2 wrote it: for tests that check such a snapshot still restores.
std::string encode_state_snapshot_format1(const ServerState& st, const std::vector<Event>& events);

// A body of either format as format 1's one JSON document (format 2's header with its entries back in their arrays,
// "format" left at 2), and such a document back as a format-2 body with a fresh checksum: for tests that change a
// field to see the restore refuse it, and for reading a snapshot by hand. The checksum is not checked here.
Result<nlohmann::json> snapshot_document(const std::string& body);
std::string snapshot_from_document(const nlohmann::json& doc);

struct RestoredState {
  ServerState state;
  std::vector<Event> events;
};
// `seq`: the snapshot's position, as the store has it; the body must say the same.
// `catalog`: the server's instance types (the built-in ones and the policy file's); the snapshot names types.
Result<RestoredState> restore_state_snapshot(uint64_t seq, const std::string& body, const Catalog& catalog = Catalog::builtin());

}  // namespace allot::server
