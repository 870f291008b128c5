#include "client/http_client.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <httplib.h>

namespace allot::client {
namespace {

ErrorCode code_from_name(const std::string& name, int status) {
  if (name == "InvalidArgument") return ErrorCode::kInvalidArgument;
  if (name == "NotFound") return ErrorCode::kNotFound;
  if (name == "AlreadyExists") return ErrorCode::kAlreadyExists;
  if (name == "FailedPrecondition") return ErrorCode::kFailedPrecondition;
  if (name == "Internal") return ErrorCode::kInternal;
  if (name == "Unauthenticated" || status == 401) return ErrorCode::kUnauthenticated;
  if (name == "PermissionDenied" || status == 403) return ErrorCode::kPermissionDenied;
  if (status == 404) return ErrorCode::kNotFound;
  if (status == 409) return ErrorCode::kFailedPrecondition;
  return status >= 500 ? ErrorCode::kInternal : ErrorCode::kInvalidArgument;
}

// Refuses a CA file that cannot be read or holds no PEM certificate now, with its name, rather than at the
// first request as cpp-httplib's "SSLLoadingCerts".
Status check_ca_file(const std::string& path) {
  if (!std::ifstream(path)) return Error::invalid("cannot read the CA file " + path + ": " + std::strerror(errno));
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(path.c_str(), "r"), BIO_free);
  X509* cert = bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (cert == nullptr) return Error::invalid("the CA file " + path + " holds no PEM certificate");
  X509_free(cert);
  return ok_status();
}

// The host of an https:// URL ("https://[::1]:7070/x" -> "::1").
std::string url_host(const std::string& url) {
  std::string rest = url.substr(url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.find(':'));
}

// The server's name is checked against the certificate's subjectAltName only (RFC 6125, 6.4.4): cpp-httplib
// 0.11.4 falls back to the subject's Common Name when no subjectAltName matches, so a certificate made for
// another purpose whose CN happens to read the host would pass. OpenSSL checks the name during the chain's
// verification, with the subject never consulted; cpp-httplib's own check then runs on a certificate that has
// already passed this one.
Status check_names_by_subject_alt_name(httplib::Client& http, const std::string& url) {
  SSL_CTX* ctx = http.ssl_context();
  if (ctx == nullptr) return Error::internal("no TLS context for " + url);
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
  const std::string host = url_host(url);
  // An address is matched against the IP entries of the subjectAltName, a name against its DNS entries.
  const bool ok = X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1 ||
                  X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1;
  if (!ok) return Error::invalid("server URL \"" + url + "\": cannot check a certificate against the host " + host);
  return ok_status();
}

}  // namespace

std::string resolve_ca_file(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ALLOT_CA"); env && *env) return env;
  return "";
}

std::string resolve_server_url(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ALLOT_SERVER"); env && *env) return env;
  return kDefaultServer;
}

int exit_code_for(const Error& e) { return e.code == ErrorCode::kInternal ? 3 : 2; }

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string with_query(std::string path, const std::map<std::string, std::string>& query) {
  char sep = '?';
  for (const auto& [k, v] : query) {
    if (v.empty()) continue;
    path += sep + url_encode(k) + "=" + url_encode(v);
    sep = '&';
  }
  return path;
}

Result<nlohmann::json> get_all_pages(ApiClient& api, const std::string& path, std::map<std::string, std::string> query) {
  nlohmann::json items = nlohmann::json::array();
  for (;;) {
    auto page = api.get(with_query(path, query));
    if (!page) return page.error();
    if (page->is_array()) return page;
    if (!page->is_object() || !(*page)["items"].is_array())
      return Error::internal("GET " + path + " answered neither a list nor a page {\"items\": [...]}");
    for (auto& item : (*page)["items"]) items.push_back(std::move(item));
    const std::string next = page->value("continue", "");
    if (next.empty()) return items;
    if (next == query["continue"]) return Error::internal("GET " + path + " answered the same continue token twice");
    query["continue"] = next;
  }
}

Error error_from_response(const Response& r) {
  std::string code, message, reason;
  auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    code = j["error"].value("code", "");
    message = j["error"].value("message", "");
    reason = j["error"].value("reason", "");
  }
  if (message.empty()) {
    message = "the server answered HTTP " + std::to_string(r.status);
    if (!r.body.empty()) message += ": " + r.body.substr(0, 300);
  }
  return Error{code_from_name(code, r.status), message, parse_error_reason(reason)};
}

// One connection per server URL of the list. The list is fixed: a redirect is followed only to a server the
// user listed, so a server can never send the caller's token to a host the caller did not name.
struct ApiClient::Impl {
  std::vector<std::string> urls;
  std::vector<std::unique_ptr<httplib::Client>> http;
  size_t current = 0;
  std::string ca_file;  // "" with https: the system's CA store
  httplib::Client& now() { return *http[current]; }
  template <class F>
  void each(F f) {
    for (auto& h : http) f(*h);
  }
};

