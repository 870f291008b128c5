#pragma once
// The rules of admission checks (docs/scheduling.md, "Admission checks"; Kueue's AdmissionCheck), apart from the
// threads that ask HTTP checks (admission_checker.h). An admin's check applies to the runs of the jobs of its teams
// and priority classes that began after it was made. The core admits and places such a run as any other, so it
// holds its quota and capacity, but the start gate (start_gate.h) does not hand its replicas to agents until every
// check that applies has answered ready for that run. An answer is a journal record (store::AdmissionCheckAnswered):
// ready is kept in the server's table (RunChecks), retry requeues the job with a backoff without using a retry,
// reject ends it Failed. A check deleted while runs wait on it no longer applies: they stop waiting on it.
// No I/O, no clock but the times passed in. Thread-safety: the writer's, as ServerState.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "server/options.h"
#include "server/writer/server_state.h"

namespace allot::server {

class Txn;

// Checks one scope may hold at most; an HTTP check's answer message is cut to kCheckMessageMax bytes.
inline constexpr size_t kMaxAdmissionChecks = 32;
inline constexpr size_t kCheckMessageMax = 512;

// Whether `check` applies to the current run of the Running job `j`: its teams and priority classes take the job,
// and it was made before the run began.
bool check_applies(const ServerState& st, const AdmissionCheckInfo& check, const Job& j);
// The checks that apply to `j` at all (its team and priority class), whenever its run began: what a member of its
// team may read of the checks (GET /v1/admission-checks).
bool check_scope_takes(const store::AdmissionCheckRecord& check, const std::string& team, const std::string& priority);
// The first check (by name) that applies to `j`'s current run and has not answered ready; null when none.
const AdmissionCheckInfo* check_waited_for(const ServerState& st, const Job& j);

// The built-in capacity_plan_active check, for a run of `j` now: ready when the job's plan is Active; reject when
// it names no plan (the check asks that the team's jobs run on capacity plans); nullopt (it waits) otherwise.
struct BuiltinAnswer {
  store::CheckAnswer answer = store::CheckAnswer::kReady;
  std::string message;
};
std::optional<BuiltinAnswer> capacity_plan_answer(const ClusterState& s, const Job& j);

// The writer (the leader), in every batch whose events moved: journals the answers of built-in checks that runs
// wait for. Whether it journaled any.
bool answer_builtin_checks(Txn& txn);

// An HTTP check to ask for one run: what to POST where.
struct CheckAsk {
  std::string job, team, check, url;
  int attempt = 0;
  std::string body;  // the job's summary (JSON), as docs/api.md "Admission checks" lists it
  bool operator==(const CheckAsk&) const = default;
};
// Every HTTP check that a Running job not handed out yet waits for, by job then check.
std::vector<CheckAsk> check_asks(const ServerState& st);

// An HTTP check's answer: a JSON object {"state": "ready"|"retry"|"reject", "message": TEXT (optional)}. The error
// says what is wrong with it (the job keeps waiting and the check is asked again).
Result<std::pair<store::CheckAnswer, std::string>> parse_check_reply(std::string_view body);

// The command an HTTP check's answer becomes, on the writer: journals it when the run still waits for the check
// (the job Running at `attempt`, the check there and applying, not ready yet); otherwise changes nothing (the run
// ended, the check was deleted), which is not an error.
Status take_check_answer(Txn& txn, const std::string& job, int attempt, const std::string& check, store::CheckAnswer answer,
                         std::string message, const AdmissionCheckOptions& options);
// A try that got no usable answer: kept (in memory) for the job's description, with when the next try goes.
void note_check_failure(ServerState& st, const std::string& job, int attempt, const std::string& check, int failures,
                        std::string error, int64_t next_try_ms);

// The backoff of a retry answer after `retries_before` earlier ones of the job:
//   backoff(n) = min(retry_backoff * 2^n, retry_backoff_max)   seconds.
int64_t check_retry_backoff_s(int retries_before, const AdmissionCheckOptions& options);

// What the Running job `j` waits for before its replicas start, for GET /v1/jobs/{job} (`waits_for_checks`):
// [{"check", "kind", "tries" (failed tries of an HTTP check), "error" (the last one's), "next_try_at"}]; empty when
// it waits for none.
nlohmann::json check_waits(const ServerState& st, const Job& j);
// The same into a job's view `v` (GET /v1/jobs and GET /v1/jobs/{job}), when it waits for any: `waits_for_checks`,
// and its `reason` opens with what it waits for ("waits for admission check NAME (KIND) to answer ready; " and the
// admission's reason), so that a listing, which shortens reasons, says why a Running job has not started.
void add_check_waits(const ServerState& st, const Job& j, nlohmann::json& v);

// A PUT /v1/admission-checks/{name} body checked: {"kind", "url" (http only), "teams", "priority_classes",
// "description"}. Errors say what, where, and what is allowed.
Result<store::AdmissionCheckRecord> parse_admission_check_request(const std::string& name, const nlohmann::json& body);
// A check's name: a DNS label.
Status check_admission_check_name(std::string_view name);
// A check as the API shows it (never with who made it to a member; the URL only to admins and viewers).
nlohmann::json admission_check_json(const AdmissionCheckInfo& c, bool whole);

}  // namespace allot::server
