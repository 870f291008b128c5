#pragma once
// A job's `after` (core/model/dependency.h) as JSON, in the shape the YAML has ([{"job": NAME, "condition": "succeeded"},
// ...]): what the CLI sends (read back by the server's YAML reader, which checks it), what the journal keeps
// (store/spec_json.cpp) and what views show.
#include <nlohmann/json.hpp>

#include "core/model/spec.h"

namespace allot::config {

nlohmann::json after_json(const std::vector<JobDependency>& after);
// The journal's own JSON, written by after_json: a value of the wrong type or an unknown condition throws (the
// journal reader turns that into an error naming the record).
std::vector<JobDependency> after_from_json(const nlohmann::json& j);
// "succeeded", "ended", "started", or nullopt.
std::optional<DependencyCondition> dependency_condition_named(std::string_view name);

}  // namespace allot::config
