#include "config/yaml_read.h"

#include <yaml-cpp/eventhandler.h>

#include <charconv>
#include <cstdio>
#include <sstream>

#include "config/utf8.h"
#include "config/yaml_budget.h"
#include "config/yaml_stream.h"
#include "core/model/hostlist.h"

namespace allot {

size_t invalid_utf8(std::string_view s) {
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
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return i;
    i += n;
  }
  return std::string_view::npos;
}

namespace {

// What is wrong with text read from a scalar, or "" when nothing is. Everything read ends up in the
// journal's JSON (which holds UTF-8 only: one record that cannot be written fails the whole group commit),
// in API answers and on terminals. Names and keys hold no control characters at all; other text (commands,
// environment values) may hold tabs and line breaks.
std::string text_problem(std::string_view s, bool name) {
  if (size_t at = invalid_utf8(s); at != std::string_view::npos)
    return "is not valid UTF-8 (byte " + std::to_string(at + 1) + " of " + std::to_string(s.size()) + ")";
  for (unsigned char c : s)
    if ((c < 0x20 && (name || (c != '\t' && c != '\n' && c != '\r'))) || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "U+%04X", c);
      return std::string("contains the control character ") + hex;
    }
  return "";
}

// A scalar as messages quote it: control characters and bytes that are not UTF-8 become '?', so that a
// message never carries what made the input wrong to a terminal or a JSON answer.
std::string printable(const std::string& s) {
  if (text_problem(s, true).empty()) return s;
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
    std::string_view piece = std::string_view(s).substr(i, n);
    if (piece.size() == n && text_problem(piece, true).empty()) out += piece;
    else n = 1, out += '?';
    i += n;
  }
  return out;
}

bool is_plain_scalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }


bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '/';
}

// Strict YAML forbids `[` inside a plain scalar of a flow collection, so `{name: gpu-[1-2], ...}` does not
// parse, yet it is how people write host lists (and how the scenario files do). This puts single quotes
// around such host lists: a `[` right after a name character, inside a flow collection and outside quotes
// and comments, cannot be the start of a flow sequence, so nothing valid changes meaning. No line breaks
// are added, so lines stay where they were.
std::string quote_flow_hostlists(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      out += c;
      if (c == '\\' && quote == '"' && i + 1 < text.size()) out += text[++i];
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      for (; i < text.size() && text[i] != '\n'; ++i) out += text[i];
      if (i < text.size()) out += '\n';
      continue;
    }
    if ((c == '\'' || c == '"') && (i == 0 || !is_name_char(text[i - 1]))) quote = c;
    if (c == '[' && depth > 0 && i > 0 && is_name_char(text[i - 1])) {
      size_t start = i;
      while (start > 0 && is_name_char(text[start - 1])) --start;
      size_t end = i;
      while (end < text.size()) {
        if (is_name_char(text[end])) {
          ++end;
        } else if (text[end] == '[') {
          size_t close = text.find(']', end);
          if (close == std::string::npos || text.find_first_not_of("0123456789,-", end + 1) != close) break;
          end = close + 1;
        } else {
          break;
        }
      }
      if (end > i) {
        out.insert(out.size() - (i - start), 1, '\'');
        out.append(text, i, end - i);
        out += '\'';
        i = end - 1;
        continue;
      }
    }
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && depth > 0) --depth;
    out += c;
  }
  return out;
}

// Where each document of a YAML stream starts, found without building the documents.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

struct Stream {
  YAML::Node first;     // Null when the text holds no document
  int second_line = 0;  // 1-based line where a second document starts; 0 when there is none
};

// The first document of the text, and where a second one starts. YAML::LoadAll cannot be used: yaml-cpp 0.7
// loops forever, allocating, on a ',' where a value should start (",", "- a\n,"; yaml-cpp issue 1040),
// because its parser returns an empty document without consuming the token, again and again (found by
// fuzz/k8s_manifest_fuzz.cpp). So the documents are counted first in a bounded pass that builds nothing, in
// which a document that starts exactly where the one before it started is that stuck parser; the one
// document is built after that with YAML::Load, which reads a single document and cannot loop.
Stream read_stream(const std::string& text, size_t max_documents = 3) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  while (starts.marks.size() < max_documents && parser.HandleNextDocument(starts)) {
    const auto& m = starts.marks;
    if (m.size() >= 2 && m[m.size() - 1].pos == m[m.size() - 2].pos) {
      const YAML::Mark& at = m.back();
      std::string token = at.pos >= 0 && static_cast<size_t>(at.pos) < text.size() ? text.substr(at.pos, 1) : "";
      throw YAML::ParserException(at, "unexpected '" + token + "' where a value should start");
    }
  }
  Stream s;
  if (starts.marks.size() >= 2) s.second_line = starts.marks[1].line + 1;
  if (!starts.marks.empty()) s.first = YAML::Load(text);
  return s;
}

