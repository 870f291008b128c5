#include "core/result.h"

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
