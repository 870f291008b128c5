// Tokens: their form, parsing, hashing, and the AuthGate's answers for every way a token can be wrong.
#include <gtest/gtest.h>

#include <set>

#include "auth/token.h"
#include "server/http/auth_gate.h"

namespace allot::auth_token_test {
namespace {

TEST(AuthToken, IssuedTokensParseBackAndDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    auto t = auth::issue_token();
    auto parts = auth::parse_bearer(t.bearer);
    ASSERT_TRUE(parts.has_value()) << t.bearer;
    EXPECT_EQ(parts->id, t.id);
    EXPECT_EQ(auth::hash_secret(parts->secret), t.secret_hash);
    EXPECT_EQ(t.bearer.find(t.secret_hash), std::string::npos) << "the bearer must not carry the hash";
    EXPECT_TRUE(seen.insert(t.bearer).second);
  }
}

TEST(AuthToken, MalformedBearersAreRefused) {
  const std::string good = auth::issue_token().bearer;
  for (const std::string& bad : {std::string(""), std::string("allot_"), good.substr(1), good + "0", "xllot" + good.substr(5),
                                 good.substr(0, 16) + "-" + good.substr(17), good.substr(0, 20) + "G" + good.substr(21),
                                 good.substr(0, 20) + "A" + good.substr(21)})
    EXPECT_FALSE(auth::parse_bearer(bad).has_value()) << bad;
}

TEST(AuthToken, SameHashComparesWholeStrings) {
  EXPECT_TRUE(auth::same_hash("abc", "abc"));
  EXPECT_FALSE(auth::same_hash("abc", "abd"));
  EXPECT_FALSE(auth::same_hash("abc", "ab"));
  // SHA-256 of "abc", a published test vector.
  EXPECT_EQ(auth::hash_secret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AuthGate, AnswersForEveryKindOfToken) {
  server::AuthGate gate;
  auto live = auth::issue_token(), revoked = auth::issue_token(), expiring = auth::issue_token();
  auto table = std::make_shared<server::TokenTable>();
  (*table)[live.id] = server::TokenInfo{{live.id, live.secret_hash, auth::Role::kMember, {"a"}, "", 0, ""}, 1, "server", false, 0};
  (*table)[revoked.id] = server::TokenInfo{{revoked.id, revoked.secret_hash, auth::Role::kAdmin, {}, "", 0, ""}, 1, "server", true, 2};
  (*table)[expiring.id] = server::TokenInfo{{expiring.id, expiring.secret_hash, auth::Role::kViewer, {}, "", 100, ""}, 1, "server", false, 0};
  gate.publish(table);

  auto who = gate.authenticate("Bearer " + live.bearer, 50);
  ASSERT_TRUE(who.ok()) << who.error().message;
  EXPECT_EQ(who->role, auth::Role::kMember);
  EXPECT_TRUE(who->acts_for_team("a"));
  EXPECT_FALSE(who->acts_for_team("b"));

  auto expect_401 = [&](const std::string& header, int64_t now, const std::string& says) {
    auto r = gate.authenticate(header, now);
    ASSERT_FALSE(r.ok()) << header;
    EXPECT_EQ(r.error().code, ErrorCode::kUnauthenticated);
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  };
  expect_401("", 50, "needs a token");
  expect_401("Basic dXNlcg==", 50, "Bearer");
  expect_401("Bearer nonsense", 50, "malformed");
  expect_401("Bearer " + revoked.bearer, 50, "revoked");
  EXPECT_TRUE(gate.authenticate("Bearer " + expiring.bearer, 99).ok());
  expect_401("Bearer " + expiring.bearer, 100, "expired");
  // The right id with another secret, and an unknown id, get the same answer.
  auto other = auth::issue_token();
  expect_401("Bearer allot_" + live.id + other.bearer.substr(16), 50, "not valid");
  expect_401("Bearer " + other.bearer, 50, "not valid");
}

}  // namespace
}  // namespace allot::auth_token_test
