// Reservations of existing nodes: the scenario `reservations:` section and PUT /v1/reservations/NAME
// (core/model/reservations.h).
#include <set>

#include "config/spec_yaml.h"
#include "core/model/hostlist.h"
#include "core/model/reservations.h"

namespace allot {
namespace {

using namespace config;

const std::vector<std::string_view> kReservationKeys = {"name", "team", "user", "nodes", "instance_type", "count", "start", "end"};

// `nodes`: a host list ("gpu-[1-4]") or a list of them, expanded in the order given.
Result<std::vector<std::string>> read_reservation_nodes(const YamlContext& ctx, const Val& v) {
  std::vector<std::string> exprs;
  if (v.node.IsSequence()) {
    auto items = list_items(ctx, v);
    if (!items) return items.error();
    for (const Val& item : *items) {
      auto s = read_name(ctx, item);
      if (!s) return s.error();
      exprs.push_back(*s);
    }
  } else {
    auto s = read_name(ctx, v);
    if (!s) return s.error();
    exprs.push_back(*s);
  }
  std::vector<std::string> out;
  for (const std::string& e : exprs) {
    auto names = expand_hostlist(e);
    if (!names) return fail(ctx, v, "nodes: " + names.error().message, "a host list such as gpu-[1-4], or a list of node names");
    out.insert(out.end(), names->begin(), names->end());
  }
  if (out.empty()) return fail(ctx, v, "nodes: no node named", "a host list such as gpu-[1-4], or a list of node names");
  return out;
}

Result<ReservationSpec> read_reservation(const YamlContext& ctx, const Val& v, const Catalog& catalog) {
  auto f = Fields::open(ctx, v, kReservationKeys);
  if (!f) return f.error();
  ReservationSpec r;
  auto name = f->need(ctx, "name");
  if (!name) return name.error();
  auto n = read_object_name(ctx, *name, NameKind::kReservation);
  if (!n) return n.error();
  r.name = *n;
  auto team_val = f->need(ctx, "team");
  if (!team_val) return team_val.error();
  auto team = read_object_name(ctx, *team_val, NameKind::kTeam);
  if (!team) return team.error();
  r.team = *team;
  if (auto u = f->get("user")) {
    auto user = read_name(ctx, *u);
    if (!user) return user.error();
    r.user = *user;
  }
  if (auto nodes = f->get("nodes")) {
    auto list = read_reservation_nodes(ctx, *nodes);
    if (!list) return list.error();
    r.nodes = std::move(*list);
  }
  if (auto t = f->get("instance_type")) {
    auto type = read_instance_type(ctx, *t, catalog);
    if (!type) return type.error();
    r.instance_type = *type;
  }
  if (auto c = f->get("count")) {
    auto count = read_int(ctx, *c, 1, 10000);
    if (!count) return count.error();
    r.count = static_cast<int>(*count);
  }
  if (r.nodes.empty() == (r.count == 0))
    return fail(ctx, v, "reservation " + r.name + ": give either nodes or count (with instance_type)",
                "nodes: a host list of named nodes; or count: N and instance_type: T, N nodes of T chosen at the start");
  if (r.count > 0 && r.instance_type.empty())
    return fail(ctx, v, "reservation " + r.name + ": count needs instance_type", "instance_type: the type of the nodes to reserve");
  for (auto [key, field] : {std::pair{"start", &r.start}, {"end", &r.end}}) {
    auto t = f->need(ctx, key);
    if (!t) return t.error();
    auto x = read_int(ctx, *t, 0, kMaxSeconds);
    if (!x) return x.error();
    *field = *x;
  }
  if (r.end <= r.start)
    return fail(ctx, v, "reservation " + r.name + ": end (" + std::to_string(r.end) + ") is not after start (" + std::to_string(r.start) + ")",
                "a reservation ends after it starts");
  return r;
}

}  // namespace

Result<ReservationSpec> parse_reservation(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() { return read_reservation(ctx, root(node, ctx), catalog); });
}

Result<std::vector<ReservationSpec>> parse_reservations(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx) {
  return guard(ctx, [&]() -> Result<std::vector<ReservationSpec>> {
    Val v = root(list, ctx);
    auto items = list_items(ctx, v);
    if (!items) return items.error();
    std::vector<ReservationSpec> out;
    std::set<std::string> names;
    for (const Val& item : *items) {
      auto r = read_reservation(ctx, item, catalog);
      if (!r) return r.error();
      if (!names.insert(r->name).second)
        return fail(ctx, item, "reservation " + r->name + " is listed twice", "reservation names must be unique");
      out.push_back(std::move(*r));
    }
    return out;
  });
}

}  // namespace allot
