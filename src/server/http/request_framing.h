#pragma once
// Request smuggling (docs/security.md, "HTTP"). cpp-httplib 0.11.4 frames a request body by the first
// Content-Length header it finds, and prefers Transfer-Encoding: chunked over Content-Length when both are
// sent. A proxy in front of the server may pick the other header, and then the two read different bodies: what
// one takes for the rest of a body, the other reads as a second request on the same connection. A request
// whose body length is not one clear number is therefore refused before anything of its body is read, and its
// connection is closed after the answer (nothing more is read from it as a request).
#include <httplib.h>

#include <optional>

#include "server/http/reply.h"

namespace allot::server {

// The refusal for a request whose framing is ambiguous, or nullopt when it is clear:
//   - Content-Length together with Transfer-Encoding (400);
//   - two Content-Length headers with different values, or one that is not a decimal number (400);
//   - Transfer-Encoding other than exactly one "chunked" (501: no other coding is decoded).
std::optional<Reply> ambiguous_framing(const httplib::Headers& headers);

}  // namespace allot::server
