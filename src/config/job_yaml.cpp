// Job specs: a scenario `submit` entry, which is also what `allot submit` reads.
#include <map>
#include <set>

#include "config/container_rules.h"
#include "config/spec_yaml.h"
#include "core/quota/user_limits.h"
#include "core/model/labels.h"

namespace allot {
namespace {

using namespace config;

Result<int64_t> read_seconds(const YamlContext& ctx, const Val& v) { return read_int(ctx, v, 0, kMaxSeconds); }

Result<TopologySpec> read_topology(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"required", "preferred", "slice", "exclusive"});
  if (!f) return f.error();
  TopologySpec t;
  for (auto [key, field] : {std::pair{"required", &t.required}, {"preferred", &t.preferred}, {"exclusive", &t.exclusive}}) {
    if (auto l = f->get(key)) {
      auto level = read_name(ctx, *l);
      if (!level) return level.error();
      *field = *level;
    }
  }
  if (!t.required.empty() && !t.preferred.empty())
    return fail(ctx, *f->get("preferred"), name_of(v) + " gives both required and preferred",
                "give one of them (a level name such as network-node-layer-3)");
  if (auto s = f->get("slice")) {
    auto sf = Fields::open(ctx, *s, {"level", "size"});
    if (!sf) return sf.error();
    auto level_val = sf->need(ctx, "level");
    if (!level_val) return level_val.error();
    auto level = read_name(ctx, *level_val);
    if (!level) return level.error();
    auto size_val = sf->need(ctx, "size");
    if (!size_val) return size_val.error();
    auto size = read_int(ctx, *size_val, 1, kMaxJobReplicas);
    if (!size) return size.error();
    t.slice = SliceSpec{*level, static_cast<int>(*size)};
  }
  return t;
}

// Reads the pod-set keys (replicas, instance_type, per_replica, topology) of an opened mapping: a pod_sets
// entry, or the job itself when it has a single inline pod set.
Result<PodSetSpec> read_pod_set(const YamlContext& ctx, const Fields& f, const Catalog& catalog) {
  PodSetSpec ps;
  if (auto r = f.get("replicas")) {
    if (r->node.IsMap()) {
      // An elastic pod set: `replicas: {min: 2, max: 8}` runs at any size between the two.
      auto rf = Fields::open(ctx, *r, {"min", "max"});
      if (!rf) return rf.error();
      auto min_val = rf->need(ctx, "min");
      if (!min_val) return min_val.error();
      auto max_val = rf->need(ctx, "max");
      if (!max_val) return max_val.error();
      auto lo = read_int(ctx, *min_val, 1, kMaxJobReplicas);
      if (!lo) return lo.error();
      auto hi = read_int(ctx, *max_val, 1, kMaxJobReplicas);
      if (!hi) return hi.error();
      if (*lo > *hi)
        return fail(ctx, *min_val, name_of(*r) + " has min " + std::to_string(*lo) + " above max " + std::to_string(*hi),
                    "give min <= max (equal for a fixed size)");
      ps.replicas = static_cast<int>(*hi);
      if (*lo < *hi) ps.min_replicas = static_cast<int>(*lo);
    } else {
      auto n = read_int(ctx, *r, 1, kMaxJobReplicas);
      if (!n) return n.error();
      ps.replicas = static_cast<int>(*n);
    }
  }
  if (auto t = f.get("instance_type")) {
    auto type = read_instance_type(ctx, *t, catalog);
    if (!type) return type.error();
    ps.instance_type = *type;
  }
  // Without per_replica (or with {}), the pod set asks for nothing: it gets its team's default_request, or is
  // refused naming that setting when it is submitted (core/lifecycle/submit.cpp).
  if (auto pr = f.get("per_replica")) {
    auto prf = Fields::open(ctx, *pr, amount_keys(AmountUse::kReplica));
    if (!prf) return prf.error();
    auto amount = read_amount(ctx, *prf, AmountUse::kReplica);
    if (!amount) return amount.error();
    ps.per_replica = *amount;
  }
  if (auto t = f.get("topology")) {
    auto topo = read_topology(ctx, *t);
    if (!topo) return topo.error();
    ps.topology = *topo;
  }
  return ps;
}