Stream load_stream(const std::string& text) {
  try {
    return read_stream(text);
  } catch (const YAML::Exception&) {
    // Valid YAML is read as written; only text that does not parse gets its flow host lists quoted. When
    // that fails too, the original text's error is the one to report.
    std::string quoted = quote_flow_hostlists(text);
    if (quoted == text) throw;
    try {
      return read_stream(quoted);
    } catch (const YAML::Exception&) {
    }
    throw;
  }
}

}  // namespace

Result<std::vector<YAML::Node>> load_yaml_documents(const std::string& text, const YamlContext& ctx) {
  return config::guard(ctx, [&]() -> Result<std::vector<YAML::Node>> {
    // Every document start is checked by the bounded pass first (a stuck parser is an error there), so the
    // LoadAll that follows reads text it is known to get through.
    (void)read_stream(text, SIZE_MAX);
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    for (const YAML::Node& d : docs)
      if (auto st = check_expanded_size(d, ctx); !st) return st.error();
    return docs;
  });
}

Result<YAML::Node> load_yaml(const std::string& text, const YamlContext& ctx) {
  return config::guard(ctx, [&]() -> Result<YAML::Node> {
    // Every document is counted: YAML::Load alone would silently drop everything after a `---`.
    Stream s = load_stream(text);
    if (s.second_line > 0)
      return config::fail(ctx, s.second_line, "a second YAML document starts here", "one document per file (remove the `---`)");
    if (auto st = check_expanded_size(s.first, ctx); !st) return st.error();
    return s.first;
  });
}

namespace config {

int line_of(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  YAML::Mark m = node.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

Val root(const YAML::Node& node, const YamlContext& ctx) {
  return Val{node, ctx.line > 0 ? ctx.line : line_of(node), ctx.path};
}

YamlContext sub(const YamlContext& ctx, const Val& v) { return YamlContext{ctx.origin, v.path, v.line, ctx.budget}; }

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "empty";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Scalar: {
      std::string s = printable(node.Scalar());
      if (s.size() > 40) {
        size_t cut = 37;
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
        s = s.substr(0, cut) + "...";
      }
      return node.Tag() == "!" ? "the quoted string \"" + s + "\"" : "'" + s + "'";
    }
    case YAML::NodeType::Undefined: break;
  }
  return "missing";
}

std::string name_of(const Val& v) { return v.path.empty() ? "the document" : v.path; }

