#pragma once
// An HTTP answer as the writer hands it back to a request thread, and the error body every endpoint uses:
//   {"error": {"code": "InvalidArgument", "message": "..."}}
#include <nlohmann/json.hpp>
#include <string>

#include "core/model/result.h"

namespace allot::server {

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  int retry_after_s = 0;  // sent as Retry-After when positive
};

Reply json_reply(int status, const nlohmann::json& body);
Reply error_reply(const Error& e);
// For statuses that have no ErrorCode (413, 415, 503): the same body shape with the given code name.
Reply error_reply(int status, const std::string& code, const std::string& message);

}  // namespace allot::server