Result<std::vector<PodSetSpec>> read_pod_sets(const YamlContext& ctx, const Val& list, const Catalog& catalog) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  if (items->empty()) return fail(ctx, list, name_of(list) + " is empty", "give at least one pod set");
  std::vector<PodSetSpec> out;
  std::set<std::string> names;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, {"name", "replicas", "instance_type", "per_replica", "topology"});
    if (!f) return f.error();
    auto ps = read_pod_set(ctx, *f, catalog);
    if (!ps) return ps.error();
    // Unnamed pod sets are numbered so that names stay unique: main, set-1, set-2, ...
    ps->name = out.empty() ? "main" : "set-" + std::to_string(out.size());
    if (auto n = f->get("name")) {
      auto name = read_name(ctx, *n);
      if (!name) return name.error();
      ps->name = *name;
    }
    if (!names.insert(ps->name).second)
      return fail(ctx, item, "pod set " + ps->name + " is named twice", "pod set names must be unique within a job");
    out.push_back(std::move(*ps));
  }
  return out;
}

Status check_no_nul(const YamlContext& ctx, const Val& v, const std::string& s) {
  if (s.find('\0') == std::string::npos) return ok_status();
  return fail(ctx, v, name_of(v) + " holds a NUL byte", "arguments and environment values are C strings");
}

Result<std::vector<std::string>> read_command(const YamlContext& ctx, const Val& v) {
  // A string is a shell command line, as people type it; a list is the exact argv, with no shell in between.
  std::vector<std::string> argv;
  if (v.node.IsScalar()) {
    auto s = read_text(ctx, v);  // not read_name: a script may span lines
    if (!s) return s.error();
    if (auto st = check_no_nul(ctx, v, *s); !st) return st.error();
    if (s->empty()) return fail(ctx, v, name_of(v) + " is an empty string", "give a command line or a list of arguments");
    argv = {"/bin/sh", "-c", *s};
  } else {
    auto items = list_items(ctx, v);
    if (!items) return items.error();
    if (items->empty()) return fail(ctx, v, name_of(v) + " is empty", "give a command line or a list of arguments");
    if (items->size() > kMaxCommandArgs)
      return fail(ctx, v, name_of(v) + " has " + std::to_string(items->size()) + " arguments",
                  "at most " + std::to_string(kMaxCommandArgs));
    for (const Val& item : *items) {
      auto a = read_text(ctx, item);
      if (!a) return a.error();
      if (auto st = check_no_nul(ctx, item, *a); !st) return st.error();
      argv.push_back(*a);
    }
  }
  size_t bytes = 0;
  for (const auto& a : argv) bytes += a.size() + 1;
  if (bytes > kMaxCommandBytes)
    return fail(ctx, v, name_of(v) + " is " + std::to_string(bytes) + " bytes long",
                "at most " + std::to_string(kMaxCommandBytes) + " bytes in all (put long inputs in a file the command reads)");
  return argv;
}

// `args`: a list only (Kubernetes' args), each item one argv item; no shell ever reads them.
Result<std::vector<std::string>> read_args(const YamlContext& ctx, const Val& v) {
  if (v.node.IsScalar())
    return fail(ctx, v, name_of(v) + " is a string",
                "give a list of arguments ([--epochs, '3']); each item is passed as it is, no shell splits them");
  auto items = list_items(ctx, v);
  if (!items) return items.error();
  if (items->empty()) return fail(ctx, v, name_of(v) + " is empty", "give at least one argument, or leave args out (the image's own CMD)");
  std::vector<std::string> argv;
  for (const Val& item : *items) {
    auto a = read_text(ctx, item);
    if (!a) return a.error();
    if (auto st = check_no_nul(ctx, item, *a); !st) return st.error();
    argv.push_back(*a);
  }
  return argv;
}

// The command and args are one argv in the container (command first): the limits of a command hold for both.
Status check_argv_size(const YamlContext& ctx, const Val& v, const JobSpec& job) {
  const size_t count = job.command.size() + job.container.args.size();
  if (count > kMaxCommandArgs)
    return fail(ctx, v, name_of(v) + " makes " + std::to_string(count) + " arguments with command",
                "at most " + std::to_string(kMaxCommandArgs) + " in all");
  size_t bytes = 0;
  for (const auto* list : {&job.command, &job.container.args})
    for (const auto& a : *list) bytes += a.size() + 1;
  if (bytes > kMaxCommandBytes)
    return fail(ctx, v, name_of(v) + " makes " + std::to_string(bytes) + " bytes with command",
                "at most " + std::to_string(kMaxCommandBytes) + " bytes in all (put long inputs in a file the command reads)");
  return ok_status();
}

