#include "auth/webhook_signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "auth/random_hex.h"

namespace allot::auth {

std::string new_webhook_id() { return random_hex(5, "a webhook id"); }
std::string new_webhook_secret() { return random_hex(32, "a webhook secret"); }
std::string new_delivery_id() { return random_hex(16, "a delivery id"); }

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
