// The YAML readers of config/: what they accept, and that every kind of mistake is reported with the line
// that holds it and what would be allowed instead.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config/policy_json.h"
#include "config/spec_yaml.h"
#include "config/yaml_stream.h"

// Expected specs are written with designated initializers; g++ 12 warns about every member they leave at its
// default, which is the point of writing them that way.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace allot::config_yaml_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

YamlContext ctx_for(const std::string& path = "") {
  YamlContext ctx;
  ctx.origin = "t.yaml";
  ctx.path = path;
  return ctx;
}

YAML::Node doc(const std::string& text) {
  auto d = load_yaml(text, ctx_for());
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
  return d.ok() ? *d : YAML::Node();
}

Result<std::vector<NodeSpec>> nodes(const std::string& text) {
  return parse_nodes(doc(text), Catalog::builtin(), ctx_for("nodes"));
}
Result<std::vector<TeamSpec>> teams(const std::string& text) {
  return parse_teams(doc(text), Catalog::builtin(), ctx_for("teams"));
}
Result<JobSpec> job(const std::string& text) { return parse_job_spec(doc(text), Catalog::builtin(), ctx_for("submit")); }
Result<PolicySpec> policy(const std::string& text) { return parse_policy(doc(text), ctx_for("policy")); }

// --- nodes -------------------------------------------------------------------------------------------------

TEST(ConfigNodes, HostListsExpandAndTypesAreCanonical) {
  auto r = nodes(
      "- name: gpu-[1-3]\n"
      "  instance_type: g5.8xlarge\n"
      "  instance_group: workers\n"
      "  labels: {network-node-layer-3: nn-3a, rack: 7}\n"
      "- {name: 'cpu-[01-02]', instance_type: ml.m5.xlarge}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].name, "gpu-1");
  EXPECT_EQ((*r)[2].name, "gpu-3");
  EXPECT_EQ((*r)[2].instance_type, "ml.g5.8xlarge");
  EXPECT_EQ((*r)[2].instance_group, "workers");
  EXPECT_EQ((*r)[2].labels.at("rack"), "7");
  EXPECT_EQ((*r)[3].name, "cpu-01");
  EXPECT_EQ((*r)[4].name, "cpu-02");
  EXPECT_TRUE((*r)[4].labels.empty());
}

TEST(ConfigNodes, DuplicateNamesNameBothLines) {
  auto r = nodes(
      "- {name: gpu-[1-3], instance_type: ml.g5.8xlarge}\n"
      "- {name: gpu-2, instance_type: ml.g5.8xlarge}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, StartsWith("t.yaml:2: node gpu-2 is listed twice (first at line 1)"));
}

TEST(ConfigNodes, UnknownInstanceTypeListsTheKnownOnes) {
  auto r = nodes("- name: n-1\n  instance_type: ml.zz9.huge\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, StartsWith("t.yaml:2: nodes[0].instance_type 'ml.zz9.huge' is not a known instance type"));
  EXPECT_THAT(r.error().message, HasSubstr("known types: ml.c5.12xlarge, "));
  EXPECT_THAT(r.error().message, HasSubstr("ml.p5.48xlarge"));
}

TEST(ConfigNodes, UnknownKeyBadHostListAndMissingName) {
  auto unknown = nodes("- name: n-1\n  instance_type: ml.g5.8xlarge\n  lables: {a: b}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "t.yaml:3: unknown key 'lables' in nodes[0]; allowed keys: name, instance_type, instance_group, labels");
  auto range = nodes("- {name: 'gpu-[3-1', instance_type: ml.g5.8xlarge}\n");
  ASSERT_FALSE(range.ok());
  EXPECT_THAT(range.error().message, StartsWith("t.yaml:1: nodes[0].name 'gpu-[3-1' is not a valid host list"));
  auto missing = nodes("- {instance_type: ml.g5.8xlarge}\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, StartsWith("t.yaml:1: nodes[0] has no 'name'; it is required"));
  auto labels = nodes("- name: n-1\n  instance_type: ml.g5.8xlarge\n  labels: [a, b]\n");
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(labels.error().message, StartsWith("t.yaml:3: nodes[0].labels is a list, not a mapping"));
}

TEST(ConfigNodes, WritesWhatItReadsBack) {
  std::vector<NodeSpec> in = {
      {"gpu-1", "ml.p5.48xlarge", "train", {{"topology.k8s.aws/network-node-layer-1", "nn-1"}, {"zone", "us-east-1a"}}},
      {"cpu-007", "ml.m5.xlarge", "", {{"empty", ""}, {"flag", "true"}, {"odd: key", "a, [b]"}}},
  };
  std::string text = nodes_to_yaml(in);
  auto back = parse_nodes_text(text, Catalog::builtin(), "out.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  EXPECT_EQ(*back, in);
  auto empty = parse_nodes_text(nodes_to_yaml({}), Catalog::builtin(), "empty.yaml");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_TRUE(empty->empty());
}

TEST(ConfigNodes, NodesFileShapes) {
  const Catalog c = Catalog::builtin();
  for (const char* text : {"- {name: n-[1-2], instance_type: ml.g5.2xlarge}\n",
                           "nodes:\n  - {name: n-[1-2], instance_type: ml.g5.2xlarge}  # a comment [x]\n",
                           "name: s\nteams: []\ncluster:\n  nodes:\n    - {name: n-[1-2], instance_type: ml.g5.2xlarge}\n"}) {
    auto r = parse_nodes_text(text, c, "nodes.yaml");
    ASSERT_TRUE(r.ok()) << text << r.error().message;
    EXPECT_EQ(r->size(), 2u) << text;
  }
  auto extra = parse_nodes_text("nodes: []\nteams: []\n", c, "nodes.yaml");
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.error().message, "nodes.yaml:2: unknown key 'teams' in the document; allowed keys: nodes");
  auto empty = parse_nodes_text("# nothing\n", c, "nodes.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error().message, StartsWith("nodes.yaml: the file is empty; "));
  auto scalar = parse_nodes_text("hello\n", c, "nodes.yaml");
  ASSERT_FALSE(scalar.ok());
  EXPECT_THAT(scalar.error().message, StartsWith("nodes.yaml:1: the document is 'hello'; "));
}

TEST(ConfigNodes, LoadsFilesAndReportsMissingOnes) {
  std::string path = ::testing::TempDir() + "/allot_nodes_test.yaml";
  {
    std::ofstream out(path);
    out << "- {name: n-1, instance_type: ml.trn2.48xlarge}\n";
  }
  auto r = load_nodes_file(path, Catalog::builtin());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].instance_type, "ml.trn2.48xlarge");
  std::remove(path.c_str());
  auto missing = load_nodes_file(path, Catalog::builtin());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("cannot open"));
}

TEST(ConfigNodes, NamesForRemoval) {
  auto r = parse_node_names(doc("- gpu-[1-2]\n- {name: cpu-1}\n- {name: 'x[1-2]', instance_type: ml.m5.xlarge}\n"), ctx_for("rm"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::vector<std::string>{"gpu-1", "gpu-2", "cpu-1", "x1", "x2"}));
  auto one = parse_node_names(doc("gpu-[7-8]"), ctx_for("rm"));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 2u);
}

// --- YAML syntax ----------------------------------------------------------------------------------------------

TEST(ConfigYaml, SyntaxErrorsAndSecondDocumentsHaveLines) {
  auto bad = load_yaml("a: 1\nb: [1, 2\nc: 3\n", ctx_for());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, StartsWith("t.yaml:3: cannot read YAML: "));
  auto two = load_yaml("a: 1\n---\nb: 2\n", ctx_for());
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(two.error().message, StartsWith("t.yaml:2: a second YAML document starts here"));
}

TEST(ConfigYaml, StrayCommaIsAnErrorNotAHang) {
  // yaml-cpp 0.7's LoadAll loops forever on these, allocating as it goes (found by fuzz/k8s_manifest_fuzz.cpp).
  for (const char* text : {",", " ,\n", "- a\n,", "{a: 1}\n,", "\"a\",", "# c\n,\n"}) {
    auto r = load_yaml(text, ctx_for());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.error().message, HasSubstr("cannot read YAML: unexpected ','")) << text;
  }
  auto after_document = load_yaml("- a\n,", ctx_for());
  ASSERT_FALSE(after_document.ok());
  EXPECT_THAT(after_document.error().message, StartsWith("t.yaml:2: "));
  EXPECT_FALSE(load_yaml("a: 1\n---\n,", ctx_for()).ok());
}

