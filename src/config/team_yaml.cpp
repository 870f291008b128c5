// The cluster policy and the teams with their compute allocations.
#include <algorithm>
#include <map>

#include "config/container_rules.h"
#include "config/spec_yaml.h"
#include "core/quota/cohort_tree.h"
#include "core/quota/user_limits.h"

namespace allot {
namespace {

using namespace config;

// default_time_limit, max_time_limit, time_limit_resets_on_restart of a team or a priority class
// (docs/teams-and-policy.md, "Time limits"): whole seconds, at least 1, the default at most the maximum.
Status read_time_limits(const YamlContext& ctx, const Val& owner, const Fields& f, TimeLimitSettings& t) {
  if (auto d = f.get("default_time_limit")) {
    auto s = read_int(ctx, *d, 1, kMaxSeconds);
    if (!s) return s.error();
    t.default_s = *s;
  }
  if (auto m = f.get("max_time_limit")) {
    auto s = read_int(ctx, *m, 1, kMaxSeconds);
    if (!s) return s.error();
    t.max_s = *s;
  }
  if (t.default_s && t.max_s && *t.default_s > *t.max_s)
    return fail(ctx, *f.get("default_time_limit"),
                name_of(owner) + " has default_time_limit " + std::to_string(*t.default_s) + " above its max_time_limit " +
                    std::to_string(*t.max_s),
                "give a default of at most the maximum");
  if (auto r = f.get("time_limit_resets_on_restart")) {
    auto b = read_bool(ctx, *r);
    if (!b) return b.error();
    t.resets_on_restart = *b;
  }
  return ok_status();
}

Result<std::vector<PriorityClassSpec>> read_priority_classes(const YamlContext& ctx, const Val& list) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  std::vector<PriorityClassSpec> out;
  std::map<std::string, int> first_line;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, {"name", "weight", "locality_wait", "default_time_limit", "max_time_limit",
                                      "time_limit_resets_on_restart"});
    if (!f) return f.error();
    auto name_val = f->need(ctx, "name");
    if (!name_val) return name_val.error();
    auto name = read_object_name(ctx, *name_val, NameKind::kPriorityClass);
    if (!name) return name.error();
    auto [pos, fresh] = first_line.emplace(*name, item.line);
    if (!fresh)
      return fail(ctx, *name_val, "priority class " + *name + " is defined twice (first at line " + std::to_string(pos->second) + ")",
                  "give each priority class once");
    PriorityClassSpec pc{*name, 0};
    if (auto w = f->get("weight")) {
      auto weight = read_int(ctx, *w, 0, 100);
      if (!weight) return weight.error();
      pc.weight = static_cast<int>(*weight);
    }
    if (auto lw = f->get("locality_wait")) {
      auto s = read_int(ctx, *lw, 0, kMaxSeconds);
      if (!s) return s.error();
      pc.locality_wait_s = *s;
    }
    if (auto st = read_time_limits(ctx, item, *f, pc.time_limits); !st) return st.error();
    out.push_back(std::move(pc));
  }
  return out;
}

Result<std::vector<AllocationSpec>> read_allocation(const YamlContext& ctx, const Val& list, const Catalog* catalog);

