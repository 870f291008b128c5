#include "auth/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "auth/random_hex.h"

namespace allot::auth {
namespace {

constexpr std::string_view kPrefix = "allot_";
constexpr size_t kIdBytes = 5;       // 10 hex digits
constexpr size_t kSecretBytes = 32;  // 64 hex digits

bool all_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

IssuedToken issue_token() {
  IssuedToken t;
  t.id = random_hex(kIdBytes, "a token");
  const std::string secret = random_hex(kSecretBytes, "a token");
  t.secret_hash = hash_secret(secret);
  t.bearer = std::string(kPrefix) + t.id + "_" + secret;
  return t;
}

std::optional<BearerParts> parse_bearer(std::string_view token) {
  if (token.size() != kPrefix.size() + 2 * kIdBytes + 1 + 2 * kSecretBytes) return std::nullopt;
  if (token.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  token.remove_prefix(kPrefix.size());
  const std::string_view id = token.substr(0, 2 * kIdBytes);
  if (token[2 * kIdBytes] != '_') return std::nullopt;
  const std::string_view secret = token.substr(2 * kIdBytes + 1);
  if (!all_hex(id) || !all_hex(secret)) return std::nullopt;
  return BearerParts{std::string(id), std::string(secret)};
}

std::string hash_secret(std::string_view secret) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(secret.data(), secret.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed");
  return hex(md, len);
}

bool same_hash(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace allot::auth
