#pragma once
// Points in time and durations as the CLI's flags take them (`plan create`, `reservation create`).
#include <cstdint>
#include <string>

#include "core/model/result.h"
#include "view/times.h"

namespace allot::client {

// "90s", "30m", "12h", "7d" or a number of seconds.
inline Result<int64_t> duration_flag(const std::string& t, const std::string& flag) {
  const Error bad = Error::invalid(flag + " wants a duration such as 600s, 30m, 12h or 7d, got '" + t + "'");
  const size_t digits = t.find_first_not_of("0123456789");
  if (t.empty() || digits == 0 || (digits != std::string::npos && digits + 1 != t.size()) || t.size() > 12) return bad;
  const int64_t n = std::stoll(t.substr(0, digits));
  switch (digits == std::string::npos ? 's' : t[digits]) {
    case 's': return n;
    case 'm': return n * 60;
    case 'h': return n * 3600;
    case 'd': return n * 86400;
    default: return bad;
  }
}

// "now", "+DURATION" from now, an RFC 3339 time, or Unix seconds.
inline Result<int64_t> time_flag(const std::string& t, const std::string& flag, int64_t now) {
  if (t == "now") return now;
  if (!t.empty() && t[0] == '+') {
    auto d = duration_flag(t.substr(1), flag);
    if (!d) return d.error();
    return now + *d;
  }
  if (!t.empty() && t.size() <= 12 && t.find_first_not_of("0123456789") == std::string::npos) return std::stoll(t);
  auto at = view::parse_rfc3339(t);
  if (!at) return Error::invalid(flag + " wants now, +DURATION (+30m, +12h), an RFC 3339 time (2026-12-01T08:00:00Z) or Unix seconds, got '" + t + "'");
  return *at;
}

}  // namespace allot::client
