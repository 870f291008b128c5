#include "view/times.h"

#include <cstdio>

namespace allot::view {
namespace {

constexpr int64_t kSecondsPerDay = 86'400;

// Days since 1970-01-01 of a date of the proleptic Gregorian calendar, and back (H. Hinnant's
// days_from_civil / civil_from_days: 400-year eras of 146,097 days, years counted from March so that the leap
// day ends the year).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;                                   // [0, 399]
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           // [0, 146096]
  return era * 146'097 + doe - 719'468;
}

struct Civil {
  int64_t year, month, day;
};

Civil civil_from_days(int64_t z) {
  z += 719'468;
  const int64_t era = (z >= 0 ? z : z - 146'096) / 146'097;
  const int64_t doe = z - era * 146'097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (m <= 2), m, d};
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t days_in_month(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

// Reads `n` digits at `pos`; nullopt when any is not a digit.
std::optional<int64_t> digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

std::string format(int64_t seconds, int ms) {
  const int64_t days = floor_div(seconds, kSecondsPerDay);
  const int64_t of_day = seconds - days * kSecondsPerDay;
  const Civil c = civil_from_days(days);
  char buf[48];
  const int n = std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld", static_cast<long long>(c.year),
                              static_cast<long long>(c.month), static_cast<long long>(c.day),
                              static_cast<long long>(of_day / 3600), static_cast<long long>(of_day / 60 % 60),
                              static_cast<long long>(of_day % 60));
  std::string out(buf, static_cast<size_t>(n));
  if (ms != 0) {
    std::snprintf(buf, sizeof buf, ".%03d", ms);
    out += buf;
  }
  return out + "Z";
}

}  // namespace

std::string rfc3339(Time seconds) { return format(seconds, 0); }

std::string rfc3339_ms(int64_t ms) {
  const int64_t s = floor_div(ms, 1000);
  return format(s, static_cast<int>(ms - s * 1000));
}

Result<int64_t> parse_rfc3339_ms(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Error::invalid("'" + std::string(text.substr(0, 64)) + "' is not an RFC 3339 time (" + why +
                          "); expected e.g. 2026-11-24T20:05:00Z, 2026-11-24T20:05:00.250Z or 2026-11-24T21:05:00+01:00");
  };
  // YYYY-MM-DDTHH:MM:SS is 19 characters, then the fraction and the offset.
  const auto year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  const auto hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (!year || !month || !day || text[4] != '-' || text[7] != '-') return bad("the date must read YYYY-MM-DD");
  if (text.size() < 11 || (text[10] != 'T' && text[10] != 't')) return bad("the date and the time are joined by T");
  if (!hour || !minute || !second || text[13] != ':' || text[16] != ':') return bad("the time must read HH:MM:SS");
  if (*month < 1 || *month > 12) return bad("month " + std::to_string(*month) + "; allowed: 01..12");
  if (*day < 1 || *day > days_in_month(*year, *month))
    return bad("day " + std::to_string(*day) + "; that month has " + std::to_string(days_in_month(*year, *month)) + " days");
  // Second 60 (a leap second) is refused: Unix time has none.
  if (*hour > 23 || *minute > 59 || *second > 59) return bad("the time must be 00:00:00..23:59:59");
  size_t pos = 19;
  int64_t ms = 0;
  if (pos < text.size() && text[pos] == '.') {
    size_t n = 0;
    for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++n)
      if (n < 3) ms = ms * 10 + (text[pos] - '0');
    if (n == 0) return bad("a '.' must be followed by the digits of the fraction of a second");
    for (; n < 3; ++n) ms *= 10;
  }
  int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const auto oh = digits(text, pos + 1, 2), om = digits(text, pos + 4, 2);
    if (!oh || !om || text[pos + 3] != ':' || *oh > 23 || *om > 59) return bad("an offset must read +HH:MM or -HH:MM");
    offset_s = (*oh * 3600 + *om * 60) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad("it must end in Z (UTC) or an offset like +01:00");
  }
  if (pos != text.size()) return bad("unexpected text after the offset");
  const int64_t local = days_from_civil(*year, *month, *day) * kSecondsPerDay + *hour * 3600 + *minute * 60 + *second;
  return (local - offset_s) * 1000 + ms;
}

Result<Time> parse_rfc3339(std::string_view text) {
  auto ms = parse_rfc3339_ms(text);
  if (!ms) return ms.error();
  return floor_div(*ms, 1000);
}

Result<Time> parse_time_input(std::string_view text, const std::string& what) {
  if (!text.empty() && text.size() <= 15 && text.find_first_not_of("0123456789") == std::string_view::npos)
    return std::stoll(std::string(text));
  auto t = parse_rfc3339(text);
  if (!t) return Error::invalid(what + ": " + t.error().message + " (or a whole number of Unix seconds)");
  return t;
}

nlohmann::json time_json(Time t, Times style) {
  if (style == Times::kSeconds) return t;
  return rfc3339(t);
}

std::optional<int64_t> time_ms_of(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>() * 1000;
  if (v.is_number_float()) return static_cast<int64_t>(v.get<double>() * 1000);
  if (!v.is_string()) return std::nullopt;
  auto ms = parse_rfc3339_ms(v.get<std::string>());
  if (!ms) return std::nullopt;
  return *ms;
}

std::optional<Time> time_of(const nlohmann::json& v) {
  auto ms = time_ms_of(v);
  if (!ms) return std::nullopt;
  return floor_div(*ms, 1000);
}

}  // namespace allot::view
