#include "server/outside/webhook_rules.h"

#include <algorithm>
#include <cctype>

#include "core/model/ascii_text.h"
#include "core/model/overloaded.h"
#include "server/writer/server_state.h"

namespace allot::server {
namespace {

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.'; }

Error bad_url(std::string_view url, const std::string& why) {
  return Error::invalid("webhook: url " + std::string(url.substr(0, 200)) + ": " + why +
                        " (allowed: http://HOST[:PORT]/PATH or https://HOST[:PORT]/PATH)");
}

}  // namespace

Result<WebhookUrl> parse_webhook_url(std::string_view url) {
  if (url.size() > 2048) return Error::invalid("webhook: url is longer than 2048 characters");
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      return bad_url(url, "it holds a space, a control character or a character beyond ASCII (percent-encode it)");
  WebhookUrl out;
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) {
    out.https = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return bad_url(url, "only http and https are allowed");
  }
  const size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (target.find('#') != std::string_view::npos) return bad_url(url, "a fragment (#...) is not sent to a server");
  if (authority.find('@') != std::string_view::npos)
    return bad_url(url, "a user name or password in the URL would be shown in listings; the signature authenticates the server");
  std::string_view host = authority, port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad_url(url, "an IPv6 address in [ ] has no ]");
    host = authority.substr(1, close - 1);
    if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; }))
      return bad_url(url, "not an IPv6 address in [ ]");
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad_url(url, "only :PORT may follow an IPv6 address");
    if (!after.empty()) port = after.substr(1), has_port = true;
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      has_port = true;
    }
    if (host.empty() || host.size() > 253 || !std::all_of(host.begin(), host.end(), host_char))
      return bad_url(url, "the host must be a DNS name or an IP address");
  }
  out.host = ascii_lower(host);
  out.port = out.https ? 443 : 80;
  if (has_port) {
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535)
      return bad_url(url, "the port must be a number 1..65535");
    out.port = std::stoi(std::string(port));
  }
  out.target = target.empty() ? "/" : std::string(target);
  if (out.target.front() == '?') out.target = "/" + out.target;
  return out;
}

bool host_allowed(std::string_view host_in, const std::vector<std::string>& allowed) {
  const std::string host = ascii_lower(host_in);
  for (const auto& pattern_in : allowed) {
    const std::string pattern = ascii_lower(pattern_in);
    if (pattern.rfind("*.", 0) == 0) {
      const std::string suffix = pattern.substr(1);  // ".example.com"
      if (host.size() > suffix.size() && host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0) return true;
    } else if (host == pattern) {
      return true;
    }
  }
  return false;
}

Status check_host_patterns(const std::vector<std::string>& allowed) {
  for (const auto& p : allowed) {
    std::string_view name = p;
    if (name.rfind("*.", 0) == 0) name.remove_prefix(2);
    const bool ipv6 = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':'; }) &&
                      name.find(':') != std::string_view::npos;
    if (name.empty() || name.size() > 253 || (!ipv6 && !std::all_of(name.begin(), name.end(), host_char)))
      return Error::invalid("--webhook-hosts: '" + p + "' is not a host name, an IP address or *.DOMAIN");
  }
  return ok_status();
}

