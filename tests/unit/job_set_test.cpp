// Unit tests of JobSet (core/model/job_set.h), the index of waiting and running jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/model/job_set.h"

namespace allot::job_set_test {
namespace {

TEST(JobSetTest, InsertEraseContainsLikeASet) {
  JobSet s;
  std::set<uint32_t> want;
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const uint32_t id = rng() % 300;
    if (rng() % 3 == 0) {
      s.erase(JobId(id));
      want.erase(id);
    } else {
      s.insert(JobId(id));
      want.insert(id);
    }
    ASSERT_EQ(s.size(), want.size());
    ASSERT_EQ(s.contains(JobId(id)), want.count(id) == 1);
  }
  std::vector<uint32_t> members;
  for (JobId id : s) members.push_back(id.value);
  std::sort(members.begin(), members.end());
  EXPECT_EQ(members, std::vector<uint32_t>(want.begin(), want.end())) << "every member walked once";
  std::vector<uint32_t> sorted;
  for (JobId id : s.sorted()) sorted.push_back(id.value);
  EXPECT_EQ(sorted, std::vector<uint32_t>(want.begin(), want.end()));
}

TEST(JobSetTest, InsertTwiceAndEraseAbsentChangeNothing) {
  JobSet s;
  s.insert(JobId(3));
  s.insert(JobId(3));
  s.erase(JobId(10));
  s.erase(JobId(2));
  EXPECT_EQ(s.size(), 1u);
  EXPECT_TRUE(s.contains(JobId(3)));
  s.erase(JobId(3));
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(JobId(3)));
}

// The position index keeps pages only where members are: jobs that come and go over a long history leave
// nothing behind (IDs are never reused).
TEST(JobSetTest, IndexFollowsTheMembersNotTheIdsEverSeen) {
  JobSet s;
  constexpr uint32_t kIds = 200000;
  for (uint32_t id = 0; id < kIds; ++id) {
    s.insert(JobId(id));
    if (id >= 100) s.erase(JobId(id - 100));  // at most 100 members at once, always the latest
  }
  EXPECT_EQ(s.size(), 100u);
  EXPECT_LE(s.pages_held(), 2u) << "100 consecutive IDs span at most two pages";
  for (uint32_t id = kIds - 100; id < kIds; ++id) ASSERT_TRUE(s.contains(JobId(id)));
  EXPECT_FALSE(s.contains(JobId(5)));
  EXPECT_FALSE(s.contains(JobId(kIds + 5))) << "beyond the IDs seen";
  // A copy is a set of its own.
  JobSet copy = s;
  copy.erase(JobId(kIds - 1));
  EXPECT_TRUE(s.contains(JobId(kIds - 1)));
  EXPECT_FALSE(copy.contains(JobId(kIds - 1)));
  for (uint32_t id = kIds - 100; id < kIds; ++id) s.erase(JobId(id));
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.pages_held(), 0u);
  s.insert(JobId(3));  // a page given back comes back when written again
  EXPECT_TRUE(s.contains(JobId(3)));
  EXPECT_EQ(s.pages_held(), 1u);
}

}  // namespace
}  // namespace allot::job_set_test
