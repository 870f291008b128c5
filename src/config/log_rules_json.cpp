#include "config/log_rules_json.h"

namespace allot::config {
using nlohmann::json;

json log_rules_json(const LogRules& rules) {
  json o = json::object();
  if (rules.progress) o["progress"] = {{"pattern", rules.progress->pattern}, {"every", rules.progress->every_s}};
  if (!rules.restart_on.empty()) o["restart_on"] = rules.restart_on;
  if (!rules.fail_on.empty()) o["fail_on"] = rules.fail_on;
  return o;
}

LogRules log_rules_from_json(const json& j) {
  LogRules rules;
  if (j.contains("progress"))
    rules.progress = ProgressRule{j.at("progress").at("pattern").get<std::string>(), j.at("progress").at("every").get<int64_t>()};
  if (j.contains("restart_on")) rules.restart_on = j.at("restart_on").get<std::vector<std::string>>();
  if (j.contains("fail_on")) rules.fail_on = j.at("fail_on").get<std::vector<std::string>>();
  return rules;
}

}  // namespace allot::config
