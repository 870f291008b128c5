#pragma once
// Webhook secrets and signatures (docs/security.md, "Webhooks"). A webhook's secret (64 hex digits, 256 random
// bits) is the key of an HMAC-SHA256 over each delivery's body; the receiver recomputes it with the secret it
// was shown once and compares in constant time. The body carries its own time and delivery id, so an old
// delivery replayed later is told apart by the receiver (it checks the time is recent and the id new).
#include <string>
#include <string_view>

namespace allot::auth {

// A fresh webhook id (10 hex digits, public) and secret (64 hex digits) from OpenSSL's RAND_bytes.
std::string new_webhook_id();
std::string new_webhook_secret();
// A delivery's id (32 hex digits): the same across the retries of one delivery.
std::string new_delivery_id();

// Lowercase hex HMAC-SHA256 of `data` under `key` (RFC 2104; RFC 4231 gives test vectors).
std::string hmac_sha256_hex(std::string_view key, std::string_view data);
// The X-Allot-Signature header's value for `body`: "sha256=" and the hex HMAC.
std::string webhook_signature(std::string_view secret, std::string_view body);

}  // namespace allot::auth
