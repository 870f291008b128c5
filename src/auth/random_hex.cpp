#include "auth/random_hex.h"

#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace allot::auth {

std::string hex(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

std::string random_hex(size_t bytes, const std::string& what) {
  std::array<unsigned char, 64> buf{};
  // RAND_bytes fails only when the system cannot seed it.
  if (bytes > buf.size() || RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1)
    throw std::runtime_error("the system's random source failed; cannot make " + what);
  return hex(buf.data(), bytes);
}

}  // namespace allot::auth
