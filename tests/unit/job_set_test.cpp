// Unit tests of JobSet (core/job_set.h), the index of waiting and running jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/job_set.h"

namespace allot {
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

}  // namespace
}  // namespace allot
