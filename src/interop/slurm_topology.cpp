#include "interop/slurm_topology.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "interop/hostlist_compress.h"
#include "interop/topology_hierarchy.h"
#include "interop/topology_labels.h"

namespace allot::interop {
namespace {

// Node names go into Slurm host lists verbatim, so they must not contain host-list syntax.
Status check_node_names(const std::vector<NodeSpec>& nodes) {
  if (nodes.empty()) return Error::invalid("no nodes: a topology.conf needs at least one node");
  for (const NodeSpec& n : nodes) {
    bool bad = n.name.empty();
    for (char c : n.name)
      if (std::isspace(static_cast<unsigned char>(c)) || c == '[' || c == ']' || c == ',' || c == '=' || c == '#')
        bad = true;
    if (bad) return Error::invalid("node name '" + n.name + "' cannot appear in a Slurm host list");
  }
  return ok_status();
}

// Hands out unique Slurm names: the sanitized value, then "-2", "-3" ... for a value seen before (the same
// network node name can appear under two parents, which makes two domains).
class NameRegistry {
 public:
  std::string take(std::string_view raw) {
    std::string base = slurm_safe_name(raw), name = base;
    for (int k = 2; !used_.insert(name).second; ++k) name = base + "-" + std::to_string(k);
    return name;
  }

