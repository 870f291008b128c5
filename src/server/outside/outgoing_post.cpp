#include "server/outside/outgoing_post.h"

#include <httplib.h>

namespace allot::server {

OutgoingAnswer post_outgoing(const WebhookUrl& url, const OutgoingPost& post) {
  OutgoingAnswer out;
  const std::string base = std::string(url.https ? "https://" : "http://") +
                           (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" +
                           std::to_string(url.port);
  httplib::Client client(base);
  if (!client.is_valid()) {
    out.error = "cannot make a client for " + base;
    return out;
  }
  if (url.https) client.enable_server_certificate_verification(true);
  client.set_follow_location(false);
  client.set_connection_timeout(post.connect_timeout);
  client.set_read_timeout(post.timeout);
  client.set_write_timeout(post.timeout);
  client.set_keep_alive(false);
  httplib::Headers headers;
  for (const auto& [k, v] : post.headers) headers.emplace(k, v);
  auto res = client.Post(url.target, headers, post.body, "application/json");
  if (!res) {
    out.error = "no answer from " + url.host + ":" + std::to_string(url.port) + ": " + httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  out.body = std::move(res->body);
  return out;
}

}  // namespace allot::server
