#include "core/quota/cohort_tree.h"

#include <algorithm>
#include <map>

#include "core/model/request.h"
#include "core/model/state.h"

namespace allot {
namespace {

std::string amount_text(Resource r, int64_t v) {
  return format_amount(r, v) + (r == Resource::kAccelerators ? (v == 1 ? " accelerator" : " accelerators") : r == Resource::kVcpu ? " vCPU" : " GiB memory");
}

// percent of each amount, rounded down as a team's borrow limit is (quota.cpp, team_max)
Resources percent_of(const Resources& r, int64_t percent) {
  Resources out;
  for (Resource x : kAllResources) out.at(x) = r.get(x) * percent / 100;
  return out;
}

Resources min_of(const Resources& a, const Resources& b) {
  Resources out;
  for (Resource x : kAllResources) out.at(x) = std::min(a.get(x), b.get(x));
  return out;
}

}  // namespace

int CohortTree::find(std::string_view name) const {
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].spec.name == name) return static_cast<int>(i);
  return -1;
}

Status check_groups(const std::vector<GroupSpec>& groups, size_t* at) {
  size_t unused = 0;
  size_t& fault = at ? *at : unused;
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    fault = i;
    if (g.name.empty()) return Error::invalid("a group needs a name");
    if (auto st = check_name(NameKind::kGroup, g.name); !st) return st;
    if (!index.emplace(g.name, i).second) return Error::invalid("group " + g.name + " is defined twice; give each group once");
    if (g.fair_share_weight < 0 || g.fair_share_weight > 100)
      return Error::invalid("group " + g.name + ": fair_share_weight must be 0..100, got " + std::to_string(g.fair_share_weight));
    if (g.borrow_limit && (*g.borrow_limit < 0 || *g.borrow_limit > 10000))
      return Error::invalid("group " + g.name + ": borrow_limit must be 0..10000 percent, got " + std::to_string(*g.borrow_limit));
    if (g.lend_limit && (*g.lend_limit < 0 || *g.lend_limit > 100))
      return Error::invalid("group " + g.name + ": lend_limit must be 0..100 percent, got " + std::to_string(*g.lend_limit));
  }
  std::string names;
  for (const auto& [name, i] : index) names += (names.empty() ? "" : ", ") + name;
  // Every parent first, so that the walks below only meet groups that exist.
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    fault = i;
    if (!g.parent.empty() && !index.count(g.parent))
      return Error::invalid("group " + g.name + ": parent " + g.parent + " is not a group; groups: " + names);
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    fault = i;
    if (g.parent.empty()) continue;
    // Walking up from g must reach a root within as many steps as there are groups, or the parents loop.
    std::string path = g.name, up = g.parent;
    for (size_t steps = 0; !up.empty(); ++steps) {
      path += " > " + up;
      if (up == g.name || steps > groups.size())
        return Error::invalid("groups form a cycle: " + path + "; a group may not be its own ancestor");
      up = groups[index.find(up)->second].parent;
    }
  }
  return ok_status();
}