std::string join(const std::vector<std::string_view>& words) {
  std::string out;
  for (auto w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

Error fail(const YamlContext& ctx, int line, const std::string& what, const std::string& allowed) {
  std::string where = ctx.origin + (line > 0 ? ":" + std::to_string(line) : "");
  return Error::invalid(where + ": " + what + "; " + allowed);
}

Error fail(const YamlContext& ctx, const Val& v, const std::string& what, const std::string& allowed) {
  return fail(ctx, v.line, what, allowed);
}

Error located(const YamlContext& ctx, const Val& v, const Error& e) {
  return Error::invalid(ctx.origin + (v.line > 0 ? ":" + std::to_string(v.line) : "") + ": " + name_of(v) + ": " + e.message);
}

namespace {

std::string child_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

}  // namespace

Result<std::vector<Entry>> map_entries(const YamlContext& ctx, const Val& v) {
  std::vector<Entry> out;
  if (v.node.IsNull()) return out;
  if (!v.node.IsMap()) return fail(ctx, v, name_of(v) + " is " + describe(v.node) + ", not a mapping", "write key: value pairs");
  std::map<std::string, int> seen;
  for (auto it = v.node.begin(); it != v.node.end(); ++it) {
    // A copy, not a reference: yaml-cpp's iterator hands out its key and value in a temporary that dies at
    // the end of the statement (found by fuzz/nodes_fuzz.cpp under AddressSanitizer).
    const YAML::Node k = it->first;
    int line = line_of(k);
    if (!k.IsScalar() || k.Scalar().empty())
      return fail(ctx, line ? line : v.line, "a key in " + name_of(v) + " is " + describe(k), "keys are names");
    if (std::string why = text_problem(k.Scalar(), /*name=*/true); !why.empty())
      return fail(ctx, line ? line : v.line, "a key in " + name_of(v) + " " + why, "keys are names");
    auto [pos, fresh] = seen.emplace(k.Scalar(), line);
    if (!fresh)
      return fail(ctx, line, "key '" + k.Scalar() + "' appears twice in " + name_of(v) + " (first at line " +
                                 std::to_string(pos->second) + ")", "give each key once");
    out.push_back({k.Scalar(), Val{it->second, line, child_path(v.path, k.Scalar())}});
  }
  return out;
}

Result<Fields> Fields::open(const YamlContext& ctx, const Val& v, std::vector<std::string_view> allowed) {
  if (!v.node.IsNull() && !v.node.IsMap())
    return fail(ctx, v, name_of(v) + " is " + describe(v.node) + ", not a mapping", "allowed keys: " + join(allowed));
  auto entries = map_entries(ctx, v);
  if (!entries) return entries.error();
  Fields f;
  f.self_ = v;
  for (auto& e : *entries) {
    bool known = false;
    for (auto a : allowed) known = known || a == e.key;
    if (!known)
      return fail(ctx, e.value.line, "unknown key '" + e.key + "' in " + name_of(v), "allowed keys: " + join(allowed));
    f.fields_.emplace_back(e.key, std::move(e.value));
  }
  return f;
}

std::optional<Val> Fields::get(std::string_view key) const {
  for (const auto& [k, v] : fields_)
    if (k == key) return v;
  return std::nullopt;
}

Result<Val> Fields::need(const YamlContext& ctx, std::string_view key) const {
  if (auto v = get(key)) return *v;
  return fail(ctx, self_, name_of(self_) + " has no '" + std::string(key) + "'", "it is required");
}

std::vector<std::string> Fields::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : fields_) out.push_back(k);
  return out;
}

Result<std::vector<Val>> list_items(const YamlContext& ctx, const Val& v) {
  std::vector<Val> out;
  if (v.node.IsNull()) return out;
  if (!v.node.IsSequence())
    return fail(ctx, v, name_of(v) + " is " + describe(v.node) + ", not a list", "write a list ([a, b] or - items)");
  size_t i = 0;
  for (const YAML::Node& item : v.node) {
    int line = line_of(item);
    out.push_back(Val{item, line ? line : v.line, v.path + "[" + std::to_string(i++) + "]"});
  }
  return out;
}

Result<std::string> read_text(const YamlContext& ctx, const Val& v) {
  if (!v.node.IsScalar()) return fail(ctx, v, name_of(v) + " is " + describe(v.node), "a string is wanted here");
  if (std::string why = text_problem(v.node.Scalar(), /*name=*/false); !why.empty())
    return fail(ctx, v, name_of(v) + " " + why, "text is UTF-8 without control characters other than tab and line breaks");
  return v.node.Scalar();
}

Result<std::string> read_name(const YamlContext& ctx, const Val& v) {
  auto s = read_text(ctx, v);
  if (s && s->empty()) return fail(ctx, v, name_of(v) + " is an empty string", "a non-empty name is wanted here");
  if (s)
    if (std::string why = text_problem(*s, /*name=*/true); !why.empty())
      return fail(ctx, v, name_of(v) + " " + why, "names have no control characters");
  return s;
}

Status check_object_name(const YamlContext& ctx, const Val& v, NameKind kind, const std::string& name) {
  auto st = check_name(kind, name);
  if (st) return st;
  // check_name's message is "<what is wrong>; <the rule>", which fail() puts together again after the place.
  const std::string& m = st.error().message;
  const size_t semi = m.find("; ");
  return fail(ctx, v, name_of(v) + ": " + m.substr(0, semi), semi == std::string::npos ? "" : m.substr(semi + 2));
}

Result<std::string> read_object_name(const YamlContext& ctx, const Val& v, NameKind kind) {
  auto s = read_text(ctx, v);
  if (!s) return s.error();
  if (auto st = check_object_name(ctx, v, kind, *s); !st) return st.error();
  return s;
}

Result<int64_t> read_int(const YamlContext& ctx, const Val& v, int64_t lo, int64_t hi) {
  const std::string allowed = "allowed: an integer " + std::to_string(lo) + ".." + std::to_string(hi);
  if (!is_plain_scalar(v.node)) return fail(ctx, v, name_of(v) + " is " + describe(v.node) + ", not an integer", allowed);
  const std::string& s = v.node.Scalar();
  int64_t x = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec == std::errc::result_out_of_range) return fail(ctx, v, name_of(v) + " is " + s + ", out of range", allowed);
  if (ec != std::errc{} || end != s.data() + s.size())
    return fail(ctx, v, name_of(v) + " is " + describe(v.node) + ", not an integer", allowed);
  if (x < lo || x > hi) return fail(ctx, v, name_of(v) + " is " + s, allowed);
  return x;
}

