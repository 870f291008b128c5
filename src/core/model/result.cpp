#include "core/model/result.h"

namespace allot {

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kAlreadyExists: return 409;
    case ErrorCode::kFailedPrecondition: return 409;
    case ErrorCode::kInternal: return 500;
    case ErrorCode::kUnauthenticated: return 401;
    case ErrorCode::kPermissionDenied: return 403;
  }
  return 500;
}

const char* error_reason_name(ErrorReason reason) {
  switch (reason) {
    case ErrorReason::kNone: return "";
    case ErrorReason::kPlanNotStarted: return "plan_not_started";
  }
  return "";
}

ErrorReason parse_error_reason(std::string_view name) {
  for (ErrorReason r : {ErrorReason::kPlanNotStarted})
    if (name == error_reason_name(r)) return r;
  return ErrorReason::kNone;
}

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kAlreadyExists: return "AlreadyExists";
    case ErrorCode::kFailedPrecondition: return "FailedPrecondition";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kUnauthenticated: return "Unauthenticated";
    case ErrorCode::kPermissionDenied: return "PermissionDenied";
  }
  return "Internal";
}

}  // namespace allot
