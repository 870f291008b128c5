#pragma once
// Several YAML documents in one text (`---` between them), as `allot submit` reads a file of jobs. Not
// YAML::LoadAll directly: yaml-cpp 0.7 loops forever, allocating, on some malformed texts (a stray ','), which
// the readers' bounded pass turns into an error with its line.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/yaml_read.h"

namespace allot {

Result<std::vector<YAML::Node>> load_yaml_documents(const std::string& text, const YamlContext& ctx);

}  // namespace allot
