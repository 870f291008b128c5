#include "client/render.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "client/output.h"
#include "view/label_list.h"

namespace allot::client {
namespace {
using nlohmann::json;

constexpr int64_t kEpochFloor = 1'000'000'000;  // times above this are Unix times (after 2001)

std::string shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max - 3) + "...";
}

int64_t integer(const json& j, const char* key, int64_t fallback = 0) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<int64_t>();
}

std::string age(const json& j, const char* key, int64_t now) {
  int64_t t = time_at(j, key, -1);
  return t >= kEpochFloor ? ago(t, now) : "-";
}

// "4/128/512": accelerators / vCPU / GiB, the order every table uses.
std::string triple(const json& r) {
  if (!r.is_object()) return "-";
  return number(r.value("accelerators", json(0))) + "/" + number(r.value("vcpu", json(0))) + "/" +
         number(r.value("memory_gib", json(0)));
}

// A pod set's request as the job gave it: "whole node", or "accelerators 2, vcpu 8" with "(rest in proportion)"
// when an amount is left to the instance type's proportions (docs/jobs.md).
std::string request_text(const json& r) {
  if (!r.is_object()) return "-";
  if (r.value("whole_node", false)) return "whole node";
  std::string out;
  for (const char* k : {"accelerators", "vcpu", "memory_gib"})
    if (r.contains(k)) out += (out.empty() ? "" : ", ") + std::string(k) + " " + number(r[k]);
  if (out.empty()) return "none";
  if (r.size() < 3) out += " (rest in proportion)";
  return out;
}

// "512 MiB", "2 GiB", "1.5 GiB": a size given in MiB.
std::string mib_text(const json& v) {
  if (!v.is_number_integer()) return v.dump();
  const int64_t mib = v.get<int64_t>();
  if (mib % 1024 != 0) {
    if (mib < 1024) return std::to_string(mib) + " MiB";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(mib) / 1024.0);
    return buf;
  }
  return std::to_string(mib / 1024) + " GiB";
}

// A job of a preemption record: its name, or "a job" when the reader may not see that team's job names.
std::string record_job(const json& name, const json& team) {
  return (name.is_string() ? name.get<std::string>() : std::string("a job")) + " of team " +
         (team.is_string() ? team.get<std::string>() : std::string("?"));
}

std::string share_text(const json& s) {
  if (!s.is_number()) return "infinite";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", s.get<double>());
  return buf;
}

// A job's preemption records (GET /v1/jobs/NAME, "preemption_records"): who preempted it by which rule, or
// whom it preempted, then each affected team's usage / borrowed (accelerators/vCPU/GiB) and share, before ->
// after, per instance type.
std::string preemption_lines(const json& records) {
  std::string out;
  for (const auto& r : records) {
    std::string victims;
    for (const auto& v : r.value("victims", json::array()))
      victims += (victims.empty() ? "" : ", ") + record_job(v.value("job", json()), v.value("team", json())) + " (" +
                 text(v, "rule") +
                 (v.contains("shrunk") ? ", shrunk from " + std::to_string(integer(v["shrunk"], "from")) + " to " +
                                             std::to_string(integer(v["shrunk"], "to"))
                                       : "") +
                 ")";
    out += "  " + clock_time(time_at(r, "at")) + "  ";
    if (text(r, "as") == "preemptor") {
      out += "preempted " + victims + "\n";
    } else {
      out += "preempted by " + record_job(r.value("preemptor", json()), r.value("preemptor_team", json())) + ", rule " +
             join(r.value("rules", json::array())) + "\n";
    }
    for (const auto& t : r.value("teams", json::array()))
      for (const auto& f : t.value("types", json::array()))
        out += "      team " + text(t, "team") + ", " + text(f, "instance_type") + ": usage " + triple(f.value("usage_before", json())) +
               " -> " + triple(f.value("usage_after", json())) + ", borrowed " + triple(f.value("borrowed_before", json())) +
               " -> " + triple(f.value("borrowed_after", json())) + ", share " + share_text(t.value("share_before", json())) +
               " -> " + share_text(t.value("share_after", json())) + "\n";
    for (const auto& g : r.value("groups", json::array()))  // the cohort groups fair sharing compared
      out += "      group " + text(g, "group") + ": share " + share_text(g.value("share_before", json())) + " -> " +
             share_text(g.value("share_after", json())) + "\n";
  }
  return out;
}

std::string free_of(const json& node, const char* resource) {
  if (!node.contains("free") || !node.contains("capacity")) return "-";
  return number(node["free"].value(resource, json(0))) + "/" + number(node["capacity"].value(resource, json(0)));
}

