// Unit tests of IdPages (core/model/id_pages.h), the per-job-ID storage whose memory follows the IDs written.
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "core/model/id_pages.h"

namespace allot::id_pages_test {
namespace {

struct Rec {
  int value = 0;
  bool flag = false;
};

// The same reads as a plain vector, whatever is written where.
TEST(IdPagesTest, ReadsLikeAVectorOfDefaults) {
  IdPages<Rec> pages;
  std::vector<Rec> plain;
  std::mt19937 rng(11);
  for (size_t n : {10u, 300u, 5000u, 70000u}) {
    pages.resize(n);
    plain.resize(n);
    ASSERT_EQ(pages.size(), n);
    for (int i = 0; i < 500; ++i) {
      const size_t id = rng() % n;
      pages[id].value = i + 1;
      plain[id].value = i + 1;
    }
    const IdPages<Rec>& ro = pages;
    for (size_t id = 0; id < n; ++id) ASSERT_EQ(ro[id].value, plain[id].value) << id;
  }
  EXPECT_LT(pages.pages_allocated(), 70000 / IdPages<Rec>::kPage) << "pages only where IDs were written";
}

TEST(IdPagesTest, ConstReadsAllocateNothingAndReleaseGivesDefaultsBack) {
  IdPages<Rec> pages;
  pages.resize(1 << 20);
  const IdPages<Rec>& ro = pages;
  for (size_t id = 0; id < pages.size(); id += 997) ASSERT_EQ(ro[id].value, 0);
  EXPECT_EQ(pages.pages_allocated(), 0u);
  pages[5000].value = 7;
  pages[5001].flag = true;
  EXPECT_EQ(pages.pages_allocated(), 1u);
  EXPECT_EQ(ro[5000].value, 7);
  pages.release(pages.page_of(5000));
  EXPECT_EQ(pages.pages_allocated(), 0u);
  EXPECT_EQ(ro[5000].value, 0);
  EXPECT_FALSE(ro[5001].flag);
}

TEST(IdPagesTest, CopiesAreIndependentAndForEachVisitsWrittenPagesOnly) {
  IdPages<Rec> a;
  a.resize(100000);
  a[10].value = 1;
  a[90000].value = 2;
  IdPages<Rec> b = a;
  b[10].value = 3;
  b[50000].value = 4;
  const IdPages<Rec>& ra = a;
  EXPECT_EQ(ra[10].value, 1);
  EXPECT_EQ(ra[50000].value, 0);
  EXPECT_EQ(ra[90000].value, 2);
  size_t visited = 0;
  int sum = 0;
  b.for_each_allocated([&](Rec& r) {
    ++visited;
    sum += r.value;
  });
  EXPECT_EQ(visited, 3 * IdPages<Rec>::kPage);
  EXPECT_EQ(sum, 3 + 4 + 2);
  IdPages<Rec> moved = std::move(b);
  IdPages<Rec> c;
  c = moved;
  EXPECT_EQ(std::as_const(c)[50000].value, 4);
  b = a;  // a moved-from container can be assigned to again
  EXPECT_EQ(std::as_const(b)[10].value, 1);
}

}  // namespace
}  // namespace allot::id_pages_test
