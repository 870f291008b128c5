// Scenario files (DESIGN.md, "Scenario files (contract)"): the top-level sections and the events. The sections
// shared with `allot apply` and `allot submit` (policy, teams, nodes, job specs) are read by config/.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/spec_yaml.h"
#include "config/yaml_budget.h"
#include "sim/scenario.h"

namespace allot::sim {

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::kSubmit: return "submit";
    case EventKind::kCancel: return "cancel";
    case EventKind::kFinish: return "finish";
    case EventKind::kFail: return "fail";
    case EventKind::kFailNode: return "fail_node";
    case EventKind::kRecoverNode: return "recover_node";
    case EventKind::kAddNodes: return "add_nodes";
    case EventKind::kRemoveNodes: return "remove_nodes";
    case EventKind::kExpect: return "expect";
    case EventKind::kPlanDelete: return "plan_delete";
    case EventKind::kStartTimeout: return "start_timeout";
    case EventKind::kLogRule: return "log_rule";
  }
  return "expect";
}

namespace {

using namespace config;

// Event keys in the order of EventKind, so that the index of a key is its kind.
const std::vector<std::string_view> kEventKeys = {"submit",   "cancel",       "finish",      "fail",  "fail_node",
                                                  "recover_node", "add_nodes", "remove_nodes", "expect", "plan_delete",
                                                  "start_timeout", "log_rule"};

Result<ResourceExpect> read_resource_expect(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, amount_keys(AmountUse::kResources));
  if (!f) return f.error();
  auto a = read_amount(ctx, *f, AmountUse::kResources);
  if (!a) return a.error();
  return ResourceExpect{a->accelerators, a->vcpu_milli, a->memory_mib};
}

Result<TeamExpect> read_team_expect(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"usage", "borrowed", "lent", "quota"});
  if (!f) return f.error();
  TeamExpect t;
  t.line = v.line;
  for (auto [key, field] : {std::pair{"usage", &t.usage}, {"borrowed", &t.borrowed}, {"lent", &t.lent}, {"quota", &t.quota}}) {
    if (auto r = f->get(key)) {
      auto want = read_resource_expect(ctx, *r);
      if (!want) return want.error();
      *field = *want;
    }
  }
  return t;
}

Result<PlanExpect> read_plan_expect(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"state", "nodes"});
  if (!f) return f.error();
  PlanExpect p;
  p.line = v.line;
  if (auto s = f->get("state")) {
    const std::vector<std::string_view> states = {"Scheduled", "Active", "Ending", "Expired"};
    auto c = read_choice(ctx, *s, states);
    if (!c) return c.error();
    p.state = std::string(states[*c]);
  }
  if (auto n = f->get("nodes")) {
    auto x = read_int(ctx, *n, 0, 10000);
    if (!x) return x.error();
    p.nodes = static_cast<int>(*x);
  }
  return p;
}