// "nn-1/nn-2/nn-3a": the node's domains coarse to fine. JSON objects come sorted by key, so the known levels
// are put in their order first.
std::string topology_of(const json& t) {
  std::string out;
  if (!t.is_object()) return out;
  auto add = [&](const json& value) {
    if (!out.empty()) out += "/";
    out += value.is_string() ? value.get<std::string>() : value.dump();
  };
  static const char* kOrder[] = {"zone", "network-node-layer-1", "network-node-layer-2", "network-node-layer-3",
                                 "network-node-layer-4", "ultraserver"};
  for (const char* level : kOrder)
    if (t.contains(level)) add(t[level]);
  for (const auto& [level, value] : t.items()) {
    bool known = level == "hostname";
    for (const char* k : kOrder) known = known || level == k;
    if (!known) add(value);
  }
  return out;
}

std::string topology_request(const json& t) {
  if (!t.is_object() || t.empty()) return "";
  std::string out;
  for (const auto& [k, v] : t.items()) {
    if (!out.empty()) out += ", ";
    if (v.is_object()) out += k + " " + text(v, "level") + " x" + number(v.value("size", json(0)));
    else out += k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

}  // namespace

std::string clock_time(int64_t t) {
  if (t < kEpochFloor) return "t=" + std::to_string(t) + "s";
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

std::string jobs_table(const json& jobs, int64_t now, bool wide) {
  Table t({"NAME", "TEAM", "PRIORITY", "STATE", "REPLICAS", "NODES", "AGE", "REASON"});
  for (const auto& j : jobs) {
    // A job array (GET /v1/jobs?arrays=summary): one line, its tasks counted per state.
    if (text(j, "kind") == "array") {
      const json a = j.value("array", json::object());
      t.add({text(j, "name"), text(j, "team"), text(j, "priority", "-").empty() ? "-" : text(j, "priority"), text(j, "state"), "-", "-",
             age(j, "submitted_at", now),
             "array of " + text(a, "count") + " (parallel " + text(a, "parallel") + "): " + text(j, "summary")});
      continue;
    }
    int replicas = 0;
    if (j.contains("pod_sets"))
      for (const auto& ps : j["pod_sets"]) replicas += ps.value("replicas", 0);
    std::string state = text(j, "state");
    if (j.value("borrowing", false) && state == "Running") state += " (borrowing)";
    if (j.value("held", false)) state += " (held)";
    std::string prio = text(j, "priority", "-").empty() ? "-" : text(j, "priority");
    if (j.value("priority_class_deleted", false)) prio += " (deleted)";
    t.add({text(j, "name"), text(j, "team"), prio, state,
           std::to_string(replicas), wide ? join(j.value("nodes", json::array())) : shorten(join(j.value("nodes", json::array())), 40),
           age(j, "submitted_at", now), wide ? text(j, "reason") : shorten(text(j, "reason"), 70)});
  }
  return t.str();
}

namespace {

std::string strategy_of(const json& m) {
  std::string strategy = m.contains("sharing") ? text(m["sharing"], "strategy") : "";
  if (strategy == "LendAndBorrow" && m["sharing"].contains("borrow_limit")) strategy += " " + number(m["sharing"]["borrow_limit"]) + "%";
  return strategy;
}

// Borrowed dominant share over weight; a team of weight 0 has an infinite share (it borrows last).
std::string share_of(const json& m) {
  if (!m.contains("share")) return "-";
  if (m["share"].is_null()) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", m["share"].get<double>());
  return buf;
}


// The rows of one team: one per instance type (amounts of different types do not add up), the team's own columns
// on its first row; teams from servers without per-type figures get one row of totals. `indent` starts its name
// (its depth in the cohort tree).
void team_rows(Table& t, const json& m, const std::string& indent) {
  const json jobs = m.value("jobs", json::object());
  const json types = m.value("instance_types", json::array());
  std::vector<std::string> first = {indent + text(m, "name"), text(m, "fair_share_weight"), share_of(m), strategy_of(m)};
  const std::vector<std::string> counts = {text(jobs, "pending", "0"), text(jobs, "running", "0"), text(jobs, "suspended", "0")};
  if (!types.is_array() || types.empty()) {
    std::vector<std::string> row = first;
    for (const auto& v : {std::string("-"), triple(m.value("nominal", json())), std::string("-"), triple(m.value("usage", json())),
                          triple(m.value("borrowed", json())), triple(m.value("lent", json()))})
      row.push_back(v);
    row.insert(row.end(), counts.begin(), counts.end());
    t.add(row);
    return;
  }
  bool head = true;
  for (const auto& ty : types) {
    std::vector<std::string> row = head ? first : std::vector<std::string>{"", "", "", ""};
    for (const auto& v : {text(ty, "instance_type"), triple(ty.value("nominal", json())), triple(ty.value("max", json())),
                          triple(ty.value("usage", json())), triple(ty.value("borrowed", json())), triple(ty.value("lent", json()))})
      row.push_back(v);
    if (head) row.insert(row.end(), counts.begin(), counts.end());
    else row.insert(row.end(), {"", "", ""});
    t.add(row);
    head = false;
  }
}

// The cohort tree under `parent` ("" for the cluster): its groups in the policy's order, each a row ("name/",
// its weight, "group") followed by what is under it, then its teams in the order listed. A group cycle cannot
// reach here (the server refuses one), and `depth` bounds the walk all the same.
void tree_rows(Table& t, const json& teams, const json& groups, const std::string& parent, size_t depth) {
  if (depth > groups.size()) return;
  const std::string indent(2 * depth, ' ');
  for (const auto& g : groups) {
    if (g.value("parent", std::string()) != parent) continue;
    const std::string name = g.value("name", std::string());
    t.add({indent + name + "/", text(g, "fair_share_weight", "1"), "", "group", "", "", "", "", "", "", "", "", ""});
    tree_rows(t, teams, groups, name, depth + 1);
  }
  for (const auto& m : teams)
    if (m.value("group", std::string()) == parent) team_rows(t, m, indent);
}

}  // namespace

// One row per team and instance type; in a cohort tree, the tree (render.h).
std::string teams_tree_table(const json& teams, const json& groups) {
  Table t({"NAME", "WEIGHT", "SHARE", "STRATEGY", "INSTANCE_TYPE", "NOMINAL", "MAX", "USAGE", "BORROWED", "LENT", "PENDING",
           "RUNNING", "SUSPENDED"});
  const bool tree = groups.is_array() && !groups.empty();
  if (tree) {
    tree_rows(t, teams, groups, "", 0);
    // A team naming a group the list lacks (a policy changed between the two reads) is still shown, at the top.
    for (const auto& m : teams) {
      const std::string g = m.value("group", std::string());
      const bool known = g.empty() || std::any_of(groups.begin(), groups.end(), [&](const json& x) { return x.value("name", std::string()) == g; });
      if (!known) team_rows(t, m, "");
    }
  } else {
    for (const auto& m : teams) team_rows(t, m, "");
  }
  return t.str() + "(amounts are accelerators/vCPU/GiB; MAX: what the team may hold with borrowing; SHARE: borrowed dominant share / weight" +
         (tree ? std::string("; NAME/: a cohort group, its groups and teams indented under it") : std::string()) + ")\n";
}

std::string teams_table(const json& teams) { return teams_tree_table(teams, json()); }

std::string describe_team(const json& m) {
  std::string out;
  auto field = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) out += k + std::string(k.size() < 13 ? 13 - k.size() : 1, ' ') + v + "\n";
  };
  field("Name:", text(m, "name"));
  const std::string weight = text(m, "fair_share_weight");
  field("Weight:", weight + (weight == "0" ? " (borrows only what no team of positive weight wants)" : ""));
  field("Fair share:", share_of(m) + " (borrowed dominant share / weight)");
  field("Sharing:", strategy_of(m));
  field("Preempts:", text(m, "preempt_team_tasks"));
  if (m.contains("containers") && m["containers"].is_object()) {
    // What the team's containers may have (docs/teams-and-policy.md, "Containers").
    const json& c = m["containers"];
    std::string paths = join(c.value("host_paths", json::array()), ", "), caps = join(c.value("capabilities", json::array()), ", ");
    field("Host paths:", paths.empty() ? "none (no host volumes)" : paths);
    field("Capabilities:", caps.empty() ? "none (all dropped)" : caps);
    field("Registry auth:", text(c, "registry_auth_file"));
  }
  // What a pod set that asks for nothing gets (docs/teams-and-policy.md, "Default request").
  field("Default req.:", m.contains("default_request") ? request_text(m["default_request"]) : "none (a job must give its request)");
  if (m.contains("default_time_limit") || m.contains("max_time_limit") || m.contains("time_limit_resets_on_restart"))  // docs/teams-and-policy.md, "Time limits"
    field("Time limits:", "default " + (m.contains("default_time_limit") ? text(m, "default_time_limit") + " s" : std::string("none")) +
                              ", max " + (m.contains("max_time_limit") ? text(m, "max_time_limit") + " s" : std::string("none")) +
                              (m.value("time_limit_resets_on_restart", false) ? "; each restart starts the clock again" : ""));
  // Per-user limits (docs/teams-and-policy.md, "Per-user limits"): one line per user.
  for (const auto& l : m.value("user_limits", json::array())) {
    std::string caps;
    auto cap = [&](const std::string& what) { caps += (caps.empty() ? "" : ", ") + what; };
    if (l.contains("running_jobs")) cap("running_jobs " + text(l, "running_jobs"));
    if (l.contains("pending_jobs")) cap("pending_jobs " + text(l, "pending_jobs"));
    const json accelerators = l.value("accelerators", json::object());  // kept: items() iterates over it
    for (const auto& [type, n] : accelerators.items()) cap("accelerators " + type + " " + n.dump());
    field("User limit:", text(l, "user") + ": " + caps);
  }
  const json jobs = m.value("jobs", json::object());
  field("Jobs:", text(jobs, "pending", "0") + " pending, " + text(jobs, "running", "0") + " running, " +
                     text(jobs, "suspended", "0") + " suspended");
  out += "Allocation:\n";
  Table a({"  INSTANCE_TYPE", "INSTANCES", "ACCELERATORS", "VCPU", "MEMORY_GIB"});
  for (const auto& e : m.value("allocation", json::array()))
    a.add({"  " + text(e, "instance_type"), text(e, "instances", "-"), text(e, "accelerators", "-"), text(e, "vcpu", "-"),
           text(e, "memory_gib", "-")});
  out += a.str();
  out += "Per instance type (accelerators/vCPU/GiB):\n";
  Table q({"  INSTANCE_TYPE", "NOMINAL", "MAX", "USAGE", "BORROWED", "LENT"});
  for (const auto& ty : m.value("instance_types", json::array()))
    q.add({"  " + text(ty, "instance_type"), triple(ty.value("nominal", json())), triple(ty.value("max", json())),
           triple(ty.value("usage", json())), triple(ty.value("borrowed", json())), triple(ty.value("lent", json()))});
  out += q.str();
  return out;
}

