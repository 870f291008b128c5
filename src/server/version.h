#pragma once
// The version the server reports at /v1/health.
namespace allot::server {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace allot::server
