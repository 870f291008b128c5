#include "interop/k8s_quantity.h"

#include <cctype>
#include <string>

#include "config/spec_yaml.h"

namespace allot::interop {
namespace {

using i128 = __int128;

// A quantity as an exact fraction num / den (den > 0). Exact arithmetic keeps "0.1Gi" and "1e-3" free of
// floating-point rounding, so the same manifest always asks for the same integer amount.
struct Fraction {
  i128 num = 0;
  i128 den = 1;
};

// 18 digits times the largest multiplier (10^18 or 2^60) stay below 1.2e36, and den (10^frac digits times
// 10^-exponent) below 10^36: both fit in 128 bits (1.7e38), and nothing below multiplies them further.
constexpr int kMaxDigits = 18;

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
  // An exponent is e/E followed by digits or a sign; "E" alone is the exa suffix and "Ei" the exbi one.
  const bool exponent = suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E') &&
                        (std::isdigit(static_cast<unsigned char>(suffix[1])) || suffix[1] == '+' || suffix[1] == '-');
  if (exponent) {
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

// The largest amounts a manifest may ask for per replica: the bounds of allot's own job spec
// (config/spec_yaml.h), so that a manifest is refused where the same request in allot's spec is.
constexpr i128 kMaxCpuCores = kMaxVcpus;
constexpr i128 kMaxMemoryBytes = i128{kMaxMemoryGib} << 30;
constexpr i128 kMaxDevices = kMaxAccelerators;

// The whole part of the value, checked against `max` before anything is scaled, so that no product of a
// quantity near 10^36 can overflow.
Result<i128> whole_part(const Fraction& f, i128 max, std::string_view q, const std::string& limit) {
  const i128 whole = f.num / f.den;
  if (whole > max || (whole == max && f.num % f.den != 0))
    return Error::invalid("\"" + std::string(q) + "\" is more than " + limit + ", the most allot takes");
  return whole;
}

}  // namespace

Result<int64_t> parse_cpu_milli(std::string_view quantity) {
  auto f = parse_quantity(quantity);
  if (!f) return f.error();
  auto whole = whole_part(*f, kMaxCpuCores, quantity, std::to_string(kMaxVcpus) + " CPUs");
  if (!whole) return whole.error();
  // den is a power of ten: the remainder's thousandths, rounded up, without multiplying a remainder near 10^36.
  const i128 rem = f->num % f->den;
  i128 milli = 0;
  if (f->den % 1000 == 0) {
    const i128 step = f->den / 1000;
    milli = (rem + step - 1) / step;
  } else {
    milli = (rem * 1000 + f->den - 1) / f->den;  // den < 1000
  }
  return static_cast<int64_t>(*whole * 1000 + milli);
}

Result<int64_t> parse_memory_mib(std::string_view quantity) {
  auto f = parse_quantity(quantity);
  if (!f) return f.error();
  auto whole = whole_part(*f, kMaxMemoryBytes, quantity, std::to_string(kMaxMemoryGib) + "Gi of memory");
  if (!whole) return whole.error();
  // bytes = whole + rem/den with rem/den < 1, so ceil(bytes / 2^20) needs only whole and whether rem is zero.
  const i128 mib = *whole >> 20;
  const bool part = (*whole & ((i128{1} << 20) - 1)) != 0 || f->num % f->den != 0;
  return static_cast<int64_t>(mib + (part ? 1 : 0));
}

Result<int64_t> parse_device_count(std::string_view quantity) {
  auto f = parse_quantity(quantity);
  if (!f) return f.error();
  if (f->num % f->den != 0)
    return Error::invalid("\"" + std::string(quantity) + "\" is not a whole number of devices");
  auto whole = whole_part(*f, kMaxDevices, quantity, std::to_string(kMaxAccelerators) + " devices");
  if (!whole) return whole.error();
  return static_cast<int64_t>(*whole);
}

}  // namespace allot::interop
