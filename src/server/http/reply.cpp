#include "server/http/reply.h"

namespace allot::server {

Reply json_reply(int status, const nlohmann::json& body) {
  // Replace invalid UTF-8 (a job name or a reason could carry it) instead of throwing.
  return {status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json"};
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
