#pragma once
// `allot usage` output (docs/cli.md, "allot usage"): a GET /v1/usage answer as a table for people (hours with one
// decimal) or as CSV for spreadsheets (hours with three decimals). Pure functions of the answer's JSON.
#include <string>

#include <nlohmann/json.hpp>

namespace allot::client {

std::string usage_table(const nlohmann::json& report);
std::string usage_csv(const nlohmann::json& report);

}  // namespace allot::client
