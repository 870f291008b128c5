// Scenario files: the DESIGN.md example reads into the expected structs, events keep their order, every kind of
// mistake names its line, and no mutation of a valid file makes the parser throw or crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "sim/scenario.h"

// Expected specs are written with designated initializers; g++ 12 warns about every member they leave at its
// default, which is the point of writing them that way.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace allot::sim::scenario_parse_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The example of DESIGN.md, "Scenario files (contract)", verbatim.
const char* const kDesignExample = R"(name: borrow-then-reclaim          # free text
policy:
  task_prioritization: task-ranking   # or fcfs (default fcfs)
  idle_compute: fair-share            # or fcfs (default fair-share)
  idle_pool: false                    # true: capacity outside every allocation may be borrowed (default false)
  priority_classes:
    - {name: inference, weight: 100}
    - {name: experimentation, weight: 80}
    - {name: training, weight: 70}
    - {name: fine-tuning, weight: 50}
cluster:
  nodes:
    - name: gpu-[1-4]                # hostlist ranges expand: gpu-1 .. gpu-4
      instance_type: ml.g5.8xlarge
      labels: {network-node-layer-1: nn-1, network-node-layer-2: nn-2, network-node-layer-3: nn-3a}
teams:
  - name: team-a
    fair_share_weight: 10
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}     # or accelerators / vcpu / memory_gib
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
    preempt_team_tasks: LowerPriority
events:
  - at: 0                            # virtual seconds
    submit:
      name: a-1
      team: team-a
      priority: training             # optional
      replicas: 2
      instance_type: ml.g5.8xlarge   # optional
      per_replica: {accelerators: 1} # or {whole_node: true}; vcpu, memory_gib default in proportion
      topology: {required: network-node-layer-3}   # optional; preferred, slice, exclusive as above
      duration: 3600                 # optional; runs until then, then Succeeded
      max_retries: 2                 # optional; restarts allowed after failures (node or process)
      checkpoint_interval: 600       # optional
  - at: 10
    cancel: a-1                      # other events: finish, fail_node, recover_node, add_nodes, remove_nodes
  - at: 20
    expect:
      jobs:
        a-1: {state: Running, borrowing: true, nodes: [gpu-1, gpu-2], distinct: {network-node-layer-3: 1}}
        b-1: {state: Pending, reason: "borrow limit"}     # reason: case-insensitive substring
      teams:
        team-a: {usage: {accelerators: 2}, borrowed: {accelerators: 1}}
)";

