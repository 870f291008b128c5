#include <gtest/gtest.h>

#include "core/model/hostlist.h"

namespace allot::hostlist_test {
namespace {

using V = std::vector<std::string>;

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(*expand_hostlist("gpu-[1-4]"), (V{"gpu-1", "gpu-2", "gpu-3", "gpu-4"}));
  EXPECT_EQ(*expand_hostlist("n[01-03,7]"), (V{"n01", "n02", "n03", "n7"}));
  EXPECT_EQ(*expand_hostlist("r[1-2]-n[1-2]"), (V{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(*expand_hostlist("a,b[1-2]"), (V{"a", "b1", "b2"}));
  EXPECT_EQ(*expand_hostlist("plain"), (V{"plain"}));
}

TEST(Hostlist, RejectsMalformedLists) {
  for (const char* bad : {"gpu-[1-4", "gpu-1-4]", "gpu-[4-1]", "gpu-[a-b]", "gpu-[]", "a,,b", "", "gpu-[1-9999999]"}) {
    auto r = expand_hostlist(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty());
    }
  }
}

// Found by long fuzzing (issue 33): 200,000 names of 12 KB were built (3.1 GB) before the length of a node name
// was checked. Counts and lengths are now known before anything is expanded.
TEST(Hostlist, RefusesLongNamesAndLargeCountsBeforeExpanding) {
  auto r = expand_hostlist(std::string(12000, 'a') + "[0-199999]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("gives names of 12006 characters; a node name is at most 253"), std::string::npos)
      << r.error().message;
  EXPECT_LT(r.error().message.size(), 400u) << "the message quotes the list shortened";
  EXPECT_FALSE(expand_hostlist(std::string(40000, 'a')).ok());
  // The longest name counts the widest number: 247 letters and "[1-100]" give names of up to 250 characters.
  EXPECT_TRUE(expand_hostlist(std::string(247, 'a') + "[1-100]").ok());
  EXPECT_TRUE(expand_hostlist(std::string(250, 'a') + "[001-100]").ok());
  EXPECT_FALSE(expand_hostlist(std::string(251, 'a') + "[001-100]").ok());
  // The bound on names holds over the whole list, and is checked before expanding.
  auto many = expand_hostlist("a[0-199999],b[0-199999]");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("names more than 200000 hosts"), std::string::npos) << many.error().message;
  EXPECT_EQ(expand_hostlist("a[0-99999],b[0-99999]")->size(), 200000u);
  EXPECT_FALSE(expand_hostlist("r[0-999]-n[0-999]").ok());
}

}  // namespace
}  // namespace allot::hostlist_test
