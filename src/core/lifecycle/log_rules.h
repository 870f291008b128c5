#pragma once
// A job's own signs of trouble (docs/resiliency.md, "Rules on a job's output"): patterns its replicas' output must
// show (progress, every so many seconds, else the run is hung) or must not show (a line that means "restart", a
// line that means "fail without retry"). The spec, its checks, the line matcher the agent runs over each replica's
// output, and the fact it reports when a rule fires. Patterns are ECMAScript regular expressions (std::regex),
// searched anywhere in a line.
//
// Pure: no clock (the agent keeps the progress clock, counting progress lines the matcher saw) and no I/O.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace allot {

// A closed set with one spelling table (log_rule_kind_name), used by the YAML, the API, the journal, the
// heartbeat and scenario files.
enum class LogRuleKind : uint8_t {
  kHung,     // no line matched log_rules.progress for `every` seconds: stacks dumped, the run restarts (a retry)
  kRestart,  // a line matched log_rules.restart_on[i]: the run restarts (a retry)
  kFail,     // a line matched log_rules.fail_on[i]: the job fails without retry
};
inline constexpr LogRuleKind kLogRuleKinds[] = {LogRuleKind::kHung, LogRuleKind::kRestart, LogRuleKind::kFail};
const char* log_rule_kind_name(LogRuleKind k);  // "hung", "restart", "fail"
std::optional<LogRuleKind> parse_log_rule_kind(std::string_view name);

struct ProgressRule {
  std::string pattern;
  int64_t every_s = 0;
  friend bool operator==(const ProgressRule&, const ProgressRule&) = default;
};

struct LogRules {
  std::optional<ProgressRule> progress;
  std::vector<std::string> restart_on;
  std::vector<std::string> fail_on;
  bool empty() const { return !progress && restart_on.empty() && fail_on.empty(); }
  friend bool operator==(const LogRules&, const LogRules&) = default;
};

// Bounds, checked at submission (docs/jobs.md, "log_rules").
inline constexpr size_t kMaxLogRulePatterns = 16;     // in restart_on, and in fail_on
inline constexpr size_t kMaxLogRulePatternBytes = 256;
inline constexpr int64_t kMinProgressEvery = 1;       // seconds
inline constexpr int64_t kMaxProgressEvery = 7 * 24 * 3600;
// A line is matched on its first kLogRuleMatchBytes bytes (a longer line is cut there, and the rest of it is not
// matched), and the fact keeps its first kMaxLogRuleLine bytes.
inline constexpr size_t kLogRuleMatchBytes = 1024;
// The line is kept as core/model/spec.h's printable() shows it (bytes outside printable ASCII as \xNN, "..." after a cut),
// so that it cannot forge lines in a terminal or break JSON: at most kMaxLogRuleLineShown bytes.
inline constexpr size_t kMaxLogRuleLine = 512;
inline constexpr size_t kMaxLogRuleLineShown = 4 * kMaxLogRuleLine + 3;

// Why `pattern` is not a usable rule (empty, too long, does not compile as an ECMAScript regular expression, with
// std::regex's own words), or empty when it is.
std::string log_rule_pattern_problem(const std::string& pattern);
// The whole rule set, for specs that did not come through the YAML reader (which checks each field where it is):
// the first problem, naming the rule ("log_rules.fail_on[1]: ...") and what is allowed.
Status check_log_rules(const LogRules& rules);

// "log_rules.progress", "log_rules.restart_on[0]", "log_rules.fail_on[2]".
std::string log_rule_name(LogRuleKind kind, int index);
// The pattern of a rule, or null when the job has no rule of that kind and index.
const std::string* log_rule_pattern(const LogRules& rules, LogRuleKind kind, int index);

// What an agent reports when a rule fired on a replica's output: data, never text to parse back. `line` is the job's
// own output (at most kMaxLogRuleLine bytes; empty for kHung): it is shown only to those who may read the job's logs
// (docs/security.md), so the job's reason names the rule and its pattern, never the line.
struct LogRuleFiring {
  LogRuleKind kind = LogRuleKind::kRestart;
  int index = 0;  // in restart_on or fail_on; 0 for kHung
  int rank = 0;
  std::string line;
  friend bool operator==(const LogRuleFiring&, const LogRuleFiring&) = default;
};

// The job's reason when `f` fired (without the line): "log rule log_rules.fail_on[0] (`loss.*nan`) matched a line
// of rank 0", "hung: no line of rank 1 matched log_rules.progress (`step \d+`) for 600 s".
std::string log_rule_reason(const LogRules& rules, const LogRuleFiring& f);

// Splits a replica's output into lines and matches each against the rules: fail_on first, then restart_on, each in
// order; the first rule a line matches fires, once (later lines are not matched against them any more). Progress
// lines are counted. Thread-safety: none (the agent's log reader owns one per replica).
class LogLineMatcher {
 public:
  // REQUIRES: check_log_rules(rules) is ok.
  LogLineMatcher(const LogRules& rules, int rank);
  ~LogLineMatcher();
  LogLineMatcher(const LogLineMatcher&) = delete;
  LogLineMatcher& operator=(const LogLineMatcher&) = delete;

  // Output as it comes, in pieces of any size. Returns the rule that fired on a line completed by these bytes.
  std::optional<LogRuleFiring> feed(std::string_view bytes);
  // The end of the output: a last line without its newline is matched too.
  std::optional<LogRuleFiring> finish();
  uint64_t progress_lines() const { return progress_lines_; }
  bool fired() const { return fired_; }

 private:
  std::optional<LogRuleFiring> line_done();
  struct Compiled;
  std::unique_ptr<Compiled> c_;
  int rank_ = 0;
  std::string partial_;   // the line so far, at most kLogRuleMatchBytes
  bool overlong_ = false; // the line so far was longer than that (the rest is dropped until its newline)
  bool fired_ = false;
  uint64_t progress_lines_ = 0;
};

}  // namespace allot
