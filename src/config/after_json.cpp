#include "config/after_json.h"

#include <stdexcept>

namespace allot::config {

std::optional<DependencyCondition> dependency_condition_named(std::string_view name) {
  for (DependencyCondition c : kDependencyConditions)
    if (name == dependency_condition_name(c)) return c;
  return std::nullopt;
}

nlohmann::json after_json(const std::vector<JobDependency>& after) {
  nlohmann::json out = nlohmann::json::array();
  for (const JobDependency& d : after) out.push_back({{"job", d.job}, {"condition", dependency_condition_name(d.condition)}});
  return out;
}

std::vector<JobDependency> after_from_json(const nlohmann::json& j) {
  std::vector<JobDependency> out;
  for (const auto& e : j) {
    const std::string condition = e.at("condition").get<std::string>();
    auto c = dependency_condition_named(condition);
    if (!c) throw std::invalid_argument("after: unknown condition '" + condition + "'");
    out.push_back(JobDependency{.job = e.at("job").get<std::string>(), .condition = *c});
  }
  return out;
}

}  // namespace allot::config
