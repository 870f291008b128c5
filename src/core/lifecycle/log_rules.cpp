#include "core/lifecycle/log_rules.h"

#include <regex>

#include "core/model/spec.h"

namespace allot {

const char* log_rule_kind_name(LogRuleKind k) {
  switch (k) {
    case LogRuleKind::kHung: return "hung";
    case LogRuleKind::kRestart: return "restart";
    case LogRuleKind::kFail: return "fail";
  }
  return "?";
}

std::optional<LogRuleKind> parse_log_rule_kind(std::string_view name) {
  for (LogRuleKind k : kLogRuleKinds)
    if (name == log_rule_kind_name(k)) return k;
  return std::nullopt;
}

std::string log_rule_pattern_problem(const std::string& pattern) {
  if (pattern.empty()) return "the pattern is empty (it would match every line)";
  if (pattern.size() > kMaxLogRulePatternBytes)
    return "the pattern is " + std::to_string(pattern.size()) + " bytes, above the limit of " + std::to_string(kMaxLogRulePatternBytes);
  try {
    std::regex re(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return std::string("the pattern does not compile as an ECMAScript regular expression: ") + e.what();
  }
  return "";
}

Status check_log_rules(const LogRules& rules) {
  const std::string allowed = "; give an ECMAScript regular expression of 1.." + std::to_string(kMaxLogRulePatternBytes) + " bytes";
  if (rules.progress) {
    if (auto p = log_rule_pattern_problem(rules.progress->pattern); !p.empty())
      return Error::invalid(log_rule_name(LogRuleKind::kHung, 0) + ".pattern: " + p + allowed);
    if (rules.progress->every_s < kMinProgressEvery || rules.progress->every_s > kMaxProgressEvery)
      return Error::invalid(log_rule_name(LogRuleKind::kHung, 0) + ".every: " + std::to_string(rules.progress->every_s) +
                            " s is outside " + std::to_string(kMinProgressEvery) + ".." + std::to_string(kMaxProgressEvery) + " s");
  }
  for (LogRuleKind k : {LogRuleKind::kRestart, LogRuleKind::kFail}) {
    const auto& list = k == LogRuleKind::kRestart ? rules.restart_on : rules.fail_on;
    if (list.size() > kMaxLogRulePatterns)
      return Error::invalid("log_rules." + std::string(k == LogRuleKind::kRestart ? "restart_on" : "fail_on") + " has " +
                            std::to_string(list.size()) + " patterns; at most " + std::to_string(kMaxLogRulePatterns));
    for (size_t i = 0; i < list.size(); ++i)
      if (auto p = log_rule_pattern_problem(list[i]); !p.empty()) return Error::invalid(log_rule_name(k, static_cast<int>(i)) + ": " + p + allowed);
  }
  return ok_status();
}

std::string log_rule_name(LogRuleKind kind, int index) {
  switch (kind) {
    case LogRuleKind::kHung: return "log_rules.progress";
    case LogRuleKind::kRestart: return "log_rules.restart_on[" + std::to_string(index) + "]";
    case LogRuleKind::kFail: return "log_rules.fail_on[" + std::to_string(index) + "]";
  }
  return "log_rules";
}

const std::string* log_rule_pattern(const LogRules& rules, LogRuleKind kind, int index) {
  switch (kind) {
    case LogRuleKind::kHung: return rules.progress && index == 0 ? &rules.progress->pattern : nullptr;
    case LogRuleKind::kRestart:
      return index >= 0 && static_cast<size_t>(index) < rules.restart_on.size() ? &rules.restart_on[index] : nullptr;
    case LogRuleKind::kFail:
      return index >= 0 && static_cast<size_t>(index) < rules.fail_on.size() ? &rules.fail_on[index] : nullptr;
  }
  return nullptr;
}

std::string log_rule_reason(const LogRules& rules, const LogRuleFiring& f) {
  const std::string* pattern = log_rule_pattern(rules, f.kind, f.index);
  const std::string quoted = pattern ? " (`" + *pattern + "`)" : "";
  const std::string rank = "rank " + std::to_string(f.rank);
  switch (f.kind) {
    case LogRuleKind::kHung:
      return "hung: no line of " + rank + " matched " + log_rule_name(f.kind, f.index) + quoted + " for " +
             std::to_string(rules.progress ? rules.progress->every_s : 0) + " s";
    case LogRuleKind::kRestart:
    case LogRuleKind::kFail:
      return "log rule " + log_rule_name(f.kind, f.index) + quoted + " matched a line of " + rank;
  }
  return "log rule";
}

struct LogLineMatcher::Compiled {
  std::optional<std::regex> progress;
  std::vector<std::regex> restart_on, fail_on;
};

LogLineMatcher::LogLineMatcher(const LogRules& rules, int rank) : c_(std::make_unique<Compiled>()), rank_(rank) {
  // Optimised for matching many lines: each pattern is compiled once per replica.
  const auto flags = std::regex::ECMAScript | std::regex::optimize;
  if (rules.progress) c_->progress.emplace(rules.progress->pattern, flags);
  for (const auto& p : rules.restart_on) c_->restart_on.emplace_back(p, flags);
  for (const auto& p : rules.fail_on) c_->fail_on.emplace_back(p, flags);
}

LogLineMatcher::~LogLineMatcher() = default;

namespace {
// std::regex may throw while matching (error_complexity, error_stack on a pathological pattern and line): such a
// line counts as not matching, and the agent's log reader, on whose thread this runs, goes on.
bool searched(const std::string& line, const std::regex& re) {
  try {
    return std::regex_search(line, re);
  } catch (const std::regex_error&) {
    return false;
  }
}
}  // namespace

std::optional<LogRuleFiring> LogLineMatcher::line_done() {
  std::string line = std::move(partial_);
  partial_.clear();
  overlong_ = false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::optional<LogRuleFiring> out;
  if (!fired_) {
    for (auto [kind, list] : {std::pair{LogRuleKind::kFail, &c_->fail_on}, std::pair{LogRuleKind::kRestart, &c_->restart_on}}) {
      for (size_t i = 0; i < list->size() && !out; ++i)
        if (searched(line, (*list)[i]))
          out = LogRuleFiring{kind, static_cast<int>(i), rank_, printable(line, kMaxLogRuleLine)};
      if (out) break;
    }
    fired_ = out.has_value();
  }
  if (c_->progress && searched(line, *c_->progress)) ++progress_lines_;
  return out;
}

std::optional<LogRuleFiring> LogLineMatcher::feed(std::string_view bytes) {
  std::optional<LogRuleFiring> out;
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (!overlong_) {
      const size_t room = kLogRuleMatchBytes - partial_.size();
      partial_.append(piece.substr(0, room));
      overlong_ = piece.size() > room;
    }
    if (nl == std::string_view::npos) break;
    if (auto f = line_done(); f && !out) out = std::move(f);
    bytes.remove_prefix(nl + 1);
  }
  return out;
}

std::optional<LogRuleFiring> LogLineMatcher::finish() {
  if (partial_.empty()) return std::nullopt;
  return line_done();
}

}  // namespace allot
