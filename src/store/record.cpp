#include "store/record.h"

#include "core/model/overloaded.h"

namespace allot::store {

const char* requeue_cause_name(RequeueCause c) {
  switch (c) {
    case RequeueCause::kRendezvousPort: return "rendezvous_port";
    case RequeueCause::kServerDeaf: return "server_deaf";
  }
  return "?";
}

const char* health_cause_name(HealthCause c) {
  switch (c) {
    case HealthCause::kAdmin: return "admin";
    case HealthCause::kAgent: return "agent";
    case HealthCause::kTimeout: return "timeout";
    case HealthCause::kHealthCheck: return "health-check";
    case HealthCause::kDeepCheck: return "deep-check";
  }
  return "admin";
}

const char* actor_role_name(const ActorRole& r) {
  return std::visit(Overloaded{[](std::monostate) { return ""; }, [](auth::Role role) { return auth::role_name(role); },
                               [](Tokenless t) {
                                 switch (t) {
                                   case Tokenless::kServer: return "server";
                                   case Tokenless::kStranger: return "none";
                                 }
                                 return "none";  // not reached
                               }},
                    r);
}

std::optional<ActorRole> parse_actor_role(std::string_view name) {
  if (name.empty()) return ActorRole{};
  if (std::optional<auth::Role> role = auth::parse_role(name)) return ActorRole{*role};
  for (Tokenless t : {Tokenless::kServer, Tokenless::kStranger})
    if (name == actor_role_name(t)) return ActorRole{t};
  return std::nullopt;
}

std::string actor_role_list() { return auth::role_list() + ", server, none"; }

namespace {
struct NameOf {
  const char* operator()(const SetPolicy&) const { return "set_policy"; }
  const char* operator()(const UpsertTeam&) const { return "upsert_team"; }
  const char* operator()(const RemoveTeam&) const { return "remove_team"; }
  const char* operator()(const AddNode&) const { return "add_node"; }
  const char* operator()(const RemoveNode&) const { return "remove_node"; }
  const char* operator()(const NodeHealthChange&) const { return "node_health"; }
  const char* operator()(const Cordon&) const { return "cordon"; }
  const char* operator()(const Drain&) const { return "drain"; }
  const char* operator()(const Submit&) const { return "submit"; }
  const char* operator()(const Cancel&) const { return "cancel"; }
  const char* operator()(const Finish&) const { return "finish"; }
  const char* operator()(const Admit&) const { return "admit"; }
  const char* operator()(const Preempt&) const { return "preempt"; }
  const char* operator()(const Resize&) const { return "resize"; }
  const char* operator()(const CreateToken&) const { return "create_token"; }
  const char* operator()(const RevokeToken&) const { return "revoke_token"; }
  const char* operator()(const Audit&) const { return "audit"; }
  const char* operator()(const HoldJob&) const { return "set_job_hold"; }
  const char* operator()(const SetJobPriority&) const { return "set_job_priority"; }
  const char* operator()(const DeleteJob&) const { return "delete_job"; }
  const char* operator()(const CreatePlan&) const { return "create_plan"; }
  const char* operator()(const PlanStepRecord&) const { return "plan_step"; }
  const char* operator()(const DeletePlan&) const { return "delete_plan"; }
  const char* operator()(const CreateReservation&) const { return "create_reservation"; }
  const char* operator()(const ReservationStepRecord&) const { return "reservation_step"; }
  const char* operator()(const DeleteReservation&) const { return "delete_reservation"; }
  const char* operator()(const CompactFinished&) const { return "compact_finished"; }
  const char* operator()(const Requeue&) const { return "requeue"; }
  const char* operator()(const TimeLimitExceeded&) const { return "time_limit_exceeded"; }
  const char* operator()(const LocalityWaitBegan&) const { return "locality_wait"; }
  const char* operator()(const StartTimeout&) const { return "start_timeout"; }
  const char* operator()(const CreateWebhook&) const { return "create_webhook"; }
  const char* operator()(const DeleteWebhook&) const { return "delete_webhook"; }
  const char* operator()(const LogRuleFired&) const { return "log_rule"; }
  const char* operator()(const DependencyNeverHolds&) const { return "dependency_never"; }
  const char* operator()(const SetNetworkLayers&) const { return "network_layers"; }
  const char* operator()(const PutAdmissionCheck&) const { return "put_admission_check"; }
  const char* operator()(const DeleteAdmissionCheck&) const { return "delete_admission_check"; }
  const char* operator()(const AdmissionCheckAnswered&) const { return "admission_check"; }
  const char* operator()(const RecoverInPlace&) const { return "recover_in_place"; }
  const char* operator()(const InPlaceFallback&) const { return "in_place_fallback"; }
  const char* operator()(const RemoteCopyStep&) const { return "remote_copy"; }
};
struct JobOf {
  std::string operator()(const Submit& o) const { return o.job.name; }
  std::string operator()(const Cancel& o) const { return o.job; }
  std::string operator()(const Finish& o) const { return o.job; }
  std::string operator()(const Admit& o) const { return o.job; }
  std::string operator()(const Preempt& o) const { return o.job; }
  std::string operator()(const Resize& o) const { return o.job; }
  // No catch-all: a new kind of record does not compile until it says which job it names, if any.
  std::string operator()(const SetPolicy&) const { return ""; }
  std::string operator()(const UpsertTeam&) const { return ""; }
  std::string operator()(const RemoveTeam&) const { return ""; }
  std::string operator()(const AddNode&) const { return ""; }
  std::string operator()(const RemoveNode&) const { return ""; }
  std::string operator()(const NodeHealthChange&) const { return ""; }
  std::string operator()(const Cordon&) const { return ""; }
  std::string operator()(const Drain&) const { return ""; }
  std::string operator()(const CreateToken&) const { return ""; }
  std::string operator()(const RevokeToken&) const { return ""; }
  std::string operator()(const Audit&) const { return ""; }
  std::string operator()(const HoldJob& o) const { return o.job; }
  std::string operator()(const SetJobPriority& o) const { return o.job; }
  std::string operator()(const DeleteJob& o) const { return o.job; }
  std::string operator()(const CreatePlan&) const { return ""; }
  std::string operator()(const PlanStepRecord&) const { return ""; }
  std::string operator()(const DeletePlan&) const { return ""; }
  std::string operator()(const CreateReservation&) const { return ""; }
  std::string operator()(const ReservationStepRecord&) const { return ""; }
  std::string operator()(const DeleteReservation&) const { return ""; }
  std::string operator()(const CompactFinished&) const { return ""; }
  std::string operator()(const Requeue& o) const { return o.job; }
  std::string operator()(const TimeLimitExceeded& o) const { return o.job; }
  std::string operator()(const LocalityWaitBegan& o) const { return o.job; }
  std::string operator()(const StartTimeout& o) const { return o.job; }
  std::string operator()(const CreateWebhook&) const { return ""; }
  std::string operator()(const DeleteWebhook&) const { return ""; }
  std::string operator()(const LogRuleFired& o) const { return o.job; }
  std::string operator()(const DependencyNeverHolds& o) const { return o.job; }
  std::string operator()(const SetNetworkLayers&) const { return ""; }
  std::string operator()(const PutAdmissionCheck&) const { return ""; }
  std::string operator()(const DeleteAdmissionCheck&) const { return ""; }
  std::string operator()(const AdmissionCheckAnswered& o) const { return o.job; }
  std::string operator()(const RecoverInPlace& o) const { return o.job; }
  std::string operator()(const InPlaceFallback& o) const { return o.job; }
  std::string operator()(const RemoteCopyStep& o) const { return o.job; }
};
}  // namespace

const char* op_name(const Op& op) { return std::visit(NameOf{}, op); }
std::string job_of(const Op& op) { return std::visit(JobOf{}, op); }

}  // namespace allot::store
