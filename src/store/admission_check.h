#pragma once
// Admission checks (docs/scheduling.md, "Admission checks"; Kueue's AdmissionCheck): the closed sets an admin's
// check is made of, with one table each for their spellings in the API, the CLI, YAML and the journal.
#include <optional>
#include <string>
#include <string_view>

namespace allot::store {

// What decides a check. kCapacityPlanActive is the server's own: ready once the job's capacity plan is Active
// (a job naming no plan is rejected by it). kHttp asks an HTTP(S) endpoint, off the writer's thread.
enum class AdmissionCheckKind { kCapacityPlanActive, kHttp };
inline constexpr AdmissionCheckKind kAllAdmissionCheckKinds[] = {AdmissionCheckKind::kCapacityPlanActive, AdmissionCheckKind::kHttp};
const char* admission_check_kind_name(AdmissionCheckKind k);  // "capacity_plan_active", "http"
std::optional<AdmissionCheckKind> parse_admission_check_kind(std::string_view name);
std::string admission_check_kind_list();  // "capacity_plan_active, http"

// A check's answer for one run of a job: kReady lets the run start (once every check that applies said so);
// kRetry releases the admission (the job is requeued with a backoff, not counted as a failure of its code);
// kReject ends the job Failed with the check's message.
enum class CheckAnswer { kReady, kRetry, kReject };
inline constexpr CheckAnswer kAllCheckAnswers[] = {CheckAnswer::kReady, CheckAnswer::kRetry, CheckAnswer::kReject};
const char* check_answer_name(CheckAnswer a);  // "ready", "retry", "reject"
std::optional<CheckAnswer> parse_check_answer(std::string_view name);

}  // namespace allot::store
