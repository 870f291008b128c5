#pragma once
// The body of POST /v1/agents/register, read on the request thread before the writer sees it. Declared
// here (defined in api_agents.cpp) so that the fuzz target for request bodies (fuzz/http_body_fuzz.cpp)
// reads bodies exactly as the endpoint does.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::server {

struct Registration {
  NodeSpec node;
  std::string address;
  std::string replaces;               // the failed node this one replaces (docs/resiliency.md)
  int64_t heartbeat_interval_ms = 0;  // how often the agent heartbeats; 0: not said (1 s is assumed)
  int boot = 0;                       // the agent's boot count
  // Its network-node layers from an EC2 topology file (`allot agent --ec2-topology`), checked by the one rule
  // (core check_network_layers) and already in node.labels; absent: the agent sent none.
  std::optional<std::vector<std::string>> network_layers;
};

// {name, instance_type, instance_group?, labels?, inventory?, address?, replaces?, heartbeat_interval_ms?,
// boot?, network_layers?}; unknown keys are errors.
Result<Registration> parse_registration(const nlohmann::json& body, const Catalog& catalog);

}  // namespace allot::server