namespace {

// The Error for a request that got no answer. TLS failures say what is wrong with the certificate, since
// "cannot reach" would send the user looking at the network instead of at --ca.
Error transport_error(const httplib::Client& http, const std::string& ca_file, const std::string& url, httplib::Error e) {
  const bool https = url.rfind("https://", 0) == 0;
  const std::string trusted = ca_file.empty() ? "the system's CA certificates" : "the CA in " + ca_file;
  switch (e) {
    case httplib::Error::SSLServerVerification: {
      const long verify = http.get_openssl_verify_result();
      if (verify != X509_V_OK && verify != X509_V_ERR_HOSTNAME_MISMATCH && verify != X509_V_ERR_IP_ADDRESS_MISMATCH)
        return Error::precondition("the certificate of the allot server at " + url + " does not verify against " +
                                   trusted + ": " + X509_verify_cert_error_string(verify) +
                                   "; pass the CA certificate that signed it with --ca FILE (or ALLOT_CA)");
      return Error::precondition("the certificate of the allot server at " + url +
                                 " is not issued for the host in that URL (its subjectAltName lists other names or "
                                 "addresses, or it has none: the Common Name is not checked, RFC 6125); use a URL "
                                 "with a host the certificate names, or a certificate whose subjectAltName names it");
    }
    case httplib::Error::SSLLoadingCerts:
      return Error::precondition("cannot load the CA certificates " +
                                 (ca_file.empty() ? "of the system" : "in " + ca_file));
    case httplib::Error::SSLConnection:
      return Error::internal("the TLS handshake with the allot server at " + url +
                             " failed: is it serving HTTPS (allot server --tls-cert/--tls-key)? A server serving plain "
                             "HTTP is reached with an http:// URL");
    default: break;
  }
  // A TLS server hangs up on a plain HTTP request without an answer.
  if (!https && e == httplib::Error::Read)
    return Error::internal("no answer from the allot server at " + url + " (Read): if it serves HTTPS, use an https:// URL");
  return Error::internal("cannot reach the allot server at " + url + " (" + httplib::to_string(e) +
                         "); start one with `allot server` or `allot demo`, or pass --server URL");
}

}  // namespace

ApiClient::ApiClient(std::unique_ptr<Impl> impl, std::string url) : impl_(std::move(impl)), url_(std::move(url)) {}
ApiClient::~ApiClient() = default;
ApiClient::ApiClient(ApiClient&&) noexcept = default;
ApiClient& ApiClient::operator=(ApiClient&&) noexcept = default;

namespace {

// "https://a:1/x/" -> "https://a:1": what a redirect's Location is matched on.
std::string origin_of(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

}  // namespace

Result<ApiClient> ApiClient::connect(const std::string& urls_in, const ConnectOptions& options) {
  auto impl = std::make_unique<Impl>();
  // "URL1,URL2": the servers sharing one PostgreSQL (docs/deployment.md); requests go to the one that answers and
  // follow its redirects to the leader.
  size_t from = 0;
  for (;;) {
    const size_t comma = urls_in.find(',', from);
    std::string url_in = urls_in.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    std::string url = url_in;
    while (!url.empty() && url.back() == '/') url.pop_back();
    const bool https = url.rfind("https://", 0) == 0;
    if (url.rfind("http://", 0) != 0 && !https)
      return Error::invalid("server URL \"" + url_in + "\" must start with http:// or https:// (for example " +
                            kDefaultServer + "; several servers: URL1,URL2)");
    if (!options.ca_file.empty() && !https)
      return Error::invalid("a CA file (--ca or ALLOT_CA: " + options.ca_file + ") is only for https:// servers, and " +
                            url + " is plain HTTP; drop the CA file or use the server's https:// URL");
    auto http = std::make_unique<httplib::Client>(url);
    if (!http->is_valid()) return Error::invalid("server URL \"" + url_in + "\" is not a valid http(s):// URL");
    if (https) {
      // cpp-httplib verifies the chain and the host name by default; set it anyway, so that a change of that
      // default cannot quietly turn verification off.
      http->enable_server_certificate_verification(true);
      if (!options.ca_file.empty()) http->set_ca_cert_path(options.ca_file);
      if (auto st = check_names_by_subject_alt_name(*http, url); !st) return st.error();
    }
    if (!options.token.empty()) http->set_bearer_token_auth(options.token);
    http->set_connection_timeout(std::chrono::seconds(3));
    http->set_read_timeout(std::chrono::seconds(30));
    http->set_write_timeout(std::chrono::seconds(30));
    impl->urls.push_back(url);
    impl->http.push_back(std::move(http));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (!options.ca_file.empty())
    if (auto st = check_ca_file(options.ca_file); !st) return st.error();
  impl->ca_file = options.ca_file;
  std::string first = impl->urls.front();
  return ApiClient(std::move(impl), first);
}

void ApiClient::set_token(const std::string& token) {
  impl_->each([&](httplib::Client& h) { h.set_bearer_token_auth(token.c_str()); });
}

void ApiClient::set_timeout(std::chrono::milliseconds t) {
  impl_->each([&](httplib::Client& h) {
    h.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(t));
    // A timeout shorter than the connect and write defaults bounds those steps too (the agent's requests
    // must return before its fencing deadline even when the server's listen queue is full).
    const auto bounded = std::chrono::duration_cast<std::chrono::microseconds>(std::min<std::chrono::milliseconds>(t, std::chrono::seconds(3)));
    h.set_connection_timeout(bounded);
    h.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(std::min<std::chrono::milliseconds>(t, std::chrono::seconds(30))));
  });
}

