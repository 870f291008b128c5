#pragma once
// Prometheus text exposition of the server's state (/metrics): jobs per team and state; quota, usage,
// borrowed and lent per team, instance type and resource (accelerators, vcpu, memory_gib); admissions and
// preemptions since the journal began, in total and by rule; the submit-to-admit latency histogram; queue length
// and queue wait histograms per team and priority class; scheduler pass durations; accelerators per instance type
// by state; nodes per health (and per instance type). docs/api.md lists them.
#include <string>

#include "server/outside/admission_checker.h"
#include "server/writer/server_state.h"
#include "server/outside/webhook_sender.h"

namespace allot::server {

std::string render_metrics(const ServerState& st);
// The webhook sender's counters (webhook_sender.h), which live outside the state: since this process started.
std::string render_webhook_metrics(const WebhookSender::Counters& c);
// The admission checker's counters (admission_checker.h), which live outside the state: since this process started.
std::string render_admission_checker_metrics(const AdmissionChecker::Counters& c);

}  // namespace allot::server
