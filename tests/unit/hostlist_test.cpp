#include <gtest/gtest.h>

#include "core/hostlist.h"

namespace allot {
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

}  // namespace
}  // namespace allot