// groups (docs/teams-and-policy.md, "Groups"): [{name, parent, allocation, borrow_limit, lend_limit,
// fair_share_weight}]. Names once each, parents defined, no cycles; the core checks the same for other sources
// (core/quota/cohort_tree.h, check_groups), here with the line. Allocations name types the core resolves.
Result<std::vector<GroupSpec>> read_groups(const YamlContext& ctx, const Val& list) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  std::vector<GroupSpec> out;
  std::map<std::string, int> first_line;
  std::vector<const Val*> parent_vals;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, {"name", "parent", "allocation", "borrow_limit", "lend_limit", "fair_share_weight"});
    if (!f) return f.error();
    auto name_val = f->need(ctx, "name");
    if (!name_val) return name_val.error();
    auto name = read_object_name(ctx, *name_val, NameKind::kGroup);
    if (!name) return name.error();
    auto [pos, fresh] = first_line.emplace(*name, item.line);
    if (!fresh)
      return fail(ctx, *name_val, "group " + *name + " is defined twice (first at line " + std::to_string(pos->second) + ")",
                  "give each group once");
    GroupSpec g;
    g.name = *name;
    if (auto p = f->get("parent")) {
      auto parent = read_object_name(ctx, *p, NameKind::kGroup);
      if (!parent) return parent.error();
      g.parent = *parent;
    }
    if (auto a = f->get("allocation")) {
      auto alloc = read_allocation(ctx, *a, nullptr);  // the policy has no catalog: the core resolves the types
      if (!alloc) return alloc.error();
      g.allocation = std::move(*alloc);
    }
    if (auto b = f->get("borrow_limit")) {
      auto limit = read_int(ctx, *b, 0, 10000);
      if (!limit) return limit.error();
      g.borrow_limit = static_cast<int>(*limit);
    }
    if (auto l = f->get("lend_limit")) {
      auto limit = read_int(ctx, *l, 0, 100);
      if (!limit) return limit.error();
      g.lend_limit = static_cast<int>(*limit);
    }
    if (auto w = f->get("fair_share_weight")) {
      auto weight = read_int(ctx, *w, 0, 100);
      if (!weight) return weight.error();
      g.fair_share_weight = static_cast<int>(*weight);
    }
    out.push_back(std::move(g));
  }
  // Parents and cycles once every name is known, pointing at the first offending item.
  // The core's message says what is wrong and what is allowed; the line is the first group whose parents fail.
  size_t at = 0;
  if (auto st = check_groups(out, &at); !st) {
    const int line = at < items->size() ? (*items)[at].line : list.line;
    return Error::invalid(ctx.origin + (line > 0 ? ":" + std::to_string(line) : "") + ": " + st.error().message);
  }
  return out;
}

Result<PolicySpec> read_policy(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"task_prioritization", "idle_compute", "idle_pool", "priority_classes", "min_runtime",
                                 "starvation_threshold", "fair_share_preemption", "elastic_grow_delay", "locality_wait",
                                 "start_timeout", "start_backoff", "start_backoff_max", "backfill",
                                 "backfill_min_priority", "groups"});
  if (!f) return f.error();
  PolicySpec p;
  if (auto gs = f->get("groups")) {
    auto groups = read_groups(ctx, *gs);
    if (!groups) return groups.error();
    p.groups = std::move(*groups);
  }
  if (auto tp = f->get("task_prioritization")) {
    std::vector<std::string_view> names;
    for (TaskPrioritization t : kTaskPrioritizations) names.push_back(task_prioritization_name(t));
    auto c = read_choice(ctx, *tp, names);
    if (!c) return c.error();
    p.task_prioritization = kTaskPrioritizations[*c];
  }
  if (auto ic = f->get("idle_compute")) {
    std::vector<std::string_view> names;
    for (IdleCompute i : kIdleComputes) names.push_back(idle_compute_name(i));
    auto c = read_choice(ctx, *ic, names);
    if (!c) return c.error();
    p.idle_compute = kIdleComputes[*c];
  }
  if (auto ip = f->get("idle_pool")) {
    auto b = read_bool(ctx, *ip);
    if (!b) return b.error();
    p.idle_pool = *b;
  }
  if (auto pcs = f->get("priority_classes")) {
    auto classes = read_priority_classes(ctx, *pcs);
    if (!classes) return classes.error();
    p.priority_classes = std::move(*classes);
  }
  if (auto mr = f->get("min_runtime")) {
    auto s = read_int(ctx, *mr, 0, kMaxSeconds);
    if (!s) return s.error();
    p.min_runtime_s = *s;
  }
  if (auto st = f->get("starvation_threshold")) {
    auto s = read_int(ctx, *st, 0, kMaxSeconds);
    if (!s) return s.error();
    p.starvation_threshold_s = *s;
  }
  if (auto fs = f->get("fair_share_preemption")) {
    auto b = read_bool(ctx, *fs);
    if (!b) return b.error();
    p.fair_share_preemption = *b;
  }
  if (auto bf = f->get("backfill")) {
    auto b = read_bool(ctx, *bf);
    if (!b) return b.error();
    p.backfill = *b;
  }
  if (auto mp = f->get("backfill_min_priority")) {
    auto w = read_int(ctx, *mp, 0, 100);  // a priority class weight
    if (!w) return w.error();
    p.backfill_min_priority = static_cast<int>(*w);
  }
  if (auto gd = f->get("elastic_grow_delay")) {
    auto s = read_int(ctx, *gd, 0, kMaxSeconds);
    if (!s) return s.error();
    p.elastic_grow_delay_s = *s;
  }
  if (auto lw = f->get("locality_wait")) {
    auto s = read_int(ctx, *lw, 0, kMaxSeconds);
    if (!s) return s.error();
    p.locality_wait_s = *s;
  }
  for (auto [key, field] : {std::pair{"start_timeout", &p.start_timeout_s}, std::pair{"start_backoff", &p.start_backoff_s},
                            std::pair{"start_backoff_max", &p.start_backoff_max_s}})
    if (auto v = f->get(key)) {
      auto s = read_int(ctx, *v, 0, kMaxSeconds);
      if (!s) return s.error();
      *field = *s;
    }
  if (p.start_backoff_max_s < p.start_backoff_s)
    return fail(ctx, f->get("start_backoff_max").value_or(v), "policy.start_backoff_max " + std::to_string(p.start_backoff_max_s) +
                " s is below policy.start_backoff " + std::to_string(p.start_backoff_s) + " s",
                "seconds at least start_backoff (default 60; start_backoff_max defaults to 3600)");
  return p;
}

