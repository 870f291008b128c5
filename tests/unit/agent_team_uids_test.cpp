// Per-team uids (agent/team_uids.h): the range's refusals, the same uid for a team everywhere, and the refusal of
// a second team in a block this node has given to another.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "agent/team_uids.h"

namespace allot::agent::agent_team_uids_test {
namespace {
namespace fs = std::filesystem;

TEST(TeamUids, RangesThatCannotKeepTeamsApartAreRefused) {
  auto ok = parse_uid_range("1000000000-1999999999", 65536);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->blocks(), 15258u);
  for (const char* bad : {"", "12", "5-1", "a-b", "1000-", "-5", "1000000000-1999999999x"}) {
    auto r = parse_uid_range(bad, 65536);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("FIRST-LAST"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(parse_uid_range("0-9999999", 65536).error().message.find("uid 0"), std::string::npos);
  EXPECT_NE(parse_uid_range("1000000000-1000065535", 65536).error().message.find("fewer than two teams"), std::string::npos);
  // nobody (65534) has an account: a team running as it would be that account.
  auto with_nobody = parse_uid_range("60000-200000", 1000);
  ASSERT_FALSE(with_nobody.ok());
  EXPECT_NE(with_nobody.error().message.find("/etc/passwd"), std::string::npos) << with_nobody.error().message;
}

TEST(TeamUids, ATeamHasTheSameUidOnEveryNodeAndTwoTeamsNeverShareOne) {
  const UidRange range = *parse_uid_range("1000000000-1999999999", 65536);
  EXPECT_EQ(team_uid(range, "team-a"), team_uid(range, "team-a"));
  EXPECT_NE(team_uid(range, "team-a"), team_uid(range, "team-b"));
  EXPECT_EQ((team_uid(range, "team-a") - range.first) % range.block, 0u);
  const fs::path dir = fs::temp_directory_path() / ("allot-uids-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "team-uids.json").string();
  {
    auto t = TeamUids::load(path, range);
    ASSERT_TRUE(t.ok());
    auto a = t->identity_for("team-a", "/home-a");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->uid, team_uid(range, "team-a"));
    EXPECT_EQ(a->gid, a->uid);
    EXPECT_EQ(a->groups, std::vector<gid_t>{a->gid});
    EXPECT_EQ(a->home, "/home-a");
  }
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  // Two names in one block: with two blocks, some pair of these must share one. The second is refused, also
  // after a restart (the registry remembers the first).
  const UidRange two = {.first = 1000000000, .last = 1000000001, .block = 1};
  std::string first, clash;
  for (const char* n : {"t1", "t2", "t3"})
    for (const char* m : {"t1", "t2", "t3"})
      if (std::string(n) < m && team_uid(two, n) == team_uid(two, m) && first.empty()) first = n, clash = m;
  ASSERT_FALSE(first.empty());
  const std::string path2 = (dir / "two.json").string();
  ASSERT_TRUE(TeamUids::load(path2, two)->identity_for(first, "/").ok());
  auto again = TeamUids::load(path2, two);
  ASSERT_TRUE(again.ok());
  auto refused = again->identity_for(clash, "/");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("teams " + first + " and " + clash + " would share uid"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(again->identity_for(first, "/").ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace allot::agent::agent_team_uids_test