TEST(ConfigYaml, SeveralDocumentsWithoutTheLoadAllHang) {
  // `allot submit` reads every document of a file; the same stray ',' must be an error there too.
  for (const char* text : {",", "- a\n,", "a: 1\n---\n,"}) {
    auto r = load_yaml_documents(text, ctx_for());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.error().message, HasSubstr("unexpected ','")) << text;
  }
  auto three = load_yaml_documents("a: 1\n---\nb: 2\n---\nc: 3\n", ctx_for());
  ASSERT_TRUE(three.ok()) << three.error().message;
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ((*three)[2]["c"].as<int>(), 3);
}

TEST(ConfigYaml, TextIsUtf8AndNamesHaveNoControlCharacters) {
  // Found by fuzz/nodes_fuzz.cpp and fuzz/http_body_fuzz.cpp: such text was accepted, and a node named so through
  // POST /v1/nodes could not be written to the journal, which failed every change of its group commit.
  auto raw = nodes("- {name: gpu-1, instance_type: ml.g5.8xlarge, labels: {\"a\x82" "b\": s}}\n");
  ASSERT_FALSE(raw.ok());
  EXPECT_THAT(raw.error().message, HasSubstr("a key in nodes[0].labels is not valid UTF-8 (byte 2 of 3)"));
  auto surrogate = job("name: j\xed\xa0\x80\nteam: t\nper_replica: {vcpu: 1}\n");  // U+D800 as if it were UTF-8
  ASSERT_FALSE(surrogate.ok());
  EXPECT_THAT(surrogate.error().message, HasSubstr("submit.name is not valid UTF-8 (byte 2 of 4)"));
  auto tab = job("name: \"j\\tk\"\nteam: t\nper_replica: {vcpu: 1}\n");
  ASSERT_FALSE(tab.ok());
  // The name rule (DNS-label-like) refuses it first, escaping the byte rather than repeating it.
  EXPECT_THAT(tab.error().message, HasSubstr("submit.name: job name 'j\\x09k' has a control character"));
  auto escape = job("name: j\nteam: t\nper_replica: {vcpu: 1}\nenv: {A: \"\\e[2J\"}\n");
  ASSERT_FALSE(escape.ok());
  EXPECT_THAT(escape.error().message, HasSubstr("submit.env.A contains the control character U+001B"));
  // Commands may span lines and hold tabs.
  auto script = job("name: j\nteam: t\nper_replica: {vcpu: 1}\ncommand: |\n  echo a\n  echo\tb\n");
  ASSERT_TRUE(script.ok()) << script.error().message;
  // Messages quote the bad text without its bad bytes.
  auto quoted = job("name: j\nteam: t\nper_replica: {vcpu: 1}\nreplicas: \"\x01\\u00e9\"\n");
  ASSERT_FALSE(quoted.ok());
  EXPECT_THAT(quoted.error().message, HasSubstr("the quoted string \"?\u00e9\""));
}