bool env_name_ok(const std::string& n) {
  if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

Result<std::map<std::string, std::string>> read_env(const YamlContext& ctx, const Val& v) {
  auto env = read_string_map(ctx, v);
  if (!env) return env.error();
  if (env->size() > kMaxEnvEntries)
    return fail(ctx, v, name_of(v) + " has " + std::to_string(env->size()) + " variables", "at most " + std::to_string(kMaxEnvEntries));
  size_t bytes = 0;
  for (const auto& [name, value] : *env) {
    if (!env_name_ok(name))
      return fail(ctx, v, name_of(v) + " has the variable name '" + printable(name) + "'",
                  "names are letters, digits, '_', '-' and '.', not beginning with a digit");
    if (auto st = check_no_nul(ctx, v, value); !st) return st.error();
    bytes += name.size() + value.size() + 2;
  }
  if (bytes > kMaxEnvBytes)
    return fail(ctx, v, name_of(v) + " is " + std::to_string(bytes) + " bytes long",
                "at most " + std::to_string(kMaxEnvBytes) + " bytes of NAME=value in all");
  return env;
}

Result<std::map<std::string, std::string>> read_labels(const YamlContext& ctx, const Val& v) {
  auto labels = read_string_map(ctx, v);
  if (!labels) return labels.error();
  if (labels->size() > kMaxLabels)
    return fail(ctx, v, name_of(v) + " has " + std::to_string(labels->size()) + " labels", "at most " + std::to_string(kMaxLabels));
  for (const auto& [key, value] : *labels)
    if (std::string why = label_problem(key, value); !why.empty())
      return fail(ctx, v, name_of(v) + ": " + why, "Kubernetes label rules (docs/jobs.md, \"Labels\")");
  return labels;
}

Result<std::vector<VolumeSpec>> read_volumes(const YamlContext& ctx, const Val& list) {
  auto items = list_items(ctx, list);
  if (!items) return items.error();
  if (items->size() > config::kMaxVolumes)
    return fail(ctx, list, name_of(list) + " has " + std::to_string(items->size()) + " volumes", "at most " + std::to_string(config::kMaxVolumes));
  std::vector<VolumeSpec> out;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, {"host_path", "path", "read_only"});
    if (!f) return f.error();
    VolumeSpec vol;
    for (auto [key, field] : {std::pair{"host_path", &vol.host_path}, {"path", &vol.path}}) {
      auto val = f->need(ctx, key);
      if (!val) return val.error();
      auto text = read_text(ctx, *val);
      if (!text) return text.error();
      auto normal = config::normal_path(*text, key);
      if (!normal) return located(ctx, *val, normal.error());
      *field = *normal;
    }
    if (auto ro = f->get("read_only")) {
      auto b = read_bool(ctx, *ro);
      if (!b) return b.error();
      vol.read_only = *b;
    }
    out.push_back(std::move(vol));
  }
  if (auto st = config::check_volumes(out); !st) return located(ctx, list, st.error());
  return out;
}

