#include "client/log_attempts.h"

#include <optional>

namespace allot::client {
namespace {

using nlohmann::json;

struct Separator {
  int attempt;
  std::string node;
};

// "allot: ==> attempt N of replica R on node NODE <==" for this replica (server/lifecycle/log_store.cpp writes it).
std::optional<Separator> separator(const std::string& line, int rank) {
  static const std::string kHead = "allot: ==> attempt ", kTail = " <==";
  if (line.compare(0, kHead.size(), kHead) != 0 || line.size() <= kHead.size() + kTail.size() ||
      line.compare(line.size() - kTail.size(), kTail.size(), kTail) != 0)
    return std::nullopt;
  const std::string middle = line.substr(kHead.size(), line.size() - kHead.size() - kTail.size());
  const std::string of_replica = " of replica " + std::to_string(rank) + " on node ";
  const size_t at = middle.find(of_replica);
  // The attempt: 1 to 9 digits (an int), then the replica and a node name (no spaces).
  if (at == 0 || at == std::string::npos || at > 9 || middle.find_first_not_of("0123456789") != at) return std::nullopt;
  const std::string node = middle.substr(at + of_replica.size());
  if (node.empty() || node.find(' ') != std::string::npos) return std::nullopt;
  return Separator{std::stoi(middle.substr(0, at)), node};
}

}  // namespace

json log_attempts(int rank, const std::string& text, bool from_start) {
  json out = json::array();
  json current = {{"attempt", from_start ? json(0) : json(nullptr)}, {"rank", rank}, {"node", nullptr}, {"lines", json::array()}};
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (auto sep = separator(line, rank)) {
      // Lines before the first separator are an attempt only when there are any; a separated one always is.
      if (!current["lines"].empty() || current["node"].is_string()) out.push_back(std::move(current));
      current = {{"attempt", sep->attempt}, {"rank", rank}, {"node", sep->node}, {"lines", json::array()}};
      continue;
    }
    current["lines"].push_back(std::move(line));
  }
  if (!current["lines"].empty() || current["node"].is_string()) out.push_back(std::move(current));
  return out;
}

}  // namespace allot::client
