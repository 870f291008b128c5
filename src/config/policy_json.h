#pragma once
// The one writer of a policy as JSON, in the keys of the policy file (docs/teams-and-policy.md): the API's
// GET /v1/policy, the client's PUT /v1/policy body and the journal's set_policy records all use it, and
// parse_policy (spec_yaml.h) reads it back.
#include <nlohmann/json.hpp>

#include "core/spec.h"

namespace allot::config {

nlohmann::json policy_json(const PolicySpec& p);

}  // namespace allot::config
