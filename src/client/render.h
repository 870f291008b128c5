#pragma once
// People's views of the API's JSON: the tables of `allot jobs | teams | nodes`, the explanation that
// `allot describe` prints, event lines and the topology tree. Pure functions of the JSON (and the current
// time, passed in), so tests can check them without a server.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace allot::client {

// `wide` (-o wide): reasons and node lists in full, not cut to the terminal's width.
std::string jobs_table(const nlohmann::json& jobs, int64_t now, bool wide = false);
// `allot teams`. With `groups` (the policy's cohort groups, [{name, parent?, fair_share_weight?}]; docs/scheduling.md, "Cohort
// trees") the teams are shown as the tree: each group a row, its subgroups and teams under it, indented two
// spaces a level; without groups (null or empty) the flat table.
std::string teams_tree_table(const nlohmann::json& teams, const nlohmann::json& groups);
std::string teams_table(const nlohmann::json& teams);  // teams_tree_table without groups: the flat table
// `allot describe team NAME`: the team's settings, allocation and per-instance-type figures.
std::string describe_team(const nlohmann::json& team);
std::string nodes_table(const nlohmann::json& nodes, int64_t now);
std::string priority_classes_table(const nlohmann::json& classes);
std::string policy_text(const nlohmann::json& policy);
std::string describe_job(const nlohmann::json& job, int64_t now);
// `allot describe node NAME`: health, its reason, each health check's last result, the health history.
std::string describe_node(const nlohmann::json& node, int64_t now);
std::string event_line(const nlohmann::json& event);
std::string topology_text(const nlohmann::json& topology);

// "14:03:07" for a Unix time, or "t=12s" for a small (relative or virtual) time.
std::string clock_time(int64_t t);

}  // namespace allot::client
