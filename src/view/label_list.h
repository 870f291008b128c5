#pragma once
// Node labels as one line of text, `key=value,key=value`: what `--labels` flags take (the agent's, `allot plan
// create`'s), what a provisioner finds in ALLOT_NODE_LABELS, and what `describe node` prints. One home, so that
// what one side writes the other reads.
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/model/result.h"

namespace allot::view {

// Keys in order, no spaces: `network-node-layer-1=nn-1,zone=a`.
std::string format_label_list(const std::map<std::string, std::string>& labels);
// A JSON object of labels (the API's "labels"): string values as they are, others as their JSON text.
std::string format_label_list(const nlohmann::json& labels);

// Empty items (`a=1,,b=2`, a trailing comma) are skipped; a later key replaces an earlier one. An item without
// `=` or with an empty key is an error that quotes it.
Result<std::map<std::string, std::string>> parse_label_list(std::string_view text);

}  // namespace allot::view
