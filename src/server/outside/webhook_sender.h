#pragma once
// Webhook deliveries (docs/api.md, "Webhooks"; docs/architecture.md, "Threads"). The writer never waits for a
// receiver: it only hands this class the webhook table after a durable batch that changed it (set_table, a
// pointer swap). A reader thread follows the event stream (event_log.h) like any /v1/events client, from the
// event last published when it started, and turns each event a webhook wants (webhook_rules.h, webhook_wants)
// into a delivery in a bounded queue. Sender threads POST the deliveries, signed (auth/webhook_signature.h),
// with connect, read and write timeouts, so a slow receiver holds one sender for at most those; a failed try
// waits retry_delay() and goes again, up to max_attempts. When the queue is full the oldest waiting delivery
// is dropped and counted. Only a leading server delivers (a standby reads and skips).
//
// What a crash loses: the queue (deliveries not yet made, and retries waiting). Events journaled while no
// server runs do not exist; a restarted server delivers the events that happen after its start.
//
// Thread-safety: every public member may be called from any thread.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/writer/event_log.h"
#include "server/options.h"
#include "server/writer/server_state.h"
#include "common/thread_annotations.h"

namespace allot::server {

class WebhookSender {
 public:
  WebhookSender(WebhookOptions options, EventLog& events, std::function<bool()> leading, Clock clock);
  ~WebhookSender();
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  // The webhooks as of the last durable batch that changed them (Writer::set_on_webhooks).
  void set_table(std::shared_ptr<const WebhookTable> table);
  // Starts the reader (from the event last published now) and the senders.
  void start();
  // Stops them; deliveries still queued are dropped (not counted: the server is stopping).
  void stop();

  struct Counters {
    uint64_t delivered = 0;  // answered 2xx
    uint64_t failed = 0;     // every try failed (max_attempts)
    uint64_t dropped = 0;    // dropped from a full queue
    uint64_t retries = 0;    // tries after a first
    uint64_t queued = 0;     // waiting now (new and retrying)
  };
  Counters counters() const;

  // What a webhook's last try gave, and its totals since this server started (GET /v1/webhooks).
  struct LastDelivery {
    int64_t at_ms = 0;  // wall clock
    std::string event;  // its notice kind
    uint64_t seq = 0;   // the event's number
    int attempt = 0;    // 1 for a first try
    int status = 0;     // the HTTP status; 0 when no answer came (the error says why)
    std::string error;
    uint64_t delivered = 0, failed = 0;
  };
  std::map<std::string, LastDelivery> last_deliveries() const;

 private:
  struct Delivery {
    std::string id;       // X-Allot-Delivery: the same on every try
    std::string webhook;  // its id
    Event event;
    int attempt = 0;      // tries made so far
  };
  using SteadyTime = std::chrono::steady_clock::time_point;

  void read_loop();
  void send_loop();
  // Queues `d` to be sent at `due`; when the queue is full, first drops the delivery of the oldest event (the
  // smallest seq: a receiver that keeps failing holds those). REQUIRES: mu_ held.
  void enqueue(Delivery d, SteadyTime due) REQUIRES(mu_);
  // One try: the HTTP status, or 0 and `error`.
  int post(const store::WebhookRecord& webhook, const Delivery& d, std::string& error);

  const WebhookOptions options_;
  EventLog& events_;
  const std::function<bool()> leading_;
  const Clock clock_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const WebhookTable> table_ GUARDED_BY(mu_);
  // Waiting deliveries by due time; among equal times, the order they were queued (multimap keeps it).
  std::multimap<SteadyTime, Delivery> queue_ GUARDED_BY(mu_);
  std::map<std::string, LastDelivery> last_ GUARDED_BY(mu_);
  Counters counters_ GUARDED_BY(mu_);  // queued: queue_.size()
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread reader_;
  std::vector<std::thread> senders_;
};

}  // namespace allot::server