TEST(ScenarioParse, DesignExampleReadsIntoTheSpecs) {
  auto r = parse_scenario(kDesignExample, "design.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Scenario& sc = *r;
  EXPECT_EQ(sc.name, "borrow-then-reclaim");
  EXPECT_EQ(sc.policy.task_prioritization, TaskPrioritization::kTaskRanking);
  EXPECT_EQ(sc.policy.idle_compute, IdleCompute::kFairShare);
  EXPECT_FALSE(sc.policy.idle_pool);
  EXPECT_EQ(sc.policy.priority_classes, (std::vector<PriorityClassSpec>{
                                            {"inference", 100}, {"experimentation", 80}, {"training", 70}, {"fine-tuning", 50}}));
  ASSERT_EQ(sc.nodes.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(sc.nodes[i].name, "gpu-" + std::to_string(i + 1));
    EXPECT_EQ(sc.nodes[i].instance_type, "ml.g5.8xlarge");
    EXPECT_EQ(sc.nodes[i].labels.at("network-node-layer-3"), "nn-3a");
  }
  EXPECT_TRUE(sc.topology_levels.empty());
  EXPECT_TRUE(sc.instance_types.empty());
  ASSERT_EQ(sc.teams.size(), 1u);
  EXPECT_EQ(sc.teams[0], (TeamSpec{.name = "team-a",
                                   .fair_share_weight = 10,
                                   .allocation = {{"ml.g5.8xlarge", AmountSpec{.instances = 1}}},
                                   .strategy = SharingStrategy::kLendAndBorrow,
                                   .borrow_limit = 100,
                                   .preempt_team_tasks = PreemptTeamTasks::kLowerPriority}));

  ASSERT_EQ(sc.events.size(), 3u);
  const Event& submit = sc.events[0];
  EXPECT_EQ(submit.kind, EventKind::kSubmit);
  EXPECT_EQ(submit.at, 0);
  EXPECT_EQ(submit.line, 24);
  JobSpec want{.name = "a-1", .team = "team-a", .priority = "training", .max_retries = 2, .checkpoint_interval_s = 600,
               .duration_s = 3600};
  want.pod_sets.push_back(PodSetSpec{.replicas = 2,
                                     .instance_type = "ml.g5.8xlarge",
                                     .per_replica = AmountSpec{.accelerators = 1},
                                     .topology = TopologySpec{.required = "network-node-layer-3"}});
  EXPECT_EQ(submit.submit, want);
  EXPECT_EQ(sc.events[1].kind, EventKind::kCancel);
  EXPECT_EQ(sc.events[1].target, "a-1");
  EXPECT_EQ(sc.events[1].line, 36);

  const Event& ex = sc.events[2];
  EXPECT_EQ(ex.kind, EventKind::kExpect);
  EXPECT_EQ(ex.at, 20);
  ASSERT_EQ(ex.expect.jobs.size(), 2u);
  const JobExpect& a1 = ex.expect.jobs.at("a-1");
  EXPECT_EQ(a1.line, 41);
  EXPECT_EQ(a1.state, "Running");
  EXPECT_EQ(a1.borrowing, true);
  EXPECT_EQ(a1.nodes, (std::vector<std::string>{"gpu-1", "gpu-2"}));
  EXPECT_EQ(a1.distinct, (std::map<std::string, int>{{"network-node-layer-3", 1}}));
  EXPECT_FALSE(a1.node_count.has_value());
  EXPECT_EQ(ex.expect.jobs.at("b-1").reason, "borrow limit");
  const TeamExpect& ta = ex.expect.teams.at("team-a");
  EXPECT_EQ(ta.line, 44);
  ASSERT_TRUE(ta.usage && ta.borrowed);
  EXPECT_EQ(ta.usage->accelerators, 2);
  EXPECT_FALSE(ta.usage->vcpu_milli.has_value());
  EXPECT_EQ(ta.borrowed->accelerators, 1);
  EXPECT_FALSE(ta.lent.has_value());
}

TEST(ScenarioParse, EventKindsAndStableTimeOrder) {
  auto r = parse_scenario(R"(instance_types:
  - {name: cpu.tiny, vcpus: 2, memory_gib: 4}
cluster:
  topology_levels: [zone, hostname]
  nodes: [{name: 'n[1-3]', instance_type: cpu.tiny}]
events:
  - {at: 50, expect: {jobs: {j: {nodes: ['n[1-2]'], node_count: 2, preemptions: 0, restarts: 1}},
                      teams: {t: {lent: {vcpu: 0.5, memory_gib: 1.5}}}}}
  - {at: 10, finish: j}
  - {at: 10, fail: j}
  - {at: 0, fail_node: n1}
  - {at: 10, recover_node: n1}
  - {at: 5, add_nodes: [{name: 'm[1-2]', instance_type: ml.cpu.tiny, labels: {zone: a}}]}
  - {at: 10, remove_nodes: ['m[1-2]', {name: n3}]}
)",
                          "kinds.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->topology_levels, (std::vector<std::string>{"zone", "hostname"}));
  ASSERT_EQ(r->instance_types.size(), 1u);
  EXPECT_EQ(r->nodes[2].instance_type, "ml.cpu.tiny");
  std::vector<std::pair<int64_t, EventKind>> order;
  for (const Event& e : r->events) order.emplace_back(e.at, e.kind);
  EXPECT_EQ(order, (std::vector<std::pair<int64_t, EventKind>>{{0, EventKind::kFailNode},
                                                                 {5, EventKind::kAddNodes},
                                                                 {10, EventKind::kFinish},
                                                                 {10, EventKind::kFail},
                                                                 {10, EventKind::kRecoverNode},
                                                                 {10, EventKind::kRemoveNodes},
                                                                 {50, EventKind::kExpect}}));
  EXPECT_EQ(r->events[1].nodes.size(), 2u);
  EXPECT_EQ(r->events[1].nodes[1].labels.at("zone"), "a");
  ASSERT_EQ(r->events[5].nodes.size(), 3u);
  EXPECT_EQ(r->events[5].nodes[2].name, "n3");
  const Expect& ex = r->events[6].expect;
  EXPECT_EQ(ex.jobs.at("j").nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(ex.jobs.at("j").restarts, 1);
  EXPECT_EQ(ex.teams.at("t").lent->vcpu_milli, 500);
  EXPECT_EQ(ex.teams.at("t").lent->memory_mib, 1536);
}

// A small valid scenario; the mistakes below are edits of it, so their lines are easy to count.
std::string base(const std::string& events) {
  return "name: x\n"                                                   // 1
         "cluster:\n"                                                  // 2
         "  nodes:\n"                                                  // 3
         "    - {name: 'gpu-[1-2]', instance_type: ml.g5.8xlarge}\n"   // 4
         "teams:\n"                                                    // 5
         "  - {name: a, allocation: [{instance_type: ml.g5.8xlarge, instances: 1}]}\n"  // 6
         "events:\n" +                                                 // 7
         events;                                                       // 8..
}

TEST(ScenarioParse, MistakesNameTheirLine) {
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {base("  - at: 0\n    submit: {name: j, team: a, per_replica: {accelerators: 1}, replica: 2}\n"),
       "s.yaml:9: unknown key 'replica' in events[0].submit; allowed keys: name, team, priority, replicas, instance_type, "
       "per_replica, topology, pod_sets, duration, time_limit, max_retries, checkpoint_interval, command, env, labels, plan, image, image_pull_policy, shm_size_gib, volumes, args, completion_index, log_rules, after, user, array, reservation, recovery, recovery_timeout, membership_signal"},
      {base("  - at: 0\n    submit: {name: j, team: a, replicas: -1, per_replica: {accelerators: 1}}\n"),
       "s.yaml:9: events[0].submit.replicas is -1; allowed: an integer 1..100000"},
      {base("  - at: -1\n    cancel: j\n"), "s.yaml:8: events[0].at is -1; allowed: an integer 0..10000000000"},
      {base("  - at: soon\n    cancel: j\n"), "s.yaml:8: events[0].at is 'soon', not an integer; allowed: an integer 0..10000000000"},
      {base("  - {cancel: j}\n"), "s.yaml:8: events[0] has no 'at'; it is required"},
      {base("  - {at: 1}\n"), "s.yaml:8: events[0] has no event; give one of submit, cancel, finish, fail, fail_node, "
                              "recover_node, add_nodes, remove_nodes, expect, plan_delete, start_timeout, log_rule"},
      {base("  - {at: 1, cancel: j, finish: j}\n"),
       "s.yaml:8: events[0] has both cancel and finish; one event per entry; repeat `at` for events at the same time"},
      {base("  - at: 1\n    expect:\n      jobs:\n        j: {state: Done}\n"),
       "s.yaml:11: events[0].expect.jobs.j.state is 'Done'; allowed: Pending, Running, Suspended, Succeeded, Failed, Cancelled"},
      {base("  - at: 1\n    expect: {teams: {a: {usage: {gpus: 1}}}}\n"),
       "s.yaml:9: unknown key 'gpus' in events[0].expect.teams.a.usage; allowed keys: accelerators, vcpu, memory_gib"},
      {base("  - at: 1\n    cancel: [j]\n"), "s.yaml:9: events[0].cancel is a list; a string is wanted here"},
      {base("  - at: 1\n    add_nodes: [{name: gpu-9, instance_type: ml.none}]\n"),
       "s.yaml:9: events[0].add_nodes[0].instance_type 'ml.none' is not a known instance type; known types: " +
           Catalog::builtin().known_names()},
      {base("  key: 1\n"), "s.yaml:7: events is a mapping, not a list; write a list ([a, b] or - items)"},
      {base("") + "extra: 1\n", "s.yaml:8: unknown key 'extra' in the document; allowed keys: name, policy, "
                                "instance_types, cluster, teams, plans, reservations, events"},
      {"name: x\nteams: []\n", "s.yaml:1: the document has no 'cluster'; it is required"},
      {"name: x\ncluster:\n  nodes:\n    - {name: 'g[1-2]', instance_type: ml.g5.8xlarge}\n    - {name: g2, instance_type: "
       "ml.g5.8xlarge}\n",
       "s.yaml:5: node g2 is listed twice (first at line 4); node names must be unique"},
      {"", "s.yaml: the file is empty; a scenario is a mapping with keys name, policy, instance_types, cluster, teams, plans, reservations, events"},
      {"- a\n- b\n", "s.yaml:1: the document is a list, not a mapping; a scenario is a mapping with keys name, policy, "
                     "instance_types, cluster, teams, plans, reservations, events"},
      {"name: x\npolicy: {idle_pool: 1\n", "s.yaml:3: cannot read YAML: end of map flow not found; check the indentation, "
                                          "quoting and brackets"},
  };
  for (const Case& c : cases) {
    auto r = parse_scenario(c.text, "s.yaml");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().message, c.message) << c.text;
  }
}

