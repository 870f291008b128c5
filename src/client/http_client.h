#pragma once
// A blocking JSON client for allot's /v1 API (docs/api.md). Every failure comes back as an Error whose code
// says who is at fault: the server's own error code for a 4xx answer (the request was wrong: exit 2), and
// kInternal for a 5xx answer or a server that cannot be reached (exit 3). Messages name the server's URL when
// the connection fails, so a user sees at once which address was tried. A server certificate that does not
// verify is kFailedPrecondition (exit 2): retrying will not help, the user has to pass the right CA.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/model/result.h"

namespace allot::client {

inline constexpr const char* kDefaultServer = "http://127.0.0.1:7070";

// --server, else $ALLOT_SERVER, else http://127.0.0.1:7070.
std::string resolve_server_url(const std::string& flag);
// --ca, else $ALLOT_CA, else "" (the system's CA certificates).
std::string resolve_ca_file(const std::string& flag);

// The exit code of the command-line contract for an error: 2 for what the user can fix in the request, 3 for
// a server or transport failure.
int exit_code_for(const Error& e);

// "a b/c" -> "a%20b%2Fc": for names and query values put into a URL.
std::string url_encode(std::string_view s);
// "/v1/jobs" + {{"team","a"}} -> "/v1/jobs?team=a"; empty values are left out.
std::string with_query(std::string path, const std::map<std::string, std::string>& query);

struct Response {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // the Retry-After header (seconds), "" when absent
};

struct ConnectOptions {
  // PEM certificates of the CAs an https:// server's certificate must chain to; empty: the system's CA
  // store. Only for https:// URLs: an http:// URL with a CA file is refused, since nothing would be verified.
  std::string ca_file;
  // When not empty, every request carries `Authorization: Bearer <token>`.
  std::string token;
};

class ApiClient {
 public:
  // `url` is "http://host:port" or "https://host:port"; rejects anything else. For https the server's
  // certificate must chain to a trusted CA and name the URL's host (subjectAltName DNS or IP entry).
  // Nothing is sent until the first request, so connect() itself only checks the URL and the CA file.
  // Several servers (active/standby on one PostgreSQL, docs/deployment.md) are given as "URL1,URL2": a request
  // goes to the last server that answered; a server that cannot be connected to is passed over for the next,
  // and a standby's redirect (307) is followed to the leader when the leader is one of the listed URLs (a
  // redirect elsewhere is an error: the token is only ever sent to servers the caller named).
  static Result<ApiClient> connect(const std::string& url, const ConnectOptions& options = {});
  ~ApiClient();
  ApiClient(ApiClient&&) noexcept;
  ApiClient& operator=(ApiClient&&) noexcept;

  // The server the last request went to.
  const std::string& url() const { return url_; }
  // The bearer token of the requests that follow (an agent swaps its join token for its node credential).
  void set_token(const std::string& token);
  // Read timeout for the requests that follow; long polls raise it above their wait. The connect (3 s) and
  // write (30 s) timeouts are lowered to it when it is shorter.
  void set_timeout(std::chrono::milliseconds t);

  // From another thread: ends the request in progress (it fails with a transport error). A long poll uses it to
  // let its owner stop without waiting for the poll's timeout.
  void cancel();

  Result<nlohmann::json> get(const std::string& path);
  Result<nlohmann::json> post(const std::string& path, const nlohmann::json& body = nlohmann::json::object());
  Result<nlohmann::json> put(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> del(const std::string& path);  // 204 gives null
  Result<std::string> get_text(const std::string& path);

  // The raw exchange, for callers that need the status (the agent re-registers on 404).
  Result<Response> send(const std::string& method, const std::string& path, const std::string* json_body);

 private:
  struct Impl;
  explicit ApiClient(std::unique_ptr<Impl> impl, std::string url);
  Result<nlohmann::json> json_call(const std::string& method, const std::string& path, const nlohmann::json* body);

  std::unique_ptr<Impl> impl_;
  std::string url_;
};

// Every page of a paged listing (GET /v1/jobs, docs/api.md) as one list: asks for `path` with `query`, then
// again with each answer's `continue` token until an answer has none. A server from before paging answers
// with a plain list, which is returned as it is.
Result<nlohmann::json> get_all_pages(ApiClient& api, const std::string& path, std::map<std::string, std::string> query);

// The Error for a non-2xx answer: the server's {"error": {"code", "message"}} when it sent one.
Error error_from_response(const Response& r);

}  // namespace allot::client
