#pragma once
// What `allot apply FILE` changes, worked out before anything is sent (kubectl apply's semantics): the file
// names what it sets, and only that changes. A `policy:` section sets the policy keys it lists and adds or
// changes the priority classes it lists; the others stay. A `teams:` section adds or replaces the teams it
// lists; the others stay. With prune, priority classes and teams absent from the file's lists are removed —
// only for a list the file has (a file without priority_classes prunes no class), so a file with one
// section can never remove what the other section holds. The plan also says, line by line, what changes.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace allot::client {

struct ApplyInput {
  // The file's policy as a request body (policy_body), and the keys the file's `policy:` section wrote;
  // null when the file has no policy section.
  nlohmann::json file_policy;
  std::set<std::string> file_policy_keys;
  nlohmann::json file_teams;  // team bodies (team_body); null when the file has no teams section
  nlohmann::json current_policy;  // GET /v1/policy
  nlohmann::json current_teams;   // GET /v1/teams
  bool prune = false;
};

struct ApplyPlan {
  nlohmann::json body = nlohmann::json::object();  // POST /v1/apply: {policy?, teams?}; empty: nothing to send
  std::vector<std::string> delete_teams;           // DELETE /v1/teams/{name} afterwards (prune)
  // "+ team a", "~ policy.idle_pool: false -> true", "- priority-class old (pruned)"; empty: no change.
  std::vector<std::string> changes;
};

ApplyPlan plan_apply(const ApplyInput& in);

}  // namespace allot::client