Result<std::optional<int>> read_count(const YamlContext& ctx, const std::optional<Val>& v) {
  if (!v) return std::optional<int>();
  auto n = read_int(ctx, *v, 0, 1'000'000'000);
  if (!n) return n.error();
  return std::optional<int>(static_cast<int>(*n));
}

// `nodes:` in an expectation: a list whose entries may be host lists, or a single host list.
Result<std::vector<std::string>> read_node_list(const YamlContext& ctx, const Val& v) {
  if (v.node.IsScalar()) return read_hostlist(ctx, v);
  auto items = list_items(ctx, v);
  if (!items) return items.error();
  std::vector<std::string> out;
  for (const Val& item : *items) {
    auto names = read_hostlist(ctx, item);
    if (!names) return names.error();
    out.insert(out.end(), names->begin(), names->end());
  }
  return out;
}

Result<JobExpect> read_job_expect(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"state", "nodes", "node_count", "distinct", "borrowing", "preemptions", "restarts", "replicas", "resizes", "reason",
                                 "reason_code", "time_left", "membership_epoch"});
  if (!f) return f.error();
  JobExpect j;
  j.line = v.line;
  if (auto s = f->get("state")) {
    const std::vector<std::string_view> states = {"Pending", "Running", "Suspended", "Succeeded", "Failed", "Cancelled"};
    auto c = read_choice(ctx, *s, states);
    if (!c) return c.error();
    j.state = std::string(states[*c]);
  }
  if (auto n = f->get("nodes")) {
    auto names = read_node_list(ctx, *n);
    if (!names) return names.error();
    j.nodes = std::move(*names);
  }
  if (auto d = f->get("distinct")) {
    auto entries = map_entries(ctx, *d);
    if (!entries) return entries.error();
    for (const auto& e : *entries) {
      auto n = read_int(ctx, e.value, 0, 1'000'000);
      if (!n) return n.error();
      j.distinct[e.key] = static_cast<int>(*n);
    }
  }
  if (auto b = f->get("borrowing")) {
    auto x = read_bool(ctx, *b);
    if (!x) return x.error();
    j.borrowing = *x;
  }
  for (auto [key, field] : {std::pair{"node_count", &j.node_count}, {"preemptions", &j.preemptions}, {"restarts", &j.restarts},
                            {"replicas", &j.replicas}, {"resizes", &j.resizes},
                            {"membership_epoch", &j.membership_epoch}}) {
    auto n = read_count(ctx, f->get(key));
    if (!n) return n.error();
    *field = *n;
  }
  if (auto r = f->get("reason")) {
    auto s = read_text(ctx, *r);
    if (!s) return s.error();
    j.reason = *s;
  }
  if (auto r = f->get("reason_code")) {
    auto s = read_text(ctx, *r);
    if (!s) return s.error();
    auto code = parse_reason_code(*s);
    if (!code || *code == ReasonCode::kNone)
      return fail(ctx, *r, "reason_code '" + *s + "' is not a reason code", "one of " + reason_code_names());
    j.reason_code = *code;
  }
  if (auto t = f->get("time_left")) {
    auto n = read_int(ctx, *t, 0, kMaxSeconds);
    if (!n) return n.error();
    j.time_left = *n;
  }
  return j;
}

Result<Expect> read_expect(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"jobs", "teams", "plans"});
  if (!f) return f.error();
  Expect e;
  if (auto plans = f->get("plans")) {
    auto entries = map_entries(ctx, *plans);
    if (!entries) return entries.error();
    for (const auto& entry : *entries) {
      auto p = read_plan_expect(ctx, entry.value);
      if (!p) return p.error();
      e.plans[entry.key] = std::move(*p);
    }
  }
  if (auto jobs = f->get("jobs")) {
    auto entries = map_entries(ctx, *jobs);
    if (!entries) return entries.error();
    for (const auto& entry : *entries) {
      auto j = read_job_expect(ctx, entry.value);
      if (!j) return j.error();
      e.jobs[entry.key] = std::move(*j);
    }
  }
  if (auto teams = f->get("teams")) {
    auto entries = map_entries(ctx, *teams);
    if (!entries) return entries.error();
    for (const auto& entry : *entries) {
      auto t = read_team_expect(ctx, entry.value);
      if (!t) return t.error();
      e.teams[entry.key] = std::move(*t);
    }
  }
  return e;
}

