#pragma once
// Who a request acts as: the role and scope of the token it carried. Roles (docs/security.md):
//  - admin: everything (policy, teams, priority classes, nodes, tokens, audit, every job);
//  - member: submits, cancels and reads the jobs and logs of its teams; reads cluster-wide aggregates;
//  - viewer: reads; the logs of its teams only (a viewer may name none);
//  - agent: one node: registers it, heartbeats, reports and ships logs of the replicas placed on it;
//  - agent-join: registers a new node, which exchanges it for an agent token bound to that node.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allot::auth {

enum class Role { kAdmin, kMember, kViewer, kAgent, kAgentJoin };

const char* role_name(Role r);
std::optional<Role> parse_role(std::string_view name);
// "admin, member, viewer, agent, agent-join", for messages.
std::string role_list();

struct Caller {
  std::string token_id;  // "server" for what the server does by itself (scheduler, timeouts, bootstrap)
  Role role = Role::kViewer;
  std::vector<std::string> teams;  // member, viewer
  std::string node;                // agent
  std::string user;                // the user the token acts for (docs/security.md, "Users"); empty: none

  bool admin() const { return role == Role::kAdmin; }
  bool in_team(const std::string& team) const {
    return std::find(teams.begin(), teams.end(), team) != teams.end();
  }
  // May read a job's logs and full record: admins, and members and viewers of its team.
  bool sees_team(const std::string& team) const {
    return admin() || ((role == Role::kMember || role == Role::kViewer) && in_team(team));
  }
  // May submit and cancel a team's jobs.
  bool acts_for_team(const std::string& team) const { return admin() || (role == Role::kMember && in_team(team)); }

  // The server acting on its own (bootstrap token, scheduler decisions, heartbeat timeouts).
  static Caller server() { return Caller{"server", Role::kAdmin, {}, {}, {}}; }
};

}  // namespace allot::auth
