#pragma once
// What an agent has started, kept across its restarts, so that it runs each (job, rank, attempt) at most once
// (docs/api.md, "Agents") even when it is killed and started again with the same work directory.
//
// An attempt is recorded, durably, before its process starts; its exit code once the agent has collected it;
// and that its end was reported once the server answered a heartbeat that carried it. A restarted agent finds
// here what its predecessor started. It never starts those attempts again, and it reports the end of every one
// whose end the server has not heard: with the exit code when the predecessor collected it, else as "lost"
// (the replica died with its agent: the watchdog or the restarted agent ended it, agent/leftovers.h). The
// journal forgets an attempt once its end was reported and the server's run list no longer names it; the
// server never names an attempt again once it has dropped it from the run list, since attempts only grow.
//
// The file is <work dir>/attempts.json, replaced atomically (agent/durable_file.h).
// Thread-safety: none; the agent's heartbeat loop owns it.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/lifecycle/log_rules.h"
#include "core/model/result.h"

namespace allot::agent {

struct StartedAttempt {
  std::string job;
  int rank = 0;
  int attempt = 0;
  std::string dir;                // its working directory, which holds its log
  std::string log_path;
  std::optional<int> exit_code;   // once the agent collected its exit
  bool reported = false;          // a heartbeat that carried its end was answered
  // A rule on its output fired (core/lifecycle/log_rules.h), recorded before the agent stops it: its end is reported with the
  // rule, by this agent or the one after it.
  std::optional<LogRuleFiring> log_rule;
  // The kernel's out-of-memory killer ended it inside its memory limit (agent/cgroups.h): that limit in MiB, so
  // that its end is reported as oom_killed by this agent or the one after it; 0: it was not.
  int64_t oom_limit_mib = 0;
  // The agent's key of the attempt: "job/rank#attempt".
  std::string key() const { return job + "/" + std::to_string(rank) + "#" + std::to_string(attempt); }
  bool operator==(const StartedAttempt&) const = default;
};

class AttemptJournal {
 public:
  AttemptJournal() = default;
  // The journal at `path`; a missing file is an empty journal, a malformed one an error naming the path.
  static Result<AttemptJournal> load(const std::string& path);

  bool contains(const std::string& key) const { return entries_.count(key) > 0; }
  const std::map<std::string, StartedAttempt>& entries() const { return entries_; }

  // Each of these changes the journal in memory, then saves it; the Status is the save's. A start that could not
  // be saved must not run: after a crash its successor would not know of it.
  Status started(StartedAttempt a);
  Status ended(const std::string& key, int exit_code, int64_t oom_limit_mib = 0);
  // A log rule fired on the attempt; recorded before the agent stops it, so that a restarted agent reports the
  // rule (not a lost replica) and the server applies it once (for that attempt only).
  Status log_rule_fired(const std::string& key, const LogRuleFiring& firing);
  Status reported(const std::vector<std::string>& keys);
  // Forgets the reported attempts that `listed` (the keys of the run list the server sent last) does not name,
  // and returns them (their directories are the caller's to remove).
  std::vector<StartedAttempt> forget_unlisted(const std::set<std::string>& listed);

 private:
  Status save() const;
  std::string path_;
  std::map<std::string, StartedAttempt> entries_;  // by key()
};

}  // namespace allot::agent
