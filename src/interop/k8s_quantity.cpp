#include "interop/k8s_quantity.h"

#include <cctype>
#include <string>

namespace allot::interop {
namespace {

using i128 = __int128;

// A quantity as an exact fraction num / den (den > 0). Exact arithmetic keeps "0.1Gi" and "1e-3" free of
// floating-point rounding, so the same manifest always asks for the same integer amount.
struct Fraction {
  i128 num = 0;
  i128 den = 1;
};

constexpr int kMaxDigits = 18;  // with the largest suffix (2^60) the product still fits in 128 bits

i128 pow_int(i128 base, int exp) {
  i128 r = 1;
  while (exp-- > 0) r *= base;
  return r;
}

Result<Fraction> parse_quantity(std::string_view q) {
  const std::string shown = "\"" + std::string(q) + "\"";
  auto bad = [&](const std::string& why) {
    return Error::invalid(shown + " is not a Kubernetes quantity (" + why + ")");
  };
  size_t i = 0;
  bool negative = false;
  if (i < q.size() && (q[i] == '+' || q[i] == '-')) negative = q[i++] == '-';
  Fraction f;
  int digits = 0, frac_digits = 0;
  bool seen_point = false;
  for (; i < q.size(); ++i) {
    char c = q[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    if (++digits > kMaxDigits) return bad("too many digits");
    f.num = f.num * 10 + (c - '0');
    if (seen_point) ++frac_digits;
  }
  if (digits == 0) return bad("expected a number such as 2, 500m or 16Gi");
  f.den = pow_int(10, frac_digits);
  std::string_view suffix = q.substr(i);
  // An exponent is e/E followed by digits; a bare "E" is the exa suffix.
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view e = suffix.substr(1);
    bool neg_exp = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      neg_exp = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 2) return bad("bad exponent");
    int exp = 0;
    for (char c : e) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return bad("bad exponent");
      exp = exp * 10 + (c - '0');
    }
    if (exp > kMaxDigits) return bad("exponent too large");
    if (neg_exp) f.den *= pow_int(10, exp);
    else f.num *= pow_int(10, exp);
  } else if (!suffix.empty()) {
    struct Suffix {
      std::string_view name;
      int base;  // 2 or 10
      int exp;
    };
    static constexpr Suffix kSuffixes[] = {
        {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
        {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"K", 10, 3},  {"M", 10, 6},
        {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
    };
    const Suffix* found = nullptr;
    for (const auto& s : kSuffixes)
      if (s.name == suffix) found = &s;
    if (!found) return bad("unknown suffix \"" + std::string(suffix) + "\"");
    if (found->exp >= 0) f.num *= pow_int(found->base, found->exp);
    else f.den *= pow_int(found->base, -found->exp);
  }
  if (negative && f.num != 0) return bad("negative amounts are not allowed");
  return f;
}

// ceil(num * scale / den) as int64, or an error when it does not fit.
Result<int64_t> ceil_scaled(const Fraction& f, i128 scale, std::string_view q) {
  i128 v = (f.num * scale + f.den - 1) / f.den;
  if (v > INT64_MAX / 2) return Error::invalid("\"" + std::string(q) + "\" is too large");
  return static_cast<int64_t>(v);
}

}  // namespace

Result<int64_t> parse_cpu_milli(std::string_view quantity) {
  auto f = parse_quantity(quantity);
  if (!f) return f.error();
  return ceil_scaled(*f, 1000, quantity);
}

Result<int64_t> parse_memory_mib(std::string_view quantity) {
  auto f = parse_quantity(quantity);
  if (!f) return f.error();
  Fraction bytes = *f;
  bytes.den *= i128{1} << 20;
  return ceil_scaled(bytes, 1, quantity);
}

Result<int64_t> parse_device_count(std::string_view quantity) {
  auto f = parse_quantity(quantity);
  if (!f) return f.error();
  if (f->num % f->den != 0)
    return Error::invalid("\"" + std::string(quantity) + "\" is not a whole number of devices");
  return ceil_scaled(*f, 1, quantity);
}

}  // namespace allot::interop
