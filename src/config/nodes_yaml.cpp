// Nodes (cluster.nodes, nodes files, add_nodes / remove_nodes) and user-defined instance types.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "config/spec_yaml.h"
#include "config/yaml_budget.h"

namespace allot {
namespace {

using namespace config;

const std::vector<std::string_view> kNodeKeys = {"name", "instance_type", "instance_group", "labels"};

// One entry of a nodes list. Its name may be a host list, so it gives one node or many with the same facts.
Status read_node_entry(const YamlContext& ctx, const Val& v, const Catalog& catalog, std::vector<NodeSpec>& out) {
  auto f = Fields::open(ctx, v, kNodeKeys);
  if (!f) return f.error();
  auto name_val = f->need(ctx, "name");
  if (!name_val) return name_val.error();
  auto names = read_hostlist(ctx, *name_val);
  if (!names) return names.error();
  for (const auto& n : *names)
    if (auto st = check_object_name(ctx, *name_val, NameKind::kNode, n); !st) return st;
  auto type_val = f->need(ctx, "instance_type");
  if (!type_val) return type_val.error();
  auto type = read_instance_type(ctx, *type_val, catalog);
  if (!type) return type.error();
  NodeSpec spec;
  spec.instance_type = *type;
  if (auto g = f->get("instance_group")) {
    auto group = read_text(ctx, *g);
    if (!group) return group.error();
    spec.instance_group = *group;
  }
  if (auto l = f->get("labels")) {
    auto labels = read_string_map(ctx, *l);
    if (!labels) return labels.error();
    // Each node gets its own copy: an aliased mapping of many labels on a long host list multiplies.
    if (auto st = charge_node_labels(ctx, *l, names->size() * labels->size()); !st) return st;
    spec.labels = std::move(*labels);
  }
  for (auto& n : *names) {
    spec.name = std::move(n);
    out.push_back(spec);
  }
  return ok_status();
}

Result<std::vector<NodeSpec>> read_nodes(const YamlContext& ctx, const Val& list, const Catalog& catalog) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  std::vector<NodeSpec> out;
  std::map<std::string, int> first_line;
  for (const Val& item : *items) {
    size_t before = out.size();
    // The document's budget (config/yaml_budget.h) bounds the nodes of all entries together.
    if (auto st = read_node_entry(ctx, item, catalog, out); !st) return st.error();
    for (size_t i = before; i < out.size(); ++i) {
      auto [pos, fresh] = first_line.emplace(out[i].name, item.line);
      if (!fresh)
        return fail(ctx, item, "node " + out[i].name + " is listed twice (first at line " + std::to_string(pos->second) + ")",
                    "node names must be unique");
    }
  }
  return out;
}

}  // namespace

Result<std::vector<NodeSpec>> parse_nodes(const YAML::Node& list, const Catalog& catalog, const YamlContext& given) {
  const YamlContext ctx = with_budget(given);
  return guard(ctx, [&]() { return read_nodes(ctx, root(list, ctx), catalog); });
}

Result<std::vector<std::string>> parse_node_names(const YAML::Node& node, const YamlContext& given) {
  const YamlContext ctx = with_budget(given);
  return guard(ctx, [&]() -> Result<std::vector<std::string>> {
    Val v = root(node, ctx);
    if (v.node.IsScalar()) return read_hostlist(ctx, v);
    auto items = list_items(ctx, v);
    if (!items) return items.error();
    std::vector<std::string> out;
    for (const Val& item : *items) {
      Val name = item;
      if (item.node.IsMap()) {
        auto f = Fields::open(ctx, item, kNodeKeys);
        if (!f) return f.error();
        auto n = f->need(ctx, "name");
        if (!n) return n.error();
        name = *n;
      }
      auto names = read_hostlist(ctx, name);
      if (!names) return names.error();
      out.insert(out.end(), names->begin(), names->end());  // bounded by the document's budget
    }
    return out;
  });
}