// image, image_pull_policy, shm_size_gib and volumes (docs/jobs.md, "Images"). The pull policy is resolved
// here (config/container_rules.h, default_pull_policy), so the stored spec says which one applies.
Result<ContainerSpec> read_container(const YamlContext& ctx, const Fields& f, const std::vector<PodSetSpec>& pod_sets) {
  ContainerSpec c;
  auto image_val = f.get("image");
  if (!image_val) {
    if (auto k = f.get("args"))
      return fail(ctx, *k, name_of(*k) + " is given without an image",
                  "args are the arguments of an image's entrypoint, and a bare process has none: give image, or put the "
                  "program and its arguments in command");
    for (const char* key : {"image_pull_policy", "shm_size_gib", "volumes"})
      if (auto k = f.get(key))
        return fail(ctx, *k, name_of(*k) + " is given without an image",
                    "it applies to containers only: give image (a bare process has the node's /dev/shm and file system)");
    return c;
  }
  auto image = read_text(ctx, *image_val);
  if (!image) return image.error();
  if (auto st = config::check_image_reference(*image); !st) return located(ctx, *image_val, st.error());
  c.image = *image;
  c.pull_policy = config::default_pull_policy(c.image);
  if (auto p = f.get("image_pull_policy")) {
    auto choice = read_choice(ctx, *p, {pull_policy_name(kPullPolicies[0]), pull_policy_name(kPullPolicies[1]), pull_policy_name(kPullPolicies[2])});
    if (!choice) return choice.error();
    c.pull_policy = kPullPolicies[*choice];
  }
  if (auto s = f.get("shm_size_gib")) {
    // GiB like memory_gib, to the nearest MiB; bounded by every memory request the job gives per replica.
    auto mib = read_decimal(ctx, *s, 1024, config::kMaxShmMib / 1024, /*exact=*/false);
    if (!mib) return mib.error();
    if (*mib <= 0) return fail(ctx, *s, name_of(*s) + " is 0", "give a size above 0 (at least 1 MiB, 0.001)");
    for (const PodSetSpec& ps : pod_sets)
      if (ps.per_replica.memory_mib && *mib > *ps.per_replica.memory_mib)
        return fail(ctx, *s, name_of(*s) + " is " + std::to_string(*mib) + " MiB, above the memory_gib of pod set " + ps.name + " (" +
                                 std::to_string(*ps.per_replica.memory_mib) + " MiB)",
                    "/dev/shm is memory the replica uses: give at most its memory request");
    c.shm_mib = *mib;
  }
  if (auto vols = f.get("volumes")) {
    auto list = read_volumes(ctx, *vols);
    if (!list) return list.error();
    c.volumes = std::move(*list);
  }
  if (auto a = f.get("args")) {
    auto argv = read_args(ctx, *a);
    if (!argv) return argv.error();
    c.args = std::move(*argv);
  }
  return c;
}

// One pattern of log_rules (core/lifecycle/log_rules.h), checked where it is written: a regular expression that does not
// compile is refused with std::regex's words and the line.
Result<std::string> read_log_rule_pattern(const YamlContext& ctx, const Val& v) {
  auto text = read_text(ctx, v);
  if (!text) return text.error();
  if (auto p = log_rule_pattern_problem(*text); !p.empty())
    return fail(ctx, v, name_of(v) + ": " + p,
                "give an ECMAScript regular expression of 1.." + std::to_string(kMaxLogRulePatternBytes) +
                    " bytes, searched in each line (quote it in single quotes so YAML keeps its backslashes)");
  return *text;
}

Result<std::vector<std::string>> read_log_rule_patterns(const YamlContext& ctx, const Val& v) {
  auto items = list_items(ctx, v);
  if (!items) return items.error();
  if (items->size() > kMaxLogRulePatterns)
    return fail(ctx, v, name_of(v) + " has " + std::to_string(items->size()) + " patterns",
                "give at most " + std::to_string(kMaxLogRulePatterns));
  std::vector<std::string> out;
  for (const Val& item : *items) {
    auto p = read_log_rule_pattern(ctx, item);
    if (!p) return p.error();
    out.push_back(std::move(*p));
  }
  return out;
}

// log_rules: {progress: {pattern, every}, restart_on: [...], fail_on: [...]} (docs/jobs.md, "log_rules").
Result<LogRules> read_log_rules(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"progress", "restart_on", "fail_on"});
  if (!f) return f.error();
  LogRules rules;
  if (auto p = f->get("progress")) {
    auto pf = Fields::open(ctx, *p, {"pattern", "every"});
    if (!pf) return pf.error();
    auto pv = pf->need(ctx, "pattern");
    if (!pv) return pv.error();
    auto pattern = read_log_rule_pattern(ctx, *pv);
    if (!pattern) return pattern.error();
    auto ev = pf->need(ctx, "every");
    if (!ev) return ev.error();
    auto every = read_int(ctx, *ev, kMinProgressEvery, kMaxProgressEvery);  // seconds
    if (!every) return every.error();
    rules.progress = ProgressRule{std::move(*pattern), *every};
  }
  if (auto r = f->get("restart_on")) {
    auto list = read_log_rule_patterns(ctx, *r);
    if (!list) return list.error();
    rules.restart_on = std::move(*list);
  }
  if (auto r = f->get("fail_on")) {
    auto list = read_log_rule_patterns(ctx, *r);
    if (!list) return list.error();
    rules.fail_on = std::move(*list);
  }
  return rules;
}

