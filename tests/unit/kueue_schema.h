#pragma once
// A small validator of YAML objects against OpenAPI v3 structural schemas, as Kubernetes checks custom
// resources against a CRD's openAPIV3Schema: type, required, properties, additionalProperties, maxProperties,
// items, minItems, maxItems, enum, pattern, minLength, maxLength, minimum, maximum and anyOf (of types). The
// x-kubernetes-* extensions are not read. Stricter than the API server in one way, on purpose: a field the
// schema does not name is an error (the server would drop it without a word).
//
// YAML scalars are typed as Kubernetes' YAML decoder types them: quoted scalars are strings; plain ones are
// null, booleans, integers or numbers when they read as such, and strings otherwise.
#include <yaml-cpp/yaml.h>

#include <regex>
#include <string>
#include <vector>

namespace allot::test {

inline std::string yaml_type(const YAML::Node& n) {
  if (n.IsNull()) return "null";
  if (n.IsMap()) return "object";
  if (n.IsSequence()) return "array";
  if (n.Tag() == "!") return "string";  // quoted
  const std::string& s = n.Scalar();
  static const std::regex kNull("^(null|Null|NULL|~)?$");
  static const std::regex kBool("^(true|True|TRUE|false|False|FALSE)$");
  static const std::regex kInt("^[-+]?(0|[1-9][0-9]*)$");
  static const std::regex kNumber("^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$");
  if (std::regex_match(s, kNull)) return "null";
  if (std::regex_match(s, kBool)) return "boolean";
  if (std::regex_match(s, kInt)) return "integer";
  if (std::regex_match(s, kNumber)) return "number";
  return "string";
}

// Appends "<path>: <what is wrong>" for every violation.
inline void validate(const YAML::Node& value, const YAML::Node& schema, const std::string& path,
                     std::vector<std::string>& errors) {
  auto err = [&](const std::string& what) { errors.push_back(path + ": " + what); };
  const std::string type = yaml_type(value);
  if (schema["anyOf"]) {
    bool any = false;
    for (const auto& alt : schema["anyOf"]) {
      std::vector<std::string> e;
      validate(value, alt, path, e);
      any |= e.empty();
    }
    if (!any) err("matches none of anyOf (" + type + ")");
  }
  if (schema["type"]) {
    const std::string want = schema["type"].Scalar();
    const bool ok = want == type || (want == "number" && type == "integer");
    if (!ok) {
      err("is " + type + ", the schema wants " + want);
      return;
    }
  }
  if (schema["enum"]) {
    bool found = false;
    for (const auto& e : schema["enum"]) found |= value.IsScalar() && e.Scalar() == value.Scalar();
    if (!found) err("'" + (value.IsScalar() ? value.Scalar() : type) + "' is not one of the enum");
  }
  if (type == "string") {
    const std::string& s = value.Scalar();
    if (schema["maxLength"] && s.size() > schema["maxLength"].as<size_t>()) err("longer than maxLength");
    if (schema["minLength"] && s.size() < schema["minLength"].as<size_t>()) err("shorter than minLength");
    if (schema["pattern"] && !std::regex_search(s, std::regex(schema["pattern"].Scalar())))
      err("'" + s + "' does not match " + schema["pattern"].Scalar());
  }
  if (type == "integer" || type == "number") {
    const double d = std::stod(value.Scalar());
    if (schema["minimum"] && d < schema["minimum"].as<double>()) err("below minimum");
    if (schema["maximum"] && d > schema["maximum"].as<double>()) err("above maximum");
  }
  if (type == "array") {
    if (schema["maxItems"] && value.size() > schema["maxItems"].as<size_t>()) err("more items than maxItems");
    if (schema["minItems"] && value.size() < schema["minItems"].as<size_t>()) err("fewer items than minItems");
    if (schema["items"])
      for (size_t i = 0; i < value.size(); ++i) validate(value[i], schema["items"], path + "[" + std::to_string(i) + "]", errors);
  }
  if (type == "object") {
    if (schema["maxProperties"] && value.size() > schema["maxProperties"].as<size_t>()) err("more properties than maxProperties");
    if (schema["required"])
      for (const auto& r : schema["required"])
        if (!value[r.Scalar()]) err("required field " + r.Scalar() + " is missing");
    for (const auto& kv : value) {
      const std::string key = kv.first.Scalar();
      const std::string sub = path + "." + key;
      if (schema["properties"] && schema["properties"][key]) {
        validate(kv.second, schema["properties"][key], sub, errors);
      } else if (schema["additionalProperties"]) {
        validate(kv.second, schema["additionalProperties"], sub, errors);
      } else {
        errors.push_back(sub + ": not a field of the schema");
      }
    }
  }
}

}  // namespace allot::test