TEST(ScenarioParse, MissingFileIsAnError) {
  auto r = load_scenario_file("/nonexistent/allot/scenario.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, StartsWith("/nonexistent/allot/scenario.yaml: cannot open the file"));
}

TEST(ScenarioParse, RepositoryScenariosRead) {
  const std::filesystem::path dir = std::filesystem::path(ALLOT_SOURCE_DIR) / "tests" / "scenarios";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    auto r = load_scenario_file(entry.path().string());
    EXPECT_TRUE(r.ok()) << entry.path() << ": " << r.error().message;
    ++files;
  }
  EXPECT_GT(files, 0);
  auto bad = load_scenario_file((dir / "invalid" / "malformed.yaml").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("malformed.yaml:11: unknown key 'replica'"));
}

// Seeded mutations of a valid file (characters and lines deleted, duplicated or swapped, truncation): the parser
// must always answer with a value or an Error that says something, and never throw or crash.
TEST(ScenarioParseFuzz, MutationsNeverThrow) {
  const std::string valid = std::string(kDesignExample) +
                            "  - {at: 30, add_nodes: [{name: 'x[1-3]', instance_type: g5.2xlarge}]}\n"
                            "  - {at: 30, remove_nodes: ['x[1-2]']}\n"
                            "  - at: 40\n    submit: {name: p, team: team-a, pod_sets: [{replicas: 2, per_replica: {vcpu: 0.5}}]}\n";
  ASSERT_TRUE(parse_scenario(valid, "fuzz.yaml").ok());
  std::mt19937 rng(20240611);
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  auto split_lines = [](const std::string& s) {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) lines.push_back(s.substr(start, nl - start + 1));
    if (start < s.size()) lines.push_back(s.substr(start));
    return lines;
  };
  const std::string noise = "-:[]{},'\"#&*!|>?% \t\n0123456789abc.";
  int ok = 0, errors = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = valid;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t i = pick(text.size());
      switch (rng() % 7) {
        case 0: text.erase(i, 1 + pick(3)); break;
        case 1: text.insert(i, 1, text[pick(text.size())]); break;
        case 2: std::swap(text[i], text[pick(text.size())]); break;
        case 3: text[i] = noise[pick(noise.size())]; break;
        case 4: text.resize(i); break;
        default: {
          auto lines = split_lines(text);
          size_t a = pick(lines.size()), b = pick(lines.size());
          if (rng() % 3 == 0) lines.erase(lines.begin() + a);
          else if (rng() % 2 == 0) lines.insert(lines.begin() + a, lines[b]);
          else std::swap(lines[a], lines[b]);
          text.clear();
          for (const auto& l : lines) text += l;
        }
      }
    }
    Result<Scenario> r = Error::internal("not run");
    EXPECT_NO_THROW(r = parse_scenario(text, "fuzz.yaml")) << text;
    if (r.ok()) {
      ++ok;
    } else {
      ++errors;
      EXPECT_FALSE(r.error().message.empty()) << text;
      EXPECT_THAT(r.error().message, StartsWith("fuzz.yaml")) << text;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace allot::sim::scenario_parse_test