// after: [{job: NAME, condition: succeeded|ended|started}, ...] (docs/jobs.md, "Dependencies"; core/model/dependency.h).
// The condition defaults to ended (Slurm's plain dependency, afterany). Whether each name is a job of the team is
// checked at submission.
Result<std::vector<JobDependency>> read_after(const YamlContext& ctx, const Val& v) {
  auto items = list_items(ctx, v);
  if (!items) return items.error();
  if (items->size() > kMaxDependencies)
    return fail(ctx, v, name_of(v) + " has " + std::to_string(items->size()) + " entries",
                "name at most " + std::to_string(kMaxDependencies) + " jobs");
  std::vector<std::string_view> conditions;
  for (DependencyCondition c : kDependencyConditions) conditions.push_back(dependency_condition_name(c));
  std::vector<JobDependency> out;
  for (const Val& item : *items) {
    auto f = Fields::open(ctx, item, {"job", "condition"});
    if (!f) return f.error();
    auto jv = f->need(ctx, "job");
    if (!jv) return jv.error();
    auto name = read_object_name(ctx, *jv, NameKind::kJob);
    if (!name) return name.error();
    JobDependency d{.job = *name};
    if (auto c = f->get("condition")) {
      auto choice = read_choice(ctx, *c, conditions);
      if (!choice) return choice.error();
      d.condition = kDependencyConditions[*choice];
    }
    out.push_back(std::move(d));
  }
  return out;
}

// `array: {count: N, parallel: P}` (core/model/array.h): count 1..100000, parallel 1..count (default: count).
Result<ArraySpec> read_array(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"count", "parallel"});
  if (!f) return f.error();
  auto c = f->need(ctx, "count");
  if (!c) return c.error();
  auto count = read_int(ctx, *c, 1, kMaxArrayCount);
  if (!count) return count.error();
  ArraySpec a{.count = static_cast<int>(*count), .parallel = static_cast<int>(*count)};
  if (auto p = f->get("parallel")) {
    auto parallel = read_int(ctx, *p, 1, *count);
    if (!parallel) return parallel.error();
    a.parallel = static_cast<int>(*parallel);
  }
  return a;
}

