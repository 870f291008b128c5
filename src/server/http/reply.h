#pragma once
// An HTTP answer as the writer hands it back to a request thread, and the error body every endpoint uses:
//   {"error": {"code": "InvalidArgument", "message": "..."}}
#include <nlohmann/json.hpp>
#include <functional>
#include <memory>
#include <string>

#include "core/model/result.h"

namespace allot::server {

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  int retry_after_s = 0;  // sent as Retry-After when positive
  // A large answer sent in pieces as the client reads it (chunked transfer encoding), after `body`, so that no copy
  // of the whole answer is ever built: each call appends the next piece to `out` and returns false once it has
  // appended the last. It reads the published view that `keep` holds (Writer::read sets it); the writer, whose
  // own state moves on after the batch, drains it into `body` at once (drain_pieces).
  std::function<bool(std::string& out)> pieces = nullptr;
  std::shared_ptr<const void> keep = nullptr;
};

// Appends every piece of `r` to its body (nothing when it has none), for an answer rendered on the writer's state.
void drain_pieces(Reply& r);

// A JSON array answer of `n` items whose item i `item(i)` renders, sent in pieces of `per_piece` items: the same
// bytes as json_reply(status, the whole array) would give (invalid UTF-8 replaced the same way).
Reply json_array_pieces(int status, size_t n, std::function<nlohmann::json(size_t)> item, size_t per_piece = 64);

Reply json_reply(int status, const nlohmann::json& body);
Reply error_reply(const Error& e);
// For statuses that have no ErrorCode (413, 415, 503): the same body shape with the given code name.
Reply error_reply(int status, const std::string& code, const std::string& message);

}  // namespace allot::server