 private:
  std::set<std::string> used_;
};

// "1 node has" / "4 nodes have": reasons and errors are read by people.
std::string nodes_have(size_t n) { return std::to_string(n) + (n == 1 ? " node has" : " nodes have"); }

struct Switch {
  std::string name;
  std::vector<std::string> nodes;  // leaf switches only
  std::vector<int> children;       // upper switches only
  int height = 0;                  // 0 for a leaf; Slurm reports it as Level
  std::string what;                // level of the domain, for the comment beside the line
};

std::string short_level_name(const std::string& key) {
  if (key.empty()) return "root";
  if (key == kZoneLabel) return "zone";
  if (key == kUltraserverIdLabel) return "ultraserver";
  if (int n = network_layer_of(key)) return "network-node-layer-" + std::to_string(n);
  return key;
}

// Emits the switch of one domain and, recursively, of its children; returns its index in `out`.
int emit_switch(const TopologyHierarchy& h, int d, NameRegistry& names, std::vector<Switch>& out) {
  const TopologyDomain& dom = h.domains[d];
  int self = int(out.size());
  out.push_back(Switch{.name = names.take(d == 0 ? "root" : dom.value), .nodes = {}, .children = {}, .height = 0,
                      .what = short_level_name(dom.level)});
  if (dom.children.empty()) {
    out[self].nodes = dom.nodes;
    return self;
  }
  std::vector<int> kids;
  for (int c : dom.children) kids.push_back(emit_switch(h, c, names, out));
  if (!dom.nodes.empty()) {
    // Slurm rejects a switch with both nodes and child switches, so the nodes that stop at this domain
    // (for example 3-layer instances beside 4-layer ones) get a leaf switch of their own.
    std::string leaf = d == 0 ? "unlabeled" : out[self].name + "-nodes";
    kids.push_back(int(out.size()));
    out.push_back(Switch{.name = names.take(leaf), .nodes = dom.nodes, .children = {}, .height = 0,
                        .what = "nodes without finer labels"});
  }
  int height = 0;
  for (int k : kids) height = std::max(height, out[k].height + 1);
  out[self].children = kids;
  out[self].height = height;
  return self;
}

}  // namespace

std::string slurm_safe_name(std::string_view raw) {
  std::string s;
  for (char c : raw) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  if (s.size() > 48) s.resize(48);
  if (s.empty()) s = "unnamed";
  return s;
}

Result<SlurmPlugin> parse_slurm_plugin(std::string_view name) {
  if (name == "tree") return SlurmPlugin::kTree;
  if (name == "block") return SlurmPlugin::kBlock;
  if (name == "auto") return SlurmPlugin::kAuto;
  return Error::invalid("unknown Slurm topology plugin '" + std::string(name) + "'; valid: tree, block, auto");
}

const char* slurm_plugin_name(SlurmPlugin p) {
  switch (p) {
    case SlurmPlugin::kTree: return "tree";
    case SlurmPlugin::kBlock: return "block";
    case SlurmPlugin::kAuto: return "auto";
  }
  return "?";
}

Result<std::string> slurm_tree_conf(const std::vector<NodeSpec>& nodes) {
  if (auto st = check_node_names(nodes); !st) return st.error();
  auto h = build_hierarchy(nodes);
  if (!h) return h.error();
  const TopologyDomain& root = h->domains[0];
  NameRegistry names;
  std::vector<Switch> sw;
  std::string note;
  if (root.children.empty()) {
    sw.push_back(Switch{.name = names.take("cluster"), .nodes = root.nodes, .children = {}, .height = 0, .what = "all nodes"});
    note = "# No node has network labels: one flat switch holds them all (topology/tree needs every node on a "
           "switch).\n";
  } else if (root.children.size() == 1 && root.nodes.empty()) {
    emit_switch(*h, root.children[0], names, sw);  // the single top domain is the root already
  } else {
    emit_switch(*h, 0, names, sw);
    note = "# \"" + sw[0].name + "\" joins the top-level domains so that a job may span them.\n";
    if (!root.nodes.empty())  // their leaf is the root's last child (see emit_switch)
      note += "# Nodes without network labels share the leaf switch \"" + sw[sw[0].children.back()].name +
              "\": " + compress_hostlist(root.nodes) + "\n";
  }

  int max_height = 0;
  for (const auto& s : sw) max_height = std::max(max_height, s.height);
  std::string text = "# Slurm topology.conf for TopologyPlugin=topology/tree, written by allot topology slurm-conf\n";
  text += "# " + std::to_string(nodes.size()) + " nodes, " + std::to_string(sw.size()) + " switches, " +
          std::to_string(max_height + 1) + " levels (Slurm's Level 0 is the leaf switches)\n" + note;
  // Leaves first, then each level up, as Slurm's own examples are laid out.
  for (int height = 0; height <= max_height; ++height)
    for (const auto& s : sw) {
      if (s.height != height) continue;
      std::string line = "SwitchName=" + s.name;
      if (height == 0) {
        line += " Nodes=" + compress_hostlist(s.nodes);
      } else {
        std::vector<std::string> kids;
        for (int k : s.children) kids.push_back(sw[k].name);
        line += " Switches=" + compress_hostlist(kids);
      }
      text += line + "  # " + s.what + "\n";
    }
  return text;
}

Result<std::string> slurm_block_conf(const std::vector<NodeSpec>& nodes, const Catalog& catalog) {
  if (auto st = check_node_names(nodes); !st) return st.error();
  struct Block {
    std::string id;
    std::vector<std::string> nodes;
    std::set<std::string> types;
    std::vector<std::string> network;  // zone then layers of its first node: the order blocks are listed in
  };
  std::map<std::string, Block> blocks;
  std::vector<std::string> outside;
  std::set<std::string> seen;
  for (const NodeSpec& n : nodes) {
    if (!seen.insert(n.name).second) return Error::invalid("node " + n.name + " is listed twice");
    auto p = node_placement(n);
    if (!p) return p.error();
    if (p->ultraserver.empty()) {
      outside.push_back(n.name);
      continue;
    }
    Block& b = blocks[p->ultraserver];
    if (b.nodes.empty()) {
      b.id = p->ultraserver;
      b.network.push_back(p->zone);
      b.network.insert(b.network.end(), p->layers.begin(), p->layers.end());
    }
    b.nodes.push_back(n.name);
    b.types.insert(canonical_type_name(n.instance_type));
  }
  if (!outside.empty())
    return Error::invalid("topology/block needs every node in an UltraServer, but " + nodes_have(outside.size()) +
                          " no ultraserver-id label (" + compress_hostlist(outside) +
                          "); use --plugin tree for such a cluster");

  std::vector<Block*> order;
  size_t base = SIZE_MAX;
  for (auto& [id, b] : blocks) {
    if (b.types.size() > 1)
      return Error::invalid("UltraServer " + id + " mixes instance types (" + *b.types.begin() + ", " +
                            *std::next(b.types.begin()) + "); its nodes must share one type");
    if (auto t = catalog.find(*b.types.begin())) {
      int size = catalog.at(*t).ultraserver_size;
      if (size > 0 && b.nodes.size() > size_t(size))
        return Error::invalid("UltraServer " + id + " has " + std::to_string(b.nodes.size()) + " nodes but a " +
                              *b.types.begin() + " UltraServer holds " + std::to_string(size) +
                              "; check its ultraserver-id labels");
    }
    base = std::min(base, b.nodes.size());
    order.push_back(&b);
  }
  std::sort(order.begin(), order.end(), [](const Block* a, const Block* b) {
    if (a->network != b->network)
      return std::lexicographical_compare(a->network.begin(), a->network.end(), b->network.begin(),
                                          b->network.end(), [](auto& x, auto& y) { return natural_less(x, y); });
    return natural_less(a->id, b->id);
  });

  // BlockSizes: the first value is the planning base block size and no block may have fewer nodes, so it is
  // the smallest UltraServer present; each further value must be the base times a power of two. Listing
  // every power of two up to the number of blocks lets jobs use aggregated blocks of 2, 4, ... UltraServers.
  std::string sizes;
  for (size_t k = 0; k <= 15 && (size_t{1} << k) <= order.size(); ++k)
    sizes += (sizes.empty() ? "" : ",") + std::to_string(base << k);

  std::string text =
      "# Slurm topology.conf for TopologyPlugin=topology/block (Slurm 23.11 or later), written by allot topology "
      "slurm-conf\n# " +
      std::to_string(nodes.size()) + " nodes in " + std::to_string(order.size()) +
      " UltraServers (NVLink domains), listed in network order so that Slurm pairs neighbours\n";
  NameRegistry names;
  for (const Block* b : order) {
    std::string name = names.take(b->id);
    text += "BlockName=" + name + " Nodes=" + compress_hostlist(b->nodes);
    text += name == b->id ? "\n" : "  # UltraServer " + b->id + "\n";
  }
  text += "# The base block size is the smallest UltraServer here (" + std::to_string(base) + " nodes).\n";
  text += "BlockSizes=" + sizes + "\n";
  return text;
}

Result<SlurmTopologyConf> slurm_topology_conf(const std::vector<NodeSpec>& nodes, const Catalog& catalog,
                                              SlurmPlugin plugin) {
  SlurmTopologyConf out;
  if (plugin == SlurmPlugin::kAuto) {
    std::set<std::string> types;
    std::vector<std::string> outside;
    for (const NodeSpec& n : nodes) {
      types.insert(canonical_type_name(n.instance_type));
      auto p = node_placement(n);
      if (!p) return p.error();
      if (p->ultraserver.empty()) outside.push_back(n.name);
    }
    std::string type_list;
    for (const auto& t : types) type_list += (type_list.empty() ? "" : ", ") + t;
    auto t = types.size() == 1 ? catalog.find(*types.begin()) : std::nullopt;
    int us_size = t ? catalog.at(*t).ultraserver_size : 0;
    if (types.size() > 1) {
      out.reason = "the cluster mixes instance types (" + type_list +
                   "); topology/block describes one kind of UltraServer, so tree is the compatible choice";
    } else if (us_size == 0) {
      out.reason = (types.empty() ? std::string("no nodes") : type_list) + " has no UltraServers";
    } else if (!outside.empty()) {
      out.reason = nodes_have(outside.size()) + " no ultraserver-id label (" + compress_hostlist(outside) + ")";
    } else {
      plugin = SlurmPlugin::kBlock;
      out.reason = "every node is a " + type_list + " in an UltraServer of up to " + std::to_string(us_size) +
                   " nodes";
    }
    if (plugin == SlurmPlugin::kAuto) plugin = SlurmPlugin::kTree;
  }
  auto text = plugin == SlurmPlugin::kBlock ? slurm_block_conf(nodes, catalog) : slurm_tree_conf(nodes);
  if (!text) return text.error();
  out.plugin = plugin;
  out.text = out.reason.empty() ? *text : "# " + std::string(slurm_plugin_name(plugin)) + ": " + out.reason + "\n" + *text;
  return out;
}

}  // namespace allot::interop
