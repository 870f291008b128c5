#pragma once
// Lower-case hex and random secrets in hex, for tokens (token.h) and webhooks (webhook_signature.h): one home.
#include <cstddef>
#include <string>

namespace allot::auth {

std::string hex(const unsigned char* data, size_t n);
// `bytes` (at most 64) from the system's random source, as 2 x bytes hex digits. Throws when the source fails
// (`what` names what could not be made): a guessable secret would be worse than none.
std::string random_hex(size_t bytes, const std::string& what);

}  // namespace allot::auth
