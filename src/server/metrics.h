#pragma once
// Prometheus text exposition of the server's state (/metrics): jobs per team and state; quota, usage,
// borrowed and lent per team and resource (accelerators, vcpu, memory_gib); admissions and preemptions
// since the journal began; the submit-to-admit latency histogram; nodes per health.
#include <string>

#include "server/server_state.h"

namespace allot::server {

std::string render_metrics(const ServerState& st);

}  // namespace allot::server
