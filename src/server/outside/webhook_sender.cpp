#include "server/outside/webhook_sender.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "auth/webhook_signature.h"
#include "server/outside/outgoing_post.h"
#include "server/version.h"
#include "server/outside/webhook_rules.h"
#include "view/job_refs.h"
#include "view/times.h"

namespace allot::server {

WebhookSender::WebhookSender(WebhookOptions options, EventLog& events, std::function<bool()> leading, Clock clock)
    : options_(std::move(options)), events_(events), leading_(std::move(leading)), clock_(std::move(clock)) {}

WebhookSender::~WebhookSender() { stop(); }

void WebhookSender::set_table(std::shared_ptr<const WebhookTable> table) {
  MutexLock lock(mu_);
  table_ = std::move(table);
}

void WebhookSender::start() {
  const uint64_t from = events_.last();
  reader_ = std::thread([this, from] {
    uint64_t since = from;
    for (;;) {
      {
        MutexLock lock(mu_);
        if (stopping_) return;
      }
      auto page = events_.read(since, std::chrono::milliseconds(500));
      if (page.truncated) spdlog::warn("webhooks: events after {} left the event log before they were read; they are not delivered", since);
      since = page.next;
      if (page.events.empty() || !leading_()) continue;
      MutexLock lock(mu_);
      if (!table_ || table_->empty()) continue;
      const auto now = std::chrono::steady_clock::now();
      for (const Event& e : page.events) {
        if (!e.notice) continue;
        for (const auto& [id, w] : *table_)
          if (webhook_wants(w.webhook, e)) enqueue(Delivery{auth::new_delivery_id(), id, e, 0}, now);
      }
      cv_.notify_all();
    }
  });
  for (int i = 0; i < std::max(1, options_.senders); ++i) senders_.emplace_back([this] { send_loop(); });
}

void WebhookSender::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (reader_.joinable()) reader_.join();
  for (auto& t : senders_)
    if (t.joinable()) t.join();
  senders_.clear();
}

void WebhookSender::enqueue(Delivery d, SteadyTime due) {
  if (options_.queue == 0) {
    ++counters_.dropped;
    return;
  }
  if (queue_.size() >= options_.queue) {
    auto oldest = std::min_element(queue_.begin(), queue_.end(),
                                   [](const auto& a, const auto& b) { return a.second.event.seq < b.second.event.seq; });
    queue_.erase(oldest);
    ++counters_.dropped;
  }
  queue_.emplace(due, std::move(d));
}

void WebhookSender::send_loop() {
  MutexLock lock(mu_);
  for (;;) {
    if (stopping_) return;
    if (queue_.empty()) {
      cv_.wait(lock.native());
      continue;
    }
    const auto due = queue_.begin()->first;
    if (due > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock.native(), due);
      continue;
    }
    Delivery d = std::move(queue_.begin()->second);
    queue_.erase(queue_.begin());
    // The webhook as it is now: deleted since the event was queued, the delivery goes.
    const std::shared_ptr<const WebhookTable> table = table_;
    auto it = table ? table->find(d.webhook) : WebhookTable::const_iterator{};
    if (!table || it == table->end()) continue;
    const store::WebhookRecord webhook = it->second.webhook;
    lock.unlock();
    ++d.attempt;
    std::string error;
    const int status = post(webhook, d, error);
    const bool ok = status >= 200 && status < 300;
    if (!ok && error.empty()) error = "the receiver answered " + std::to_string(status);
    lock.lock();
    LastDelivery& last = last_[d.webhook];
    last.at_ms = clock_();
    last.event = store::notice_kind_name(*d.event.notice);
    last.seq = d.event.seq;
    last.attempt = d.attempt;
    last.status = status;
    last.error = ok ? "" : error;
    if (d.attempt > 1) ++counters_.retries;
    if (ok) {
      ++counters_.delivered;
      ++last.delivered;
    } else if (d.attempt >= options_.max_attempts) {
      ++counters_.failed;
      ++last.failed;
      spdlog::warn("webhook {}: delivery {} of event {} failed after {} tries: {}", d.webhook, d.id, d.event.seq, d.attempt, error);
    } else {
      const auto due_next = std::chrono::steady_clock::now() + retry_delay(d.attempt, options_.backoff, options_.backoff_max);
      enqueue(std::move(d), due_next);
    }
  }
}

int WebhookSender::post(const store::WebhookRecord& webhook, const Delivery& d, std::string& error) {
  auto url = parse_webhook_url(webhook.url);
  if (!url) {
    error = url.error().message;
    return 0;
  }
  const int64_t now_ms = clock_();
  const Event& e = d.event;
  // A team's webhook reads what a member of the team reads: other teams' jobs unnamed in reason texts.
  view::SeesTeamJobs sees;
  if (!webhook.team.empty()) sees = [team = webhook.team](const std::string& t) { return t == team; };
  nlohmann::json body = {{"delivery", d.id},
                         {"webhook", webhook.id},
                         {"event", store::notice_kind_name(*e.notice)},
                         {"seq", e.seq},
                         {"at", view::rfc3339(e.at)},
                         {"timestamp", now_ms / 1000},
                         {"sent_at", view::rfc3339_ms(now_ms)},
                         {"attempt", d.attempt},
                         {"kind", e.kind},
                         {"message", view::hide_job_refs(e.message, sees)}};
  if (!e.job.empty()) body["job"] = e.job;
  if (!e.team.empty()) body["team"] = e.team;
  if (!e.node.empty()) body["node"] = e.node;
  const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  OutgoingPost post{{{"User-Agent", std::string("allot-webhook/") + kVersion},
                     {"X-Allot-Webhook", webhook.id},
                     {"X-Allot-Delivery", d.id},
                     {"X-Allot-Event", store::notice_kind_name(*e.notice)},
                     {"X-Allot-Timestamp", std::to_string(now_ms / 1000)},
                     {"X-Allot-Signature", auth::webhook_signature(webhook.secret, text)}},
                    text, options_.connect_timeout, options_.timeout};
  OutgoingAnswer answer = post_outgoing(*url, post);
  error = std::move(answer.error);
  return answer.status;
}

WebhookSender::Counters WebhookSender::counters() const {
  MutexLock lock(mu_);
  Counters c = counters_;
  c.queued = queue_.size();
  return c;
}

std::map<std::string, WebhookSender::LastDelivery> WebhookSender::last_deliveries() const {
  MutexLock lock(mu_);
  return last_;
}

}  // namespace allot::server
