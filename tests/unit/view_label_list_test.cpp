// Node labels as one line of text (view/label_list.h): what the agent's and `plan create`'s --labels take, what a
// provisioner gets in ALLOT_NODE_LABELS and what `describe node` prints read back as they were written.
#include <gtest/gtest.h>

#include "view/label_list.h"

namespace allot::view::view_label_list_test {
namespace {

TEST(LabelList, WhatIsWrittenReadsBackTheSame) {
  const std::map<std::string, std::string> labels = {{"zone", "a"}, {"network-node-layer-1", "nn-1"}, {"empty", ""}};
  const std::string text = format_label_list(labels);
  EXPECT_EQ(text, "empty=,network-node-layer-1=nn-1,zone=a");
  auto back = parse_label_list(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, labels);
  EXPECT_EQ(format_label_list(nlohmann::json::parse(R"({"zone": "a", "gpus": 8})")), "gpus=8,zone=a");
  EXPECT_EQ(format_label_list(nlohmann::json::array()), "");
  EXPECT_EQ(format_label_list(std::map<std::string, std::string>{}), "");
}

TEST(LabelList, EmptyItemsAreSkippedAndALaterKeyWins) {
  auto parsed = parse_label_list(",a=1,,b=2,a=3,");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, (std::map<std::string, std::string>{{"a", "3"}, {"b", "2"}}));
  EXPECT_TRUE(parse_label_list("")->empty());
  EXPECT_EQ(parse_label_list("k=v=w")->at("k"), "v=w");  // only the first '=' splits
}

TEST(LabelList, AnItemThatIsNotKeyEqualsValueIsQuoted) {
  for (const char* bad : {"zone", "a=1,=2", "a=1,b"}) {
    auto parsed = parse_label_list(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find("is not key=value"), std::string::npos) << parsed.error().message;
  }
  EXPECT_NE(parse_label_list("a=1,b").error().message.find("\"b\""), std::string::npos);
}

}  // namespace
}  // namespace allot::view::view_label_list_test
