#include "server/api/arrays.h"

#include "core/model/array.h"
#include "server/views/views.h"
#include "view/job_refs.h"
#include "view/state_json.h"

namespace allot::server {
namespace {

using nlohmann::json;
constexpr size_t kFailedNamed = 20;

// The names of the array's live tasks, in index order (copied: applying changes to them moves the state).
std::vector<std::string> task_names(const ClusterState& s, const ArrayTasks& a, bool active_only) {
  std::vector<std::string> out;
  for (JobId id : a.tasks) {
    const Job& j = s.jobs[id.index()];
    if (!j.deleted && (!active_only || is_active(j.state))) out.push_back(j.spec.name);
  }
  return out;
}

}  // namespace

Render array_render(const std::string& name, const auth::Caller& who, int status) {
  return [name, who, status](const ServerState& st) -> Reply {
    const ArrayTasks* a = find_array(st.cluster, name);
    if (!a) return error_reply(Error::not_found("no job or array named " + name));
    json v = view::array_json(st.cluster, *a, {});
    json failed = json::array();
    const view::SeesTeamJobs sees = job_names_for(who);
    for (JobId id : a->tasks) {
      const Job& j = st.cluster.jobs[id.index()];
      if (j.deleted) continue;
      // A waiting task's reason may name another team's job (a starving job holding capacity): hidden as a job's.
      if (is_waiting(j.state) && !v.contains("waiting_reason"))
        v["waiting_reason"] = {{"task", j.spec.name}, {"reason", view::hide_job_refs(j.reason, sees)},
                               {"reason_code", reason_code_name(j.reason_code)}};
      if (j.state == JobState::kFailed && failed.size() < kFailedNamed) failed.push_back(j.spec.name);
    }
    v["failed_tasks"] = std::move(failed);
    return json_reply(status, v);
  };
}

Result<const ArrayTasks*> array_for(Txn& txn, const auth::Caller& who, const std::string& name, bool change) {
  const ArrayTasks* a = find_array(txn.cluster(), name);
  if (!a) return static_cast<const ArrayTasks*>(nullptr);
  const ArrayCounts c = count_array(txn.cluster(), *a);
  const std::string& team = txn.cluster().teams[c.team.index()].spec.name;
  if (change && !who.acts_for_team(team))
    return refuse_job(txn, who, name, denied(who, "changing array " + name, "an admin token or a member token of team " + team));
  if (!change && who.role == auth::Role::kMember && !who.in_team(team))
    return refuse_job(txn, who, name, denied(who, "reading array " + name, "an admin or viewer token, or a member token of team " + team));
  return a;
}

Result<Render> cancel_array(Txn& txn, const auth::Caller& who, const ArrayTasks& a) {
  const std::string name = a.name;
  const std::vector<std::string> active = task_names(txn.cluster(), a, /*active_only=*/true);
  if (active.empty()) return Error::precondition("array " + name + " has no active task to cancel; every task has ended");
  for (const std::string& t : active)
    if (auto st = txn.apply(store::Cancel{t}); !st)
      return Error::internal("task " + t + " of array " + name + " is active but was not cancelled: " + st.error().message);
  return array_render(name, who);
}

Result<Render> delete_array(Txn& txn, Api& api, const auth::Caller& who, const ArrayTasks& a) {
  const std::string name = a.name;
  json gone = view::array_json(txn.cluster(), a, {});  // names no reason: nothing to hide
  for (const std::string& t : task_names(txn.cluster(), a, /*active_only=*/true))
    if (auto st = txn.apply(store::Cancel{t}); !st)
      return Error::internal("task " + t + " of array " + name + " is active but was not cancelled: " + st.error().message);
  const std::vector<std::string> all = task_names(txn.cluster(), a, /*active_only=*/false);
  for (const std::string& t : all)
    if (auto st = txn.apply(store::DeleteJob{t}); !st)
      return Error::internal("task " + t + " of array " + name + " has ended but was not deleted: " + st.error().message);
  // The tasks' logs go too, once the journal holds the deletion (as for a job).
  if (auto st = txn.after_commit([&api, all] {
        for (const std::string& t : all) (void)api.logs.remove(t);
      });
      !st)
    return st.error();
  return Render([gone = std::move(gone)](const ServerState&) -> Reply { return json_reply(200, gone); });
}

}  // namespace allot::server
