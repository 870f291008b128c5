#include "server/writer/retention.h"

#include <algorithm>
#include <charconv>

#include "view/times.h"

namespace allot::server {

namespace {
constexpr int64_t kMaxRetention = int64_t{100} * 365 * 86400;  // a century: beyond it, say "never"
}  // namespace

Result<std::optional<int64_t>> parse_retention(std::string_view text) {
  if (text == "never") return std::optional<int64_t>();
  const auto bad = [&] {
    return Error::invalid("retention '" + std::string(text) +
                          "': expected a whole number with a unit s, m, h or d (as in 90s, 30m, 24h, 7d), or never");
  };
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p == text.data() || n < 0) return bad();
  int64_t unit = 1;
  if (p != end) {
    if (p + 1 != end) return bad();
    switch (*p) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: return bad();
    }
  }
  if (n > kMaxRetention / unit)
    return Error::invalid("retention '" + std::string(text) + "' is longer than a century; use never to keep finished jobs forever");
  return std::optional<int64_t>(n * unit);
}

std::string retention_text(std::optional<int64_t> seconds) {
  if (!seconds) return "never";
  const int64_t s = *seconds;
  if (s > 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::chrono::milliseconds retention_check_interval(int64_t retain_s) {
  return std::clamp(std::chrono::milliseconds(retain_s * 250), std::chrono::milliseconds(100), std::chrono::milliseconds(10000));
}

// Both walk ClusterState::finished_jobs, the finished jobs not yet compacted ordered by when they finished (the
// same test as core compact_finished): the cost follows the jobs that leave, not every job ever submitted.
std::optional<Time> compaction_cutoff(ClusterState& s, Time now, int64_t retain_s) {
  keep_finished_index(s);
  const Time cutoff = now - retain_s;
  if (!s.finished_jobs.empty() && s.finished_jobs.begin()->first <= cutoff) return cutoff;
  return std::nullopt;
}

std::vector<std::string> jobs_compacted_by(ClusterState& s, Time cutoff) {
  keep_finished_index(s);
  std::vector<uint32_t> ids;
  for (auto it = s.finished_jobs.begin(); it != s.finished_jobs.end() && it->first <= cutoff; ++it) ids.push_back(it->second);
  std::sort(ids.begin(), ids.end());  // in ID order, as compact_finished compacts them
  std::vector<std::string> out;
  for (uint32_t id : ids)
    if (const Job& j = s.jobs[id]; !j.deleted) out.push_back(j.spec.name);
  return out;
}

namespace {

std::string compaction_note(const ClusterState& s) {
  return "jobs that finished at or before " + view::rfc3339(s.compacted_before) +
         " have left the server by retention (--retain-finished; the last compaction ran at " +
         view::rfc3339(s.compacted_at) + ") and only the journal keeps their records";
}

}  // namespace

Error no_such_job(const ClusterState& s, const std::string& name) {
  if (s.compacted_jobs == 0) return Error::not_found("no job named " + name);
  return Error::not_found("no job named " + name + "; " + compaction_note(s));
}

Error job_not_found(const ClusterState& s, const std::string& name) {
  if (s.compacted_jobs != 0 && s.attempts_used.count(name))
    return Error::not_found("no job named " + name + " now: a job of that name was deleted, or finished and was compacted; " +
                            compaction_note(s));
  return no_such_job(s, name);
}

}  // namespace allot::server
