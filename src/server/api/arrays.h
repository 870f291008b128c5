#pragma once
// Job arrays through the API (docs/api.md, "Arrays"; core/model/array.h has the rules): the answers and changes that
// name an array as a whole. An array's name is never a job's (core/model/array.h), so the job routes fall back to these
// when no job has the name: GET /v1/jobs/{name}, POST /v1/jobs/{name}/cancel and DELETE /v1/jobs/{name}.
// Roles as for a job: members of the array's team (for reading, viewers too) and admins.
#include <string>

#include "server/api/api.h"

namespace allot::server {

// An array's view: view::array_json plus, for `describe`, the first waiting task's reason and the names of failed
// tasks (at most 20), other teams' job names hidden as for a job.
Render array_render(const std::string& name, const auth::Caller& who, int status = 200);
// The array named `name` when `who` may read it (`change`: change it), as a job of its team would be; else the
// refusal a job of that team would get (refuse_job), or not found. Null without an error: no such array.
Result<const ArrayTasks*> array_for(Txn& txn, const auth::Caller& who, const std::string& name, bool change);
// Cancels every active task (one store::Cancel each, one batch); refused when none is active.
Result<Render> cancel_array(Txn& txn, const auth::Caller& who, const ArrayTasks& a);
// Cancels every active task and deletes every task (one batch), so that the name is free; the tasks' logs go
// once the journal holds it.
Result<Render> delete_array(Txn& txn, Api& api, const auth::Caller& who, const ArrayTasks& a);

}  // namespace allot::server
