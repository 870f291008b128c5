#pragma once
// Prometheus text exposition of the server's state (/metrics): jobs per team and state; quota, usage,
// borrowed and lent per team, instance type and resource (accelerators, vcpu, memory_gib); admissions and
// preemptions since the journal began, in total and by rule; the submit-to-admit latency histogram; queue length
// and queue wait histograms per team and priority class; scheduler pass durations; accelerators per instance type
// by state; nodes per health (and per instance type). docs/api.md lists them.
#include <string>

#include "server/server_state.h"

namespace allot::server {

std::string render_metrics(const ServerState& st);

}  // namespace allot::server
