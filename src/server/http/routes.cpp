#include "server/http/routes.h"

#include <strings.h>

#include <optional>

#include "server/http/http_server.h"
#include "server/http/reply.h"

namespace allot::server {
namespace {

// A body declared (Content-Length) or sent (chunked) beyond the limit is still read and dropped up to this
// many times the limit, so that the connection stays usable for the client's next request; past that the
// connection is closed after the 413 instead of reading on.
constexpr uint64_t kDrainFactor = 16;

void set_reply(httplib::Response& res, const Reply& r) {
  res.status = r.status;
  res.set_content(r.body, r.content_type.c_str());
}

void too_large(httplib::Response& res, size_t max) {
  set_reply(res, error_reply(413, "PayloadTooLarge",
                             "the request body is larger than the limit of " + std::to_string(max) +
                                 " bytes (allot server --max-body-bytes)"));
}

bool is_chunked(const httplib::Request& req) {
  // Transfer-Encoding lists codings; chunked is the last one whenever it is there.
  const std::string te = req.get_header_value("Transfer-Encoding");
  return !te.empty() && strcasestr(te.c_str(), "chunked") != nullptr;
}

// The body of `req`, at most `max` bytes; nullopt when `res` already holds the answer (413, 400 or 415).
std::optional<std::string> read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                                     size_t max) {
  if (req.is_multipart_form_data()) {
    set_reply(res, error_reply(415, "UnsupportedMediaType", "request bodies are JSON or YAML, not multipart/form-data"));
    close_after_response();
    return std::nullopt;
  }
  const bool chunked = is_chunked(req);
  // A request with neither a length nor chunked framing has no body (RFC 9112, 6.3); cpp-httplib would read
  // until the client closes the connection.
  if (!chunked && !req.has_header("Content-Length")) return std::string();
  const uint64_t drain = kDrainFactor * max;
  if (chunked && req.method == "DELETE") {
    // cpp-httplib does not read a DELETE's chunked body, and its bytes would be taken for the next request.
    close_after_response();
    return std::string();
  }
  if (!chunked) {
    const auto declared = req.get_header_value<uint64_t>("Content-Length");
    if (declared > max) {
      // cpp-httplib reads and drops a declared body that is over its payload limit (set to `max`).
      if (declared <= drain) (void)reader([](const char*, size_t) { return true; });
      else close_after_response();
      too_large(res, max);
      return std::nullopt;
    }
  }
  std::string body;
  uint64_t seen = 0;
  const bool ok = reader([&](const char* data, size_t n) {
    seen += n;
    if (seen <= max) {
      body.append(data, n);
      return true;
    }
    body.clear();
    return seen <= drain;  // go on dropping to the end of the body, unless there is too much of it
  });
  if (seen > max) {
    if (!ok) close_after_response();
    too_large(res, max);
    return std::nullopt;
  }
  if (!ok) {
    set_reply(res, error_reply(400, "InvalidArgument",
                               "the request body could not be read: cut short, malformed chunked framing, or not sent "
                               "within the read timeout"));
    close_after_response();
    return std::nullopt;
  }
  return body;
}

}  // namespace

httplib::Server::HandlerWithContentReader Routes::with_body(Handler h) const {
  return [h = std::move(h), max = max_body_](const httplib::Request& req, httplib::Response& res,
                                             const httplib::ContentReader& reader) {
    auto body = read_body(req, res, reader, max);
    if (!body) return;
    httplib::Request with = req;  // its path matches stay valid: they point into req.path, which outlives the call
    with.body = std::move(*body);
    h(with, res);
  };
}

Routes& Routes::Get(const std::string& pattern, Handler h) {
  http_.Get(pattern, std::move(h));
  return *this;
}
Routes& Routes::Post(const std::string& pattern, Handler h) {
  http_.Post(pattern, with_body(std::move(h)));
  return *this;
}
Routes& Routes::Put(const std::string& pattern, Handler h) {
  http_.Put(pattern, with_body(std::move(h)));
  return *this;
}
Routes& Routes::Delete(const std::string& pattern, Handler h) {
  http_.Delete(pattern, with_body(std::move(h)));
  return *this;
}

void Routes::add_fallbacks() {
  // The error handler (server.cpp) writes the 404's body, naming the endpoint.
  auto none = [](const httplib::Request&, httplib::Response& res) { res.status = 404; };
  http_.Post(".*", with_body(none));
  http_.Put(".*", with_body(none));
  http_.Patch(".*", with_body(none));
  http_.Delete(".*", with_body(none));
}

}  // namespace allot::server