Result<Event> read_event(const YamlContext& ctx, const Val& v, const Catalog& catalog) {
  std::vector<std::string_view> keys = kEventKeys;
  keys.insert(keys.begin(), "at");
  auto f = Fields::open(ctx, v, keys);
  if (!f) return f.error();
  Event e;
  e.line = v.line;
  auto at = f->need(ctx, "at");
  if (!at) return at.error();
  auto t = read_int(ctx, *at, 0, kMaxSeconds);
  if (!t) return t.error();
  e.at = *t;

  std::optional<Val> body;
  for (size_t k = 0; k < kEventKeys.size(); ++k) {
    auto b = f->get(kEventKeys[k]);
    if (!b) continue;
    if (body)
      return fail(ctx, *b, name_of(v) + " has both " + body->path.substr(v.path.size() + 1) + " and " +
                               std::string(kEventKeys[k]), "one event per entry; repeat `at` for events at the same time");
    body = *b;
    e.kind = static_cast<EventKind>(k);
  }
  if (!body) return fail(ctx, v, name_of(v) + " has no event", "give one of " + join(kEventKeys));

  switch (e.kind) {
    case EventKind::kSubmit: {
      auto job = parse_job_spec(body->node, catalog, sub(ctx, *body));
      if (!job) return job.error();
      e.submit = std::move(*job);
      break;
    }
    case EventKind::kCancel:
    case EventKind::kFinish:
    case EventKind::kFail:
    case EventKind::kFailNode:
    case EventKind::kRecoverNode:
    case EventKind::kPlanDelete:
    case EventKind::kStartTimeout: {
      auto name = read_name(ctx, *body);
      if (!name) return name.error();
      e.target = *name;
      break;
    }
    case EventKind::kLogRule: {
      // {job: NAME, kind: hung|restart|fail, index: I (default 0), rank: R (default 0), line: TEXT (optional)}
      auto lf = Fields::open(ctx, *body, {"job", "kind", "index", "rank", "line"});
      if (!lf) return lf.error();
      auto job = lf->need(ctx, "job");
      if (!job) return job.error();
      auto name = read_name(ctx, *job);
      if (!name) return name.error();
      e.target = *name;
      auto kv = lf->need(ctx, "kind");
      if (!kv) return kv.error();
      auto kind = read_choice(ctx, *kv, {"hung", "restart", "fail"});
      if (!kind) return kind.error();
      e.log_rule.kind = kLogRuleKinds[*kind];
      if (auto i = lf->get("index")) {
        auto n = read_int(ctx, *i, 0, static_cast<int64_t>(kMaxLogRulePatterns) - 1);
        if (!n) return n.error();
        e.log_rule.index = static_cast<int>(*n);
      }
      if (auto r = lf->get("rank")) {
        auto n = read_int(ctx, *r, 0, 1'000'000);
        if (!n) return n.error();
        e.log_rule.rank = static_cast<int>(*n);
      }
      if (auto l = lf->get("line")) {
        auto text = read_text(ctx, *l);
        if (!text) return text.error();
        e.log_rule.line = printable(*text, kMaxLogRuleLine);
      }
      break;
    }
    case EventKind::kAddNodes: {
      auto nodes = parse_nodes(body->node, catalog, sub(ctx, *body));
      if (!nodes) return nodes.error();
      if (nodes->empty()) return fail(ctx, *body, name_of(*body) + " is empty", "give at least one node entry");
      e.nodes = std::move(*nodes);
      break;
    }
    case EventKind::kRemoveNodes: {
      auto names = parse_node_names(body->node, sub(ctx, *body));
      if (!names) return names.error();
      if (names->empty()) return fail(ctx, *body, name_of(*body) + " is empty", "give at least one node name");
      for (auto& n : *names) {
        NodeSpec spec;
        spec.name = std::move(n);
        e.nodes.push_back(std::move(spec));
      }
      break;
    }
    case EventKind::kExpect: {
      auto expect = read_expect(ctx, *body);
      if (!expect) return expect.error();
      e.expect = std::move(*expect);
      break;
    }
  }
  return e;
}

Result<std::vector<std::string>> read_levels(const YamlContext& ctx, const Val& v) {
  auto items = list_items(ctx, v);
  if (!items) return items.error();
  std::vector<std::string> levels;
  for (const Val& item : *items) {
    auto l = read_name(ctx, item);
    if (!l) return l.error();
    if (std::find(levels.begin(), levels.end(), *l) != levels.end())
      return fail(ctx, item, "topology level " + *l + " is listed twice", "list each level once, coarse to fine");
    levels.push_back(*l);
  }
  return levels;
}

