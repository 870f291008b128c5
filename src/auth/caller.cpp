#include "auth/caller.h"

namespace allot::auth {
namespace {
constexpr Role kRoles[] = {Role::kAdmin, Role::kMember, Role::kViewer, Role::kAgent, Role::kAgentJoin};
}

const char* role_name(Role r) {
  switch (r) {
    case Role::kAdmin: return "admin";
    case Role::kMember: return "member";
    case Role::kViewer: return "viewer";
    case Role::kAgent: return "agent";
    case Role::kAgentJoin: return "agent-join";
  }
  return "viewer";
}

std::optional<Role> parse_role(std::string_view name) {
  for (Role r : kRoles)
    if (name == role_name(r)) return r;
  return std::nullopt;
}

std::string role_list() {
  std::string out;
  for (Role r : kRoles) out += (out.empty() ? "" : ", ") + std::string(role_name(r));
  return out;
}

}  // namespace allot::auth
