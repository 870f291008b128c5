#include "auth/webhook_signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace allot::auth {
namespace {

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

std::string random_hex(size_t bytes) {
  std::array<unsigned char, 32> buf{};
  // RAND_bytes fails only when the system cannot seed it; a guessable secret would be worse than no webhook.
  if (bytes > buf.size() || RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1)
    throw std::runtime_error("the system's random source failed; cannot make a webhook secret");
  return hex(buf.data(), bytes);
}

}  // namespace

std::string new_webhook_id() { return random_hex(5); }
std::string new_webhook_secret() { return random_hex(32); }
std::string new_delivery_id() { return random_hex(16); }

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
           data.size(), mac.data(), &n) == nullptr)
    throw std::runtime_error("OpenSSL could not compute an HMAC-SHA256");
  return hex(mac.data(), n);
}

std::string webhook_signature(std::string_view secret, std::string_view body) {
  return "sha256=" + hmac_sha256_hex(secret, body);
}

}  // namespace allot::auth
