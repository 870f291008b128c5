#pragma once
// The one writer of a policy as JSON, in the keys of the policy file (docs/teams-and-policy.md): the API's
// GET /v1/policy, the client's PUT /v1/policy body and the journal's set_policy records all use it, and
// parse_policy (spec_yaml.h) reads it back.
#include <nlohmann/json.hpp>

#include "core/model/spec.h"

namespace allot::config {

nlohmann::json policy_json(const PolicySpec& p);

// An amount in the keys of the files (instances, accelerators, vcpu, memory_gib, whole_node; `unlimited`), which
// the YAML readers take back to the same amount: the client's request bodies and the policy's groups use it.
nlohmann::json amount_json(const AmountSpec& a);

// The policy's groups (core/quota/cohort_tree.h), in the keys of the policy file, as policy_json writes them; and back
// (absent in policies written before groups existed: none).
nlohmann::json groups_json(const std::vector<GroupSpec>& groups);
std::vector<GroupSpec> groups_from_json(const nlohmann::json& policy);

// A team's or priority class's time-limit keys (default_time_limit, max_time_limit, time_limit_resets_on_restart),
// added to `out` only when set, so that teams and classes without limits read as they always have; and back.
void put_time_limits(nlohmann::json& out, const TimeLimitSettings& t);
TimeLimitSettings time_limits_from_json(const nlohmann::json& j);

// A team's user_limits (core/quota/user_limits.h), in the keys of the teams file: written only when the team has some
// (teams and journals without them read as they always have), and back.
void put_user_limits(nlohmann::json& out, const std::vector<UserLimitSpec>& limits);
std::vector<UserLimitSpec> user_limits_from_json(const nlohmann::json& team);

}  // namespace allot::config
