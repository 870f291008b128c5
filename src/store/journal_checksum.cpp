#include "store/journal_checksum.h"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

#include "store/record_json.h"

namespace allot::store {

const char* const kJournalDamageAdvice =
    "allot does not replay a journal changed outside it. Restore the database from a backup (or a PostgreSQL replica) "
    "taken before the change; or give up this batch and every record after it by deleting them from the journal "
    "(docs/deployment.md, \"Journal checksums\")";

namespace {

// 128 bits of SHA-256 as 32 lowercase hex digits: enough to make an accidental match out of reach, half the text.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 is not available");
  }
  Sha256& add(std::string_view s) {
    EVP_DigestUpdate(ctx_.get(), s.data(), s.size());
    return *this;
  }
  Sha256& line(std::string_view s) { return add(s).add("\n"); }
  std::string hex128() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &len);
    static const char* digits = "0123456789abcdef";
    std::string out(32, '0');
    for (size_t i = 0; i < 16; ++i) {
      out[2 * i] = digits[md[i] >> 4];
      out[2 * i + 1] = digits[md[i] & 15];
    }
    return out;
  }

 private:
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx_;
};

}  // namespace

std::string record_checksum(uint64_t seq, Time at, std::string_view kind, std::string_view body) {
  return Sha256().add("allot-record-1\n").line(std::to_string(seq)).line(std::to_string(at)).line(kind).add(body).hex128();
}

std::string snapshot_checksum(std::string_view text) { return Sha256().add("allot-snapshot-2\n").add(text).hex128(); }

std::string chain_checksum(std::string_view previous_chain, const std::vector<std::string>& record_sums) {
  Sha256 h;
  h.add("allot-batch-1\n").line(previous_chain);
  for (const std::string& s : record_sums) h.line(s);
  return h.hex128();
}

BatchSums seal_batch(std::string_view previous_chain, const std::vector<RecordKey>& records,
                     const std::vector<std::string>& bodies) {
  BatchSums out;
  out.records.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i)
    out.records.push_back(record_checksum(records[i].seq, records[i].at, records[i].kind, bodies[i]));
  out.chain = chain_checksum(previous_chain, out.records);
  return out;
}

Error JournalReader::damaged(const JournalRow& r, const std::string& what) const {
  // The job, when the body still reads as a record: "record 57 (submit, job train-b)".
  std::string about = std::string(r.kind);
  if (auto rec = record_from_row(r.seq, r.at, r.body, where_); rec)
    if (std::string job = job_of(rec->op); !job.empty()) about += ", job " + job;
  const uint64_t first = sums_.empty() ? r.seq : batch_first_;
  return Error::internal("database " + where_ + ": journal record " + std::to_string(r.seq) + " (" + about +
                         ") in the batch from record " + std::to_string(first) + " " + what + ". " + kJournalDamageAdvice +
                         " (from record " + std::to_string(first) + " on).");
}

Status JournalReader::hand_over() {
  for (const Record& rec : records_)
    if (auto st = fn_(rec); !st) return st;
  records_.clear();
  return ok_status();
}

Status JournalReader::row(const JournalRow& r) {
  const bool checked = r.seq >= checked_from_;
  if (checked) {
    if (sums_.empty()) batch_first_ = r.seq;
    if (r.sum.empty()) return damaged(r, "has no checksum, but every record from " + std::to_string(checked_from_) + " on must");
    std::string sum = record_checksum(r.seq, r.at, r.kind, r.body);
    if (sum != r.sum)
      return damaged(r, "does not match its checksum (stored " + std::string(r.sum) + ", its content gives " + sum +
                            "): it was changed after it was written");
    sums_.push_back(std::move(sum));
  }
  if (r.seq > after_) {
    auto rec = record_from_row(r.seq, r.at, r.body, where_);
    if (!rec) return rec.error();
    records_.push_back(std::move(*rec));
  }
  // Written before checksums existed: nothing more to check.
  if (!checked) return hand_over();
  if (r.chain.empty()) return ok_status();
  std::string chain = chain_checksum(chain_, sums_);
  if (chain != r.chain)
    return damaged(r, "ends a batch whose chained checksum does not match (stored " + std::string(r.chain) + ", expected " +
                          chain + "): a batch before it was removed, or records of this batch were removed or moved");
  chain_ = std::move(chain);
  sums_.clear();
  return hand_over();
}

Status JournalReader::end() const {
  if (sums_.empty()) return ok_status();
  return Error::internal("database " + where_ + ": the journal ends inside a batch: records " + std::to_string(batch_first_) +
                         " and after have no record that ends their batch (its last record was removed). " +
                         kJournalDamageAdvice + " (from record " + std::to_string(batch_first_) + " on).");
}

}  // namespace allot::store
