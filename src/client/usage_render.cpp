#include "client/usage_render.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include "client/output.h"

namespace allot::client {
namespace {

using nlohmann::json;

// The figures in the order the table and CSV show them, all but the last in hours.
struct Column {
  const char* key;     // the answer's field
  const char* header;  // table
  const char* csv;     // CSV
  bool hours;
};
constexpr Column kColumns[] = {
    {"used_s", "USED", "used_hours", true},
    {"borrowed_s", "BORROWED", "borrowed_hours", true},
    {"lent_s", "LENT", "lent_hours", true},
    {"lost_preemption_s", "LOST-PREEMPTION", "lost_preemption_hours", true},
    {"lost_failure_s", "LOST-FAILURE", "lost_failure_hours", true},
    {"queued_s", "QUEUED", "queued_hours", true},
    {"admitted", "ADMITTED", "admitted", false},
};

std::string hours(int64_t seconds, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(seconds) / 3600.0);
  return buf;
}

std::vector<std::string> group_keys(const json& report) {
  std::vector<std::string> keys;
  for (const auto& k : report.value("by", json::array())) keys.push_back(k.get<std::string>());
  return keys;
}

std::string upper(std::string s) {
  for (char& c : s) c = c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> cells(const json& figures, const std::vector<std::string>& keys, const json& row, int decimals) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(text(row, k.c_str(), "-"));
  for (const Column& c : kColumns) {
    const int64_t v = figures.value(c.key, int64_t{0});
    out.push_back(c.hours ? hours(v, decimals) : std::to_string(v));
  }
  return out;
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string usage_table(const json& report) {
  const auto keys = group_keys(report);
  std::vector<std::string> header;
  for (const auto& k : keys) header.push_back(upper(k));
  for (const Column& c : kColumns) header.push_back(c.header);
  Table t(header);
  const json& rows = report.value("rows", json::array());
  for (const auto& row : rows) t.add(cells(row, keys, row, 1));
  if (rows.empty()) return "no usage from " + text(report, "since") + " to " + text(report, "until") + "\n";
  const json& total = report.value("total", json::object());
  auto h = [&](const char* key) { return hours(total.value(key, int64_t{0}), 1); };
  return "accelerator-hours from " + text(report, "since") + " to " + text(report, "until") + "\n" + t.str() +
         "total: used " + h("used_s") + " h, borrowed " + h("borrowed_s") + " h, lent " + h("lent_s") + " h, lost " +
         h("lost_preemption_s") + " h to preemption and " + h("lost_failure_s") + " h to failures; " +
         std::to_string(total.value("admitted", int64_t{0})) + " admissions waited " + h("queued_s") + " h\n";
}

std::string usage_csv(const json& report) {
  const auto keys = group_keys(report);
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += keys[i] + ",";
  for (size_t i = 0; i < std::size(kColumns); ++i) out += std::string(kColumns[i].csv) + (i + 1 < std::size(kColumns) ? "," : "\n");
  for (const auto& row : report.value("rows", json::array())) {
    const auto c = cells(row, keys, row, 3);
    for (size_t i = 0; i < c.size(); ++i) out += csv_field(c[i]) + (i + 1 < c.size() ? "," : "\n");
  }
  return out;
}

}  // namespace allot::client