Result<JobSpec> read_job(const YamlContext& ctx, const Val& v, const Catalog& catalog) {
  auto f = Fields::open(ctx, v, {"name", "team", "priority", "replicas", "instance_type", "per_replica", "topology", "pod_sets",
                                 "duration", "time_limit", "max_retries", "checkpoint_interval", "command", "env", "labels", "plan",
                                 "image", "image_pull_policy", "shm_size_gib", "volumes", "args", "completion_index", "log_rules",
                                 "after", "user", "array", "reservation", "recovery", "recovery_timeout", "membership_signal"});
  if (!f) return f.error();
  JobSpec job;
  auto name_val = f->need(ctx, "name");
  if (!name_val) return name_val.error();
  auto name = read_object_name(ctx, *name_val, NameKind::kJob);
  if (!name) return name.error();
  job.name = *name;
  auto team_val = f->need(ctx, "team");
  if (!team_val) return team_val.error();
  auto team = read_name(ctx, *team_val);  // a reference: an unknown team is reported when the job is submitted
  if (!team) return team.error();
  job.team = *team;
  // Who submitted it (core/quota/user_limits.h): a scenario file's users; the server takes it from the token.
  if (auto u = f->get("user")) {
    auto user = read_name(ctx, *u);
    if (!user) return user.error();
    if (auto st = check_user_name(*user, name_of(*u)); !st) return located(ctx, *u, st.error());
    job.user = *user;
  }
  if (auto p = f->get("priority")) {
    auto s = read_name(ctx, *p);
    if (!s) return s.error();
    job.priority = *s;
  }
  if (auto ps = f->get("pod_sets")) {
    for (const char* inline_key : {"replicas", "instance_type", "per_replica", "topology"})
      if (auto k = f->get(inline_key))
        return fail(ctx, *k, name_of(v) + " has both pod_sets and " + inline_key,
                    "give either pod_sets or the inline replicas/instance_type/per_replica/topology");
    auto sets = read_pod_sets(ctx, *ps, catalog);
    if (!sets) return sets.error();
    job.pod_sets = std::move(*sets);
  } else {
    auto one = read_pod_set(ctx, *f, catalog);
    if (!one) return one.error();
    job.pod_sets.push_back(std::move(*one));
  }
  if (auto d = f->get("duration")) {
    auto s = read_seconds(ctx, *d);
    if (!s) return s.error();
    job.duration_s = *s;
  }
  if (auto tl = f->get("time_limit")) {  // seconds of running, over all runs (core/lifecycle/time_limit.h)
    auto s = read_int(ctx, *tl, 1, kMaxSeconds);
    if (!s) return s.error();
    job.time_limit_s = *s;
  }
  if (auto r = f->get("max_retries")) {
    auto n = read_int(ctx, *r, 0, 1000);
    if (!n) return n.error();
    job.max_retries = static_cast<int>(*n);
  }
  if (auto c = f->get("checkpoint_interval")) {
    auto s = read_seconds(ctx, *c);
    if (!s) return s.error();
    job.checkpoint_interval_s = *s;
  }
  if (auto c = f->get("command")) {
    auto argv = read_command(ctx, *c);
    if (!argv) return argv.error();
    job.command = std::move(*argv);
  }
  if (auto e = f->get("env")) {
    auto env = read_env(ctx, *e);
    if (!env) return env.error();
    job.env = std::move(*env);
  }
  if (auto l = f->get("labels")) {
    auto labels = read_labels(ctx, *l);
    if (!labels) return labels.error();
    job.labels = std::move(*labels);
  }
  if (auto p = f->get("plan")) {
    auto plan = read_object_name(ctx, *p, NameKind::kPlan);  // a reference: an unknown plan is reported at submission
    if (!plan) return plan.error();
    job.plan = *plan;
  }
  if (auto r = f->get("reservation")) {
    // A reference, as a plan is: an unknown reservation, or one that does not admit the job, is refused at submission.
    auto reservation = read_object_name(ctx, *r, NameKind::kReservation);
    if (!reservation) return reservation.error();
    job.reservation = *reservation;
  }
  if (auto c = f->get("completion_index")) {
    auto b = read_bool(ctx, *c);
    if (!b) return b.error();
    job.completion_index = *b;
  }
  if (auto r = f->get("log_rules")) {
    auto rules = read_log_rules(ctx, *r);
    if (!rules) return rules.error();
    job.log_rules = std::move(*rules);
  }
  if (auto r = f->get("recovery")) {  // docs/resiliency.md, "Recovery in place"
    auto choice = read_choice(ctx, *r, {recovery_name(kRecoveries[0]), recovery_name(kRecoveries[1])});
    if (!choice) return choice.error();
    job.recovery = kRecoveries[*choice];
  }
  for (const char* key : {"recovery_timeout", "membership_signal"})
    if (auto k = f->get(key); k && job.recovery != Recovery::kInPlace)
      return fail(ctx, *k, name_of(*k) + " is given without recovery: in_place",
                  "it applies to in-place recovery only: add recovery: in_place, or drop it");
  if (auto t = f->get("recovery_timeout")) {
    auto s = read_int(ctx, *t, 1, kMaxRecoveryTimeoutS);
    if (!s) return s.error();
    job.recovery_timeout_s = *s;
  }
  if (auto m = f->get("membership_signal")) {
    std::vector<std::string_view> names(std::begin(kMembershipSignals), std::end(kMembershipSignals));
    auto choice = read_choice(ctx, *m, names);
    if (!choice) return choice.error();
    job.membership_signal = std::string(kMembershipSignals[*choice]);
  }
  if (auto a = f->get("after")) {
    auto after = read_after(ctx, *a);
    if (!after) return after.error();
    job.after = std::move(*after);
  }
  if (auto a = f->get("array")) {
    auto array = read_array(ctx, *a);
    if (!array) return array.error();
    job.array = *array;
    for (const PodSetSpec& ps : job.pod_sets)
      if (ps.min_replicas && *ps.min_replicas < ps.replicas)
        return fail(ctx, *a, name_of(v) + " is an array and its pod set " + ps.name + " is elastic (replicas: {min, max})",
                    "fixed replica counts in an array: an elastic job grows into idle capacity while an array spreads its "
                    "work over `parallel` tasks, and the two would fight over the same capacity (raise parallel instead)");
  }
  auto container = read_container(ctx, *f, job.pod_sets);
  if (!container) return container.error();
  job.container = std::move(*container);
  if (auto a = f->get("args"))
    if (auto st = check_argv_size(ctx, *a, job); !st) return st.error();
  return job;
}

}  // namespace

Result<JobSpec> parse_job_spec(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() { return read_job(ctx, root(node, ctx), catalog); });
}

}  // namespace allot