Result<bool> read_bool(const YamlContext& ctx, const Val& v) {
  bool b = false;
  // convert<bool>::decode reads the YAML 1.1 spellings (true/false, yes/no, on/off) without throwing.
  if (!is_plain_scalar(v.node) || !YAML::convert<bool>::decode(v.node, b))
    return fail(ctx, v, name_of(v) + " is " + describe(v.node) + ", not a boolean", "allowed: true or false");
  return b;
}

Result<int64_t> read_decimal(const YamlContext& ctx, const Val& v, int64_t scale, int64_t max_units, bool exact) {
  const std::string allowed = "allowed: a number 0.." + std::to_string(max_units) +
                              (exact && scale == 1000 ? " with at most 3 decimals" : "") + ", like 2 or 0.5";
  auto bad = [&](const std::string& why) { return fail(ctx, v, name_of(v) + " is " + describe(v.node) + why, allowed); };
  if (!is_plain_scalar(v.node)) return bad(", not a number");
  const std::string& s = v.node.Scalar();
  if (!s.empty() && s[0] == '-') return bad(", a negative number");
  // Exact decimal arithmetic: "12.345" -> whole 12, frac 345, 3 digits; no floating point on the way.
  size_t dot = s.find('.');
  std::string whole = s.substr(0, dot), frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  auto digits = [](const std::string& d) { return d.find_first_not_of("0123456789") == std::string::npos; };
  if ((whole.empty() && frac.empty()) || !digits(whole) || !digits(frac) || (dot != std::string::npos && frac.empty()))
    return bad(", not a number");
  if (whole.size() > 15 || frac.size() > 9) return bad(", too many digits");
  __int128 w = whole.empty() ? 0 : std::stoll(whole), f = frac.empty() ? 0 : std::stoll(frac), den = 1;
  for (size_t i = 0; i < frac.size(); ++i) den *= 10;
  if (w > max_units || (w == max_units && f > 0)) return bad(", too large");
  __int128 num = f * scale;
  if (exact && num % den != 0) return bad(", finer than 1/" + std::to_string(scale));
  __int128 scaled = w * scale + (num + den / 2) / den;
  if (scaled == 0 && f > 0) return bad(", too small to count");
  return static_cast<int64_t>(scaled);
}

Result<size_t> read_choice(const YamlContext& ctx, const Val& v, const std::vector<std::string_view>& choices) {
  if (v.node.IsScalar())
    for (size_t i = 0; i < choices.size(); ++i)
      if (v.node.Scalar() == choices[i]) return i;
  return fail(ctx, v, name_of(v) + " is " + describe(v.node), "allowed: " + join(choices));
}

Result<std::map<std::string, std::string>> read_string_map(const YamlContext& ctx, const Val& v) {
  auto entries = map_entries(ctx, v);
  if (!entries) return entries.error();
  std::map<std::string, std::string> out;
  for (const auto& e : *entries) {
    if (!e.value.node.IsScalar())
      return fail(ctx, e.value, name_of(e.value) + " is " + describe(e.value.node), "a string value is wanted (\"\" for empty)");
    auto text = read_text(ctx, e.value);
    if (!text) return text.error();
    out[e.key] = std::move(*text);
  }
  return out;
}

Result<std::vector<std::string>> read_hostlist(const YamlContext& ctx, const Val& v) {
  auto s = read_name(ctx, v);
  if (!s) return s.error();
  auto names = expand_hostlist(*s);
  if (!names)
    return fail(ctx, v, name_of(v) + " '" + printable(*s) + "' is not a valid host list (" + names.error().message + ")",
                "allowed: a name or a range like gpu-[1-4] or n[01-08,10]");
  if (auto st = charge_node_names(ctx, v, names->size()); !st) return st.error();
  return names;
}

Result<std::string> read_instance_type(const YamlContext& ctx, const Val& v, const Catalog& catalog) {
  auto s = read_name(ctx, v);
  if (!s) return s.error();
  auto id = catalog.find(*s);
  if (!id) return fail(ctx, v, name_of(v) + " '" + *s + "' is not a known instance type", catalog.known_list());
  return catalog.at(*id).name;
}

}  // namespace config
}  // namespace allot
