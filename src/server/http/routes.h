#pragma once
// The route table the API's route groups fill in (api.h). It exists for the request body limit:
// cpp-httplib 0.11.4 applies set_payload_max_length only to a body with a Content-Length, and reads a
// chunked body (Transfer-Encoding: chunked), or a body with no length at all, to its end into memory, so a
// 20 MB chunked job went through to the journal. Handlers of methods that carry a body (POST, PUT, DELETE)
// are therefore registered as cpp-httplib content-reader handlers, which run before anything of the body is
// read; the body is read here, at most max_body_bytes of it whatever its framing, and the handler then finds
// it in Request::body as before. A body over the limit gets 413 with a JSON error.
#include <httplib.h>

#include <string>

namespace allot::server {

class Routes {
 public:
  using Handler = httplib::Server::Handler;
  Routes(httplib::Server& http, size_t max_body_bytes) : http_(http), max_body_(max_body_bytes) {}

  Routes& Get(const std::string& pattern, Handler h);
  Routes& Post(const std::string& pattern, Handler h);
  Routes& Put(const std::string& pattern, Handler h);
  Routes& Delete(const std::string& pattern, Handler h);

  // Requests with a body to a path no route takes: 404 (413 when the body is too large), read with the same
  // limit. Call once, after every route has been added: of the routes that match a request, the first one
  // added takes it.
  void add_fallbacks();

 private:
  httplib::Server::HandlerWithContentReader with_body(Handler h) const;

  httplib::Server& http_;
  const size_t max_body_;
};

}  // namespace allot::server