TEST(ConfigYaml, HostListsMayStandUnquotedInFlowCollections) {
  // Strict YAML rejects `[` inside a plain scalar of a flow collection; people write host lists that way anyway.
  auto d = load_yaml("a: {name: r[1-2]-n[01,03], other: [x[1-2], 'y[3]', \"z[4]\", [1, 2]]}  # c[1]\nb: gpu-[1-2]\n", ctx_for());
  ASSERT_TRUE(d.ok()) << d.error().message;
  const YAML::Node& n = *d;
  EXPECT_EQ(n["a"]["name"].Scalar(), "r[1-2]-n[01,03]");
  EXPECT_EQ(n["a"]["other"][0].Scalar(), "x[1-2]");
  EXPECT_EQ(n["a"]["other"][1].Scalar(), "y[3]");
  EXPECT_EQ(n["a"]["other"][3].size(), 2u);
  EXPECT_EQ(n["b"].Scalar(), "gpu-[1-2]");
  auto still_bad = load_yaml("a: {b: g[1-2], c: [1, 2}\n", ctx_for());
  ASSERT_FALSE(still_bad.ok());
  EXPECT_THAT(still_bad.error().message, StartsWith("t.yaml:"));
}

// --- instance types -------------------------------------------------------------------------------------------

TEST(ConfigInstanceTypes, UserTypesJoinTheCatalog) {
  Catalog c = Catalog::builtin();
  auto r = parse_instance_types(doc("- name: x1.big\n"
                                    "  accelerator_kind: nvidia-gpu\n"
                                    "  accelerator_model: H100\n"
                                    "  accelerators: 8\n"
                                    "  vcpus: 96\n"
                                    "  memory_gib: 1024\n"
                                    "  numa_domains: 2\n"
                                    "  ultraserver_size: 4\n"
                                    "- {name: cpu.tiny, vcpus: 2, memory_gib: 4}\n"),
                                c, ctx_for("instance_types"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "ml.x1.big");
  ASSERT_EQ((*r)[0].numa.size(), 2u);
  EXPECT_EQ((*r)[0].numa[1].accelerators, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ((*r)[0].numa[1].first_vcpu, 48);
  EXPECT_EQ((*r)[1].accelerator_kind, AcceleratorKind::kNone);
  EXPECT_TRUE(c.find("x1.big").has_value());
  auto n = parse_nodes(doc("- {name: a, instance_type: x1.big}\n"), c, ctx_for("nodes"));
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ((*n)[0].instance_type, "ml.x1.big");
}

TEST(ConfigInstanceTypes, MistakesAreReported) {
  Catalog c = Catalog::builtin();
  auto dup = parse_instance_types(doc("- {name: p5.48xlarge, vcpus: 2, memory_gib: 4}\n"), c, ctx_for("instance_types"));
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.error().message, StartsWith("t.yaml:1: instance type ml.p5.48xlarge is built in with other figures: "));
  auto kind = parse_instance_types(doc("- {name: a, accelerators: 2, vcpus: 2, memory_gib: 4}\n"), c, ctx_for("instance_types"));
  ASSERT_FALSE(kind.ok());
  EXPECT_THAT(kind.error().message, HasSubstr("set accelerator_kind: nvidia-gpu or neuron"));
  auto bad_kind = parse_instance_types(doc("- {name: a, accelerator_kind: tpu, vcpus: 2, memory_gib: 4}\n"), c,
                                       ctx_for("instance_types"));
  ASSERT_FALSE(bad_kind.ok());
  EXPECT_THAT(bad_kind.error().message, HasSubstr("allowed: none, nvidia-gpu, neuron"));
  auto no_vcpus = parse_instance_types(doc("- {name: a, memory_gib: 4}\n"), c, ctx_for("instance_types"));
  ASSERT_FALSE(no_vcpus.ok());
  EXPECT_THAT(no_vcpus.error().message, HasSubstr("has no 'vcpus'"));
}

// A policy file's type with a built-in type's name: the same figures are taken as they are; other figures only
// with replaces_builtin: true (issue 28 item 16).
TEST(ConfigInstanceTypes, BuiltInTypesAreShadowedOnlyWhenStated) {
  Catalog c = Catalog::builtin();
  const TypeId c5 = *c.find("ml.c5.4xlarge");
  auto same = parse_instance_types(doc("- {name: c5.4xlarge, vcpus: 16, memory_gib: 32}\n"), c, ctx_for("instance_types"));
  ASSERT_TRUE(same.ok()) << same.error().message;
  auto other = parse_instance_types(doc("- {name: ml.c5.4xlarge, vcpus: 8, memory_gib: 64}\n"), c, ctx_for("instance_types"));
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.error().message, HasSubstr("instance type ml.c5.4xlarge is built in with other figures: vcpus 8 (not 16), "
                                               "memory_gib 64 (not 32)"));
  EXPECT_THAT(other.error().message, HasSubstr("replaces_builtin: true"));
  EXPECT_EQ(c.at(c5).vcpus, 16);  // refused: unchanged
  auto stated = parse_instance_types(doc("- {name: ml.c5.4xlarge, vcpus: 8, memory_gib: 64, replaces_builtin: true}\n"), c,
                                     ctx_for("instance_types"));
  ASSERT_TRUE(stated.ok()) << stated.error().message;
  EXPECT_EQ(*c.find("ml.c5.4xlarge"), c5);  // replaced in place: the same TypeId
  EXPECT_EQ(c.at(c5).vcpus, 8);
  EXPECT_EQ(c.at(c5).memory_gib, 64);
  auto nothing = parse_instance_types(doc("- {name: lab.x, vcpus: 2, memory_gib: 4, replaces_builtin: true}\n"), c,
                                      ctx_for("instance_types"));
  ASSERT_FALSE(nothing.ok());
  EXPECT_THAT(nothing.error().message, HasSubstr("ml.lab.x is not built in, so it replaces nothing"));
  auto twice = parse_instance_types(doc("- {name: lab.y, vcpus: 2, memory_gib: 4}\n- {name: ml.lab.y, vcpus: 2, memory_gib: 4}\n"),
                                    c, ctx_for("instance_types"));
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.error().message, HasSubstr("t.yaml:2: instance type ml.lab.y is defined twice in this list"));
}

