#pragma once
// A Mermaid `flowchart TD` of the topology hierarchy: zone -> network-node layers -> UltraServer -> nodes.
// Every node appears, either as its own box or inside a range box ("gpu-[1-16] (16 nodes)") when its group is
// large, so the chart of a big cluster stays readable.
#include <string>
#include <vector>

#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::interop {

struct MermaidOptions {
  // Groups of more nodes than this, attached to one domain, are drawn as one range box.
  int max_nodes_per_group = 8;
};

Result<std::string> topology_mermaid(const std::vector<NodeSpec>& nodes, const MermaidOptions& options = {});

// A Mermaid node id built from free text: letters, digits and '_' only, starting with a letter, and made
// unique by the caller's prefix (ids like "end" or "o1" would otherwise confuse Mermaid's parser).
std::string mermaid_id(const std::string& prefix, const std::string& text);

}  // namespace allot::interop