namespace {

// "4 ok" / "gpu FAILED" / "-": the node's health checks at a glance (skipped checks do not count as ok).
std::string checks_summary(const json& n) {
  if (!n.contains("checks") || !n["checks"].is_array() || n["checks"].empty()) return "-";
  std::string failed;
  int passed = 0;
  for (const auto& c : n["checks"]) {
    if (text(c, "status") == "failed") failed += (failed.empty() ? "" : ",") + text(c, "name");
    else if (text(c, "status") == "passed") ++passed;
  }
  return failed.empty() ? std::to_string(passed) + " ok" : failed + " FAILED";
}

}  // namespace

std::string nodes_table(const json& nodes, int64_t now) {
  Table t({"NAME", "TYPE", "HEALTH", "ACCEL", "VCPU", "MEM_GIB", "REPLICAS", "TOPOLOGY", "HEARTBEAT", "CHECKS"});
  for (const auto& n : nodes) {
    std::string health = text(n, "health");
    if (n.value("cordoned", false)) health += ",Cordoned";
    if (n.contains("suspect")) health += ",Suspect";
    std::string beat = "-";
    for (const char* k : {"last_heartbeat", "last_heartbeat_at", "heartbeat_at"})
      if (time_at(n, k, -1) >= kEpochFloor) beat = ago(time_at(n, k), now) + " ago";
    t.add({text(n, "name"), text(n, "instance_type"), health, free_of(n, "accelerators"), free_of(n, "vcpu"),
           free_of(n, "memory_gib"), text(n, "replicas", "0"), topology_of(n.value("topology", json())), beat,
           checks_summary(n)});
  }
  return t.str() + "(ACCEL, VCPU and MEM_GIB are free/capacity; CHECKS: health checks, `allot describe node NAME`)\n";
}

