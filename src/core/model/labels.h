#pragma once
// Job labels as Kubernetes has them (keys `prefix/name` or `name`, short values), and equality selectors over
// them (`app=llm,tier!=batch`, as `kubectl -l` takes). The scheduler never reads labels; they are for people
// and for picking jobs to list or cancel.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace allot {

using Labels = std::map<std::string, std::string>;

constexpr size_t kMaxLabels = 64;

// Why `key: value` is not a valid label (empty when it is): the key is an optional DNS-subdomain prefix of at
// most 253 characters and '/', then a name of 1..63 characters; the value is at most 63 characters. Names and
// values begin and end with a letter or digit and hold letters, digits, '-', '_' and '.'.
std::string label_problem(std::string_view key, std::string_view value);

struct LabelRequirement {
  std::string key;
  std::string value;
  bool equal = true;  // false: key!=value (also true of jobs without the key)
};
using LabelSelector = std::vector<LabelRequirement>;

// "k=v,k2==v2,k3!=v3"; an empty text selects everything.
Result<LabelSelector> parse_label_selector(std::string_view text);
bool selector_matches(const LabelSelector& selector, const Labels& labels);

}  // namespace allot
