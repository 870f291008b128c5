#include "core/model/labels.h"

#include <algorithm>

namespace allot {

namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// A label name or value: alphanumerics at both ends, '-', '_' and '.' between.
bool name_ok(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// A DNS subdomain: lower-case alphanumerics, '-' and '.', alphanumerics at both ends.
bool prefix_ok(std::string_view s) {
  if (s.empty() || s.size() > 253 || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::string label_problem(std::string_view key, std::string_view value) {
  const std::string k(key);
  const size_t slash = key.find('/');
  std::string_view name = key;
  if (slash != std::string_view::npos) {
    if (!prefix_ok(key.substr(0, slash)))
      return "label key '" + k + "' has the prefix '" + std::string(key.substr(0, slash)) +
             "', which is not a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)";
    name = key.substr(slash + 1);
  }
  if (!name_ok(name, 63))
    return "label key '" + k + "' is not valid: its name must be 1..63 letters, digits, '-', '_' or '.', beginning and "
           "ending with a letter or digit";
  if (!value.empty() && !name_ok(value, 63))
    return "label " + k + " has the value '" + std::string(value) +
           "', which is not valid: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit "
           "(or empty)";
  return "";
}

Result<LabelSelector> parse_label_selector(std::string_view text) {
  LabelSelector out;
  if (trim(text).empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = trim(text.substr(start, comma - start));
    start = comma + 1;
    LabelRequirement r;
    size_t op = part.find("!=");
    size_t op_len = 2;
    if (op != std::string_view::npos) {
      r.equal = false;
    } else if ((op = part.find("==")) == std::string_view::npos) {
      op = part.find('=');
      op_len = 1;
    }
    if (op == std::string_view::npos || op == 0)
      return Error::invalid("label selector '" + std::string(text) + "': '" + std::string(part) +
                            "' is not key=value or key!=value (several are joined with ',')");
    r.key = std::string(trim(part.substr(0, op)));
    r.value = std::string(trim(part.substr(op + op_len)));
    if (std::string why = label_problem(r.key, r.value); !why.empty())
      return Error::invalid("label selector '" + std::string(text) + "': " + why);
    out.push_back(std::move(r));
  }
  return out;
}

bool selector_matches(const LabelSelector& selector, const Labels& labels) {
  for (const auto& r : selector) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end() && it->second == r.value;
    if (has != r.equal) return false;
  }
  return true;
}

}  // namespace allot