// load_catalog: what `allot server --instance-types FILE` and `allot agent --instance-types FILE` read.
TEST(ConfigInstanceTypes, TheCatalogOfAPolicyFile) {
  auto builtin = load_catalog("");
  ASSERT_TRUE(builtin.ok());
  EXPECT_EQ(builtin->size(), Catalog::builtin().size());
  const std::string path = ::testing::TempDir() + "/policy-types.yaml";
  auto write = [&path](const std::string& text) { std::ofstream(path) << text; };
  write("policy: {idle_pool: true}\nteams: []\ninstance_types:\n  - {name: lab.gpu4, accelerator_kind: nvidia-gpu, accelerators: 4, "
        "vcpus: 32, memory_gib: 256, numa_domains: 2}\n");
  auto c = load_catalog(path);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->size(), Catalog::builtin().size() + 1);
  const InstanceType& t = c->at(*c->find("lab.gpu4"));
  EXPECT_EQ(t.accelerators, 4);
  EXPECT_EQ(t.numa.size(), 2u);
  // An unknown type's error says where the known ones come from (the client's catalog may differ from the server's);
  // a catalog that says nothing (a scenario's) words it as before.
  auto unknown = c->lookup("ml.nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("unknown instance type 'ml.nope'; known types (built in, and the instance_types of " +
                                                 path + " (--instance-types)): "));
  EXPECT_THAT(unknown.error().message, HasSubstr("ml.lab.gpu4"));
  EXPECT_THAT(builtin->lookup("ml.nope").error().message, HasSubstr("known types (built in; no --instance-types file adds any): "));
  EXPECT_THAT(Catalog::builtin().lookup("ml.nope").error().message, HasSubstr("'ml.nope'; known types: ml.c5.12xlarge, "));
  write("policy: {idle_pool: true}\n");
  auto none = load_catalog(path);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message, HasSubstr("the file has no instance_types section"));
  write("instance_types:\n  - {name: ml.p5.48xlarge, vcpus: 192, memory_gib: 1024, accelerator_kind: nvidia-gpu, accelerators: 8}\n");
  auto shadow = load_catalog(path);
  ASSERT_FALSE(shadow.ok());
  EXPECT_THAT(shadow.error().message, HasSubstr(path + ":2: instance type ml.p5.48xlarge is built in with other figures"));
  EXPECT_FALSE(load_catalog(path + ".missing").ok());
  std::remove(path.c_str());
}

// --- policy ---------------------------------------------------------------------------------------------------

TEST(ConfigPolicy, DefaultsAndValues) {
  auto d = policy("{}");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, PolicySpec{});
  auto p = policy(
      "task_prioritization: task-ranking\n"
      "idle_compute: fcfs\n"
      "idle_pool: true\n"
      "priority_classes:\n"
      "  - {name: inference, weight: 100}\n"
      "  - {name: batch}\n"
      "min_runtime: 300\n"
      "starvation_threshold: 3600\n");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->task_prioritization, TaskPrioritization::kTaskRanking);
  EXPECT_EQ(p->idle_compute, IdleCompute::kFcfs);
  EXPECT_TRUE(p->idle_pool);
  EXPECT_EQ(p->priority_classes, (std::vector<PriorityClassSpec>{{"inference", 100}, {"batch", 0}}));
  EXPECT_EQ(p->min_runtime_s, 300);
  EXPECT_EQ(p->starvation_threshold_s, 3600);
}

