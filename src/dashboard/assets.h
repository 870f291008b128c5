#pragma once
// The dashboard's files (src/dashboard/assets), compiled into the binary (embed_assets.cmake). The server serves
// them at / (index.html) and under /dashboard/.
#include <span>
#include <string_view>

namespace allot::dashboard {

struct Asset {
  std::string_view path;          // "/index.html"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view body;
};

// Every embedded file, by path (generated).
std::span<const Asset> embedded_assets();
// The file at `path` ("/app.js"), or nullptr.
const Asset* find_asset(std::string_view path);

}  // namespace allot::dashboard
