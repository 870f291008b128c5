#pragma once
// Building blocks for reading YAML into specs with errors a person can act on. Every message has the form
//   <origin>:<line>: <what is wrong>; <what is allowed>
// Unknown keys are errors, and so are values of the wrong type: the helpers look at a node's type before
// converting it and never use yaml-cpp's throwing conversions. The public readers still run under guard(),
// so that whatever yaml-cpp throws becomes an Error with its line instead of crossing the module boundary.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot {

// Where a node came from, for messages. `path` names the node passed to a reader ("events[2].submit"; empty
// for a whole document) and `line` is the line of the key that holds it, which is where a person looks
// (yaml-cpp marks a block mapping at its first key, one line below).
struct ExpansionBudget;  // config/yaml_budget.h
struct YamlContext {
  YamlContext() = default;
  YamlContext(std::string origin_, std::string path_, int line_, std::shared_ptr<ExpansionBudget> budget_ = nullptr)
      : origin(std::move(origin_)), path(std::move(path_)), line(line_), budget(std::move(budget_)) {}
  std::string origin = "<input>";
  std::string path;
  int line = 0;  // 1-based; 0: use the node's own mark
  // What the readers of this document have built so far, shared by every context sub() makes from this one;
  // null: no document-wide bound (parse_nodes and the scenario reader make one). Not for a context that
  // outlives its document (a constant used for every request body): the budget would be shared by all of them.
  std::shared_ptr<ExpansionBudget> budget;
};

// Parses YAML text into one document (a Null node for an empty text). Syntax errors, a second document and a
// document too large once its aliases are expanded (config/yaml_budget.h) are Errors with their line.
Result<YAML::Node> load_yaml(const std::string& text, const YamlContext& ctx);

namespace config {

// A node together with the line to blame and the path to name in messages.
struct Val {
  YAML::Node node;
  int line = 0;      // 1-based; 0 when unknown
  std::string path;  // "events[2].submit.replicas"; empty for the document itself
};

int line_of(const YAML::Node& node);  // 1-based line of the node's mark; 0 when it has none
Val root(const YAML::Node& node, const YamlContext& ctx);      // the node a public reader was given
YamlContext sub(const YamlContext& ctx, const Val& v);         // the context to hand `v` to another reader
std::string describe(const YAML::Node& node);                  // "a list", "'abc'", "empty"
std::string name_of(const Val& v);                             // the path, or "the document"

Error fail(const YamlContext& ctx, int line, const std::string& what, const std::string& allowed);
Error fail(const YamlContext& ctx, const Val& v, const std::string& what, const std::string& allowed);
// An error of a rule that already says what is wrong and what is allowed (config/container_rules.h), placed at `v`:
// "<origin>:<line>: <v's path>: <message>".
Error located(const YamlContext& ctx, const Val& v, const Error& e);

// A mapping whose keys have been checked: each is a scalar, appears once and is one of `allowed`. A Null
// node (`key:` with nothing after it) reads as an empty mapping.
class Fields {
 public:
  static Result<Fields> open(const YamlContext& ctx, const Val& v, std::vector<std::string_view> allowed);
  std::optional<Val> get(std::string_view key) const;  // the value, with the line of its key
  Result<Val> need(const YamlContext& ctx, std::string_view key) const;  // like get; absent is an error
  bool has(std::string_view key) const { return get(key).has_value(); }
  const Val& self() const { return self_; }
  std::vector<std::string> keys() const;  // in file order

 private:
  Val self_;
  std::vector<std::pair<std::string, Val>> fields_;
};

// The items of a list, each with its own line and path "path[i]". Null reads as an empty list.
Result<std::vector<Val>> list_items(const YamlContext& ctx, const Val& v);

// The entries of a mapping with free-form keys (job names, label keys), in file order. Keys must be
// non-empty scalars and appear once. Null reads as an empty mapping.
struct Entry {
  std::string key;
  Val value;  // line: the key's line
};
Result<std::vector<Entry>> map_entries(const YamlContext& ctx, const Val& v);

// Scalars. Numbers must be plain (unquoted) scalars: `replicas: "2"` is a string, so it is rejected.
Result<std::string> read_text(const YamlContext& ctx, const Val& v);  // any scalar, may be empty
Result<std::string> read_name(const YamlContext& ctx, const Val& v);  // a non-empty scalar
// The name of a team, job, node or priority class, checked against the naming rule (core/model/spec.h).
Result<std::string> read_object_name(const YamlContext& ctx, const Val& v, NameKind kind);
// Checks a name read from `v` (or expanded from a host list there) against the naming rule.
Status check_object_name(const YamlContext& ctx, const Val& v, NameKind kind, const std::string& name);
Result<int64_t> read_int(const YamlContext& ctx, const Val& v, int64_t lo, int64_t hi);
Result<bool> read_bool(const YamlContext& ctx, const Val& v);
// A decimal number >= 0 and <= max_units, returned in units / `scale` (vCPU -> milli: scale 1000). With
// `exact`, digits finer than 1/scale are an error; without, the value rounds to the nearest 1/scale.
Result<int64_t> read_decimal(const YamlContext& ctx, const Val& v, int64_t scale, int64_t max_units, bool exact);
// One of `choices`, exactly as written there; returns its index.
Result<size_t> read_choice(const YamlContext& ctx, const Val& v, const std::vector<std::string_view>& choices);
// A mapping of scalars to scalars (labels, env); values may be empty strings but not missing.
Result<std::map<std::string, std::string>> read_string_map(const YamlContext& ctx, const Val& v);
// A host list ("gpu-[1-4]") expanded to names.
Result<std::vector<std::string>> read_hostlist(const YamlContext& ctx, const Val& v);
// An instance type the catalog knows; returns the canonical name (with the ml. prefix).
Result<std::string> read_instance_type(const YamlContext& ctx, const Val& v, const Catalog& catalog);

std::string join(const std::vector<std::string_view>& words);

// Runs a reader and turns whatever escapes it (yaml-cpp's exceptions, allocation failure) into an Error, so
// that no exception crosses the boundary of a public reader.
template <typename F>
auto guard(const YamlContext& ctx, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const YAML::Exception& e) {
    return fail(ctx, e.mark.is_null() ? ctx.line : e.mark.line + 1, "cannot read YAML: " + e.msg,
                "check the indentation, quoting and brackets");
  } catch (const std::exception& e) {
    return Error::internal(ctx.origin + ": " + e.what());
  }
}

}  // namespace config
}  // namespace allot
