#include "interop/mermaid.h"

#include <cctype>

#include "interop/hostlist_compress.h"
#include "interop/topology_hierarchy.h"
#include "interop/topology_labels.h"

namespace allot::interop {
namespace {

// Label text goes inside "..."; Mermaid reads entity codes ("#quot;"), so '#', quotes and angle brackets are
// escaped.
std::string escape_label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '#') out += "#35;";  // a bare '#' could start an entity code
    else if (c == '"') out += "#quot;";
    else if (c == '<') out += "#lt;";
    else if (c == '>') out += "#gt;";
    else out += c;
  }
  return out;
}

std::string level_title(const std::string& key) {
  if (key == kZoneLabel) return "zone";
  if (key == kUltraserverIdLabel) return "UltraServer";
  if (int n = network_layer_of(key)) return "layer " + std::to_string(n);
  return key;
}

std::string count_text(int n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); }

class Writer {
 public:
  Writer(const TopologyHierarchy& h, const MermaidOptions& o) : h_(h), o_(o) {}

  std::string run() {
    out_ = "flowchart TD\n";
    const TopologyDomain& root = h_.domains[0];
    if (root.children.size() == 1 && root.nodes.empty()) {
      domain(root.children[0], "");  // one top domain: it is the root of the chart
    } else {
      domain(0, "");
    }
    out_ += "  classDef dom fill:#eef,stroke:#336\n  classDef host fill:#efe,stroke:#363\n";
    return out_;
  }

 private:
  std::string next_id(const std::string& text) { return mermaid_id("n" + std::to_string(counter_++) + "_", text); }

  // `lines` are escaped one by one and joined by Mermaid's line break.
  void box(const std::string& id, const std::vector<std::string>& lines, const char* cls) {
    std::string label;
    for (const auto& l : lines) label += (label.empty() ? "" : "<br/>") + escape_label(l);
    out_ += "  " + id + "[\"" + label + "\"]:::" + cls + "\n";
  }

  void edge(const std::string& from, const std::string& to) {
    if (!from.empty()) out_ += "  " + from + " --> " + to + "\n";
  }

  void domain(int d, const std::string& parent) {
    const TopologyDomain& dom = h_.domains[d];
    std::string label = d == 0 ? "cluster" : level_title(dom.level) + ": " + dom.value;
    std::string id = next_id(d == 0 ? "cluster" : dom.value);
    box(id, {label, count_text(dom.node_count)}, "dom");
    edge(parent, id);
    for (int c : dom.children) domain(c, id);
    if (dom.nodes.empty()) return;
    if (int(dom.nodes.size()) > o_.max_nodes_per_group) {
      std::string leaf = next_id("nodes");
      // One range box for the group; at the root beside real domains it is the nodes without network labels.
      std::string prefix = d == 0 && !dom.children.empty() ? "no network labels: " : "";
      box(leaf, {prefix + compress_hostlist(dom.nodes) + " (" + count_text(int(dom.nodes.size())) + ")"}, "host");
      edge(id, leaf);
      return;
    }
    for (const auto& n : dom.nodes) {
      std::string leaf = next_id(n);
      box(leaf, {n}, "host");
      edge(id, leaf);
    }
  }

  const TopologyHierarchy& h_;
  const MermaidOptions& o_;
  std::string out_;
  int counter_ = 0;
};

}  // namespace

std::string mermaid_id(const std::string& prefix, const std::string& text) {
  std::string id = prefix;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) id += c;
    else if (id.empty() || id.back() != '_') id += '_';
  }
  if (id.size() > 40) id.resize(40);
  if (id.empty() || !std::isalpha(static_cast<unsigned char>(id[0]))) id.insert(0, "n");
  return id;
}

Result<std::string> topology_mermaid(const std::vector<NodeSpec>& nodes, const MermaidOptions& options) {
  if (nodes.empty()) return Error::invalid("no nodes to draw");
  if (options.max_nodes_per_group < 1) return Error::invalid("max_nodes_per_group must be at least 1");
  auto h = build_hierarchy(nodes);
  if (!h) return h.error();
  return Writer(*h, options).run();
}

}  // namespace allot::interop