Result<Scenario> read_scenario(const YamlContext& ctx, const YAML::Node& doc) {
  const std::vector<std::string_view> top = {"name", "policy", "instance_types", "cluster", "teams", "plans", "reservations", "events"};
  Val v = root(doc, ctx);
  if (v.node.IsNull()) return fail(ctx, 0, "the file is empty", "a scenario is a mapping with keys " + join(top));
  if (!v.node.IsMap())
    return fail(ctx, v, "the document is " + describe(v.node) + ", not a mapping", "a scenario is a mapping with keys " + join(top));
  auto f = Fields::open(ctx, v, top);
  if (!f) return f.error();
  Scenario sc;
  if (auto n = f->get("name")) {
    auto name = read_text(ctx, *n);
    if (!name) return name.error();
    sc.name = *name;
  }
  // Types come first: the cluster, teams and jobs may name them.
  Catalog catalog = Catalog::builtin();
  if (auto it = f->get("instance_types")) {
    auto types = parse_instance_types(it->node, catalog, sub(ctx, *it));
    if (!types) return types.error();
    sc.instance_types = std::move(*types);
  }
  if (auto p = f->get("policy")) {
    auto policy = parse_policy(p->node, sub(ctx, *p));
    if (!policy) return policy.error();
    sc.policy = std::move(*policy);
  }
  auto cluster_val = f->need(ctx, "cluster");
  if (!cluster_val) return cluster_val.error();
  auto cluster = Fields::open(ctx, *cluster_val, {"nodes", "topology_levels"});
  if (!cluster) return cluster.error();
  auto nodes_val = cluster->need(ctx, "nodes");
  if (!nodes_val) return nodes_val.error();
  auto nodes = parse_nodes(nodes_val->node, catalog, sub(ctx, *nodes_val));
  if (!nodes) return nodes.error();
  sc.nodes = std::move(*nodes);
  if (auto l = cluster->get("topology_levels")) {
    auto levels = read_levels(ctx, *l);
    if (!levels) return levels.error();
    sc.topology_levels = std::move(*levels);
  }
  if (auto t = f->get("teams")) {
    auto teams = parse_teams(t->node, catalog, sub(ctx, *t));
    if (!teams) return teams.error();
    sc.teams = std::move(*teams);
  }
  if (auto p = f->get("plans")) {
    auto plans = parse_plans(p->node, catalog, sub(ctx, *p));
    if (!plans) return plans.error();
    sc.plans = std::move(*plans);
  }
  if (auto r = f->get("reservations")) {
    auto reservations = parse_reservations(r->node, catalog, sub(ctx, *r));
    if (!reservations) return reservations.error();
    sc.reservations = std::move(*reservations);
  }
  if (auto ev = f->get("events")) {
    auto items = list_items(ctx, *ev);
    if (!items) return items.error();
    if (items->size() > kMaxScenarioEvents)
      return fail(ctx, *ev, name_of(*ev) + " has " + std::to_string(items->size()) + " events (YAML aliases counted each time they are used)",
                  "at most " + std::to_string(kMaxScenarioEvents) + " events in a file; a trace replays more (allot sim replay)");
    for (const Val& item : *items) {
      auto e = read_event(ctx, item, catalog);
      if (!e) return e.error();
      sc.events.push_back(std::move(*e));
    }
  }
  // Events run in time order; among equal times file order is arrival order, so the sort must be stable.
  std::stable_sort(sc.events.begin(), sc.events.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
  return sc;
}

}  // namespace

Result<Scenario> parse_scenario(const std::string& yaml_text, const std::string& origin) {
  YamlContext ctx;
  ctx.origin = origin;
  ctx.budget = std::make_shared<ExpansionBudget>();  // one for the whole file: cluster, events and expectations
  auto doc = load_yaml(yaml_text, ctx);
  if (!doc) return doc.error();
  return guard(ctx, [&]() { return read_scenario(ctx, *doc); });
}

Result<Scenario> load_scenario_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::not_found(path + ": cannot open the file; give the path of a readable scenario YAML file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_scenario(text.str(), path);
}

}  // namespace allot::sim