std::optional<store::NoticeKind> notice_of_consequence(JobState now) {
  switch (now) {
    case JobState::kFailed: return store::NoticeKind::kJobFailed;
    case JobState::kSucceeded: return store::NoticeKind::kJobSucceeded;
    case JobState::kCancelled: return store::NoticeKind::kJobCancelled;
    case JobState::kPending:
    case JobState::kSuspended: return store::NoticeKind::kJobRequeued;
    case JobState::kRunning: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<store::NoticeKind> notice_of(const store::Op& op, const ClusterState& after) {
  using namespace store;
  using N = std::optional<NoticeKind>;
  // A record that ends or stops a run: what it did is the job's state now.
  auto by_state = [&](const std::string& job) -> N {
    const Job* j = after.find_job(job);
    return j ? notice_of_consequence(j->state) : std::nullopt;
  };
  // No catch-all: a new kind of record does not compile until it says which notice, if any, its event is.
  return std::visit(
      Overloaded{
          [](const Admit&) -> N { return NoticeKind::kJobStarted; },
          [](const Preempt&) -> N { return NoticeKind::kJobPreempted; },
          [&](const Finish& o) -> N { return by_state(o.job); },
          [&](const Cancel& o) -> N { return by_state(o.job); },
          [&](const TimeLimitExceeded& o) -> N { return by_state(o.job); },
          // A rule on the job's output restarted it (requeued) or failed it without a retry.
          [&](const LogRuleFired& o) -> N { return by_state(o.job); },
          // Cancelled: its dependency can never hold (core/model/dependency.h).
          [&](const DependencyNeverHolds& o) -> N { return by_state(o.job); },
          [&](const Requeue& o) -> N { return by_state(o.job); },
          // Its copy ended in a worker cluster: the job ended here the same way. A dispatch, a copy admitted there
          // (the job stays Pending here), lost or withdrawn is no notice.
          [&](const RemoteCopyStep& o) -> N {
            return o.step == RemoteStep::kSucceeded || o.step == RemoteStep::kFailed ? by_state(o.job) : N{};
          },
          [&](const StartTimeout& o) -> N { return by_state(o.job); },
          // The fallback restarts the job (requeued) or fails it with no retries left.
          [&](const InPlaceFallback& o) -> N { return by_state(o.job); },
          // The job keeps running; its event (recover_in_place) is in the stream, and no notice kind is about it.
          [](const RecoverInPlace&) -> N { return {}; },
          [](const NodeHealthChange& o) -> N {
            if (!o.replaces.empty()) return NoticeKind::kNodeReplaced;
            return o.health == NodeHealth::kSchedulable ? N{} : N{NoticeKind::kNodeUnhealthy};
          },
          [](const SetPolicy&) -> N { return {}; }, [](const UpsertTeam&) -> N { return {}; },
          [](const RemoveTeam&) -> N { return {}; }, [](const AddNode&) -> N { return {}; },
          [](const RemoveNode&) -> N { return {}; }, [](const Cordon&) -> N { return {}; },
          [](const Drain&) -> N { return {}; }, [](const Submit&) -> N { return {}; },
          [](const Resize&) -> N { return {}; }, [](const CreateToken&) -> N { return {}; },
          [](const RevokeToken&) -> N { return {}; }, [](const Audit&) -> N { return {}; },
          [](const HoldJob&) -> N { return {}; }, [](const SetJobPriority&) -> N { return {}; },
          [](const DeleteJob&) -> N { return {}; }, [](const CreatePlan&) -> N { return {}; },
          [](const PlanStepRecord&) -> N { return {}; }, [](const DeletePlan&) -> N { return {}; },
          [](const CreateReservation&) -> N { return {}; }, [](const ReservationStepRecord&) -> N { return {}; },
          [](const DeleteReservation&) -> N { return {}; },
          [](const CompactFinished&) -> N { return {}; }, [](const LocalityWaitBegan&) -> N { return {}; },
          [](const CreateWebhook&) -> N { return {}; }, [](const DeleteWebhook&) -> N { return {}; },
          [](const SetNetworkLayers&) -> N { return {}; },
          [](const PutAdmissionCheck&) -> N { return {}; }, [](const DeleteAdmissionCheck&) -> N { return {}; },
          // A retry requeues the job, a reject fails it; a ready changes no state.
          [&](const AdmissionCheckAnswered& o) -> N {
            return o.answer == CheckAnswer::kReady ? N{} : by_state(o.job);
          },
      },
      op);
}

bool webhook_wants(const store::WebhookRecord& webhook, const Event& event) {
  if (!event.notice) return false;
  if (std::find(webhook.events.begin(), webhook.events.end(), *event.notice) == webhook.events.end()) return false;
  if (webhook.team.empty()) return true;
  return store::is_job_notice(*event.notice) && event.team == webhook.team;
}

std::chrono::milliseconds retry_delay(int failed, std::chrono::milliseconds base, std::chrono::milliseconds cap) {
  std::chrono::milliseconds d = base;
  for (int i = 1; i < failed && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

}  // namespace allot::server
