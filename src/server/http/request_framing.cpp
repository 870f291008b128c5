#include "server/http/request_framing.h"

#include <algorithm>
#include <cctype>

#include "core/model/ascii_text.h"

namespace allot::server {
namespace {

bool decimal(const std::string& s) { return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos; }

Reply bad(const std::string& why) {
  return error_reply(400, "InvalidArgument", why + "; the connection is closed (send one Content-Length, or Transfer-Encoding: chunked alone)");
}

}  // namespace

std::optional<Reply> ambiguous_framing(const httplib::Headers& headers) {
  // httplib::Headers compares names without regard to case, so "content-length" and "Content-Length" are one key.
  const auto lengths = headers.equal_range("Content-Length");
  const auto codings = headers.equal_range("Transfer-Encoding");
  const bool has_length = lengths.first != lengths.second, has_coding = codings.first != codings.second;
  if (has_length && has_coding) return bad("a request carries both Content-Length and Transfer-Encoding");
  if (has_length) {
    const std::string first = lengths.first->second;
    for (auto it = lengths.first; it != lengths.second; ++it) {
      if (!decimal(it->second)) return bad("Content-Length \"" + it->second.substr(0, 40) + "\" is not a decimal number");
      if (it->second != first)
        return bad("the request carries two different Content-Length headers (" + first.substr(0, 20) + " and " +
                   it->second.substr(0, 20) + ")");
    }
  }
  if (has_coding && (std::next(codings.first) != codings.second || ascii_lower(codings.first->second) != "chunked"))
    return error_reply(501, "NotImplemented",
                       "Transfer-Encoding \"" + codings.first->second.substr(0, 40) +
                           "\" is not decoded here: a request body is sent with Content-Length or with Transfer-Encoding: chunked alone; the connection is closed");
  return std::nullopt;
}

}  // namespace allot::server
