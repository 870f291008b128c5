// Rules on a replica's output (core/lifecycle/log_rules.h; docs/resiliency.md, "Rules on a job's output"): the log reader
// (agent/log_capture.h) matches each line as it captures it; the agent's main loop acts on what it saw.
#include "agent/agent.h"
#include "agent/health_checks.h"

namespace allot::agent {

void Agent::check_log_rules(Clock::time_point now) {
  for (auto& [key, r] : replicas_) {
    if (r.exited || r.log_rule || r.after_pull || r.a.log_rules.empty() || !procs_.running(key) || stopping(key)) continue;
    if (auto f = capture_.fired(key)) {
      log_rule_fired(key, r, *f, now);
      continue;
    }
    const auto& progress = r.a.log_rules.progress;
    if (!progress) continue;
    if (const uint64_t seen = capture_.progress_lines(key); seen != r.progress_seen) {
      r.progress_seen = seen;
      r.progress_at = now;
    } else if (now - r.progress_at >= std::chrono::seconds(progress->every_s)) {
      dump_stacks(key, r);
      log_rule_fired(key, r, LogRuleFiring{LogRuleKind::kHung, 0, r.a.rank, ""}, now);
    }
  }
}

void Agent::log_rule_fired(const std::string& key, Replica& r, const LogRuleFiring& firing, Clock::time_point now) {
  r.log_rule = firing;
  // Durable before the stop: an agent killed from here on leaves the rule to its successor, which reports the end
  // with it (resume_from_journal); the server applies it once, to this attempt only.
  if (auto st = journal_.log_rule_fired(key, firing); !st)
    say("cannot record the log rule that fired on " + key + " (" + st.error().message +
        "); if this agent restarts before reporting it, the replica is reported as lost");
  const std::string why = log_rule_reason(r.a.log_rules, firing);
  const bool running = procs_.running(key) && !stopping(key);
  (void)append_log_line(r.log_path, "allot agent: " + why + (firing.line.empty() ? "" : ": " + firing.line) +
                                        (running ? "; stopping this replica" : ""));
  say("replica " + key + ": " + why + (running ? "; stopping it" : ""));
  if (running) stop_replica(key, now);
}

void Agent::dump_stacks(const std::string& key, const Replica& r) {
  // The process to look at: a container's first process once podman told its host pid, else the replica's leader.
  pid_t pid = 0;
  if (auto rec = records_.find(key); rec != records_.end()) pid = rec->second.pid;
  if (pid <= 0) pid = procs_.pid(key).value_or(0);
  if (pid <= 0) return;
  std::vector<std::string> argv;
  std::string tool;
  if (tool_exists("py-spy")) tool = "py-spy", argv = {"py-spy", "dump", "--pid", std::to_string(pid)};
  else if (tool_exists("gdb"))
    tool = "gdb", argv = {"gdb", "-p", std::to_string(pid), "-batch", "-nx", "-ex", "thread apply all bt"};
  if (argv.empty()) {
    (void)append_log_line(r.log_path, "allot agent: no progress line: the stacks are not dumped, neither py-spy nor gdb is installed on this node");
    return;
  }
  // Bounded, on the main loop: a dump that takes longer is cut (heartbeats wait for it at most this long).
  const CommandOutcome out = run_with_timeout(argv, std::chrono::seconds(5));
  std::string text = "allot agent: no progress line: the stacks of pid " + std::to_string(pid) + " by " + tool;
  if (!out.started) text += " could not be taken (" + tool + " did not start)";
  else text += (out.timed_out ? " (cut after 5 s)" : out.exit_code != 0 ? " (" + tool + " exited with code " + std::to_string(out.exit_code) + ")" : "") +
               std::string(":\n") + out.output;
  (void)append_log_line(r.log_path, text);
  say("replica " + key + ": stacks dumped to its log by " + tool);
}

}  // namespace allot::agent
