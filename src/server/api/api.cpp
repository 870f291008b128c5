#include "server/api/api.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

#include "config/utf8.h"
#include "config/yaml_read.h"

namespace allot::server {

void answer(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  if (reply.retry_after_s > 0) res.set_header("Retry-After", std::to_string(reply.retry_after_s));
  if (reply.status == 204) return;
  if (!reply.pieces) {
    res.set_content(reply.body, reply.content_type.c_str());
    return;
  }
  // Chunked: the body, then each piece as the client takes it. The provider holds the pieces and the view they
  // read; a client that goes away mid-answer (a failed write) ends the connection, and the view is let go.
  struct Sending {
    std::string first;
    std::function<bool(std::string&)> pieces;
    std::shared_ptr<const void> keep;
    bool more = true;
  };
  auto sending = std::make_shared<Sending>(Sending{reply.body, reply.pieces, reply.keep});
  res.set_chunked_content_provider(reply.content_type, [sending](size_t, httplib::DataSink& sink) {
    std::string out = std::move(sending->first);
    sending->first.clear();
    try {
      if (sending->more) sending->more = sending->pieces(out);
    } catch (const std::exception&) {
      return false;  // a rendering failure mid-answer: the client sees the connection end, not a truncated 200
    }
    if (!out.empty() && !sink.write(out.data(), out.size())) return false;
    if (!sending->more) sink.done();
    return true;
  });
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

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Whether `s` holds a \u escape of a UTF-16 surrogate (\uD800..\uDFFF).
bool has_surrogate_escape(const std::string& s) {
  for (size_t i = s.find("\\u"); i != std::string::npos && i + 3 < s.size(); i = s.find("\\u", i + 2))
    if ((s[i + 2] == 'd' || s[i + 2] == 'D') && is_hex(s[i + 3]) && std::strchr("89abcdefABCDEF", s[i + 3]) != nullptr) return true;
  return false;
}

// The value of the four hex digits at `at`, or nullopt when there are not four there (never throws: the text
// may be JSON only up to a point, found by fuzz/http_body_fuzz.cpp).
std::optional<uint32_t> hex4(const std::string& s, size_t at) {
  if (at + 4 > s.size()) return std::nullopt;
  uint32_t v = 0;
  for (size_t k = at; k < at + 4; ++k) {
    const char c = s[k];
    if (!is_hex(c)) return std::nullopt;
    v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

void append_utf8(std::string& out, uint32_t cp) {  // cp is U+10000..U+10FFFF here
  out += static_cast<char>(0xf0 | (cp >> 18));
  out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
  out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
  out += static_cast<char>(0x80 | (cp & 0x3f));
}

// JSON writes a character above U+FFFF as two \u escapes, a UTF-16 surrogate pair ("\ud83d\ude00" for
// U+1F600), and yaml-cpp refuses each half as invalid unicode. In a text nlohmann has accepted as JSON (so
// every high surrogate escape is followed by a low one), each pair inside a string becomes the character's
// UTF-8 bytes, which YAML takes as they are; the rest is kept byte for byte, so lines stay where they were.
std::string join_surrogate_pairs(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!in_string || c != '\\') {
      if (c == '"') in_string = !in_string;
      out += c;
      continue;
    }
    // Anything but a whole pair is kept as it was (a two-character escape such as \" or \\, another \u escape,
    // or text that is not JSON after all, which yaml-cpp then reports).
    const auto hi = i + 1 < s.size() && s[i + 1] == 'u' ? hex4(s, i + 2) : std::nullopt;
    const bool pair_follows = hi && *hi >= 0xd800 && *hi <= 0xdbff && i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u';
    const auto lo = pair_follows ? hex4(s, i + 8) : std::nullopt;
    if (!lo || *lo < 0xdc00 || *lo > 0xdfff) {
      out.append(s, i, std::min<size_t>(2, s.size() - i));
      ++i;
      continue;
    }
    append_utf8(out, 0x10000 + ((*hi - 0xd800) << 10) + (*lo - 0xdc00));
    i += 11;
  }
  return out;
}

// The body text for yaml-cpp: as sent, or with JSON surrogate pairs joined. A lone surrogate in JSON is an
// error that says so; in a body that is not JSON at all, yaml-cpp reports the escape.
Result<std::string> yaml_text(const std::string& body) {
  if (!has_surrogate_escape(body)) return body;
  try {
    const auto parsed = nlohmann::json::parse(body);  // only to check it, with nlohmann's surrogate handling
    (void)parsed;
  } catch (const nlohmann::json::parse_error& e) {
    if (std::string(e.what()).find("surrogate") == std::string::npos) return body;
    const auto line = 1 + std::count(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(std::min(e.byte, body.size())), '\n');
    return Error::invalid("request body:" + std::to_string(line) +
                          ": a \\u escape is half of a UTF-16 surrogate pair without its other half; write a character "
                          "above U+FFFF as a pair (\\ud83d\\ude00 for U+1F600) or as UTF-8");
  }
  return join_surrogate_pairs(body);
}

}  // namespace

Result<YAML::Node> yaml_body(const httplib::Request& req) {
  if (req.body.find_first_not_of(" \t\r\n") == std::string::npos)
    return Error::invalid("the request body is empty; send the object as JSON or YAML");
  if (size_t at = invalid_utf8(req.body); at != std::string::npos)
    return Error::invalid("the request body is not valid UTF-8 (at byte " + std::to_string(at) + ")");
  auto text = yaml_text(req.body);
  if (!text) return text.error();
  auto doc = load_yaml(*text, kRequestBody);
  if (!doc) return doc.error();
  if (!doc->IsMap()) return Error::invalid("request body: expected a mapping (a JSON object), got " + config::describe(*doc));
  return doc;
}

Result<nlohmann::json> json_body(const httplib::Request& req) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(req.body);
  } catch (const nlohmann::json::exception& e) {
    // what() reads "[json.exception.parse_error.101] parse error at line 1, column 9: ..."
    std::string what = e.what();
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return Error::invalid("request body is not valid JSON: " + what);
  }
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

CallContext call_context(const auth::Caller& who, const httplib::Request& req, const std::string& target) {
  CallContext ctx{actor_of(who), std::nullopt};
  if (req.method != "GET" && req.method != "HEAD") {
    const std::string named = !target.empty() ? target : req.matches.size() > 1 ? req.matches[1].str() : "";
    ctx.audit = store::Audit{req.method + " " + req.path, named, 0, "", req.remote_addr};
  }
  return ctx;
}

void refuse(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, const Error& why,
            const std::string& target) {
  if (req.method == "GET" || req.method == "HEAD") return answer(res, error_reply(why));
  answer(res, api.writer.call([why](Txn&) -> Result<Render> { return why; }, call_context(who, req, target)));
}

void run(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, Command cmd,
         const std::string& target) {
  // A GET changes nothing: it is answered from the writer's published view, off the write path (writer.h).
  if (req.method == "GET" || req.method == "HEAD") return answer(res, api.writer.read(std::move(cmd), call_context(who, req)));
  answer(res, api.writer.call(std::move(cmd), call_context(who, req, target)));
}

}  // namespace allot::server
