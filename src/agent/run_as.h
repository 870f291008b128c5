#pragma once
// The user replicas run as (`allot agent --run-as USER`). An agent started as root drops to that user in each
// replica's child process before exec (supplementary groups, then group, then user, each checked), so a job
// can do no more on the node than that user can. Replicas that would run as root are refused unless the
// operator says so (`--allow-root`): a job's command is whatever a cluster member submitted.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/model/result.h"

namespace allot::agent {

struct Identity {
  std::string name;  // the login name, for USER and LOGNAME
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (from /etc/group), including gid
  std::string home;           // for HOME
};

// A user by name or by numeric id ("nobody", "65534"), with its groups. Not found: an error naming the user.
Result<Identity> lookup_user(const std::string& user);
// The identity this process runs as (its effective uid), for an agent that runs replicas as itself.
Identity current_identity();

// Who the replicas of an agent run as, from `--run-as` (empty: the agent's own user) and `--allow-root`.
// Refuses, with what to pass instead: replicas as root without allow_root; a --run-as user other than the
// agent's own when the agent is not root (it could not switch to it).
Result<Identity> replica_identity(const std::string& run_as, bool allow_root);

// Makes `dir` (a replica's working directory, which the agent created) belong to `who` with mode 0700, so the
// replica can write there after dropping privileges and no other user can look in. `dir` itself is never
// followed through a symlink. A no-op when `who` is the agent's own user.
Status give_dir_to(const std::string& dir, const Identity& who);

}  // namespace allot::agent