// The policy's closed sets have one spelling each (core/model/spec.h's tables): every value's name reads back as itself
// in YAML and by parse_*, and nothing else does.
TEST(ConfigPolicy, EachChoiceHasOneSpellingThatReadsBack) {
  for (TaskPrioritization t : kTaskPrioritizations) {
    EXPECT_EQ(parse_task_prioritization(task_prioritization_name(t)), t);
    auto p = policy(std::string("task_prioritization: ") + task_prioritization_name(t) + "\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->task_prioritization, t);
  }
  for (IdleCompute i : kIdleComputes) {
    EXPECT_EQ(parse_idle_compute(idle_compute_name(i)), i);
    auto p = policy(std::string("idle_compute: ") + idle_compute_name(i) + "\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->idle_compute, i);
  }
  EXPECT_FALSE(parse_task_prioritization("FCFS"));
  EXPECT_FALSE(parse_idle_compute("fair"));
}

TEST(ConfigPolicy, MistakesAreReported) {
  auto choice = policy("idle_compute: fair\n");
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.error().message, "t.yaml:1: policy.idle_compute is 'fair'; allowed: fair-share, fcfs");
  auto dup = policy("priority_classes:\n  - {name: a, weight: 1}\n  - {name: a, weight: 2}\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.error().message, StartsWith("t.yaml:3: priority class a is defined twice (first at line 2)"));
  auto weight = policy("priority_classes:\n  - {name: a, weight: 101}\n");
  ASSERT_FALSE(weight.ok());
  EXPECT_EQ(weight.error().message, "t.yaml:2: policy.priority_classes[0].weight is 101; allowed: an integer 0..100");
  auto negative = policy("min_runtime: -5\n");
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.error().message, StartsWith("t.yaml:1: policy.min_runtime is -5; allowed: an integer 0.."));
  auto pool = policy("idle_pool: maybe\n");
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.error().message, "t.yaml:1: policy.idle_pool is 'maybe', not a boolean; allowed: true or false");
}

// Cohort groups (docs/teams-and-policy.md, "Groups"): read with their keys, refused with the line, and written by
// the one policy writer in keys the reader takes back to the same groups (the API and the journal use it).
TEST(ConfigPolicy, GroupsReadRefuseAndRoundTrip) {
  auto p = policy(
      "groups:\n"
      "  - {name: research, parent: org, lend_limit: 50}\n"
      "  - {name: org}\n"
      "  - name: prod\n"
      "    parent: org\n"
      "    allocation: [{instance_type: ml.g5.8xlarge, instances: 1}, {instance_type: ml.p5.48xlarge, vcpu: 1.5, memory_gib: 0.25}]\n"
      "    borrow_limit: 25\n"
      "    fair_share_weight: 3\n");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->groups.size(), 3u);
  EXPECT_EQ(p->groups[0], (GroupSpec{.name = "research", .parent = "org", .allocation = {}, .borrow_limit = {}, .lend_limit = 50}));
  EXPECT_EQ(p->groups[1], GroupSpec{.name = "org"});
  EXPECT_EQ(p->groups[2].borrow_limit, 25);
  EXPECT_EQ(p->groups[2].fair_share_weight, 3);
  ASSERT_EQ(p->groups[2].allocation.size(), 2u);
  EXPECT_EQ(p->groups[2].allocation[1].amount, (AmountSpec{.vcpu_milli = 1500, .memory_mib = 256}));
  const nlohmann::json written = config::policy_json(*p);
  auto back = policy(written.dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->groups, p->groups);
  EXPECT_EQ(config::groups_from_json(written), p->groups);
  EXPECT_FALSE(config::policy_json(PolicySpec{}).contains("groups")) << "policies without groups are written as before";

  auto bad = [&](const std::string& text, const std::string& message) {
    auto r = policy(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message, message);
  };
  bad("groups:\n  - {name: a}\n  - {name: a}\n", "t.yaml:3: group a is defined twice (first at line 2); give each group once");
  bad("groups:\n  - {name: a}\n  - {name: b, parent: c}\n",
      "t.yaml:3: group b: parent c is not a group; groups: a, b");
  bad("groups:\n  - {name: a, parent: b}\n  - {name: b, parent: a}\n",
      "t.yaml:2: groups form a cycle: a > b > a; a group may not be its own ancestor");
  bad("groups:\n  - {name: a, lend_limit: 101}\n", "t.yaml:2: policy.groups[0].lend_limit is 101; allowed: an integer 0..100");
  bad("groups:\n  - {name: a, weight: 1}\n",
      "t.yaml:2: unknown key 'weight' in policy.groups[0]; allowed keys: name, parent, allocation, borrow_limit, lend_limit, "
      "fair_share_weight");
  auto t = teams("- {name: a, group: research}\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ((*t)[0].group, "research");
}

// --- teams and amounts ------------------------------------------------------------------------------------------

