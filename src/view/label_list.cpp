#include "view/label_list.h"

namespace allot::view {

namespace {
void append_label(std::string& out, const std::string& key, const std::string& value) {
  if (!out.empty()) out += ',';
  out += key;
  out += '=';
  out += value;
}
}  // namespace

std::string format_label_list(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [k, v] : labels) append_label(out, k, v);
  return out;
}

std::string format_label_list(const nlohmann::json& labels) {
  std::string out;
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) append_label(out, k, v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

Result<std::map<std::string, std::string>> parse_label_list(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t comma = text.find(',', i);
    const std::string_view kv = text.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i);
    i = comma == std::string_view::npos ? text.size() : comma + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Error::invalid("\"" + std::string(kv) + "\" is not key=value (labels are key=value pairs separated by "
                            "commas, e.g. network-node-layer-3=nn-3a)");
    out[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  return out;
}

}  // namespace allot::view
