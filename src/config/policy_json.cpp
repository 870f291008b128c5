#include "config/policy_json.h"

namespace allot::config {

nlohmann::json policy_json(const PolicySpec& p) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& pc : p.priority_classes) classes.push_back({{"name", pc.name}, {"weight", pc.weight}});
  return {{"task_prioritization", task_prioritization_name(p.task_prioritization)},
          {"idle_compute", idle_compute_name(p.idle_compute)},
          {"idle_pool", p.idle_pool},
          {"priority_classes", classes},
          {"min_runtime", p.min_runtime_s},
          {"starvation_threshold", p.starvation_threshold_s},
          {"fair_share_preemption", p.fair_share_preemption},
          {"elastic_grow_delay", p.elastic_grow_delay_s}};
}

}  // namespace allot::config
