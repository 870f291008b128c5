#pragma once
// What the CLI prints: aligned tables for people, and the server's JSON as JSON or YAML for programs
// (`-o table|json|yaml`).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/result.h"

namespace allot::client {

// kName (`-o name`): the name of each object, one a line, as kubectl's -o name (without its kind/ prefix, so that
// the names feed allot's commands: `allot jobs -o name | xargs allot cancel`).
enum class Format { kTable, kJson, kYaml, kName };
Result<Format> parse_format(const std::string& s);

// The JSON as block-style YAML. Strings that YAML would read as another type ("true", "10", "") are quoted,
// so the YAML reads back to the same JSON.
std::string to_yaml(const nlohmann::json& j);
// JSON (pretty), YAML or names text of `j`, ending with a newline (names: none for data without names).
std::string render_data(const nlohmann::json& j, Format f);

// Columns padded to their widest cell, two spaces apart; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Display helpers for JSON values from the API.
std::string text(const nlohmann::json& j, const char* key, const std::string& fallback = "");  // "" for null
std::string number(const nlohmann::json& v);  // 2, 1.5; "-" for null
std::string join(const nlohmann::json& list, const std::string& sep = ",");
std::string ago(int64_t then, int64_t now);  // "5s", "3m", "2h", "4d"
// `t` seen from `now`: "in 3m" when it is later, "2h ago" otherwise (a plan's or a reservation's start and end).
std::string from_now(int64_t t, int64_t now);
// A point in time of the API's JSON in Unix seconds: RFC 3339 text (a number from an older server or the
// simulator is taken as seconds); `fallback` when absent or neither.
int64_t time_at(const nlohmann::json& j, const char* key, int64_t fallback = 0);

}  // namespace allot::client