// `catalog` null: instance types are taken as written and checked where the allocation is resolved (a group's,
// by the core, which names the group and the known types).
Result<std::vector<AllocationSpec>> read_allocation(const YamlContext& ctx, const Val& list, const Catalog* catalog) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  std::vector<std::string_view> keys = amount_keys(AmountUse::kAllocation);
  keys.insert(keys.begin(), "instance_type");
  std::vector<AllocationSpec> out;
  std::map<std::string, int> first_line;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, keys);
    if (!f) return f.error();
    auto type_val = f->need(ctx, "instance_type");
    if (!type_val) return type_val.error();
    auto type = catalog ? read_instance_type(ctx, *type_val, *catalog) : read_name(ctx, *type_val);
    if (!type) return type.error();
    // One entry per type keeps a team's quota a single number per resource; two entries would be ambiguous.
    auto [pos, fresh] = first_line.emplace(*type, item.line);
    if (!fresh)
      return fail(ctx, *type_val, "instance type " + *type + " appears twice in " + name_of(list) + " (first at line " +
                                      std::to_string(pos->second) + ")", "give one entry per instance type");
    auto amount = read_amount(ctx, *f, AmountUse::kAllocation);
    if (!amount) return amount.error();
    out.push_back({*type, *amount});
  }
  return out;
}

Status read_sharing(const YamlContext& ctx, const Val& v, TeamSpec& team) {
  auto f = Fields::open(ctx, v, {"strategy", "borrow_limit"});
  if (!f) return f.error();
  if (auto s = f->get("strategy")) {
    auto c = read_choice(ctx, *s, {"LendAndBorrow", "Lend", "DontLend"});
    if (!c) return c.error();
    team.strategy = static_cast<SharingStrategy>(*c);  // the order of the enum
  }
  if (auto b = f->get("borrow_limit")) {
    auto limit = read_int(ctx, *b, 0, 10000);
    if (!limit) return limit.error();
    team.borrow_limit = static_cast<int>(*limit);
  }
  return ok_status();
}

