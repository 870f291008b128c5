#pragma once
// A job's log_rules (core/lifecycle/log_rules.h) as JSON, in the shape the YAML has ({"progress": {"pattern", "every"},
// "restart_on": [...], "fail_on": [...]}): what the CLI sends (read back by the server's YAML reader, which checks
// it) and what the journal keeps (store/spec_json.cpp).
#include <nlohmann/json.hpp>

#include "core/lifecycle/log_rules.h"

namespace allot::config {

nlohmann::json log_rules_json(const LogRules& rules);
// The journal's own JSON, written by log_rules_json: a value of the wrong type throws (the journal reader turns
// that into an error naming the record).
LogRules log_rules_from_json(const nlohmann::json& j);

}  // namespace allot::config