std::string describe_node(const json& n, int64_t now) {
  std::string out;
  auto field = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) out += k + std::string(k.size() < 13 ? 13 - k.size() : 1, ' ') + v + "\n";
  };
  field("Name:", text(n, "name"));
  field("Type:", text(n, "instance_type"));
  std::string health = text(n, "health");
  if (n.value("cordoned", false)) health += ", cordoned";
  field("Health:", health);
  field("Reason:", text(n, "health_reason"));
  if (n.contains("suspect")) field("Suspect:", text(n, "suspect") + " (no new replicas here)");
  field("Address:", text(n, "address"));
  if (time_at(n, "last_heartbeat", -1) >= kEpochFloor) field("Heartbeat:", ago(time_at(n, "last_heartbeat"), now) + " ago");
  field("Boot:", text(n, "boot"));
  field("Replaces:", text(n, "replaces"));
  if (n.contains("start_timeouts"))
    field("Start timeouts:", text(n, "start_timeouts") + " (runs requeued: a replica here did not start in time)");
  field("Topology:", topology_of(n.value("topology", json())));
  if (const json r = n.value("reservation", json()); r.is_object())
    field("Reservation:", text(r, "name") + " (team " + text(r, "team") + (text(r, "user").empty() ? "" : ", user " + text(r, "user")) +
                              "; other jobs are not placed here until it ends)");
  const json deep = n.value("deep_check", json::object());
  if (deep.is_object() && text(deep, "status") != "none" && !text(deep, "status").empty())
    field("Deep check:", text(deep, "status") + (text(deep, "detail").empty() ? "" : ": " + text(deep, "detail")));
  const json checks = n.value("checks", json::array());
  if (checks.is_array() && !checks.empty()) {
    out += "Health checks:\n";
    Table t({"  CHECK", "STATUS", "LAST RUN", "ON_FAILURE", "DETAIL"});
    for (const auto& c : checks)
      t.add({"  " + text(c, "name"), text(c, "status"), time_at(c, "at", -1) >= kEpochFloor ? ago(time_at(c, "at"), now) + " ago" : "-",
             text(c, "on_failure"), shorten(text(c, "detail"), 90)});
    out += t.str();
  }
  const json history = n.value("health_history", json::array());
  if (history.is_array() && !history.empty()) {
    out += "History:\n";
    Table t({"  TIME", "FROM", "TO", "BY", "REASON"});
    for (const auto& h : history)
      t.add({"  " + clock_time(time_at(h, "at")), text(h, "from").empty() ? "-" : text(h, "from"), text(h, "to"), text(h, "cause"),
             shorten(text(h, "reason"), 110)});
    out += t.str();
  }
  return out;
}

