#pragma once
// Per-team uids for bare-process replicas (`allot agent --run-as-range FIRST-LAST`, docs/security.md, "Teams
// never share a uid"). The range is cut into blocks of `block` uids, one block per team; a team's replicas run
// as the first uid of its block (gid the same number), and its containers map their user namespace onto the
// whole block (agent/container.h), so container root is that same unprivileged uid.
//
// A team's block is a function of its name alone (FNV-1a of the name, modulo the number of blocks), so every
// node gives a team the same uid without asking anyone, and files it leaves on a shared file system (its
// checkpoints) stay its own wherever it runs next. Two teams whose names land on the same block would share
// a uid: the agent remembers which team each block it has used belongs to (<work dir>/team-uids.json, 0600)
// and refuses to run a second team in a block, naming both teams. A larger range makes that rarer.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "agent/run_as.h"
#include "core/model/result.h"

namespace allot::agent {

struct UidRange {
  uid_t first = 0;
  uid_t last = 0;
  uid_t block = 65536;  // uids per team
  uint64_t blocks() const { return (static_cast<uint64_t>(last) - first + 1) / block; }
  friend bool operator==(const UidRange&, const UidRange&) = default;
};

// "FIRST-LAST" (decimal uids, FIRST > 0, FIRST <= LAST) with `block` uids per team. Refused, saying what is
// allowed: malformed text, root in the range, a range smaller than two blocks (two teams could never be apart),
// and a range holding a uid of /etc/passwd (its files would be the team's), which is named.
Result<UidRange> parse_uid_range(std::string_view text, uid_t block);

// The first uid of `team`'s block.
uid_t team_uid(const UidRange& range, std::string_view team);

class TeamUids {
 public:
  // The registry at `path` (missing: empty). A malformed file is an error naming it. Blocks recorded for
  // another range are forgotten (the range changed, so are the uids).
  static Result<TeamUids> load(const std::string& path, const UidRange& range);
  // Who `team`'s replicas run as: uid and gid the first of its block, no supplementary groups, the name
  // "allot-<uid>" (or the passwd name, were there one), home `home`. Records the block as the team's (the
  // file is written before the answer). Refused when another team has the block.
  Result<Identity> identity_for(const std::string& team, const std::string& home);
  const UidRange& range() const { return range_; }

 private:
  std::string path_;
  UidRange range_;
  std::map<uid_t, std::string> owners_;  // first uid of a block -> the team that used it here
};

}  // namespace allot::agent
