#pragma once
// The body of POST /v1/agents/{node}/logs, read on the request thread before the writer checks that the
// replica ran on that node. Declared here (defined in api_agents.cpp) so that the fuzz target for it
// (fuzz/log_upload_fuzz.cpp) reads bodies exactly as the endpoint does.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/model/result.h"

namespace allot::server {

struct LogUpload {
  std::string job;
  int rank = 0;
  std::string data;  // bytes of the replica's output, appended as they are
  int attempt = -1;  // the run of the replica the bytes come from; -1: not sent (agents before attempts were sent)
};

// {job, rank, data, attempt?}; unknown keys are errors, rank and attempt are non-negative integers that fit an int.
Result<LogUpload> parse_log_upload(const nlohmann::json& body);

}  // namespace allot::server