// containers: {host_paths, capabilities, registry_auth_file} (docs/teams-and-policy.md, "Containers").
Result<TeamContainerSettings> read_containers(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"host_paths", "capabilities", "registry_auth_file"});
  if (!f) return f.error();
  TeamContainerSettings c;
  if (auto hp = f->get("host_paths")) {
    auto items = list_items(ctx, *hp);
    if (!items) return items.error();
    if (items->size() > config::kMaxTeamHostPaths)
      return fail(ctx, *hp, name_of(*hp) + " has " + std::to_string(items->size()) + " paths", "at most " + std::to_string(config::kMaxTeamHostPaths));
    for (const Val& item : *items) {
      auto text = read_text(ctx, item);
      if (!text) return text.error();
      auto path = config::normal_path(*text, "a host path");
      if (!path) return located(ctx, item, path.error());
      if (*path == "/")
        return fail(ctx, item, name_of(item) + " is /, which would let the team's jobs mount any file of the node",
                    "give the directories its jobs need (a dataset or scratch directory)");
      if (std::find(c.host_paths.begin(), c.host_paths.end(), *path) != c.host_paths.end())
        return fail(ctx, item, name_of(item) + " (" + *path + ") is given twice", "give each host path once");
      c.host_paths.push_back(*path);
    }
  }
  if (auto caps = f->get("capabilities")) {
    auto items = list_items(ctx, *caps);
    if (!items) return items.error();
    for (const Val& item : *items) {
      auto name = read_name(ctx, item);
      if (!name) return name.error();
      auto cap = config::capability_named(*name);
      if (!cap) return fail(ctx, item, name_of(item) + " is '" + printable(*name) + "', not a Linux capability", "allowed: " + config::capability_names());
      if (std::find(c.capabilities.begin(), c.capabilities.end(), *cap) != c.capabilities.end())
        return fail(ctx, item, name_of(item) + " (" + capability_name(*cap) + ") is given twice", "give each capability once");
      c.capabilities.push_back(*cap);
    }
    std::sort(c.capabilities.begin(), c.capabilities.end());
  }
  if (auto af = f->get("registry_auth_file")) {
    auto text = read_text(ctx, *af);
    if (!text) return text.error();
    auto path = config::normal_path(*text, "registry_auth_file");
    if (!path) return located(ctx, *af, path.error());
    if (*path == "/") return fail(ctx, *af, name_of(*af) + " is /", "give the path of a file on the nodes");
    c.registry_auth_file = *path;
  }
  return c;
}

// user_limits (docs/teams-and-policy.md, "Per-user limits"): a list of {user, running_jobs, pending_jobs,
// accelerators: {instance type: count}}, each user once. The core checks the rest (core/quota/user_limits.h).
Result<std::vector<UserLimitSpec>> read_user_limits(const YamlContext& ctx, const Val& list, const Catalog& catalog) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  std::vector<UserLimitSpec> out;
  std::map<std::string, int> first_line;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, {"user", "running_jobs", "pending_jobs", "accelerators"});
    if (!f) return f.error();
    UserLimitSpec l;
    auto user_val = f->need(ctx, "user");
    if (!user_val) return user_val.error();
    auto user = read_name(ctx, *user_val);
    if (!user) return user.error();
    if (auto st = check_user_name(*user, name_of(*user_val)); !st) return located(ctx, *user_val, st.error());
    auto [pos, fresh] = first_line.emplace(*user, item.line);
    if (!fresh)
      return fail(ctx, *user_val, "user " + *user + " appears twice in " + name_of(list) + " (first at line " +
                                      std::to_string(pos->second) + ")", "give one entry per user");
    l.user = *user;
    for (auto [key, field] : {std::pair{"running_jobs", &l.running_jobs}, std::pair{"pending_jobs", &l.pending_jobs}})
      if (auto n = f->get(key)) {
        auto count = read_int(ctx, *n, 0, 1000000);
        if (!count) return count.error();
        *field = *count;
      }
    if (auto a = f->get("accelerators")) {
      auto entries = map_entries(ctx, *a);
      if (!entries) return entries.error();
      for (const Entry& e : *entries) {
        auto type = catalog.lookup(e.key);
        if (!type) return located(ctx, e.value, type.error());
        auto count = read_int(ctx, e.value, 0, 1000000);
        if (!count) return count.error();
        if (!l.accelerators.emplace(catalog.at(*type).name, *count).second)
          return fail(ctx, e.value, "instance type " + catalog.at(*type).name + " appears twice in " + name_of(*a),
                      "give one count per instance type");
      }
    }
    if (!l.running_jobs && !l.pending_jobs && l.accelerators.empty())
      return fail(ctx, item, name_of(item) + " (user " + l.user + ") sets no limit",
                  "give running_jobs, pending_jobs or accelerators");
    out.push_back(std::move(l));
  }
  return out;
}

