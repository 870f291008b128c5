// Capacity plans: the scenario `plans:` section and `allot sim replay --plans FILE` (core/model/plans.h).
#include <fstream>
#include <set>
#include <sstream>

#include "config/spec_yaml.h"

namespace allot {
namespace {

using namespace config;

const std::vector<std::string_view> kPlanKeys = {"name", "instance_type", "count", "start", "end", "grace", "team", "labels"};

Result<PlanSpec> read_plan(const YamlContext& ctx, const Val& v, const Catalog& catalog) {
  auto f = Fields::open(ctx, v, kPlanKeys);
  if (!f) return f.error();
  PlanSpec p;
  auto name = f->need(ctx, "name");
  if (!name) return name.error();
  auto n = read_object_name(ctx, *name, NameKind::kPlan);
  if (!n) return n.error();
  p.name = *n;
  auto type_val = f->need(ctx, "instance_type");
  if (!type_val) return type_val.error();
  auto type = read_instance_type(ctx, *type_val, catalog);
  if (!type) return type.error();
  p.instance_type = *type;
  auto count = f->need(ctx, "count");
  if (!count) return count.error();
  auto c = read_int(ctx, *count, 1, 10000);
  if (!c) return c.error();
  p.count = static_cast<int>(*c);
  for (auto [key, field] : {std::pair{"start", &p.start}, {"end", &p.end}}) {
    auto t = f->need(ctx, key);
    if (!t) return t.error();
    auto x = read_int(ctx, *t, 0, kMaxSeconds);
    if (!x) return x.error();
    *field = *x;
  }
  if (p.end <= p.start)
    return fail(ctx, v, name_of(v) + ": end (" + std::to_string(p.end) + ") is not after start (" + std::to_string(p.start) + ")",
                "a plan ends after it starts");
  if (auto g = f->get("grace")) {
    auto x = read_int(ctx, *g, 0, p.end - p.start);
    if (!x) return x.error();
    p.grace_s = *x;
  }
  if (auto t = f->get("team")) {
    auto team = read_object_name(ctx, *t, NameKind::kTeam);
    if (!team) return team.error();
    p.team = *team;
  }
  if (auto l = f->get("labels")) {
    auto labels = read_string_map(ctx, *l);
    if (!labels) return labels.error();
    p.labels = std::move(*labels);
  }
  return p;
}

Result<std::vector<PlanSpec>> read_plans(const YamlContext& ctx, const Val& list, const Catalog& catalog) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  std::vector<PlanSpec> out;
  std::set<std::string> names;
  for (const Val& item : *items) {
    auto p = read_plan(ctx, item, catalog);
    if (!p) return p.error();
    if (!names.insert(p->name).second)
      return fail(ctx, item, "plan " + p->name + " is listed twice", "plan names must be unique");
    out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace

Result<PlanSpec> parse_plan(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() { return read_plan(ctx, root(node, ctx), catalog); });
}

Result<std::vector<PlanSpec>> parse_plans(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() { return read_plans(ctx, root(list, ctx), catalog); });
}

Result<std::vector<PlanSpec>> load_plans_file(const std::string& path, const Catalog& catalog) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::not_found(path + ": cannot open the file; give the path of a readable plans YAML file");
  std::ostringstream text;
  text << in.rdbuf();
  YamlContext ctx;
  ctx.origin = path;
  auto doc = load_yaml(text.str(), ctx);
  if (!doc) return doc.error();
  return guard(ctx, [&]() -> Result<std::vector<PlanSpec>> {
    Val v = root(*doc, ctx);
    // The list itself, or a mapping {plans: [...]}.
    if (v.node.IsMap()) {
      auto f = Fields::open(ctx, v, {"plans"});
      if (!f) return f.error();
      auto list = f->need(ctx, "plans");
      if (!list) return list.error();
      return read_plans(ctx, *list, catalog);
    }
    return read_plans(ctx, v, catalog);
  });
}

}  // namespace allot
