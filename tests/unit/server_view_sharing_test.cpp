// The read views (server_state.h, view_of) share the server's tables that change rarely or a few entries at a
// time: the tokens and the nodes' names' index until one changes, the goodput accounts shard by shard. A view keeps
// what it had when the live state changes afterwards.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/model/state.h"
#include "server/writer/server_state.h"
#include "store/record.h"

namespace allot::server_view_sharing_test {
namespace {

using server::ServerState;

store::Record token_record(uint64_t seq, std::string id, std::string node) {
  store::Record r;
  r.seq = seq;
  r.at = 100;
  r.op = store::CreateToken{store::TokenRecord{std::move(id), std::string(64, 'a'), auth::Role::kAgent, {}, std::move(node), 0, ""}};
  return r;
}

TEST(ServerViewSharing, ViewsShareTokensNamesAndAccountsUntilTheyChange) {
  ServerState live;
  ASSERT_TRUE(add_nodes(live.cluster, {NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, NodeSpec{"n2", "ml.g5.8xlarge", "", {}}}, 0).ok());
  std::vector<server::Event> events;
  ASSERT_TRUE(server::apply(live, token_record(1, "tok-n1", "n1"), events).ok());
  live.accounts.edit(7).held_s = 10;
  const auto first = server::view_of(live, nullptr);
  const auto second = server::view_of(live, first.get());
  EXPECT_TRUE(second->tokens.shares_with(first->tokens));
  EXPECT_TRUE(second->tokens.shares_with(live.tokens));
  EXPECT_TRUE(second->cluster.node_by_name.shares_with(first->cluster.node_by_name));

  // After the views: a token revoked, an account changed, a node added. The views keep what they had.
  store::Record revoke;
  revoke.seq = 2;
  revoke.at = 200;
  revoke.op = store::RevokeToken{"tok-n1"};
  ASSERT_TRUE(server::apply(live, revoke, events).ok());
  live.accounts.edit(7).held_s = 20;
  ASSERT_TRUE(add_nodes(live.cluster, {NodeSpec{"n3", "ml.g5.8xlarge", "", {}}}, 0).ok());
  const auto third = server::view_of(live, second.get());

  EXPECT_FALSE(second->tokens->at("tok-n1").revoked);
  EXPECT_TRUE(third->tokens->at("tok-n1").revoked);
  EXPECT_FALSE(third->tokens.shares_with(second->tokens));
  EXPECT_EQ(second->accounts.find(7)->held_s, 10);
  EXPECT_EQ(third->accounts.find(7)->held_s, 20);
  EXPECT_EQ(second->cluster.find_node("n3"), nullptr);
  ASSERT_NE(third->cluster.find_node("n3"), nullptr);
  EXPECT_EQ(third->cluster.find_node("n3")->id.index(), 2u);
  EXPECT_FALSE(third->cluster.node_by_name.shares_with(second->cluster.node_by_name));
  EXPECT_TRUE(third->cluster.node_by_name.shares_with(live.cluster.node_by_name));
}

// A failed add of several nodes takes back the names it added, in the live state only.
TEST(ServerViewSharing, AFailedAddLeavesTheViewsNamesAlone) {
  ServerState live;
  ASSERT_TRUE(add_nodes(live.cluster, {NodeSpec{"n1", "ml.g5.8xlarge", "", {}}}, 0).ok());
  const auto view = server::view_of(live, nullptr);
  EXPECT_FALSE(add_nodes(live.cluster, {NodeSpec{"n2", "ml.g5.8xlarge", "", {}}, NodeSpec{"n1", "ml.g5.8xlarge", "", {}}}, 0).ok());
  EXPECT_EQ(live.cluster.find_node("n2"), nullptr);
  EXPECT_EQ(live.cluster.node_by_name->size(), 1u);
  EXPECT_EQ(view->cluster.node_by_name->size(), 1u);
  EXPECT_NE(view->cluster.find_node("n1"), nullptr);
}

}  // namespace
}  // namespace allot::server_view_sharing_test