Result<TeamSpec> read_team(const YamlContext& ctx, const Val& v, const Catalog& catalog) {
  auto f = Fields::open(ctx, v, {"name", "fair_share_weight", "allocation", "sharing", "preempt_team_tasks", "containers",
                                 "default_request", "default_time_limit", "max_time_limit", "time_limit_resets_on_restart",
                                 "user_limits", "group"});
  if (!f) return f.error();
  TeamSpec team;
  if (auto g = f->get("group")) {
    auto group = read_object_name(ctx, *g, NameKind::kGroup);
    if (!group) return group.error();
    team.group = *group;
  }
  auto name_val = f->need(ctx, "name");
  if (!name_val) return name_val.error();
  auto name = read_object_name(ctx, *name_val, NameKind::kTeam);
  if (!name) return name.error();
  team.name = *name;
  if (auto w = f->get("fair_share_weight")) {
    auto weight = read_int(ctx, *w, 0, 100);
    if (!weight) return weight.error();
    team.fair_share_weight = static_cast<int>(*weight);
  }
  if (auto a = f->get("allocation")) {
    auto alloc = read_allocation(ctx, *a, &catalog);
    if (!alloc) return alloc.error();
    team.allocation = std::move(*alloc);
  }
  if (auto s = f->get("sharing"))
    if (auto st = read_sharing(ctx, *s, team); !st) return st.error();
  if (auto p = f->get("preempt_team_tasks")) {
    auto c = read_choice(ctx, *p, {"LowerPriority", "Never"});
    if (!c) return c.error();
    team.preempt_team_tasks = *c == 0 ? PreemptTeamTasks::kLowerPriority : PreemptTeamTasks::kNever;
  }
  if (auto c = f->get("containers")) {
    auto settings = read_containers(ctx, *c);
    if (!settings) return settings.error();
    team.containers = std::move(*settings);
  }
  // default_request: {accelerators, vcpu, memory_gib} or {whole_node: true}, what a pod set that asks for nothing
  // gets (docs/teams-and-policy.md, "Default request"). {} is the same as none.
  if (auto d = f->get("default_request")) {
    auto df = Fields::open(ctx, *d, amount_keys(AmountUse::kReplica));
    if (!df) return df.error();
    auto amount = read_amount(ctx, *df, AmountUse::kReplica);
    if (!amount) return amount.error();
    team.default_request = *amount;
  }
  if (auto st = read_time_limits(ctx, v, *f, team.time_limits); !st) return st.error();
  if (auto u = f->get("user_limits")) {
    auto limits = read_user_limits(ctx, *u, catalog);
    if (!limits) return limits.error();
    team.user_limits = std::move(*limits);
  }
  return team;
}

}  // namespace

Result<PolicySpec> parse_policy(const YAML::Node& node, const YamlContext& ctx) {
  return guard(ctx, [&]() { return read_policy(ctx, root(node, ctx)); });
}

Result<TeamSpec> parse_team(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() { return read_team(ctx, root(node, ctx), catalog); });
}

Result<std::vector<TeamSpec>> parse_teams(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() -> Result<std::vector<TeamSpec>> {
    auto items = list_items(ctx, root(list, ctx));
    if (!items) return items.error();
    std::vector<TeamSpec> out;
    std::map<std::string, int> first_line;
    for (const Val& item : *items) {
      auto team = read_team(ctx, item, catalog);
      if (!team) return team.error();
      auto [pos, fresh] = first_line.emplace(team->name, item.line);
      if (!fresh)
        return fail(ctx, item, "team " + team->name + " is defined twice (first at line " + std::to_string(pos->second) + ")",
                    "team names must be unique");
      out.push_back(std::move(*team));
    }
    return out;
  });
}

}  // namespace allot