Result<CohortTree> build_cohort_tree(const ClusterState& s, const std::vector<GroupSpec>& groups) {
  if (auto st = check_groups(groups); !st) return st.error();
  CohortTree tree;
  for (const GroupSpec& g : groups) {
    CohortGroup cg{.spec = g, .parent = -1, .nominal = std::vector<Resources>(s.catalog.size())};
    for (const AllocationSpec& a : g.allocation) {
      auto type = s.catalog.lookup(a.instance_type);
      if (!type) return Error::invalid("group " + g.name + ": " + type.error().message);
      if (a.amount.vcpu_unlimited || a.amount.memory_unlimited)
        return Error::invalid("group " + g.name + ", " + a.instance_type + ": a group's allocation cannot be unlimited; give amounts");
      auto amount = resolve_allocation(s.catalog.at(*type), a.amount);
      if (!amount) return Error::invalid("group " + g.name + ", " + a.instance_type + ": " + amount.error().message);
      cg.nominal[type->index()] += *amount;
    }
    tree.groups.push_back(std::move(cg));
  }
  for (CohortGroup& g : tree.groups) g.parent = g.spec.parent.empty() ? -1 : tree.find(g.spec.parent);
  for (const Team& t : s.teams) {
    if (!t.removed && tree.find(t.spec.name) >= 0)
      return Error::invalid("team " + t.spec.name + " has the name of a group; teams and groups need different names");
    int g = t.spec.group.empty() ? -1 : tree.find(t.spec.group);
    if (!t.spec.group.empty() && g < 0)
      return Error::precondition("team " + t.spec.name + " is in group " + t.spec.group +
                                 ", which the groups do not define; move the team first, or keep the group");
    tree.team_group.push_back(g);
  }
  // Deepest first: a group's depth is its number of ancestors, so children come before their parents.
  std::vector<int> depth(tree.groups.size(), 0);
  for (size_t i = 0; i < tree.groups.size(); ++i)
    for (int p = tree.groups[i].parent; p >= 0; p = tree.groups[p].parent) ++depth[i];
  for (size_t i = 0; i < tree.groups.size(); ++i) tree.bottom_up.push_back(static_cast<int>(i));
  std::stable_sort(tree.bottom_up.begin(), tree.bottom_up.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  return tree;
}

CohortFigures cohort_figures(const ClusterState& s, const UsageTable& usage, TypeId type, const Resources& idle) {
  const CohortTree& tree = s.cohorts;
  const size_t n = tree.groups.size();
  CohortFigures f{.subtree = std::vector<Resources>(n), .guaranteed = std::vector<Resources>(n), .used = std::vector<Resources>(n),
                  .cluster_subtree = idle, .cluster_used = {}};
  for (size_t g = 0; g < n; ++g) f.subtree[g] = tree.groups[g].nominal[type.index()];
  // A team keeps nothing back (g_T = 0): all its quota is lendable and all its usage reaches its parent.
  for (const Team& t : s.teams) {
    if (!t.lends()) continue;
    const int g = t.id.index() < tree.team_group.size() ? tree.team_group[t.id.index()] : -1;
    Resources& subtree = g < 0 ? f.cluster_subtree : f.subtree[g];
    Resources& used = g < 0 ? f.cluster_used : f.used[g];
    subtree += t.nominal[type.index()];
    used += t.counted(type, usage[t.id.index()][type.index()]);
  }
  for (int g : tree.bottom_up) {
    const GroupSpec& spec = tree.groups[g].spec;
    if (spec.lend_limit) f.guaranteed[g] = f.subtree[g] - percent_of(f.subtree[g], *spec.lend_limit);
    const int p = tree.groups[g].parent;
    (p < 0 ? f.cluster_subtree : f.subtree[p]) += f.subtree[g] - f.guaranteed[g];
    (p < 0 ? f.cluster_used : f.used[p]) += max0(f.used[g] - f.guaranteed[g]);
  }
  return f;
}

std::optional<Explanation> check_cohort_tree(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type,
                                             const Resources& request, const Resources& idle, bool within_nominal) {
  const CohortTree& tree = s.cohorts;
  const Team& t = s.teams[team.index()];
  const std::string& type_name = s.catalog.at(type).name;
  const CohortFigures f = cohort_figures(s, usage, type, idle);
  std::vector<int> path;  // the team's group, its parent, ..., a root
  for (int g = team.index() < tree.team_group.size() ? tree.team_group[team.index()] : -1; g >= 0; g = tree.groups[g].parent)
    path.push_back(g);
  // available(), from the cluster down to the team's group. Going down it can only grow (by what a group keeps
  // for its own members) or be cut by a group's borrowing limit; the nearest such cut names the reason.
  Resources avail = f.cluster_subtree - f.cluster_used;
  int cut_by = -1;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const int g = *it;
    const GroupSpec& spec = tree.groups[g].spec;
    Resources from_parent = avail;
    if (spec.borrow_limit) {
      const Resources room = f.subtree[g] - f.guaranteed[g] - max0(f.used[g] - f.guaranteed[g]) + percent_of(f.subtree[g], *spec.borrow_limit);
      from_parent = min_of(from_parent, room);
      if (!(avail == from_parent)) cut_by = g;
    }
    avail = max0(f.guaranteed[g] - f.used[g]) + from_parent;
  }
  for (Resource r : kAllResources) {
    if (request.get(r) <= avail.get(r)) continue;
    const std::string short_by = amount_text(r, request.get(r) - avail.get(r));
    if (cut_by >= 0) {
      const GroupSpec& spec = tree.groups[cut_by].spec;
      return explain(ReasonCode::kBorrowLimit,
                     "borrow limit: group " + spec.name + " (of team " + t.spec.name + ") may take at most " +
                         std::to_string(*spec.borrow_limit) + "% of its subtree quota of " +
                         format_amount(r, f.subtree[cut_by].get(r)) + " beyond it, of " + type_name + " (" + short_by + " short)");
    }
    return explain(within_nominal ? ReasonCode::kQuotaLentOut : ReasonCode::kNoIdleQuota,
                   within_nominal ? "quota lent out: team " + t.spec.name + "'s quota of " + type_name +
                                        " is in use by teams that borrowed it (" + short_by + " short)"
                                  : "no idle quota to borrow: the lendable " + type_name + " quota of team " + t.spec.name +
                                        "'s groups and the cluster is in use (" + short_by + " short)");
  }
  return std::nullopt;  // the team's own limit (its quota and borrow limit) is check_quota's
}

}  // namespace allot
