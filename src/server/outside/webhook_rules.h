#pragma once
// The rules of webhooks (docs/api.md, "Webhooks"; docs/security.md, "Webhooks"), apart from the threads that
// deliver them (webhook_sender.h): which URLs a webhook may have and who may point one where, which event is
// which notice kind, which webhook gets which event, and how long a failed delivery waits before its next try.
// No I/O, no clock.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "core/model/state.h"
#include "store/notice_kind.h"
#include "store/record.h"

namespace allot::server {

struct Event;

// A webhook's URL, taken apart: http or https, a host (a DNS name or an IP literal, IPv6 in brackets), a port,
// and the path with its query. No user name or password (a list would show them), no fragment.
struct WebhookUrl {
  bool https = false;
  std::string host;  // lower case; an IPv6 literal without its brackets
  int port = 0;      // 80 or 443 when the URL names none
  std::string target = "/";  // path and query, sent as the request target
};
[[nodiscard]] Result<WebhookUrl> parse_webhook_url(std::string_view url);

// The SSRF rule. An admin's webhook may point anywhere (an admin can reach the server's network anyway). A
// member's team webhook may point only at a host the server's operator listed with `allot server
// --webhook-hosts` (exact names or IP literals, or `*.example.com` for the names under example.com), so that a
// member cannot make the server POST to its own loopback, the cloud's metadata address or another internal
// service. Redirects are never followed.
[[nodiscard]] bool host_allowed(std::string_view host, const std::vector<std::string>& allowed);
// Each entry of --webhook-hosts checked: an error naming the bad one.
[[nodiscard]] Status check_host_patterns(const std::vector<std::string>& allowed);

// The notice kind of the event a record makes, given the cluster after it (the job's new state); nullopt for
// records no webhook can ask for.
std::optional<store::NoticeKind> notice_of(const store::Op& op, const ClusterState& after);
// The notice kind of a job's state changed as a consequence of a record about something else (a node failed
// or left, a plan ended): the "job" events.
std::optional<store::NoticeKind> notice_of_consequence(JobState now);

// Whether `webhook` gets `event`: it asked for the event's kind, and a team's webhook only its own team's jobs.
bool webhook_wants(const store::WebhookRecord& webhook, const Event& event);

// How long the delivery waits after its `failed`-th failed try (1, 2, ...) before the next: `base` doubled
// each time, at most `cap`:  delay(n) = min(base * 2^(n-1), cap).
std::chrono::milliseconds retry_delay(int failed, std::chrono::milliseconds base, std::chrono::milliseconds cap);

}  // namespace allot::server
