#pragma once
// A replica's log cut at the lines the server writes between its attempts ("allot: ==> attempt 1 of replica 0 on
// node gpu-2 <==", docs/api.md), for `allot logs JOB -o json`: one object per attempt.
#include <string>

#include <nlohmann/json.hpp>

namespace allot::client {

// [{"attempt": N, "rank": R, "node": NODE, "lines": [...]}, ...] in log order, the separator lines left out.
// The server writes no separator before a log's first attempt 0, so lines before the first separator are attempt
// 0 on a node the log does not name (null) when `from_start` (the whole kept log was read), and an attempt the
// log does not name (null) when the start was cut (--tail). A last line without a newline is kept as it is.
nlohmann::json log_attempts(int rank, const std::string& text, bool from_start);

}  // namespace allot::client
