#include "config/yaml_budget.h"

#include <memory>
#include <string>
#include <vector>

namespace allot {

Status check_expanded_size(const YAML::Node& doc, const YamlContext& ctx) {
  // Depth-first over the document as the readers see it: an alias's value is visited each time it is used.
  size_t values = 0, bytes = 0;
  std::vector<YAML::Node> todo = {doc};
  while (!todo.empty()) {
    const YAML::Node n = todo.back();
    todo.pop_back();
    if (++values > kMaxYamlValues)
      return config::fail(ctx, config::line_of(n),
                          "the document has more than " + std::to_string(kMaxYamlValues) + " values once its YAML aliases are expanded",
                          "an alias counts its anchor's whole value each time it is used; write less, or split the file");
    switch (n.Type()) {
      case YAML::NodeType::Scalar:
        bytes += n.Scalar().size();
        if (bytes > kMaxYamlTextBytes)
          return config::fail(ctx, config::line_of(n),
                              "the document has more than " + std::to_string(kMaxYamlTextBytes >> 20) +
                                  " MiB of text once its YAML aliases are expanded",
                              "an alias counts its anchor's whole text each time it is used; write less, or split the file");
        break;
      case YAML::NodeType::Sequence:
        for (const YAML::Node& item : n) todo.push_back(item);
        break;
      case YAML::NodeType::Map:
        for (auto it = n.begin(); it != n.end(); ++it) {
          todo.push_back(it->first);
          todo.push_back(it->second);
        }
        break;
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        break;
    }
  }
  return ok_status();
}

namespace config {

YamlContext with_budget(const YamlContext& ctx) {
  YamlContext out = ctx;
  if (!out.budget) out.budget = std::make_shared<ExpansionBudget>();
  return out;
}

namespace {
const char* const kExpanded = " (host lists expanded, and YAML aliases counted each time they are used)";
}  // namespace

Status charge_node_names(const YamlContext& ctx, const Val& v, size_t names) {
  if (!ctx.budget) return ok_status();
  ctx.budget->node_names += names;
  if (ctx.budget->node_names > kMaxDocumentNodeNames)
    return fail(ctx, v, "the document names more than " + std::to_string(kMaxDocumentNodeNames) + " nodes in all" + kExpanded,
                "split the cluster or check the host list ranges");
  return ok_status();
}

Status charge_node_labels(const YamlContext& ctx, const Val& v, size_t labels) {
  if (!ctx.budget) return ok_status();
  ctx.budget->node_labels += labels;
  if (ctx.budget->node_labels > kMaxDocumentNodeLabels)
    return fail(ctx, v, "the document gives its nodes more than " + std::to_string(kMaxDocumentNodeLabels) + " labels in all" + kExpanded,
                "an entry's labels count once for each node its host list names; give fewer labels");
  return ok_status();
}

}  // namespace config
}  // namespace allot
