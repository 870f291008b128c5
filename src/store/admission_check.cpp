#include "store/admission_check.h"

namespace allot::store {

const char* admission_check_kind_name(AdmissionCheckKind k) {
  switch (k) {
    case AdmissionCheckKind::kCapacityPlanActive: return "capacity_plan_active";
    case AdmissionCheckKind::kHttp: return "http";
  }
  return "http";
}

std::optional<AdmissionCheckKind> parse_admission_check_kind(std::string_view name) {
  for (AdmissionCheckKind k : kAllAdmissionCheckKinds)
    if (name == admission_check_kind_name(k)) return k;
  return std::nullopt;
}

std::string admission_check_kind_list() {
  std::string out;
  for (AdmissionCheckKind k : kAllAdmissionCheckKinds) out += (out.empty() ? "" : ", ") + std::string(admission_check_kind_name(k));
  return out;
}

const char* check_answer_name(CheckAnswer a) {
  switch (a) {
    case CheckAnswer::kReady: return "ready";
    case CheckAnswer::kRetry: return "retry";
    case CheckAnswer::kReject: return "reject";
  }
  return "ready";
}

std::optional<CheckAnswer> parse_check_answer(std::string_view name) {
  for (CheckAnswer a : kAllCheckAnswers)
    if (name == check_answer_name(a)) return a;
  return std::nullopt;
}

}  // namespace allot::store