std::string priority_classes_table(const json& classes) {
  Table t({"NAME", "WEIGHT"});
  for (const auto& c : classes) t.add({text(c, "name"), text(c, "weight")});
  return t.str();
}

std::string policy_text(const json& p) {
  std::string out;
  out += "task prioritization:  " + text(p, "task_prioritization") + "\n";
  out += "idle compute:         " + text(p, "idle_compute") + "\n";
  out += "idle pool:            " + text(p, "idle_pool", "false") + "\n";
  if (p.value("fair_share_preemption", false)) out += "fair-share preemption: true\n";
  if (p.value("backfill", false)) out += "backfill:             true\n";
  for (const char* k : {"min_runtime", "starvation_threshold"})
    if (p.contains(k) && text(p, k) != "0") out += std::string(k) + ":" + std::string(21 - std::string(k).size(), ' ') + text(p, k) + "s\n";
  // 0 is a value of its own here (elastic jobs grow as soon as capacity is free), so it is always shown.
  if (p.contains("elastic_grow_delay")) out += "elastic_grow_delay:   " + text(p, "elastic_grow_delay") + "s\n";
  out += "priority classes:\n";
  Table t({"  NAME", "WEIGHT"});
  for (const auto& c : p.value("priority_classes", json::array())) t.add({"  " + text(c, "name"), text(c, "weight")});
  return out + t.str();
}

// "3600 s (used 120 s, 3480 s left)": a job's wall-time limit as the server counted it (view::add_time_limit);
// empty when the job has none.
static std::string time_limit_text(const json& j) {
  if (!j.contains("time_limit_s")) return "";
  std::string out = text(j, "time_limit_s") + " s";
  if (j.contains("time_left_s"))
    out += " (used " + text(j, "time_used_s") + " s, " + text(j, "time_left_s") + " s left" +
           (j.value("time_limit_resets_on_restart", false) ? "; each restart starts the clock again" : ", counted over all runs") + ")";
  return out;
}

