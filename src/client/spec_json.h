#pragma once
// Specs as the API's request bodies: the scenario format's shapes (a `teams` entry, the `policy` section, a
// `submit` entry), in external units (vcpu, memory_gib, seconds). The server reads them with the same
// readers as scenario files, so what `allot apply` and `allot submit` checked locally reads the same there.
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "core/model/spec.h"

namespace allot::client {

nlohmann::json amount_body(const AmountSpec& a);
nlohmann::json team_body(const TeamSpec& t);
nlohmann::json policy_body(const PolicySpec& p);
nlohmann::json job_body(const JobSpec& j);

// A team entry from what GET /v1/teams/{name} answers (view::team_json), keeping only the keys a PUT takes.
nlohmann::json team_body_from_view(const nlohmann::json& view);

// A YAML document as JSON for a request body the server reads with its YAML readers: every scalar becomes a
// string, which those readers read as the value it spells (8, true, 1.5) exactly as they read the YAML.
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace allot::client
