#include "client/output.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <sstream>

#include "view/times.h"

namespace allot::client {
namespace {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count UTF-8 code points, not bytes
  return n;
}

// True when a plain scalar with this text would not read back as the same string.
bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  try {
    YAML::Node n = YAML::Load(s);
    if (!n.IsScalar() || n.Scalar() != s) return true;
    static const char* kSpecial[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
    std::string lower;
    for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* k : kSpecial)
      if (lower == k) return true;
    double d;
    std::istringstream in(s);
    if (in >> d && in.eof()) return true;
  } catch (...) {
    return true;
  }
  return s.front() == ' ' || s.back() == ' ' || s.find(": ") != std::string::npos || s.find(" #") != std::string::npos;
}

void emit(YAML::Emitter& out, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key;
        if (needs_quotes(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        emit(out, v);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& v : j) emit(out, v);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      if (needs_quotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case nlohmann::json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      break;
    default:
      out << j.dump();  // numbers exactly as JSON writes them
  }
}

}  // namespace

Result<Format> parse_format(const std::string& s) {
  if (s == "table" || s == "wide" || s.empty()) return Format::kTable;  // wide: tables with every column in full
  if (s == "json") return Format::kJson;
  if (s == "yaml") return Format::kYaml;
  if (s == "name") return Format::kName;
  return Error::invalid("output format \"" + s + "\" is unknown; use table, wide, json, yaml or name");
}

std::string to_yaml(const nlohmann::json& j) {
  YAML::Emitter out;
  emit(out, j);
  std::string s = out.c_str();
  if (s.empty() || s.back() != '\n') s += '\n';
  return s;
}

std::string render_data(const nlohmann::json& j, Format f) {
  if (f == Format::kYaml) return to_yaml(j);
  if (f == Format::kName) {
    std::string out;
    auto one = [&](const nlohmann::json& o) {
      if (o.is_object() && o.contains("name") && o["name"].is_string()) out += o["name"].get<std::string>() + "\n";
    };
    if (j.is_array())
      for (const auto& o : j) one(o);
    else
      one(j);
    return out;
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Table::str() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (size_t i = 0; i < header_.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      l += cell;
      if (i + 1 < header_.size()) l += std::string(width[i] - display_width(cell) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return number(v);
}

std::string number(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::abs(d - std::round(d)) < 1e-9) return std::to_string(static_cast<int64_t>(std::llround(d)));
    std::ostringstream s;
    s.precision(3);
    s << d;
    return s.str();
  }
  if (v.is_string()) return v.get<std::string>();
  return "-";
}

std::string join(const nlohmann::json& list, const std::string& sep) {
  if (!list.is_array()) return list.is_string() ? list.get<std::string>() : "";
  std::string out;
  for (const auto& v : list) {
    if (!out.empty()) out += sep;
    out += v.is_string() ? v.get<std::string>() : number(v);
  }
  return out;
}

std::string ago(int64_t then, int64_t now) {
  int64_t d = now - then;
  if (d < 0) d = 0;
  if (d < 120) return std::to_string(d) + "s";
  if (d < 7200) return std::to_string(d / 60) + "m";
  if (d < 172800) return std::to_string(d / 3600) + "h";
  return std::to_string(d / 86400) + "d";
}

std::string from_now(int64_t t, int64_t now) { return t > now ? "in " + ago(now, t) : ago(t, now) + " ago"; }

int64_t time_at(const nlohmann::json& j, const char* key, int64_t fallback) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  return view::time_of(j[key]).value_or(fallback);
}

}  // namespace allot::client
