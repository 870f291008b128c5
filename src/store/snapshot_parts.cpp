#include "store/snapshot_parts.h"

#include <algorithm>

namespace allot::store {

std::vector<std::string_view> split_snapshot(std::string_view body, size_t part_bytes) {
  part_bytes = std::max<size_t>(part_bytes, 4);  // room for the longest UTF-8 character
  std::vector<std::string_view> parts;
  size_t at = 0;
  do {
    size_t end = std::min(body.size(), at + part_bytes);
    // Back off over continuation bytes (10xxxxxx) so the cut falls before the start of a character.
    while (end < body.size() && end > at && (static_cast<unsigned char>(body[end]) & 0xC0) == 0x80) --end;
    parts.push_back(body.substr(at, end - at));
    at = end;
  } while (at < body.size());
  return parts;
}

Result<size_t> write_parts(std::string_view body, size_t part_bytes, const std::function<Status(size_t)>& before_part,
                   AppendsFirst& appends, std::mutex& mu, const std::function<Status(size_t, std::string_view)>& write_part) {
  const auto parts = split_snapshot(body, part_bytes);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (before_part)
      if (auto st = before_part(i); !st) return st.error();
    appends.let_appends_go();
    std::lock_guard lock(mu);
    if (auto st = write_part(i, parts[i]); !st) return st.error();
  }
  return parts.size();
}

Result<std::string> join_snapshot(uint64_t seq, size_t expected, const std::vector<std::pair<int64_t, std::string>>& parts) {
  std::string body;
  size_t total = 0;
  for (const auto& p : parts) total += p.second.size();
  body.reserve(total);
  for (size_t i = 0; i < expected; ++i) {
    if (i >= parts.size() || parts[i].first != static_cast<int64_t>(i))
      return Error::internal("the snapshot at journal record " + std::to_string(seq) + " is incomplete: part " + std::to_string(i) +
                             " of " + std::to_string(expected) + " is missing");
    body += parts[i].second;
  }
  if (parts.size() != expected)
    return Error::internal("the snapshot at journal record " + std::to_string(seq) + " has " + std::to_string(parts.size()) +
                           " parts where " + std::to_string(expected) + " were written");
  return body;
}

}  // namespace allot::store
