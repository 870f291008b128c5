#pragma once
// Bearer tokens (docs/security.md). A token reads `allot_<id>_<secret>`: the id (10 hex digits) is public and
// names the token in lists and the audit trail; the secret (64 hex digits, 256 random bits) is shown once, when
// the token is made, and only its SHA-256 is kept. 256 random bits need no slow password hash: nobody can guess
// them, so the hash only has to keep a stolen journal from being a list of working tokens.
#include <optional>
#include <string>
#include <string_view>

namespace allot::auth {

struct IssuedToken {
  std::string id;           // public
  std::string secret_hash;  // what the server keeps
  std::string bearer;       // what the holder sends: allot_<id>_<secret>; shown once
};

// A fresh token from the operating system's random source (OpenSSL RAND_bytes).
IssuedToken issue_token();

struct BearerParts {
  std::string id;
  std::string secret;
};
// Splits `allot_<id>_<secret>`; nullopt for anything else (wrong prefix, lengths or characters).
std::optional<BearerParts> parse_bearer(std::string_view token);

// Lowercase hex SHA-256 of the secret.
std::string hash_secret(std::string_view secret);
// Compares two hashes in time that does not depend on where they differ.
bool same_hash(std::string_view a, std::string_view b);

}  // namespace allot::auth
