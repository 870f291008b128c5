// Webhooks' pure parts: the signature (HMAC-SHA256 against RFC 4231's vectors), the retry schedule, URLs and
// the SSRF rule, which notice each record's event is, and which webhook gets which event.
#include <gtest/gtest.h>

#include "auth/webhook_signature.h"
#include "server/writer/server_state.h"
#include "server/outside/webhook_rules.h"

namespace allot::server::webhook_rules_test {
namespace {

using std::chrono::milliseconds;
using store::NoticeKind;

TEST(WebhookSignature, MatchesRfc4231TestVectors) {
  // RFC 4231, test case 2: key "Jefe".
  EXPECT_EQ(auth::hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 1: key 0x0b x 20, "Hi There".
  EXPECT_EQ(auth::hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(auth::webhook_signature("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(WebhookSignature, SecretsAndIdsAreFreshHex) {
  const std::string a = auth::new_webhook_secret(), b = auth::new_webhook_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(auth::new_webhook_id().size(), 10u);
  EXPECT_EQ(auth::new_delivery_id().size(), 32u);
}

TEST(WebhookRetry, DoublesFromTheBaseUpToTheCap) {
  const milliseconds base{1000}, cap{300000};
  std::vector<int64_t> got;
  for (int n = 1; n <= 11; ++n) got.push_back(retry_delay(n, base, cap).count());
  EXPECT_EQ(got, (std::vector<int64_t>{1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000, 300000}));
  EXPECT_EQ(retry_delay(1000, base, cap).count(), 300000);  // no overflow however many tries
  EXPECT_EQ(retry_delay(3, milliseconds(50), milliseconds(120)).count(), 120);
}

TEST(WebhookUrl, TakesHttpAndHttpsApart) {
  auto u = parse_webhook_url("https://Hooks.Example.com/allot?x=1");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_TRUE(u->https);
  EXPECT_EQ(u->host, "hooks.example.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/allot?x=1");
  u = parse_webhook_url("http://127.0.0.1:8080");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->target, "/");
  u = parse_webhook_url("http://[::1]:9000/h");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9000);
}

TEST(WebhookUrl, RefusesOtherSchemesCredentialsAndJunk) {
  for (const char* bad : {"ftp://example.com/x", "file:///etc/passwd", "gopher://x", "example.com/x", "http://",
                          "http://user:pw@example.com/", "http://example.com:0/", "http://example.com:70000/",
                          "http://example.com:x/", "http://exa mple.com/", "http://example.com/#frag", "http://[::1/",
                          "http://ex_ample.com/"}) {
    auto u = parse_webhook_url(bad);
    EXPECT_FALSE(u.ok()) << bad;
    if (!u.ok()) EXPECT_NE(u.error().message.find("webhook: url"), std::string::npos) << u.error().message;
  }
  auto u = parse_webhook_url("ftp://example.com/x");
  EXPECT_NE(u.error().message.find("only http and https"), std::string::npos);
}

TEST(WebhookHosts, ExactNamesAndSubdomainPatterns) {
  const std::vector<std::string> allowed = {"hooks.example.com", "*.corp.example", "10.0.0.5"};
  EXPECT_TRUE(host_allowed("hooks.example.com", allowed));
  EXPECT_TRUE(host_allowed("HOOKS.example.com", allowed));
  EXPECT_TRUE(host_allowed("ci.corp.example", allowed));
  EXPECT_TRUE(host_allowed("10.0.0.5", allowed));
  EXPECT_FALSE(host_allowed("corp.example", allowed));  // *.DOMAIN: names under it, not itself
  EXPECT_FALSE(host_allowed("evilcorp.example", allowed));
  EXPECT_FALSE(host_allowed("127.0.0.1", allowed));
  EXPECT_FALSE(host_allowed("169.254.169.254", allowed));
  EXPECT_FALSE(host_allowed("hooks.example.com", {}));
  EXPECT_TRUE(check_host_patterns(allowed).ok());
  EXPECT_FALSE(check_host_patterns({"http://x"}).ok());
  EXPECT_FALSE(check_host_patterns({""}).ok());
}

Event event(std::optional<NoticeKind> notice, std::string team) {
  Event e;
  e.seq = 7;
  e.kind = "finish";
  e.job = team.empty() ? "" : team + "-1";
  e.team = std::move(team);
  e.notice = notice;
  return e;
}

TEST(WebhookScope, ATeamsWebhookGetsOnlyItsTeamsJobEvents) {
  const store::WebhookRecord cluster{"c", "", "http://h/", {NoticeKind::kJobFailed, NoticeKind::kNodeUnhealthy}, "s", ""};
  const store::WebhookRecord team_a{"a", "a", "http://h/", {NoticeKind::kJobFailed}, "s", ""};
  EXPECT_TRUE(webhook_wants(cluster, event(NoticeKind::kJobFailed, "a")));
  EXPECT_TRUE(webhook_wants(cluster, event(NoticeKind::kJobFailed, "b")));
  EXPECT_TRUE(webhook_wants(cluster, event(NoticeKind::kNodeUnhealthy, "")));
  EXPECT_FALSE(webhook_wants(cluster, event(NoticeKind::kJobSucceeded, "a")));  // not asked for
  EXPECT_FALSE(webhook_wants(cluster, event(std::nullopt, "a")));
  EXPECT_TRUE(webhook_wants(team_a, event(NoticeKind::kJobFailed, "a")));
  EXPECT_FALSE(webhook_wants(team_a, event(NoticeKind::kJobFailed, "b")));
  EXPECT_FALSE(webhook_wants(team_a, event(NoticeKind::kJobFailed, "")));
}

TEST(WebhookNotices, EachRecordsEventIsItsKind) {
  ClusterState empty;
  using namespace store;
  EXPECT_EQ(notice_of(Admit{"j"}, empty), NoticeKind::kJobStarted);
  EXPECT_EQ(notice_of(Preempt{"j", "p", "r"}, empty), NoticeKind::kJobPreempted);
  EXPECT_EQ(notice_of(NodeHealthChange{"n", NodeHealth::kUnschedulable, HealthCause::kAdmin}, empty), NoticeKind::kNodeUnhealthy);
  EXPECT_EQ(notice_of(NodeHealthChange{"n", NodeHealth::kSchedulable, HealthCause::kAgent}, empty), std::nullopt);
  EXPECT_EQ(notice_of(NodeHealthChange{"n2", NodeHealth::kUnschedulable, HealthCause::kDeepCheck, "", "r", "n1"}, empty),
            NoticeKind::kNodeReplaced);
  EXPECT_EQ(notice_of(Submit{}, empty), std::nullopt);
  EXPECT_EQ(notice_of(CreateWebhook{}, empty), std::nullopt);
  EXPECT_EQ(notice_of(Finish{"gone", false, "x"}, empty), std::nullopt);  // no such job: nothing to say
  EXPECT_EQ(notice_of_consequence(JobState::kFailed), NoticeKind::kJobFailed);
  EXPECT_EQ(notice_of_consequence(JobState::kSuspended), NoticeKind::kJobRequeued);
  EXPECT_EQ(notice_of_consequence(JobState::kPending), NoticeKind::kJobRequeued);
  EXPECT_EQ(notice_of_consequence(JobState::kRunning), std::nullopt);
}

TEST(WebhookNotices, KindNamesRoundTripAndTeamsTakeJobKindsOnly) {
  for (NoticeKind k : store::kAllNoticeKinds) EXPECT_EQ(store::parse_notice_kind(store::notice_kind_name(k)), k);
  EXPECT_EQ(store::parse_notice_kind("job.exploded"), std::nullopt);
  EXPECT_TRUE(store::is_job_notice(NoticeKind::kJobRequeued));
  EXPECT_FALSE(store::is_job_notice(NoticeKind::kNodeReplaced));
}

}  // namespace
}  // namespace allot::server::webhook_rules_test