TEST(ConfigTeams, FullTeamAndDefaults) {
  auto r = teams(
      "- name: team-a\n"
      "  fair_share_weight: 10\n"
      "  allocation:\n"
      "    - {instance_type: ml.g5.8xlarge, instances: 1}\n"
      "    - {instance_type: p5.48xlarge, accelerators: 2, vcpu: 0.5, memory_gib: 0.25}\n"
      "  sharing: {strategy: DontLend, borrow_limit: 200}\n"
      "  preempt_team_tasks: Never\n"
      "- name: team-b\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  const TeamSpec& a = (*r)[0];
  EXPECT_EQ(a.fair_share_weight, 10);
  ASSERT_EQ(a.allocation.size(), 2u);
  EXPECT_EQ(a.allocation[0], (AllocationSpec{"ml.g5.8xlarge", AmountSpec{.instances = 1}}));
  EXPECT_EQ(a.allocation[1].instance_type, "ml.p5.48xlarge");
  EXPECT_EQ(a.allocation[1].amount, (AmountSpec{.accelerators = 2, .vcpu_milli = 500, .memory_mib = 256}));
  EXPECT_EQ(a.strategy, SharingStrategy::kDontLend);
  EXPECT_EQ(a.borrow_limit, 200);
  EXPECT_EQ(a.preempt_team_tasks, PreemptTeamTasks::kNever);
  EXPECT_EQ((*r)[1], TeamSpec{.name = "team-b"});  // the documented defaults
}

TEST(ConfigTeams, MistakesAreReported) {
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {"- name: a\n  sharing: {strategy: Borrow}\n",
       "t.yaml:2: teams[0].sharing.strategy is 'Borrow'; allowed: LendAndBorrow, Lend, DontLend"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge, instances: 1, accelerators: 1}\n",
       "t.yaml:3: teams[0].allocation[0] gives instances together with accelerators, vcpu or memory_gib; "
       "give either instances or accelerators/vcpu/memory_gib"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge}\n",
       "t.yaml:3: teams[0].allocation[0] gives no amount; give instances, accelerators, vcpu or memory_gib"},
      {"- name: a\n- name: b\n- name: a\n", "t.yaml:3: team a is defined twice (first at line 1); team names must be unique"},
      {"- name: a\n  fair_share_weight: 101\n", "t.yaml:2: teams[0].fair_share_weight is 101; allowed: an integer 0..100"},
      {"- name: a\n  sharing: {borrow_limit: 10001}\n",
       "t.yaml:2: teams[0].sharing.borrow_limit is 10001; allowed: an integer 0..10000"},
      {"- name: a\n  preempt_team_tasks: Always\n", "t.yaml:2: teams[0].preempt_team_tasks is 'Always'; allowed: LowerPriority, Never"},
      {"- name: a\n  weight: 3\n",
       "t.yaml:2: unknown key 'weight' in teams[0]; allowed keys: name, fair_share_weight, allocation, sharing, preempt_team_tasks, containers, "
       "default_request, default_time_limit, max_time_limit, time_limit_resets_on_restart, user_limits, group"},
      {"- name: a\n  allocation: {instance_type: ml.g5.8xlarge, instances: 1}\n",
       "t.yaml:2: teams[0].allocation is a mapping, not a list; write a list ([a, b] or - items)"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge, instances: -1}\n",
       "t.yaml:3: teams[0].allocation[0].instances is -1; allowed: an integer 0..1000000"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge, accelerators: 100000000}\n",
       "t.yaml:3: teams[0].allocation[0].accelerators is 100000000; allowed: an integer 0..10000000"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge, vcpu: 0.0005}\n",
       "t.yaml:3: teams[0].allocation[0].vcpu is '0.0005', finer than 1/1000; allowed: a number 0..100000000 with at "
       "most 3 decimals, like 2 or 0.5"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge, memory_gib: abc}\n",
       "t.yaml:3: teams[0].allocation[0].memory_gib is 'abc', not a number; allowed: a number 0..1073741824, like 2 or 0.5"},
      {"- name: a\n  allocation:\n    - {instance_type: ml.g5.8xlarge, instances: 1}\n    - {instance_type: g5.8xlarge, instances: 2}\n",
       "t.yaml:4: instance type ml.g5.8xlarge appears twice in teams[0].allocation (first at line 3); give one entry per "
       "instance type"},
      {"- {fair_share_weight: 1}\n", "t.yaml:1: teams[0] has no 'name'; it is required"},
  };
  for (const Case& c : cases) {
    auto r = teams(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().message, c.message) << c.text;
  }
  auto unknown = teams("- name: a\n  allocation:\n    - {instance_type: ml.nope, instances: 1}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, StartsWith("t.yaml:3: teams[0].allocation[0].instance_type 'ml.nope' is not a known "
                                                  "instance type; known types: ml.c5.12xlarge, "));
}

// --- jobs -----------------------------------------------------------------------------------------------------