Result<std::vector<NodeSpec>> parse_nodes_text(const std::string& text, const Catalog& catalog, const std::string& origin) {
  YamlContext ctx;
  ctx.origin = origin;
  ctx.budget = std::make_shared<ExpansionBudget>();
  auto doc = load_yaml(text, ctx);
  if (!doc) return doc.error();
  const std::string allowed = "a nodes file is a list of node entries, a mapping {nodes: [...]} or cluster: {nodes: [...]}";
  return guard(ctx, [&]() -> Result<std::vector<NodeSpec>> {
    Val v = root(*doc, ctx);
    if (v.node.IsNull()) return fail(ctx, 0, "the file is empty", allowed);
    if (v.node.IsSequence()) {
      v.path = "nodes";
      return read_nodes(ctx, v, catalog);
    }
    if (!v.node.IsMap()) return fail(ctx, v, "the document is " + describe(v.node), allowed);
    auto entries = map_entries(ctx, v);
    if (!entries) return entries.error();
    const Entry* cluster = nullptr;
    bool has_nodes = false;
    for (const auto& e : *entries) {
      if (e.key == "cluster") cluster = &e;
      has_nodes = has_nodes || e.key == "nodes";
    }
    if (cluster && !has_nodes) {
      // A whole scenario file: only its cluster section is ours to read here.
      auto f = Fields::open(ctx, cluster->value, {"nodes", "topology_levels"});
      if (!f) return f.error();
      auto nodes = f->need(ctx, "nodes");
      if (!nodes) return nodes.error();
      return read_nodes(ctx, *nodes, catalog);
    }
    auto f = Fields::open(ctx, v, {"nodes"});
    if (!f) return f.error();
    auto nodes = f->need(ctx, "nodes");
    if (!nodes) return nodes.error();
    return read_nodes(ctx, *nodes, catalog);
  });
}

Result<std::vector<NodeSpec>> load_nodes_file(const std::string& path, const Catalog& catalog) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::not_found(path + ": cannot open the file; give the path of a readable nodes YAML file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_nodes_text(text.str(), catalog, path);
}

