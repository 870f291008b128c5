#include "core/hostlist.h"

#include <algorithm>
#include <cctype>

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
    if (depth < 0) return Error::invalid("host list '" + std::string(expr) + "' has a ']' without its '['");
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) return Error::invalid("host list '" + std::string(expr) + "' has a '[' without its ']'");
  parts.push_back(cur);
  return parts;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Expands the inside of one bracket group: "1-4,7,09-11".
Result<std::vector<std::string>> expand_range(std::string_view inner, std::string_view whole) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= inner.size()) {
    size_t comma = inner.find(',', start);
    std::string_view item = inner.substr(start, comma == std::string_view::npos ? inner.npos : comma - start);
    size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash), hi = dash == item.npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > kMaxHostlistDigits || hi.size() > kMaxHostlistDigits)
      return Error::invalid("host list '" + std::string(whole) + "': range '" + std::string(item) +
                            "' is not N or N-M with decimal numbers");
    long a = std::stol(std::string(lo)), b = std::stol(std::string(hi));
    if (b < a)
      return Error::invalid("host list '" + std::string(whole) + "': range '" + std::string(item) + "' runs backwards");
    if (static_cast<size_t>(b - a) >= kMaxHostlistNames)
      return Error::invalid("host list '" + std::string(whole) + "' names more than " +
                            std::to_string(kMaxHostlistNames) + " hosts");
    size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;  // "01-10" pads to two digits
    for (long v = a; v <= b; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      out.push_back(std::move(s));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view expr) {
  auto parts = split_top(expr);
  if (!parts) return parts.error();
  std::vector<std::string> names;
  for (const std::string& part : *parts) {
    if (part.empty()) return Error::invalid("host list '" + std::string(expr) + "' has an empty name");
    std::vector<std::string> acc = {""};
    size_t i = 0;
    while (i < part.size()) {
      size_t open = part.find('[', i);
      std::string literal = part.substr(i, open == std::string::npos ? std::string::npos : open - i);
      for (auto& a : acc) a += literal;
      if (open == std::string::npos) break;
      size_t close = part.find(']', open);
      auto values = expand_range(std::string_view(part).substr(open + 1, close - open - 1), expr);
      if (!values) return values.error();
      if (acc.size() * values->size() > kMaxHostlistNames)
        return Error::invalid("host list '" + std::string(expr) + "' names more than " +
                              std::to_string(kMaxHostlistNames) + " hosts");
      std::vector<std::string> next;
      for (const auto& a : acc)
        for (const auto& v : *values) next.push_back(a + v);
      acc = std::move(next);
      i = close + 1;
    }
    for (auto& a : acc) {
      for (char c : a)
        if (std::isspace(static_cast<unsigned char>(c)) || c == ']' || c == '[')
          return Error::invalid("host list '" + std::string(expr) + "': name '" + a +
                                "' contains a space or bracket");
      names.push_back(std::move(a));
    }
    if (names.size() > kMaxHostlistNames)
      return Error::invalid("host list '" + std::string(expr) + "' names more than " +
                            std::to_string(kMaxHostlistNames) + " hosts");
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