TEST(ConfigJobs, InlinePodSetWithEverything) {
  auto r = job(
      "name: a-1\n"
      "team: team-a\n"
      "priority: training\n"
      "replicas: 4\n"
      "instance_type: g5.8xlarge\n"
      "per_replica: {accelerators: 1, vcpu: 2.5, memory_gib: 16}\n"
      "topology: {preferred: network-node-layer-3, slice: {level: ultraserver, size: 2}, exclusive: zone}\n"
      "duration: 3600\n"
      "max_retries: 2\n"
      "checkpoint_interval: 600\n"
      "command: python train.py --lr 0.1\n"
      "env: {A: '1', B: ''}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "a-1");
  EXPECT_EQ(r->team, "team-a");
  EXPECT_EQ(r->priority, "training");
  ASSERT_EQ(r->pod_sets.size(), 1u);
  const PodSetSpec& ps = r->pod_sets[0];
  EXPECT_EQ(ps.name, "main");
  EXPECT_EQ(ps.replicas, 4);
  EXPECT_EQ(ps.instance_type, "ml.g5.8xlarge");
  EXPECT_EQ(ps.per_replica, (AmountSpec{.accelerators = 1, .vcpu_milli = 2500, .memory_mib = 16384}));
  EXPECT_EQ(ps.topology, (TopologySpec{.preferred = "network-node-layer-3", .slice = SliceSpec{"ultraserver", 2}, .exclusive = "zone"}));
  EXPECT_EQ(r->duration_s, 3600);
  EXPECT_EQ(r->max_retries, 2);
  EXPECT_EQ(r->checkpoint_interval_s, 600);
  EXPECT_EQ(r->command, (std::vector<std::string>{"/bin/sh", "-c", "python train.py --lr 0.1"}));
  EXPECT_EQ(r->env, (std::map<std::string, std::string>{{"A", "1"}, {"B", ""}}));
}

TEST(ConfigJobs, PodSetsAndDefaults) {
  auto r = job(
      "name: j\nteam: t\ncommand: [python, -m, x]\n"
      "pod_sets:\n"
      "  - {name: launcher, per_replica: {vcpu: 1}}\n"
      "  - {replicas: 8, per_replica: {whole_node: true}, topology: {required: hostname}}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->pod_sets.size(), 2u);
  EXPECT_EQ(r->pod_sets[0].name, "launcher");
  EXPECT_EQ(r->pod_sets[0].replicas, 1);
  EXPECT_EQ(r->pod_sets[1].name, "set-1");
  EXPECT_TRUE(r->pod_sets[1].per_replica.whole_node);
  EXPECT_EQ(r->pod_sets[1].topology.required, "hostname");
  EXPECT_EQ(r->command, (std::vector<std::string>{"python", "-m", "x"}));
  EXPECT_FALSE(r->duration_s.has_value());
  EXPECT_EQ(r->max_retries, 0);
}

// Without per_replica (or with {}), a pod set asks for nothing: the team's default_request applies when the job is
// submitted (core/lifecycle/submit.cpp), so the reader takes it. completion_index is a boolean.
TEST(ConfigJobs, ARequestMayBeLeftToTheTeamsDefault) {
  auto none = job("name: j\nteam: t\ncompletion_index: true\n");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->pod_sets[0].per_replica.asks_nothing());
  EXPECT_TRUE(none->completion_index);
  auto empty = job("name: j\nteam: t\nper_replica: {}\n");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_TRUE(empty->pod_sets[0].per_replica.asks_nothing());
  EXPECT_FALSE(empty->completion_index);
  auto team = parse_team(doc("name: t\ndefault_request: {accelerators: 1, vcpu: 4}\n"), Catalog::builtin(), ctx_for("teams[0]"));
  ASSERT_TRUE(team.ok()) << team.error().message;
  EXPECT_EQ(team->default_request.accelerators, 1);
  EXPECT_EQ(team->default_request.vcpu_milli, 4000);
  auto bad = parse_team(doc("name: t\ndefault_request: {instances: 1}\n"), Catalog::builtin(), ctx_for("teams[0]"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("unknown key 'instances'"));
}

TEST(ConfigJobs, MistakesAreReported) {
  struct Case {
    std::string text, message;
  };
  const std::string head = "name: j\nteam: t\n";  // lines 1 and 2
  const Case cases[] = {
      {head + "replicas: -2\nper_replica: {accelerators: 1}\n", "t.yaml:3: submit.replicas is -2; allowed: an integer 1..100000"},
      {head + "replicas: abc\nper_replica: {accelerators: 1}\n",
       "t.yaml:3: submit.replicas is 'abc', not an integer; allowed: an integer 1..100000"},
      {head + "replicas: \"2\"\nper_replica: {accelerators: 1}\n",
       "t.yaml:3: submit.replicas is the quoted string \"2\", not an integer; allowed: an integer 1..100000"},
      {head + "replicas: [2]\nper_replica: {accelerators: 1}\n",
       "t.yaml:3: submit.replicas is a list, not an integer; allowed: an integer 1..100000"},
      {head + "per_replica: [1]\n", "t.yaml:3: submit.per_replica is a list, not a mapping; allowed keys: accelerators, vcpu, "
                                    "memory_gib, whole_node"},
      {head + "per_replica: {whole_node: true, accelerators: 1}\n",
       "t.yaml:3: submit.per_replica asks for whole_node together with accelerators, vcpu or memory_gib; give either "
       "whole_node: true or amounts"},
      {head + "per_replica: {instances: 1}\n",
       "t.yaml:3: unknown key 'instances' in submit.per_replica; allowed keys: accelerators, vcpu, memory_gib, whole_node"},
      {head + "per_replica: {accelerators: 1}\ntopology: {required: zone, preferred: zone}\n",
       "t.yaml:4: submit.topology gives both required and preferred; give one of them (a level name such as "
       "network-node-layer-3)"},
      {head + "per_replica: {accelerators: 1}\ntopology: {slice: {level: zone}}\n", "t.yaml:4: submit.topology.slice has no "
                                                                                    "'size'; it is required"},
      {head + "replicas: 2\npod_sets: [{per_replica: {vcpu: 1}}]\n",
       "t.yaml:3: submit has both pod_sets and replicas; give either pod_sets or the inline "
       "replicas/instance_type/per_replica/topology"},
      {head + "per_replica: {accelerators: 1}\nduration: -1\n", "t.yaml:4: submit.duration is -1; allowed: an integer 0..10000000000"},
      {head + "per_replica: {accelerators: 1}\nmax_retries: 1001\n", "t.yaml:4: submit.max_retries is 1001; allowed: an integer 0..1000"},
      {head + "per_replica: {accelerators: 1}\nenv: {A: [1]}\n",
       "t.yaml:4: submit.env.A is a list; a string value is wanted (\"\" for empty)"},
      {"name: j\nper_replica: {accelerators: 1}\n", "t.yaml:1: submit has no 'team'; it is required"},
      {"[a, b]\n", "t.yaml:1: submit is a list, not a mapping; allowed keys: name, team, priority, replicas, instance_type, "
                   "per_replica, topology, pod_sets, duration, time_limit, max_retries, checkpoint_interval, command, env, labels, plan, "
                   "image, image_pull_policy, shm_size_gib, volumes, args, completion_index, log_rules, after, user, array, reservation, recovery, recovery_timeout, membership_signal"},
  };
  for (const Case& c : cases) {
    auto r = job(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().message, c.message) << c.text;
  }
}

}  // namespace
}  // namespace allot::config_yaml_test

