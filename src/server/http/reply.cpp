#include "server/http/reply.h"

#include <algorithm>

namespace allot::server {

namespace {

// Replace invalid UTF-8 (a job name or a reason could carry it) instead of throwing.
std::string json_text(const nlohmann::json& body) {
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Reply json_reply(int status, const nlohmann::json& body) { return {status, json_text(body), "application/json"}; }

void drain_pieces(Reply& r) {
  if (!r.pieces) return;
  while (r.pieces(r.body)) {
  }
  r.pieces = nullptr;
  r.keep.reset();
}

Reply json_array_pieces(int status, size_t n, std::function<nlohmann::json(size_t)> item, size_t per_piece) {
  Reply r{status, "[", "application/json"};
  if (n == 0) {
    r.body += "]";
    return r;
  }
  r.pieces = [n, item = std::move(item), per_piece = std::max<size_t>(per_piece, 1), next = size_t{0}](std::string& out) mutable {
    for (const size_t end = std::min(n, next + per_piece); next < end; ++next) {
      if (next > 0) out += ',';
      out += json_text(item(next));
    }
    if (next < n) return true;
    out += ']';
    return false;
  };
  return r;
}

Reply error_reply(int status, const std::string& code, const std::string& message) {
  return json_reply(status, {{"error", {{"code", code}, {"message", message}}}});
}

Reply error_reply(const Error& e) {
  nlohmann::json error = {{"code", error_code_name(e.code)}, {"message", e.message}};
  if (e.reason != ErrorReason::kNone) error["reason"] = error_reason_name(e.reason);
  return json_reply(http_status(e.code), {{"error", error}});
}

}  // namespace allot::server