std::string nodes_to_yaml(const std::vector<NodeSpec>& nodes) {
  YAML::Emitter out;
  out << YAML::BeginSeq;
  for (const NodeSpec& n : nodes) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << n.name;
    out << YAML::Key << "instance_type" << YAML::Value << n.instance_type;
    if (!n.instance_group.empty()) out << YAML::Key << "instance_group" << YAML::Value << n.instance_group;
    if (!n.labels.empty()) {
      out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
      for (const auto& [k, val] : n.labels) out << YAML::Key << k << YAML::Value << val;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  return std::string(out.c_str()) + "\n";
}

// --- instance types -----------------------------------------------------------------------------------------

namespace {

// One entry of an `instance_types` list. `defined` holds the names the list gave before this entry. A name the
// catalog already has (a built-in type) is taken only with the same figures, or with `replaces_builtin: true`:
// a policy file must not change what a built-in type is without saying so.
Result<InstanceType> read_instance_type_entry(const YamlContext& ctx, const Val& v, const Catalog& catalog,
                                              const std::set<std::string>& defined) {
  auto f = Fields::open(ctx, v, {"name", "accelerator_kind", "accelerator_model", "accelerators", "accelerator_memory_gib",
                                 "neuron_cores_per_accelerator", "vcpus", "memory_gib", "efa_interfaces", "numa_domains",
                                 "ultraserver_size", "replaces_builtin"});
  if (!f) return f.error();
  InstanceType t;
  auto name_val = f->need(ctx, "name");
  if (!name_val) return name_val.error();
  auto name = read_name(ctx, *name_val);
  if (!name) return name.error();
  t.name = canonical_type_name(*name);
  if (defined.count(t.name))
    return fail(ctx, *name_val, "instance type " + t.name + " is defined twice in this list", "define each type once");
  bool replaces = false;
  if (auto r = f->get("replaces_builtin")) {
    auto b = read_bool(ctx, *r);
    if (!b) return b.error();
    replaces = *b;
    if (replaces && !catalog.find(t.name))
      return fail(ctx, *r, "instance type " + t.name + " is not built in, so it replaces nothing",
                  "remove replaces_builtin (it is for changing a built-in type's figures)");
  }

  // Integer facts: key, field, range. vcpus and memory_gib have no sensible default, so they are required.
  struct IntFact {
    std::string_view key;
    int* field;
    int64_t lo, hi;
    bool required;
  };
  int numa_domains = 1;
  const IntFact facts[] = {
      {"accelerators", &t.accelerators, 0, 64, false},
      {"accelerator_memory_gib", &t.accelerator_memory_gib, 0, 100'000, false},
      {"neuron_cores_per_accelerator", &t.neuron_cores_per_accelerator, 0, 64, false},
      {"vcpus", &t.vcpus, 1, 4096, true},
      {"memory_gib", &t.memory_gib, 1, 1 << 20, true},
      {"efa_interfaces", &t.efa_interfaces, 0, 1024, false},
      {"numa_domains", &numa_domains, 1, 64, false},
      {"ultraserver_size", &t.ultraserver_size, 0, 1024, false},
  };
  for (const IntFact& fact : facts) {
    std::optional<Val> fv = f->get(fact.key);
    if (!fv && fact.required) return f->need(ctx, fact.key).error();
    if (!fv) continue;
    auto n = read_int(ctx, *fv, fact.lo, fact.hi);
    if (!n) return n.error();
    *fact.field = static_cast<int>(*n);
  }

  std::optional<Val> kind_val = f->get("accelerator_kind");
  if (kind_val) {
    auto k = read_choice(ctx, *kind_val, {"none", "nvidia-gpu", "neuron"});
    if (!k) return k.error();
    t.accelerator_kind = static_cast<AcceleratorKind>(*k);  // the order of the enum
  }
  if (t.accelerators > 0 && t.accelerator_kind == AcceleratorKind::kNone)
    return fail(ctx, kind_val ? *kind_val : f->self(), "instance type " + t.name + " has accelerators but accelerator_kind none",
                "set accelerator_kind: nvidia-gpu or neuron");
  if (t.accelerators == 0 && t.accelerator_kind != AcceleratorKind::kNone)
    return fail(ctx, *kind_val, "instance type " + t.name + " has accelerator_kind " + accelerator_kind_name(t.accelerator_kind) +
                                    " but no accelerators", "set accelerators, or accelerator_kind: none");
  if (auto m = f->get("accelerator_model")) {
    auto model = read_text(ctx, *m);
    if (!model) return model.error();
    t.accelerator_model = *model;
  }
  if (numa_domains > t.vcpus)
    return fail(ctx, *f->get("numa_domains"), "numa_domains is larger than vcpus", "each NUMA domain needs a vCPU");
  t.numa = even_numa(numa_domains, t.accelerators, t.vcpus);
  if (auto known = catalog.find(t.name); known && !replaces) {
    const std::string diff = fact_differences(t, catalog.at(*known));
    if (!diff.empty())
      return fail(ctx, *name_val, "instance type " + t.name + " is built in with other figures: " + diff,
                  "remove the entry to use the built-in figures, or add replaces_builtin: true to use these instead");
  }
  return t;
}

}  // namespace

Result<std::vector<InstanceType>> parse_instance_types(const YAML::Node& list, Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() -> Result<std::vector<InstanceType>> {
    auto items = list_items(ctx, root(list, ctx));
    if (!items) return items.error();
    std::vector<InstanceType> out;
    std::set<std::string> defined;
    for (const Val& item : *items) {
      auto t = read_instance_type_entry(ctx, item, catalog, defined);
      if (!t) return t.error();
      defined.insert(t->name);
      auto id = catalog.put(*t);
      if (!id) return fail(ctx, item, id.error().message, "fix the instance type's facts");
      out.push_back(catalog.at(*id));
    }
    return out;
  });
}

Result<Catalog> load_catalog(const std::string& path) {
  Catalog catalog = Catalog::builtin();
  if (path.empty()) {
    catalog.set_origin("built in; no --instance-types file adds any");
    return catalog;
  }
  catalog.set_origin("built in, and the instance_types of " + path + " (--instance-types)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::not_found(path + ": cannot open the file; give the policy file that has the instance_types section");
  std::ostringstream text;
  text << in.rdbuf();
  YamlContext ctx;
  ctx.origin = path;
  ctx.budget = std::make_shared<ExpansionBudget>();
  auto doc = load_yaml(text.str(), ctx);
  if (!doc) return doc.error();
  const std::string allowed = "the policy file (a mapping with an instance_types list; its other sections are not read here)";
  auto types = guard(ctx, [&]() -> Result<bool> {
    Val v = root(*doc, ctx);
    if (!v.node.IsMap()) return fail(ctx, v, "the document is " + describe(v.node), allowed);
    auto entries = map_entries(ctx, v);
    if (!entries) return entries.error();
    for (const auto& e : *entries)
      if (e.key == "instance_types") {
        auto t = parse_instance_types(e.value.node, catalog, sub(ctx, e.value));
        if (!t) return t.error();
        return true;
      }
    return fail(ctx, v, "the file has no instance_types section", allowed);
  });
  if (!types) return types.error();
  return catalog;
}

}  // namespace allot
