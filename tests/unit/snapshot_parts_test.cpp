// Cutting a snapshot into parts (store/snapshot_parts.h): the parts join back to the body, none is longer than
// asked, and none begins inside a UTF-8 character, whatever the mix of character lengths.
#include <gtest/gtest.h>

#include <random>

#include "store/snapshot_parts.h"

namespace allot::store::snapshot_parts_test {
namespace {

TEST(SnapshotParts, PartsJoinBackAndNeverCutACharacter) {
  const char* pieces[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x9a\x80"};
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string body;
    const size_t len = rng() % 400;
    while (body.size() < len) body += pieces[rng() % 4];
    const size_t part_bytes = 4 + rng() % 20;
    const auto parts = split_snapshot(body, part_bytes);
    std::string joined;
    std::vector<std::pair<int64_t, std::string>> numbered;
    for (size_t i = 0; i < parts.size(); ++i) {
      EXPECT_LE(parts[i].size(), part_bytes);
      EXPECT_TRUE(parts[i].empty() || (static_cast<unsigned char>(parts[i][0]) & 0xC0) != 0x80)
          << "part " << i << " begins inside a character";
      if (i + 1 < parts.size()) {
        EXPECT_FALSE(parts[i].empty()) << "an empty part before the end would never end the cutting";
      }
      joined += parts[i];
      numbered.emplace_back(static_cast<int64_t>(i), std::string(parts[i]));
    }
    EXPECT_EQ(joined, body);
    auto back = join_snapshot(1, parts.size(), numbered);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, body);
  }
}

TEST(SnapshotParts, AnEmptyBodyIsOneEmptyPart) {
  const auto parts = split_snapshot("");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_TRUE(parts[0].empty());
}

TEST(SnapshotParts, AGapOrAnExtraPartIsAnErrorNamingTheSnapshot) {
  auto gap = join_snapshot(42, 3, {{0, "a"}, {2, "c"}});
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().message.find("snapshot at journal record 42 is incomplete: part 1 of 3 is missing"), std::string::npos)
      << gap.error().message;
  auto extra = join_snapshot(42, 1, {{0, "a"}, {1, "b"}});
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.error().message.find("has 2 parts where 1 were written"), std::string::npos) << extra.error().message;
}

}  // namespace
}  // namespace allot::store::snapshot_parts_test