std::string describe_job(const json& j, int64_t now) {
  std::string out;
  auto field = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) out += k + std::string(k.size() < 13 ? 13 - k.size() : 1, ' ') + v + "\n";
  };
  // A job array (docs/jobs.md, "Arrays"): what its tasks do, as a whole.
  if (text(j, "kind") == "array") {
    const json a = j.value("array", json::object());
    field("Array:", text(j, "name") + ", " + text(a, "count") + " tasks " + text(j, "name") + "-0.." + text(j, "name") + "-" +
                        std::to_string(a.value("count", 1) - 1) + ", at most " + text(a, "parallel") + " at once (parallel)");
    field("Team:", text(j, "team"));
    field("State:", text(j, "state"));
    field("Tasks:", text(j, "summary") + " (of " + text(j, "task_count") + " kept)");
    int64_t submitted = time_at(j, "submitted_at", -1);
    if (submitted >= 0) field("Submitted:", clock_time(submitted) + (submitted >= kEpochFloor ? " (" + ago(submitted, now) + " ago)" : ""));
    if (j.contains("waiting_reason")) {
      const json& w = j["waiting_reason"];
      field("Waiting:", text(w, "task") + ": " + text(w, "reason"));
    }
    std::string failed;
    for (const auto& f : j.value("failed_tasks", json::array())) failed += (failed.empty() ? "" : ", ") + f.get<std::string>();
    field("Failed:", failed);
    return out;
  }
  field("Name:", text(j, "name"));
  field("Team:", text(j, "team"));
  if (j.contains("array")) {  // a task of a job array
    const json& a = j["array"];
    field("Array:", "task " + text(a, "index") + " of array " + text(a, "name") + " (" + text(a, "count") + " tasks, at most " +
                        text(a, "parallel") + " at once)");
  }
  field("User:", text(j, "user"));  // absent: no user
  std::string prio = text(j, "priority");
  field("Priority:", prio.empty() ? "none (weight 0)"
                                  : prio + " (weight " + text(j, "priority_weight", "?") +
                                        (j.value("priority_class_deleted", false) ? "; the class has since been deleted)" : ")"));
  std::string state = text(j, "state");
  if (j.value("borrowing", false)) state += ", borrowing idle capacity";
  if (j.value("held", false)) state += ", held";
  field("State:", state);
  field("Reason:", text(j, "reason"));
  // Running, its processes not started yet: the stops they wait for (docs/scheduling.md, "Stops before starts").
  for (const auto& w : j.value("waits_for_stops", json::array())) {
    std::string nodes;
    for (const auto& n : w.value("nodes", json::array())) nodes += (nodes.empty() ? "" : ",") + n.get<std::string>();
    const std::string whose = w.contains("job") && w["job"].is_string() ? "job " + w["job"].get<std::string>() : "a job of team " + text(w, "team");
    // With "rank": a rank moved by an in-place recovery, held from its new node until its old process stopped.
    if (w.contains("rank"))
      field("Starting:", "rank " + text(w, "rank") + " waits until its process of " + whose + " (attempt " + text(w, "attempt") +
                             ") on " + nodes + ", the node it was moved from, has stopped (its agent reports it gone, or the node is fenced)");
    else
      field("Starting:", "waits until the replicas of " + whose + " (attempt " + text(w, "attempt") + ") on " + nodes +
                             " have stopped (their agent reports them gone, or the node is fenced)");
  }
  // Running, listed to its agents held: the server started from its journal and has not heard every agent yet.
  if (j.contains("waits_for_first_heartbeats") && j["waits_for_first_heartbeats"].is_object()) {
    const json& w = j["waits_for_first_heartbeats"];
    std::string nodes;
    for (const auto& n : w.value("nodes", json::array())) nodes += (nodes.empty() ? "" : ",") + n.get<std::string>();
    const size_t count = w.value("count", size_t{0}), shown = w.value("nodes", json::array()).size();
    if (count > shown) nodes += " and " + std::to_string(count - shown) + " more";
    field("Starting:", "held since the server started from its journal, until the agents of " + nodes +
                           " report what still runs there (or " + text(w, "until") + ", by when a silent agent has stopped its replicas)");
  }
  // Running, its processes not started yet: the admission checks that have not said ready (docs/scheduling.md,
  // "Admission checks"); the quota and nodes stay held meanwhile.
  for (const auto& w : j.value("waits_for_checks", json::array())) {
    std::string line = "waits for admission check " + text(w, "check") + " (" + text(w, "kind") + ") to answer ready";
    if (w.contains("tries"))
      line += "; " + text(w, "tries") + " tries got no answer, the last: " + text(w, "error") + "; next try at " + text(w, "next_try_at");
    field("Starting:", line);
  }
  if (j.contains("labels") && j["labels"].is_object() && !j["labels"].empty()) {
    field("Labels:", view::format_label_list(j["labels"]));
  }
  int64_t submitted = time_at(j, "submitted_at", -1);
  if (submitted >= 0) field("Submitted:", clock_time(submitted) + (submitted >= kEpochFloor ? " (" + ago(submitted, now) + " ago)" : ""));
  if (j.contains("started_at")) field("Started:", clock_time(time_at(j, "started_at")));
  field("Runs:", "restarts " + text(j, "restarts", "0") + ", preemptions " + text(j, "preemptions", "0") +
                     (j.contains("start_timeouts") ? ", start timeouts " + text(j, "start_timeouts") : ""));
  // Backing off after a gang start timeout (docs/resiliency.md): the scheduler passes it over until then.
  if (const int64_t until = time_at(j, "backoff_until", -1); until > now)
    field("Backoff:", "until " + clock_time(until) + " (in " + std::to_string(until - now) + " s), after its start timeout");
  if (j.contains("max_retries"))
    field("Retries:", text(j, "retries_used", "0") + " of " + text(j, "max_retries") + " used (max_retries " + text(j, "max_retries") + ")");
  field("Time limit:", time_limit_text(j));
  // The reservation of existing nodes it names (docs/scheduling.md, "Reservations of existing nodes").
  if (j.contains("uses_reservation")) field("In reservation:", text(j, "uses_reservation") + " (its nodes only, while it is Active)");
  // Recovery in place (docs/resiliency.md): "in place within 120 s (SIGUSR1); membership epoch 1, 1 recovery".
  if (j.contains("recovery") && j["recovery"].is_object()) {
    const json& r = j["recovery"];
    const size_t n = r.value("recoveries", json::array()).size();
    std::string line = "in place within " + text(r, "timeout_s") + " s" + (r.contains("signal") ? " (" + text(r, "signal") + ")" : "") +
                       "; membership epoch " + text(r, "membership_epoch") + ", " + std::to_string(n) + (n == 1 ? " recovery" : " recoveries");
    for (const auto& e : r.value("recoveries", json::array()))
      line += "; " + clock_time(time_at(e, "at")) + " from node " + text(e, "node") + " (epoch " + text(e, "epoch") + ")";
    field("Recovery:", shorten(line, 300));
  }
  // Holding the backfill reservation (docs/scheduling.md, "Backfill"): "reserved from 14:05 on nn3-2".
  if (j.contains("reservation") && j["reservation"].is_object()) {
    const json& r = j["reservation"];
    const int64_t at = time_at(r, "start_at", -1);
    std::string nodes = shorten(join(r.value("nodes", json::array()), ", "), 100);
    field("Reserved:", "from " + clock_time(at) + (at > now ? " (in " + std::to_string(at - now) + " s)" : "") + " on " + nodes +
                           " (backfill: later jobs may not take these nodes unless they end by then)");
  }
  // Dependencies (docs/jobs.md, "Dependencies"): one line per job named, "prep succeeded: holds (Succeeded)".
  for (const auto& d : j.value("after", json::array())) {
    std::string line = text(d, "job") + " " + text(d, "condition") + ": " + text(d, "state");
    if (d.contains("job_state")) line += " (" + text(d, "job_state") + ")";
    field("After:", line);
  }
  // The last rule on its output that fired (docs/resiliency.md, "Rules on a job's output"); the line only for
  // readers of the job's logs (the server leaves it out for others).
  if (j.contains("log_rule") && j["log_rule"].is_object()) {
    const json& r = j["log_rule"];
    field("Log rule:", text(r, "kind") + ": " + text(r, "rule") + (r.contains("pattern") ? " `" + text(r, "pattern") + "`" : "") +
                           " on rank " + text(r, "rank") + " (attempt " + text(r, "attempt") + ")" +
                           (r.contains("line") ? "; line: " + shorten(text(r, "line"), 200) : ""));
  }
  if (j.contains("elastic") && j["elastic"].is_object()) {
    const json& e = j["elastic"];
    field("Replicas:", text(e, "current") + " (elastic pod set " + text(e, "pod_set") + ": min " + text(e, "min") + ", max " +
                           text(e, "max") + ")");
  }
  if (j.contains("command") && j["command"].is_array() && !j["command"].empty())
    field("Command:", shorten(join(j["command"], " "), 100));
  if (j.contains("container") && j["container"].is_object()) {
    const json& c = j["container"];
    field("Image:", text(c, "image"));
    if (c.contains("args") && c["args"].is_array() && !c["args"].empty())
      field("Args:", shorten(c["args"].dump(), 100));  // as a list: an argument may hold spaces
    field("Pull policy:", text(c, "pull_policy"));
    field("Shm:", c.contains("shm_mib") ? mib_text(c["shm_mib"]) : "default (a quarter of the memory request, at least 64 MiB)");
    std::string vols;
    for (const auto& v : c.value("volumes", json::array()))
      vols += (vols.empty() ? "" : ", ") + text(v, "host_path") + " -> " + text(v, "path") + (v.value("read_only", false) ? " (read-only)" : "");
    if (!vols.empty()) field("Volumes:", vols);
  }
  if (j.contains("pulling_image_on") && j["pulling_image_on"].is_array()) {
    std::string nodes;
    for (const auto& n : j["pulling_image_on"]) nodes += (nodes.empty() ? "" : ",") + (n.is_string() ? n.get<std::string>() : n.dump());
    field("Starting:", "Pulling image on " + nodes);
  }

  out += "Pod sets:\n";
  Table ps({"  NAME", "REPLICAS", "INSTANCE_TYPE", "TOPOLOGY", "PER_REPLICA"});
  for (const auto& p : j.value("pod_sets", json::array())) {
    std::string replicas = text(p, "replicas");
    if (p.contains("min_replicas")) replicas = text(p, "min_replicas") + ".." + replicas;
    ps.add({"  " + text(p, "name"), replicas, text(p, "instance_type", "any").empty() ? "any" : text(p, "instance_type"),
            topology_request(p.value("topology", json())).empty() ? "none" : topology_request(p.value("topology", json())),
            request_text(p.value("per_replica", json()))});
  }
  out += ps.str();

  const json placement = j.value("placement", json::array());
  if (!placement.empty()) {
    out += "Placement:\n";
    // BOUND: the CPUs the agent bound the process to, where it reported them; on an emulated node the planned
    // CPUS are folded onto the machine's own.
    bool bound = false;
    for (const auto& p : placement)
      for (const auto& r : p.value("replicas", json::array())) bound |= r.contains("cpus_bound");
    std::vector<std::string> head = {"  RANK", "NODE", "TYPE", "ACCELERATORS", "NUMA", "CPUS"};
    if (bound) head.push_back("BOUND");
    head.push_back("PER_REPLICA");
    Table pt(head);
    for (const auto& p : placement)
      for (const auto& r : p.value("replicas", json::array())) {
        std::vector<std::string> row = {"  " + text(r, "rank"), text(r, "node"), text(p, "instance_type"),
                                        join(r.value("accelerators", json::array())),
                                        join(r.value("numa_domains", json::array())), text(r, "cpus")};
        if (bound) row.push_back(text(r, "cpus_bound", "-"));
        row.push_back(triple(p.value("per_replica", json())));
        pt.add(row);
      }
    out += pt.str();
  }
  const json replicas = j.value("replicas", json::array());  // the server's per-replica process states
  if (replicas.is_array() && !replicas.empty() && replicas[0].is_object()) {
    out += "Processes:\n";
    Table rt({"  RANK", "NODE", "STATE", "EXIT", "ATTEMPT"});
    for (const auto& r : replicas)
      rt.add({"  " + text(r, "rank"), text(r, "node"), text(r, "state"), text(r, "exit_code", "-"), text(r, "attempt", "-")});
    out += rt.str();
  }
  const json restarts = j.value("restart_history", json::array());
  if (restarts.is_array() && !restarts.empty()) {
    out += "Restarts:\n";
    Table rt({"  TIME", "ATTEMPT", "RAN", "WORK_LOST", "CAUSE"});
    for (const auto& r : restarts)
      rt.add({"  " + clock_time(time_at(r, "at")), text(r, "attempt"), text(r, "run_s") + "s", text(r, "work_lost_s") + "s",
              shorten(text(r, "cause"), 120)});
    out += rt.str();
  }
  const json resizes = j.value("resizes", json::array());
  if (resizes.is_array() && !resizes.empty()) {
    out += "Resizes:\n";
    Table rt({"  TIME", "CAUSE", "FROM", "TO", "REASON"});
    for (const auto& r : resizes)
      rt.add({"  " + clock_time(time_at(r, "at")), text(r, "cause"), text(r, "from"), text(r, "to"), shorten(text(r, "reason"), 120)});
    out += rt.str();
  }
  if (j.contains("goodput") && j["goodput"].is_number()) {
    char g[32];
    std::snprintf(g, sizeof g, "%.3f", j["goodput"].get<double>());
    field("Goodput:", std::string(g) + " (work lost to restarts and preemptions: " + text(j, "work_lost_s", "0") + " s)");
  }
  const json preemptions = j.value("preemption_records", json::array());
  if (preemptions.is_array() && !preemptions.empty())
    out += "Preemptions (usage and borrowed as accelerators/vCPU/GiB):\n" + preemption_lines(preemptions);
  const json history = j.value("history", json::array());
  if (!history.empty()) {
    out += "History:\n";
    Table ht({"  TIME", "FROM", "TO", "REASON"});
    for (const auto& h : history)
      ht.add({"  " + clock_time(time_at(h, "at")), text(h, "from"), text(h, "to"), text(h, "reason")});
    out += ht.str();
  }
  return out;
}

