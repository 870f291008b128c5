#pragma once
// What one YAML document may expand to (docs/scenarios.md, "Limits"). A few bytes can stand for a great deal:
// an alias repeats its anchor's whole value each time it is used (yaml-cpp shares the value, the readers do
// not), and a host list of one line names up to kMaxHostlistNames nodes. So a document is measured with its
// aliases expanded before anything reads it, and the readers of one document charge the nodes and labels they
// build to one budget, so that no file or request body expands past these bounds, however it is written.
#include <yaml-cpp/yaml.h>

#include <cstddef>

#include "config/yaml_read.h"
#include "core/model/hostlist.h"

namespace allot {

// Values (scalars, lists, mappings, keys) in a document once its aliases are expanded.
inline constexpr size_t kMaxYamlValues = 1'000'000;
// Bytes of scalar text in a document once its aliases are expanded.
inline constexpr size_t kMaxYamlTextBytes = size_t{64} << 20;
// Node names in one document, in all its node lists together (host lists expanded).
inline constexpr size_t kMaxDocumentNodeNames = kMaxHostlistNames;
// Labels given to nodes in one document: a node entry's labels count once for each name its host list gives.
inline constexpr size_t kMaxDocumentNodeLabels = 4'000'000;

// What the readers of one document have built so far. Not thread-safe: one document is read by one thread.
struct ExpansionBudget {
  size_t node_names = 0;
  size_t node_labels = 0;
};

// An error naming the bound when `doc`, its aliases expanded, has more than kMaxYamlValues values or
// kMaxYamlTextBytes of text; load_yaml and load_yaml_documents check every document with it. The walk stops
// at the bound, so it costs no more than reading a document of that size.
Status check_expanded_size(const YAML::Node& doc, const YamlContext& ctx);

namespace config {

// `ctx` with a budget of its own when it has none (a public reader given a fresh context).
YamlContext with_budget(const YamlContext& ctx);
// Charge node names (read_hostlist) and the labels given to nodes (an entry's labels times its names) to the
// document's budget (none: only the per-list bounds apply); an error at `v` past the bound.
Status charge_node_names(const YamlContext& ctx, const Val& v, size_t names);
Status charge_node_labels(const YamlContext& ctx, const Val& v, size_t labels);

}  // namespace config
}  // namespace allot
