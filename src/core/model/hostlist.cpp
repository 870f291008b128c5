#include "core/model/hostlist.h"

#include <algorithm>
#include <cctype>

#include "core/model/spec.h"

namespace allot {
namespace {

// Splits on commas that are not inside brackets.
Result<std::vector<std::string>> split_top(std::string_view expr) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : expr) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return Error::invalid("host list '" + printable(expr) + "' has a ']' without its '['");
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) return Error::invalid("host list '" + printable(expr) + "' has a '[' without its ']'");
  parts.push_back(cur);
  return parts;
}

Error too_many(std::string_view expr) {
  return Error::invalid("host list '" + printable(expr) + "' names more than " + std::to_string(kMaxHostlistNames) + " hosts");
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// One range of a bracket group: "09-11" is {9, 11, width 2}.
struct Range {
  long lo = 0, hi = 0;
  size_t width = 0;  // zero padding: "01-10" pads to two digits
  size_t count() const { return static_cast<size_t>(hi - lo) + 1; }
  size_t longest() const { return std::max(width, std::to_string(hi).size()); }
};

// Reads the inside of one bracket group ("1-4,7,09-11") without expanding it.
Result<std::vector<Range>> read_group(std::string_view inner, std::string_view whole) {
  std::vector<Range> out;
  size_t start = 0;
  while (start <= inner.size()) {
    size_t comma = inner.find(',', start);
    std::string_view item = inner.substr(start, comma == std::string_view::npos ? inner.npos : comma - start);
    size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash), hi = dash == item.npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > kMaxHostlistDigits || hi.size() > kMaxHostlistDigits)
      return Error::invalid("host list '" + printable(whole) + "': range '" + printable(item) +
                            "' is not N or N-M with decimal numbers");
    Range r{std::stol(std::string(lo)), std::stol(std::string(hi)), lo.size() > 1 && lo[0] == '0' ? lo.size() : 0};
    if (r.hi < r.lo)
      return Error::invalid("host list '" + printable(whole) + "': range '" + printable(item) + "' runs backwards");
    if (r.count() > kMaxHostlistNames) return too_many(whole);
    out.push_back(r);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// One name pattern (a part between top-level commas): literals and bracket groups, in order.
struct Pattern {
  std::vector<std::string> literals;        // one more than groups: before, between and after them
  std::vector<std::vector<Range>> groups;
};

Result<Pattern> read_pattern(const std::string& part, std::string_view whole) {
  Pattern p;
  size_t i = 0;
  while (true) {
    size_t open = part.find('[', i);
    p.literals.push_back(part.substr(i, open == std::string::npos ? std::string::npos : open - i));
    if (open == std::string::npos) break;
    size_t close = part.find(']', open);
    auto group = read_group(std::string_view(part).substr(open + 1, close - open - 1), whole);
    if (!group) return group.error();
    p.groups.push_back(std::move(*group));
    i = close + 1;
  }
  return p;
}

// The values of one group, as text.
std::vector<std::string> values_of(const std::vector<Range>& group) {
  std::vector<std::string> out;
  for (const Range& r : group)
    for (long v = r.lo; v <= r.hi; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < r.width) s.insert(0, r.width - s.size(), '0');
      out.push_back(std::move(s));
    }
  return out;
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view expr) {
  auto parts = split_top(expr);
  if (!parts) return parts.error();
  // Every pattern's count and longest name are known before anything is expanded, so that a list of many long
  // names is refused at the cost of reading it, not of building it (issue 33: 200,000 names of 12 KB).
  std::vector<Pattern> patterns;
  size_t total = 0;
  for (const std::string& part : *parts) {
    if (part.empty()) return Error::invalid("host list '" + printable(expr) + "' has an empty name");
    auto p = read_pattern(part, expr);
    if (!p) return p.error();
    size_t count = 1, longest = 0;
    for (const auto& l : p->literals) longest += l.size();
    for (const auto& group : p->groups) {
      size_t n = 0, widest = 0;
      for (const Range& r : group) n += r.count(), widest = std::max(widest, r.longest());
      if (n > kMaxHostlistNames || count * n > kMaxHostlistNames) return too_many(expr);
      count *= n;
      longest += widest;
    }
    if (longest > kMaxSubdomainName)
      return Error::invalid("host list '" + printable(expr) + "' gives names of " + std::to_string(longest) +
                            " characters; a node name is at most " + std::to_string(kMaxSubdomainName));
    total += count;
    if (total > kMaxHostlistNames) return too_many(expr);
    patterns.push_back(std::move(*p));
  }
  std::vector<std::string> names;
  names.reserve(total);
  for (const Pattern& p : patterns) {
    std::vector<std::string> acc = {p.literals[0]};
    for (size_t g = 0; g < p.groups.size(); ++g) {
      const std::vector<std::string> values = values_of(p.groups[g]);
      std::vector<std::string> next;
      next.reserve(acc.size() * values.size());
      for (const auto& a : acc)
        for (const auto& v : values) next.push_back(a + v + p.literals[g + 1]);
      acc = std::move(next);
    }
    for (auto& a : acc) {
      for (char c : a)
        if (std::isspace(static_cast<unsigned char>(c)) || c == ']' || c == '[')
          return Error::invalid("host list '" + printable(expr) + "': name '" + printable(a) +
                                "' contains a space or bracket");
      names.push_back(std::move(a));
    }
  }
  return names;
}

bool natural_less(std::string_view a, std::string_view b) {
  auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      // Compare numerically without overflow: strip leading zeros, then shorter is smaller.
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      std::string_view xs = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      std::string_view ys = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (xs.size() != ys.size()) return xs.size() < ys.size();
      if (xs != ys) return xs < ys;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

}  // namespace allot
