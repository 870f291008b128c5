#pragma once
// A reason text with the jobs it names as data. A reason that names a job says "job NAME of team TEAM"; the
// server hides the names of jobs of teams a reader may not see (view/job_refs.h), and it finds them here, by
// position, never by reading the text back. The only way to put a job reference into a text is job_ref()
// (explanation.h), and every concatenation carries the references along, moved to where they now sit.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace allot {

struct JobRef {
  std::string job;
  std::string team;
  // Where the reference's words ("job NAME of team TEAM") sit in the text: bytes [at, at + size).
  uint32_t at = 0;
  uint32_t size = 0;
  friend bool operator==(const JobRef&, const JobRef&) = default;
};

class RefText {
 public:
  RefText() = default;
  RefText(std::string text) : text_(std::move(text)) {}  // NOLINT: plain text, naming no job
  RefText(const char* text) : text_(text) {}              // NOLINT
  // A text read back from the journal or a snapshot with its references as they were stored there.
  RefText(std::string text, std::vector<JobRef> refs) : text_(std::move(text)), refs_(std::move(refs)) {}
  // A text read back from a record or snapshot that kept no references: written by a version that did not keep
  // them, or naming no job. Which jobs it names is unknown; the server reads it the way those versions did
  // (view/job_refs.h). A text built from it is unknown too.
  static RefText refs_unknown(std::string text) {
    RefText out(std::move(text));
    out.refs_known_ = false;
    return out;
  }

  // "job NAME of team TEAM", as one reference.
  static RefText job(std::string_view job, std::string_view team) {
    RefText out("job " + std::string(job) + " of team " + std::string(team));
    out.refs_.push_back(JobRef{std::string(job), std::string(team), 0, static_cast<uint32_t>(out.text_.size())});
    return out;
  }

  const std::string& str() const { return text_; }
  const std::vector<JobRef>& refs() const { return refs_; }
  bool empty() const { return text_.empty(); }
  bool refs_known() const { return refs_known_; }
  // The plain text, leaving the references behind (for the sites that keep only the text).
  std::string take_text() && { return std::move(text_); }

  RefText& operator+=(std::string_view more) {
    text_ += more;
    return *this;
  }
  RefText& operator+=(const std::string& more) { return *this += std::string_view(more); }
  RefText& operator+=(const char* more) { return *this += std::string_view(more); }
  RefText& operator+=(const RefText& more) {
    const auto shift = static_cast<uint32_t>(text_.size());
    text_ += more.text_;
    refs_known_ = refs_known_ && more.refs_known_;
    for (JobRef r : more.refs_) {
      r.at += shift;
      refs_.push_back(std::move(r));
    }
    return *this;
  }

  // Hidden friends: found only when one side is a RefText, so string + string stays std::string's.
  friend RefText operator+(RefText a, const RefText& b) { return std::move(a += b); }
  friend RefText operator+(RefText a, const std::string& b) { return std::move(a += b); }
  friend RefText operator+(RefText a, const char* b) { return std::move(a += b); }
  friend RefText operator+(const std::string& a, const RefText& b) { return RefText(a) += b; }
  friend RefText operator+(const char* a, const RefText& b) { return RefText(a) += b; }
  // The same words naming the same jobs (whether the references were known is not part of the text).
  friend bool operator==(const RefText& a, const RefText& b) { return a.text_ == b.text_ && a.refs_ == b.refs_; }

 private:
  std::string text_;
  std::vector<JobRef> refs_;
  bool refs_known_ = true;
};

}  // namespace allot
