#include "client/apply_plan.h"

#include <map>

#include "client/spec_json.h"

namespace allot::client {
namespace {

using nlohmann::json;

std::string shown(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::map<std::string, json> by_name(const json& list) {
  std::map<std::string, json> out;
  if (list.is_array())
    for (const auto& e : list)
      if (e.is_object() && e.contains("name")) out[e["name"].get<std::string>()] = e;
  return out;
}

void plan_policy(const ApplyInput& in, ApplyPlan& plan) {
  json merged = in.current_policy.is_object() ? in.current_policy : json::object();
  for (const auto& key : in.file_policy_keys) {
    if (key == "priority_classes" || !in.file_policy.contains(key)) continue;
    const json before = merged.value(key, json());
    const json after = in.file_policy[key];
    if (before != after) plan.changes.push_back("~ policy." + key + ": " + shown(before) + " -> " + shown(after));
    merged[key] = after;
  }
  if (in.file_policy_keys.count("priority_classes")) {
    const auto current = by_name(merged.value("priority_classes", json::array()));
    const auto wanted = by_name(in.file_policy.value("priority_classes", json::array()));
    json classes = json::array();
    for (const auto& [name, c] : current) {
      auto it = wanted.find(name);
      if (it == wanted.end()) {
        if (in.prune) plan.changes.push_back("- priority-class " + name + " (pruned: not in the file)");
        else classes.push_back(c);
      } else {
        if (it->second.value("weight", json()) != c.value("weight", json()))
          plan.changes.push_back("~ priority-class " + name + ": weight " + shown(c.value("weight", json())) + " -> " +
                                 shown(it->second.value("weight", json())));
        classes.push_back(it->second);
      }
    }
    for (const auto& [name, c] : wanted)
      if (!current.count(name)) {
        plan.changes.push_back("+ priority-class " + name + " (weight " + shown(c.value("weight", json())) + ")");
        classes.push_back(c);
      }
    merged["priority_classes"] = classes;
  }
  plan.body["policy"] = merged;
}

void plan_teams(const ApplyInput& in, ApplyPlan& plan) {
  const auto current = by_name(in.current_teams);
  const auto wanted = by_name(in.file_teams);
  json teams = json::array();
  for (const auto& [name, t] : wanted) {
    auto it = current.find(name);
    if (it == current.end()) {
      plan.changes.push_back("+ team " + name);
    } else {
      const json before = team_body_from_view(it->second);
      for (const auto& [key, value] : t.items())
        if (before.value(key, json()) != value)
          plan.changes.push_back("~ team " + name + "." + key + ": " + shown(before.value(key, json())) + " -> " + shown(value));
    }
    teams.push_back(t);
  }
  plan.body["teams"] = teams;
  if (in.prune)
    for (const auto& [name, t] : current)
      if (!wanted.count(name)) {
        plan.delete_teams.push_back(name);
        plan.changes.push_back("- team " + name + " (pruned: not in the file)");
      }
}

}  // namespace

ApplyPlan plan_apply(const ApplyInput& in) {
  ApplyPlan plan;
  if (!in.file_policy.is_null()) plan_policy(in, plan);
  if (!in.file_teams.is_null()) plan_teams(in, plan);
  return plan;
}

}  // namespace allot::client
