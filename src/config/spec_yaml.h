#pragma once
// Readers of the scenario-format YAML pieces (DESIGN.md, "Scenario files") into the core's specs: nodes,
// user-defined instance types, the policy, teams and job specs. The scenario parser, `allot apply`,
// `allot submit` and the topology tools share them, so a section reads the same wherever it appears.
//
// Every reader checks what can be checked without a cluster: unknown keys, types, ranges, host lists and
// instance types (against the catalog it is given). Names that refer to other objects (a job's team, a
// priority class) are checked when the spec is applied. Errors read "<origin>:<line>: <what is wrong>;
// <what is allowed>", with the origin, path and key line taken from the YamlContext. No reader throws.
#include <string>
#include <vector>

#include "config/yaml_read.h"
#include "core/model/catalog.h"
#include "core/model/result.h"
#include "core/model/reservations.h"
#include "core/model/spec.h"

namespace allot {

// Limits that catch typos (an extra zero, a unit mix-up) long before the arithmetic could overflow.
inline constexpr int64_t kMaxInstances = 1'000'000;
inline constexpr int64_t kMaxAccelerators = 10'000'000;
inline constexpr int64_t kMaxVcpus = 100'000'000;
inline constexpr int64_t kMaxMemoryGib = int64_t{1} << 30;  // 1 EiB: Kubernetes' 1Ei is the most a manifest may ask
inline constexpr int64_t kMaxSeconds = 10'000'000'000;  // about 317 years
inline constexpr int64_t kMaxJobReplicas = 100'000;
// A job's command and environment reach execve(2), which refuses a single string over 128 KiB
// (MAX_ARG_STRLEN) and all of them together over ARG_MAX; these bounds keep well inside both.
inline constexpr size_t kMaxCommandArgs = 4096;
inline constexpr size_t kMaxCommandBytes = 128 * 1024;  // the arguments' bytes, one more for each terminator
inline constexpr size_t kMaxEnvEntries = 1024;
inline constexpr size_t kMaxEnvBytes = 128 * 1024;  // "NAME=value" and its terminator, summed

// --- nodes -------------------------------------------------------------------------------------------------

// The `cluster.nodes` list: entries {name (a host list, expanded), instance_type, instance_group, labels}.
// Instance types are stored by their canonical names; a name given twice is an error.
Result<std::vector<NodeSpec>> parse_nodes(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx);
// Node names for removal: a host list string, or a list of host list strings and node entries (of which
// only the name is used).
Result<std::vector<std::string>> parse_node_names(const YAML::Node& node, const YamlContext& ctx);
// A nodes YAML text: the `cluster.nodes` list itself, a mapping {nodes: [...]}, or a scenario-shaped
// mapping with cluster: {nodes: [...]} (its other sections are not read).
Result<std::vector<NodeSpec>> parse_nodes_text(const std::string& text, const Catalog& catalog, const std::string& origin);
Result<std::vector<NodeSpec>> load_nodes_file(const std::string& path, const Catalog& catalog);
// Writes nodes as a `cluster.nodes` list that parse_nodes reads back to the same specs (one entry per node).
std::string nodes_to_yaml(const std::vector<NodeSpec>& nodes);

// --- instance types -----------------------------------------------------------------------------------------

// User-defined types: {name, accelerator_kind (none|nvidia-gpu|neuron), accelerator_model, accelerators,
// accelerator_memory_gib, neuron_cores_per_accelerator, vcpus, memory_gib, efa_interfaces, numa_domains
// (a count; accelerators and vCPUs split evenly), ultraserver_size}. Each type is added to `catalog` as it is
// read, so later sections may name it; on error the catalog keeps the types read before the bad one.
// A name the catalog already has (a built-in type) is taken with the same figures, or with
// `replaces_builtin: true` (then its figures replace the built-in ones); otherwise the entry is refused, naming
// the figures that differ.
Result<std::vector<InstanceType>> parse_instance_types(const YAML::Node& list, Catalog& catalog, const YamlContext& ctx);
// The built-in catalog plus the `instance_types` section of the policy file at `path` (empty: built-in only),
// for `allot server --instance-types` and `allot agent --instance-types`. A file without the section, or a bad
// entry, is an error naming the file and the entry. The catalog's origin says so, for errors that list its types.
Result<Catalog> load_catalog(const std::string& path);

// --- policy and teams ---------------------------------------------------------------------------------------

// {task_prioritization, idle_compute, idle_pool, priority_classes: [{name, weight}], min_runtime,
// starvation_threshold}; absent keys keep PolicySpec's defaults.
Result<PolicySpec> parse_policy(const YAML::Node& node, const YamlContext& ctx);
// {name, fair_share_weight, allocation: [{instance_type, instances | accelerators, vcpu, memory_gib}],
// sharing: {strategy, borrow_limit}, preempt_team_tasks, containers: {host_paths, capabilities,
// registry_auth_file}}.
Result<TeamSpec> parse_team(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx);
// A list of teams; a name given twice is an error.
Result<std::vector<TeamSpec>> parse_teams(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx);

// --- jobs ---------------------------------------------------------------------------------------------------

// A scenario `submit` entry (the `allot submit` job spec): {name, team, priority, replicas, instance_type,
// per_replica, topology, duration, max_retries, checkpoint_interval, command, env, plan, image, image_pull_policy,
// shm_size_gib, volumes: [{host_path, path, read_only}], args, completion_index, array: {count, parallel}} (the container keys:
// config/container_rules.h; `args`, a list, needs an image), or `pod_sets: [{name,
// replicas, instance_type, per_replica, topology}]` instead of the single inline pod set (named "main").
// A string `command` runs through /bin/sh -c; a list is the argv itself. Commands and environments are
// bounded (kMaxCommand*, kMaxEnv*); arguments and values cannot hold a NUL byte, and environment names are
// letters, digits, '_', '-' and '.', not beginning with a digit (as Kubernetes has them).
Result<JobSpec> parse_job_spec(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx);

// --- capacity plans ------------------------------------------------------------------------------------------

// The `plans:` list: {name, instance_type, count, start, end, grace, team, labels}; start and end are seconds
// (virtual in scenarios and replays), grace 0..end-start, team optional (no owner: the capacity joins the idle
// pool), labels the topology labels of the plan's nodes. A name given twice is an error.
Result<std::vector<PlanSpec>> parse_plans(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx);
// One entry of that list (POST /v1/plans, where start and end are Unix seconds).
Result<PlanSpec> parse_plan(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx);
// A plans file (`allot sim replay --plans FILE`): the list itself, or a mapping {plans: [...]}.
Result<std::vector<PlanSpec>> load_plans_file(const std::string& path, const Catalog& catalog);
// The `reservations:` list (core/model/reservations.h): {name, team, user, nodes | count + instance_type, start, end};
// nodes a host list or a list of them; start and end seconds (virtual in scenarios). A name given twice is an
// error. Whether the team and nodes exist is the core's check (add_reservation).
Result<std::vector<ReservationSpec>> parse_reservations(const YAML::Node& list, const Catalog& catalog, const YamlContext& ctx);
// One entry of that list (PUT /v1/reservations/NAME, where start and end are Unix seconds).
Result<ReservationSpec> parse_reservation(const YAML::Node& node, const Catalog& catalog, const YamlContext& ctx);

// --- amounts ------------------------------------------------------------------------------------------------

// What a mapping of amounts is for: which keys it may hold and which combinations are errors.
enum class AmountUse {
  kAllocation,  // instances, or accelerators / vcpu / memory_gib; at least one
  kReplica,     // accelerators / vcpu / memory_gib, or whole_node; at least one
  kResources,   // accelerators / vcpu / memory_gib, any subset (expectations, reports)
};
std::vector<std::string_view> amount_keys(AmountUse use);

namespace config {
// Reads the amount keys of an opened mapping (the caller opened it with amount_keys(use) plus its own keys).
// vcpu may be fractional to a thousandth (0.5 -> 500 milli); memory_gib may be fractional and rounds to MiB.
Result<AmountSpec> read_amount(const YamlContext& ctx, const Fields& fields, AmountUse use);
}  // namespace config

}  // namespace allot
