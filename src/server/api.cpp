#include "server/api.h"

#include <cctype>

#include "config/yaml_read.h"

namespace allot::server {

void answer(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  if (reply.status == 204) return;
  res.set_content(reply.body, reply.content_type.c_str());
}

std::optional<Reply> check_content_type(const httplib::Request& req) {
  std::string type = req.get_header_value("Content-Type");
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // media types ignore case
  if (type.empty() && req.body.empty()) return std::nullopt;
  for (const char* ok : {"application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
    if (type == ok) return std::nullopt;
  return error_reply(415, "UnsupportedMediaType",
                     "request bodies are JSON (Content-Type: application/json) or YAML (application/yaml), not " +
                         (type.empty() ? std::string("untyped") : type));
}

namespace {

// The offset of the first byte that is not part of well-formed UTF-8, or npos. Names and texts from bodies
// end up in the journal's JSON, which holds UTF-8 only.
size_t invalid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return i;
    i += n;
  }
  return std::string::npos;
}

}  // namespace

Result<YAML::Node> yaml_body(const httplib::Request& req) {
  if (req.body.find_first_not_of(" \t\r\n") == std::string::npos)
    return Error::invalid("the request body is empty; send the object as JSON or YAML");
  if (size_t at = invalid_utf8(req.body); at != std::string::npos)
    return Error::invalid("the request body is not valid UTF-8 (at byte " + std::to_string(at) + ")");
  auto doc = load_yaml(req.body, YamlContext{"request body", "", 0});
  if (!doc) return doc.error();
  if (!doc->IsMap()) return Error::invalid("request body: expected a mapping (a JSON object), got " + config::describe(*doc));
  return doc;
}

Result<nlohmann::json> json_body(const httplib::Request& req) {
  auto j = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::invalid("request body is not valid JSON");
  if (!j.is_object()) return Error::invalid("request body: expected a JSON object");
  return j;
}

Status only_keys(const nlohmann::json& j, std::initializer_list<const char*> allowed, const std::string& what) {
  for (const auto& item : j.items()) {
    bool known = false;
    for (const char* a : allowed) known |= item.key() == a;
    if (known) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return Error::invalid(what + ": unknown key '" + item.key() + "'; allowed: " + list);
  }
  return ok_status();
}

Result<int64_t> query_int(const httplib::Request& req, const char* key, int64_t fallback, int64_t max) {
  if (!req.has_param(key)) return fallback;
  const std::string v = req.get_param_value(key);
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    return Error::invalid(std::string("query parameter ") + key + " must be a non-negative integer, got '" + v + "'");
  int64_t n = std::stoll(v);
  if (n > max) return Error::invalid(std::string("query parameter ") + key + " must be at most " + std::to_string(max));
  return n;
}

httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> h) {
  return [h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    try {
      h(req, res);
    } catch (const std::exception& e) {
      answer(res, error_reply(Error::internal(std::string("unexpected failure: ") + e.what())));
    } catch (...) {
      answer(res, error_reply(Error::internal("unexpected failure")));
    }
  };
}

CallContext call_context(const auth::Caller& who, const httplib::Request& req) {
  CallContext ctx{actor_of(who), std::nullopt};
  if (req.method != "GET" && req.method != "HEAD")
    ctx.audit = store::Audit{req.method + " " + req.path, req.matches.size() > 1 ? req.matches[1].str() : "", 0, ""};
  return ctx;
}

void refuse(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, const Error& why) {
  if (req.method == "GET" || req.method == "HEAD") return answer(res, error_reply(why));
  answer(res, api.writer.call([why](Txn&) -> Result<Render> { return why; }, call_context(who, req)));
}

void run(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, Command cmd) {
  answer(res, api.writer.call(std::move(cmd), call_context(who, req)));
}

}  // namespace allot::server
