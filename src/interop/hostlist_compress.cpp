#include "interop/hostlist_compress.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace allot::interop {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// "gpu-017" -> {"gpu-", "017"}; a name without a trailing number has empty digits.
std::pair<std::string_view, std::string_view> split_number(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && is_digit(name[i - 1])) --i;
  // A range may hold numbers of at most kMaxHostlistDigits digits (core/model/hostlist.h); a longer one stays part
  // of a literal name, or the list written here would not expand again.
  if (name.size() - i > kMaxHostlistDigits) i = name.size();
  return {name.substr(0, i), name.substr(i)};
}

// The digit width a range item keeps: "07" pads to two digits, "7" and "10" do not pad.
size_t pad_width(std::string_view digits) { return digits.size() > 1 && digits[0] == '0' ? digits.size() : 0; }

std::string format(unsigned long long v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

}  // namespace

std::string compress_hostlist(std::vector<std::string> names) {
  std::sort(names.begin(), names.end(), natural_less);
  names.erase(std::unique(names.begin(), names.end()), names.end());

  // Group by prefix, keeping the order in which prefixes first appear (natural order of their names).
  std::vector<std::string> prefixes;
  std::map<std::string, std::vector<std::string>> digits_of;
  std::vector<std::string> out;
  for (const std::string& name : names) {
    auto [prefix, digits] = split_number(name);
    std::string p(prefix);
    if (digits.empty()) {
      out.push_back(name);  // nothing to range over
      continue;
    }
    if (!digits_of.count(p)) prefixes.push_back(p);
    digits_of[p].emplace_back(digits);
  }

  for (const std::string& prefix : prefixes) {
    auto& ds = digits_of[prefix];
    std::sort(ds.begin(), ds.end(), [](const std::string& x, const std::string& y) {
      auto vx = std::stoull(x), vy = std::stoull(y);
      return std::tie(vx, x) < std::tie(vy, y);
    });
    // Greedy runs: a run "lo-hi" expands to format(v, pad_width(lo)) for v in lo..hi, so the next name joins
    // the run only when it is exactly what that expansion would produce.
    std::vector<std::string> items;
    size_t k = 0;
    while (k < ds.size()) {
      const std::string& lo = ds[k];
      size_t width = pad_width(lo);
      unsigned long long v = std::stoull(lo);
      size_t e = k;
      while (e + 1 < ds.size() && ds[e + 1] == format(v + (e + 1 - k), width)) ++e;
      items.push_back(e == k ? lo : lo + "-" + ds[e]);
      k = e + 1;
    }
    if (items.size() == 1 && items[0].find('-') == std::string::npos) {
      out.push_back(prefix + items[0]);
    } else {
      std::string joined;
      for (const auto& it : items) joined += (joined.empty() ? "" : ",") + it;
      out.push_back(prefix + "[" + joined + "]");
    }
  }

  std::string result;
  for (const auto& s : out) result += (result.empty() ? "" : ",") + s;
  return result;
}

}  // namespace allot::interop
