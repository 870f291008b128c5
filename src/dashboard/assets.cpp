#include "dashboard/assets.h"

namespace allot::dashboard {

const Asset* find_asset(std::string_view path) {
  for (const Asset& a : embedded_assets())
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace allot::dashboard