std::string event_line(const json& e) {
  std::string subject = text(e, "job");
  if (subject.empty()) subject = text(e, "node");
  std::string line = clock_time(time_at(e, "at")) + "  " + text(e, "kind");
  if (!subject.empty()) line += "  " + subject;
  return line + "  " + text(e, "message") + "\n";
}

namespace {
// The server's tree: domains {level, name, children} down to leaves {node}. A domain whose children are all
// nodes prints them on its own line, so a rack of 16 hosts is one line, not 17.
void tree_lines(const json& list, const std::string& indent, std::string& out) {
  if (!list.is_array()) return;
  for (const auto& d : list) {
    if (!d.is_object()) continue;
    if (d.contains("node")) {
      out += indent + "node " + text(d, "node") + "\n";
      continue;
    }
    std::string line = indent + text(d, "level") + "=" + text(d, "name");
    const json children = d.value("children", json::array());
    bool all_nodes = !children.empty();
    for (const auto& c : children) all_nodes = all_nodes && c.is_object() && c.contains("node");
    if (all_nodes) {
      std::string names;
      for (const auto& c : children) names += (names.empty() ? "" : ", ") + text(c, "node");
      out += line + ": " + names + "\n";
    } else {
      out += line + "\n";
      tree_lines(children, indent + "  ", out);
    }
  }
}
}  // namespace

std::string topology_text(const json& topology) {
  std::string out = "levels: " + join(topology.value("levels", json::array()), " > ") + "\n";
  tree_lines(topology.value("domains", json()), "", out);
  return out;
}

}  // namespace allot::client
