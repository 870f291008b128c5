// Warnings at submit and apply (client/warnings.h): said before anything is sent, about what the server
// would accept but not run as meant.
#include <gtest/gtest.h>

#include "client/warnings.h"

#include "spec_builders.h"

namespace allot::client::client_warnings_test {
namespace {

using nlohmann::json;

bool mentions(const std::vector<std::string>& ws, const std::string& text) {
  for (const auto& w : ws)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

using allot::test::job_spec;

TEST(ClientWarnings, JobLargerThanItsNodeAndTeamWithoutQuotaForTheType) {
  const Catalog c = Catalog::builtin();
  const json team = {{"name", "a"}, {"allocation", json::array({{{"instance_type", "ml.p5.48xlarge"}, {"instances", 2}}})}};
  // One replica of team a, of a type and a number of accelerators.
  auto of = [](const std::string& type, int64_t accelerators) {
    return job_spec("j", "a").instance_type(type).accelerators(accelerators);
  };
  auto w = job_warnings(of("ml.g5.8xlarge", 4), team, c);  // a g5.8xlarge has one GPU
  EXPECT_TRUE(mentions(w, "it can never be placed")) << ::testing::PrintToString(w);
  EXPECT_TRUE(mentions(w, "team a has no allocation of ml.g5.8xlarge")) << ::testing::PrintToString(w);
  EXPECT_TRUE(job_warnings(of("p5.48xlarge", 8), team, c).empty()) << "fits, and within the team's types";
  EXPECT_TRUE(mentions(job_warnings(of("", 1), json{{"name", "a"}, {"allocation", json::array()}}, c), "has no allocation"));
  EXPECT_TRUE(job_warnings(of("ml.p5.48xlarge", 8), json(), c).empty()) << "no team answer: the server speaks for itself";
}

TEST(ClientWarnings, ApplyAboveCapacityAndNoWeight) {
  const Catalog c = Catalog::builtin();
  TeamSpec a;
  a.name = "a";
  AllocationSpec alloc;
  alloc.instance_type = "ml.g5.8xlarge";
  alloc.amount.instances = 3;
  a.allocation.push_back(alloc);
  const json nodes = json::array({{{"name", "n1"}, {"instance_type", "ml.g5.8xlarge"}}, {{"name", "n2"}, {"instance_type", "ml.g5.8xlarge"}}});
  auto w = apply_warnings({a}, {"a"}, nodes, c);
  EXPECT_TRUE(mentions(w, "add up to 3 nodes' worth, and the cluster has 2")) << ::testing::PrintToString(w);
  EXPECT_TRUE(mentions(w, "team a has no fair_share_weight: it defaults to 0")) << ::testing::PrintToString(w);
  a.allocation[0].amount.instances = 2;
  EXPECT_TRUE(apply_warnings({a}, {}, nodes, c).empty());
}

}  // namespace
}  // namespace allot::client::client_warnings_test
