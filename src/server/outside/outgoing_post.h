#pragma once
// One POST of a JSON body from the server to an outside endpoint, made the one way the server makes them (webhook
// deliveries, webhook_sender.h; HTTP admission checks, admission_checker.h): http or https (the certificate verified
// against the system's CAs), redirects never followed (a redirect could point anywhere: the SSRF rule,
// webhook_rules.h), connect, read and write timeouts, no keep-alive. Blocks the calling thread for at most about
// connect_timeout + 2 * timeout; never call it on the writer's thread.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "server/outside/webhook_rules.h"

namespace allot::server {

struct OutgoingPost {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // JSON
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds timeout{10000};
};
struct OutgoingAnswer {
  int status = 0;     // the HTTP status; 0 when no answer came (`error` says why)
  std::string body;   // the answer's body (up to what the endpoint sent)
  std::string error;  // empty when an answer came
};
OutgoingAnswer post_outgoing(const WebhookUrl& url, const OutgoingPost& post);

}  // namespace allot::server