// What one document may expand to (config/yaml_budget.h), found by long fuzzing (issue 33).
namespace allot::config_yaml_test {
namespace {

// Nested aliases: each level repeats the one before ten times, so 1 KB stands for 10^8 values.
std::string laughs(int levels) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < levels; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  return text;
}

TEST(YamlBudget, DocumentsAreMeasuredWithTheirAliasesExpanded) {
  EXPECT_TRUE(load_yaml(laughs(5), ctx_for()).ok()) << "10^5 values once expanded are within the bound";
  auto r = load_yaml(laughs(8), ctx_for());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("t.yaml:"));
  EXPECT_THAT(r.error().message, HasSubstr("more than 1000000 values once its YAML aliases are expanded"));
  auto docs = load_yaml_documents("a: 1\n---\n" + laughs(8), ctx_for());
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.error().message, HasSubstr("values once its YAML aliases are expanded"));
  // Text: one 1 MiB scalar used 70 times.
  std::string big = "a: &s " + std::string(1 << 20, 'x') + "\nb: [";
  for (int i = 0; i < 70; ++i) big += i ? ", *s" : "*s";
  auto text = load_yaml(big + "]\n", ctx_for());
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.error().message, HasSubstr("more than 64 MiB of text once its YAML aliases are expanded"));
}

TEST(YamlBudget, NodeNamesAndLabelsAreCountedOverTheWholeDocument) {
  const Catalog catalog = Catalog::builtin();
  // Two entries of 150,000 names: each within a host list's bound, not together.
  auto two = parse_nodes_text("- {name: \"a[1-150000]\", instance_type: ml.g5.8xlarge}\n"
                              "- {name: \"b[1-150000]\", instance_type: ml.g5.8xlarge}\n", catalog, "nodes.yaml");
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(two.error().message, StartsWith("nodes.yaml:2: "));
  EXPECT_THAT(two.error().message, HasSubstr("names more than 200000 nodes in all"));
  auto labels = parse_nodes_text("- {name: \"a[1-100000]\", instance_type: ml.g5.8xlarge, labels: {"
                                 "a: x, b: x, c: x, d: x, e: x, f: x, g: x, h: x, i: x, j: x, k: x, l: x, m: x, n: x, o: x, "
                                 "p: x, q: x, r: x, s: x, t: x, u: x, v: x, w: x, x: x, y: x, z: x, aa: x, ab: x, ac: x, "
                                 "ad: x, ae: x, af: x, ag: x, ah: x, ai: x, aj: x, ak: x, al: x, am: x, an: x, ao: x}}\n",
                                 catalog, "nodes.yaml");
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(labels.error().message, HasSubstr("more than 4000000 labels in all"));
  // The largest cluster a file may hold still reads.
  auto most = parse_nodes_text("- {name: \"a[1-100000]\", instance_type: ml.g5.8xlarge, labels: {zone: z1}}\n"
                               "- {name: \"b[1-100000]\", instance_type: ml.g5.8xlarge}\n", catalog, "nodes.yaml");
  ASSERT_TRUE(most.ok()) << most.error().message;
  EXPECT_EQ(most->size(), 200000u);
}

}  // namespace
}  // namespace allot::config_yaml_test
