#pragma once
// Checksums of the journal (docs/deployment.md, "Journal checksums"): a record that was changed, or a batch that
// was removed, outside allot must stop the start rather than replay as if it had been acknowledged.
//
// Every record carries `sum`, the first 128 bits (32 hex digits) of the SHA-256 of its canonical form: its
// sequence number, time, kind and body exactly as stored (the body is the journal's exact JSON, record_json.h),
// each ended by a newline, after a version tag:
//
//     sum   = hex128(SHA-256("allot-record-1\n" seq "\n" at "\n" kind "\n" body))
//
// The last record of every batch also carries `chain`, which folds in the previous batch's chain, so that a batch
// removed whole (or records moved from one batch to another) breaks the chain of the batch after it:
//
//     chain = hex128(SHA-256("allot-batch-1\n" previous_chain "\n" sum_1 "\n" ... sum_n "\n"))
//
// where previous_chain is empty for the first batch that has checksums. Records written before checksums existed
// (journal format 3 and older) have neither; a store records, when it adds the columns, the first sequence number
// that must have them (`checked_from`), so that removing a record's checksum is damage too.
//
// What the chain cannot see: a removed last batch (nothing after it refers to it), and changes to records written
// before checksums existed. SHA-256 is there to catch accidents and edits, not to resist someone who can rewrite
// the database: they can recompute the sums.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "core/model/spec.h"
#include "store/record.h"

namespace allot::store {

// The checksums a batch is written with: one per record and the batch's chain (on its last record).
struct BatchSums {
  std::vector<std::string> records;
  std::string chain;
};

std::string record_checksum(uint64_t seq, Time at, std::string_view kind, std::string_view body);
// A snapshot's checksum (server/writer/state_snapshot.h, format 2), over its text after the first line, the line that
// carries it: a torn or changed snapshot is then never restored (start-up replays the journal instead).
//
//     snapshot_sum = hex128(SHA-256("allot-snapshot-2\n" text))
std::string snapshot_checksum(std::string_view text);
std::string chain_checksum(std::string_view previous_chain, const std::vector<std::string>& record_sums);

// The sums of a batch of records (seq, at, kind per record, and the bodies record_bodies() encoded), after the batch
// whose chain is `previous_chain`.
struct RecordKey {
  uint64_t seq;
  Time at;
  const char* kind;
};
BatchSums seal_batch(std::string_view previous_chain, const std::vector<RecordKey>& records,
                     const std::vector<std::string>& bodies);

// One journal row as stored; `sum` and `chain` are empty where the column is NULL.
struct JournalRow {
  uint64_t seq = 0;
  Time at = 0;
  std::string_view kind;
  std::string_view body;
  std::string_view sum;
  std::string_view chain;
};

// Reads rows in journal order, from the first record after a batch's end (whose chain is `previous_chain`;
// empty: none had one) to the journal's end, checks them, decodes them and hands each record with a seq above
// `after` to `fn`, a batch at a time once its chain checked: no record of a damaged batch is ever applied. `where`
// names the database in errors; `checked_from` is the first sequence number that must carry a checksum.
//
// An error names the record (its seq, kind and the job it is about, when its body still says) and the batch (its
// first seq), says what did not match, and what the operator can do: allot refuses to start, or a standby to
// follow, rather than replay damage.
class JournalReader {
 public:
  JournalReader(std::string where, std::string previous_chain, uint64_t checked_from, uint64_t after,
                const std::function<Status(const Record&)>& fn)
      : where_(std::move(where)), chain_(std::move(previous_chain)), checked_from_(checked_from), after_(after), fn_(fn) {}
  [[nodiscard]] Status row(const JournalRow& r);
  // After the last row: records after the last batch's end mean that batch lost its last record.
  [[nodiscard]] Status end() const;

 private:
  Error damaged(const JournalRow& r, const std::string& what) const;
  Status hand_over();

  std::string where_;
  std::string chain_;
  uint64_t checked_from_;
  uint64_t after_;
  const std::function<Status(const Record&)>& fn_;
  std::vector<std::string> sums_;  // the sums of the batch being read
  std::vector<Record> records_;    // and its records after `after`
  uint64_t batch_first_ = 0;       // its first seq
};

// What an operator can do about a damaged journal (appended to every checksum error).
extern const char* const kJournalDamageAdvice;

}  // namespace allot::store
