// CowValue (core/model/cow_value.h): copies share the value until one writes; each reads as the value was when it
// was copied, whichever side writes afterwards.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "core/model/cow_value.h"
#include "published_readers.h"

namespace allot::cow_value_test {
namespace {

using Ranks = CowValue<std::set<int>>;

TEST(CowValue, ANeverEditedValueReadsEmptyAndEditingMakesIt) {
  Ranks r;
  EXPECT_TRUE(r->empty());
  r.edit().insert(3);
  EXPECT_EQ(*r, std::set<int>({3}));
}

TEST(CowValue, ACopySharesUntilEitherSideEdits) {
  Ranks live;
  live.edit().insert(1);
  Ranks copy = live;
  EXPECT_TRUE(copy.shares_with(live)) << "a copy costs a pointer";
  live.edit().insert(2);
  EXPECT_FALSE(copy.shares_with(live));
  EXPECT_EQ(*copy, std::set<int>({1})) << "the copy reads as the value was when copied";
  EXPECT_EQ(*live, std::set<int>({1, 2}));

  Ranks second = live;
  second.edit().erase(1);
  EXPECT_EQ(*live, std::set<int>({1, 2})) << "nor does the copy's edit reach the original";
  EXPECT_EQ(*second, std::set<int>({2}));
}

TEST(CowValue, AnUnsharedValueIsEditedInPlace) {
  Ranks live;
  live.edit().insert(1);
  const std::set<int>* before = &*live;
  {
    Ranks dropped = live;  // a view that is gone again
  }
  live.edit().insert(2);
  EXPECT_EQ(&*live, before) << "no clone once no copy holds it";
}

// shared() hands out the value itself; the holder's next edit clones it, so what was handed out never changes.
TEST(CowValue, SharedValueStaysWhileTheHolderEdits) {
  CowValue<std::vector<int>> live;
  EXPECT_TRUE(live.shared()->empty()) << "a holder never edited hands out an empty value";
  live.edit().push_back(1);
  const std::shared_ptr<const std::vector<int>> out = live.shared();
  EXPECT_EQ(out.get(), &*live);
  live.edit().push_back(2);
  EXPECT_EQ(*out, std::vector<int>({1}));
  EXPECT_EQ(*live, std::vector<int>({1, 2}));
}

// Readers on other threads read and drop copies while the owner edits: a value a copy holds is never written in
// place (a ThreadSanitizer build reports it if it were). Every copy holds 0..n-1 for some n.
TEST(CowValue, CopiesReadOnOtherThreadsStayWhole) {
  using Holder = std::vector<CowValue<std::vector<int>>>;
  Holder live(8);
  test_support::PublishedReaders<Holder> readers(std::make_shared<const Holder>(live), [](const Holder& h) {
    int torn = 0;
    for (const auto& v : h)
      for (size_t i = 0; i < v->size(); ++i) torn += (*v)[i] != static_cast<int>(i);
    return torn;
  });
  for (int round = 0; round < 400; ++round) {
    auto& v = live[static_cast<size_t>(round) % live.size()].edit();
    v.push_back(static_cast<int>(v.size()));
    readers.publish(std::make_shared<const Holder>(live));
  }
  EXPECT_EQ(readers.stop(), 0);
}

}  // namespace
}  // namespace allot::cow_value_test
