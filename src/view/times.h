#pragma once
// Points in time as the API and `allot ... -o json` write them: RFC 3339 in UTC ("2026-11-24T20:05:00Z", and
// "2026-11-24T20:05:00.250Z" for a time kept in milliseconds that has a fraction of a second). Durations stay
// numbers of seconds (waited_s, run_s, ...); the simulator's output and scenario files keep simulated seconds,
// which are not wall times (Times::kSeconds).
//
// Pure functions of their arguments: no clock, no time zone database, no locale.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::view {

// How a JSON view writes points in time: the server's wall times as RFC 3339 text, the simulator's virtual
// times as the numbers of seconds they are.
enum class Times { kSeconds, kRfc3339 };

// REQUIRES: the time falls in the years 0000..9999 (RFC 3339 has four-digit years).
std::string rfc3339(Time seconds);
// Milliseconds since the Unix epoch; ".mmm" only when the time is not a whole second.
std::string rfc3339_ms(int64_t ms);

// "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)", 't' and 'z' also allowed (RFC 3339, section 5.6), to
// milliseconds since the Unix epoch in UTC; digits of the fraction past the milliseconds are dropped.
Result<int64_t> parse_rfc3339_ms(std::string_view text);
// The same, to whole seconds (the fraction dropped, rounding towards the past).
Result<Time> parse_rfc3339(std::string_view text);
// What a client may send for a point in time: RFC 3339, or a whole number of Unix seconds (what clients
// before RFC 3339 times sent). `what` names the value in the error.
Result<Time> parse_time_input(std::string_view text, const std::string& what);

// A point in time in a JSON view.
nlohmann::json time_json(Time t, Times style);
// A point in time read from a JSON view: RFC 3339 text, or a number of seconds (an older server, or the
// simulator); nullopt when it is neither.
std::optional<int64_t> time_ms_of(const nlohmann::json& v);
std::optional<Time> time_of(const nlohmann::json& v);

}  // namespace allot::view