void ApiClient::cancel() {
  impl_->each([](httplib::Client& h) { h.stop(); });
}

Result<Response> ApiClient::send(const std::string& method, const std::string& path, const std::string* json_body) {
  if (method != "GET" && method != "DELETE" && method != "POST" && method != "PUT")
    return Error::internal("unsupported HTTP method " + method);
  const std::string body = json_body ? *json_body : std::string("{}");
  const size_t servers = impl_->urls.size();
  size_t unreachable = 0;  // servers tried in a row that did not answer
  int redirects = 0;
  for (;;) {
    auto& h = impl_->now();
    httplib::Result res = [&] {
      if (method == "GET") return h.Get(path.c_str());
      if (method == "DELETE") return h.Delete(path.c_str());
      if (method == "POST") return h.Post(path.c_str(), body, "application/json");
      return h.Put(path.c_str(), body, "application/json");
    }();
    if (!res) {
      // Only a connection that was never made is safe to try elsewhere: a request that was sent may have been done.
      if (res.error() == httplib::Error::Connection && ++unreachable < servers) {
        impl_->current = (impl_->current + 1) % servers;
        url_ = impl_->urls[impl_->current];
        continue;
      }
      return transport_error(h, impl_->ca_file, url_, res.error());
    }
    // A standby between elections: another listed server may already lead.
    if (res->status == 503 && servers > 1 && res->get_header_value("Retry-After") != "" && ++unreachable < servers) {
      impl_->current = (impl_->current + 1) % servers;
      url_ = impl_->urls[impl_->current];
      continue;
    }
    if ((res->status == 307 || res->status == 308) && res->has_header("Location")) {
      const std::string leader = origin_of(res->get_header_value("Location"));
      size_t i = 0;
      while (i < servers && impl_->urls[i] != leader) ++i;
      if (i == servers)
        return Error::internal("the allot server at " + url_ + " is a standby and the leader is at " + leader +
                               ", which is not among the servers given (" + std::to_string(servers) +
                               "); list every server: --server URL1,URL2 (or ALLOT_SERVER)");
      if (++redirects > 3) return Error::internal("the allot servers keep redirecting " + method + " " + path + " to each other");
      impl_->current = i;
      url_ = leader;
      unreachable = 0;
      continue;
    }
    return Response{res->status, res->body, res->get_header_value("Content-Type"), res->get_header_value("Retry-After")};
  }
}

Result<nlohmann::json> ApiClient::json_call(const std::string& method, const std::string& path,
                                            const nlohmann::json* body) {
  std::string text;
  if (body) text = body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  auto r = send(method, path, body ? &text : nullptr);
  if (!r) return r.error();
  if (r->status < 200 || r->status >= 300) return error_from_response(*r);
  if (r->status == 204 || r->body.empty()) return nlohmann::json();
  auto j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Error::internal("the server at " + url_ + " sent something that is not JSON for " + method + " " + path);
  return j;
}

Result<nlohmann::json> ApiClient::get(const std::string& path) { return json_call("GET", path, nullptr); }
Result<nlohmann::json> ApiClient::post(const std::string& path, const nlohmann::json& body) {
  return json_call("POST", path, &body);
}
Result<nlohmann::json> ApiClient::put(const std::string& path, const nlohmann::json& body) {
  return json_call("PUT", path, &body);
}
Result<nlohmann::json> ApiClient::del(const std::string& path) { return json_call("DELETE", path, nullptr); }

Result<std::string> ApiClient::get_text(const std::string& path) {
  auto r = send("GET", path, nullptr);
  if (!r) return r.error();
  if (r->status < 200 || r->status >= 300) return error_from_response(*r);
  return r->body;
}

}  // namespace allot::client
