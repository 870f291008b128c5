#pragma once
// Internal to the Kubernetes readers: a YAML node with the path users know it by
// ("spec.template.spec.containers[0].resources") and its line, so every error names the field and the place.
#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

#include "core/model/result.h"

namespace allot::interop::k8s {

class Field {
 public:
  Field(const std::string& origin, const YAML::Node& node) : origin_(&origin), node_(valid(node)), line_(line_of(node_, 0)) {}

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  bool present() const { return node_.IsDefined() && !node_.IsNull(); }

  Field child(const std::string& key) const {
    Field f(*origin_, node_.IsMap() ? valid(node_[key]) : YAML::Node(YAML::NodeType::Undefined));
    f.path_ = path_.empty() ? key : path_ + "." + key;
    f.line_ = line_of(f.node_, line_);
    return f;
  }
  Field item(size_t i) const {
    Field f(*origin_, node_.IsSequence() && i < node_.size() ? valid(node_[i]) : YAML::Node(YAML::NodeType::Undefined));
    f.path_ = path_ + "[" + std::to_string(i) + "]";
    f.line_ = line_of(f.node_, line_);
    return f;
  }
  // A map entry whose key is data (a label, a resource name): shown as path["key"].
  Field entry(const std::string& key, YAML::Node value) const {
    Field f(*origin_, valid(value));
    f.path_ = path_ + "[\"" + key + "\"]";
    f.line_ = line_of(f.node_, line_);
    return f;
  }

  Error error(const std::string& message) const {
    std::string where = *origin_;
    if (line_ > 0) where += ":" + std::to_string(line_);
    return Error::invalid(where + ": " + (path_.empty() ? "" : path_ + ": ") + message);
  }
  std::string warning(const std::string& message) const { return (path_.empty() ? "" : path_ + ": ") + message; }

  Result<std::string> str() const {
    if (!node_.IsScalar()) return error("expected a string");
    return node_.Scalar();
  }
  Result<int64_t> integer(int64_t min, int64_t max) const {
    if (!node_.IsScalar()) return error("expected a whole number");
    const std::string& s = node_.Scalar();
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != s.size()) return error("expected a whole number, got \"" + s + "\"");
    if (v < min || v > max)
      return error("must be " + std::to_string(min) + ".." + std::to_string(max) + ", got " + s);
    return v;
  }
  Status expect_map() const {
    if (!node_.IsMap()) return error("expected a map");
    return ok_status();
  }
  Status expect_list() const {
    if (!node_.IsSequence()) return error("expected a list");
    return ok_status();
  }

 private:
  // yaml-cpp answers a missing key with an invalid node whose every accessor throws; a fresh Undefined node
  // answers IsMap(), size() and the rest like an absent value should.
  static YAML::Node valid(const YAML::Node& n) { return n.IsDefined() ? n : YAML::Node(YAML::NodeType::Undefined); }

  static int line_of(const YAML::Node& n, int fallback) {
    if (!n.IsDefined()) return fallback;
    int l = n.Mark().line;
    return l >= 0 ? l + 1 : fallback;
  }

  const std::string* origin_;
  YAML::Node node_;
  std::string path_;
  int line_ = 0;
};

}  // namespace allot::interop::k8s
