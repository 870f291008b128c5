#include "agent/health_config.h"

#include <set>

#include "config/yaml_read.h"

namespace allot::agent {

const char* failure_action_name(FailureAction a) { return a == FailureAction::kReplace ? "replace" : "reboot"; }

namespace {
constexpr std::pair<Builtin, const char*> kBuiltins[] = {{Builtin::kNodeBasics, "node-basics"},
                                                         {Builtin::kNvidiaGpu, "nvidia-gpu"},
                                                         {Builtin::kDcgm, "dcgm"},
                                                         {Builtin::kNeuron, "neuron"},
                                                         {Builtin::kEfa, "efa"}};
}  // namespace

const char* builtin_name(Builtin b) {
  for (const auto& [k, name] : kBuiltins)
    if (k == b) return name;
  return "command";
}

HealthConfig default_health_config() {
  using std::chrono::milliseconds;
  auto check = [](const char* name, Builtin b, int64_t interval_s, int64_t timeout_s, FailureAction a) {
    return HealthCheck{name, b, "", milliseconds(interval_s * 1000), milliseconds(timeout_s * 1000), a};
  };
  HealthConfig c;
  c.checks = {check("node", Builtin::kNodeBasics, 10, 10, FailureAction::kReboot),
              check("gpu", Builtin::kNvidiaGpu, 10, 30, FailureAction::kReboot),
              check("dcgm", Builtin::kDcgm, 300, 120, FailureAction::kReplace),
              check("neuron", Builtin::kNeuron, 10, 30, FailureAction::kReboot),
              check("efa", Builtin::kEfa, 10, 30, FailureAction::kReboot)};
  return c;
}

namespace {

using config::Fields;
using config::Val;

// Seconds as a decimal, to milliseconds: 0.001 .. 1 day.
Result<std::chrono::milliseconds> read_seconds(const YamlContext& ctx, const Val& v) {
  auto ms = config::read_decimal(ctx, v, 1000, 86400, false);
  if (!ms) return ms.error();
  if (*ms <= 0) return config::fail(ctx, v, name_of(v) + " must be more than 0 seconds", "a number of seconds, e.g. 10 or 0.5");
  return std::chrono::milliseconds(*ms);
}

Result<HealthCheck> read_check(const YamlContext& ctx, const Val& v) {
  auto f = Fields::open(ctx, v, {"name", "builtin", "command", "interval", "timeout", "on_failure", "source", "root"});
  if (!f) return f.error();
  HealthCheck c;
  auto name = f->need(ctx, "name");
  if (!name) return name.error();
  auto n = config::read_name(ctx, *name);
  if (!n) return n.error();
  c.name = *n;
  auto b = f->get("builtin");
  auto cmd = f->get("command");
  if (b.has_value() == cmd.has_value())
    return config::fail(ctx, v, "check " + c.name + " needs exactly one of builtin and command",
                        "builtin: node-basics|nvidia-gpu|dcgm|neuron|efa, or command: \"a shell command\"");
  if (b) {
    std::vector<std::string_view> names;
    for (const auto& [k, s] : kBuiltins) names.push_back(s);
    auto i = config::read_choice(ctx, *b, names);
    if (!i) return i.error();
    c.builtin = kBuiltins[*i].first;
  } else {
    auto t = config::read_name(ctx, *cmd);
    if (!t) return t.error();
    c.command = *t;
  }
  if (auto iv = f->get("interval")) {
    auto ms = read_seconds(ctx, *iv);
    if (!ms) return ms.error();
    c.interval = *ms;
  }
  if (auto to = f->get("timeout")) {
    auto ms = read_seconds(ctx, *to);
    if (!ms) return ms.error();
    c.timeout = *ms;
  }
  // Where the neuron and efa checks read from: for them only (either elsewhere is refused, saying so).
  for (const auto& [key, builtin] : {std::pair{"source", Builtin::kNeuron}, std::pair{"root", Builtin::kEfa}}) {
    auto v = f->get(key);
    if (!v) continue;
    if (c.builtin != builtin)
      return config::fail(ctx, *v, std::string(key) + " is for the " + builtin_name(builtin) + " check only (check " + c.name + ")",
                          std::string("builtin: ") + builtin_name(builtin) + " with " + key);
    auto t = config::read_name(ctx, *v);
    if (!t) return t.error();
    (builtin == Builtin::kNeuron ? c.source : c.root) = *t;
  }
  if (auto a = f->get("on_failure")) {
    auto i = config::read_choice(ctx, *a, {"reboot", "replace"});
    if (!i) return i.error();
    c.on_failure = *i == 0 ? FailureAction::kReboot : FailureAction::kReplace;
  }
  return c;
}

}  // namespace

Result<HealthConfig> parse_health_config(const std::string& text, const std::string& origin) {
  YamlContext ctx{origin, "", 0};
  return config::guard(ctx, [&]() -> Result<HealthConfig> {
    auto doc = load_yaml(text, ctx);
    if (!doc) return doc.error();
    auto f = Fields::open(ctx, config::root(*doc, ctx), {"checks", "deep_check"});
    if (!f) return f.error();
    HealthConfig out;
    if (auto list = f->get("checks")) {
      auto items = config::list_items(ctx, *list);
      if (!items) return items.error();
      std::set<std::string> names;
      for (const Val& item : *items) {
        auto c = read_check(ctx, item);
        if (!c) return c.error();
        if (!names.insert(c->name).second)
          return config::fail(ctx, item, "two checks are named " + c->name, "give every check its own name");
        out.checks.push_back(std::move(*c));
      }
    }
    if (auto d = f->get("deep_check")) {
      auto df = Fields::open(ctx, *d, {"command", "builtin", "timeout"});
      if (!df) return df.error();
      if (df->has("command") && df->has("builtin"))
        return config::fail(ctx, *d, "deep_check takes command or builtin, not both", "builtin: stress, or command: \"...\"");
      if (auto b = df->get("builtin")) {
        auto i = config::read_choice(ctx, *b, {"stress"});
        if (!i) return i.error();
      }
      if (auto c = df->get("command")) {
        auto t = config::read_name(ctx, *c);
        if (!t) return t.error();
        out.deep.command = *t;
      }
      if (auto to = df->get("timeout")) {
        auto ms = read_seconds(ctx, *to);
        if (!ms) return ms.error();
        out.deep.timeout = *ms;
      }
    }
    return out;
  });
}

}  // namespace allot::agent
