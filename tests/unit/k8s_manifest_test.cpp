// Kubernetes Job and PyTorchJob manifests as allot job specs (interop/k8s_manifest.h), and the quantity
// grammar they use (interop/k8s_quantity.h).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "interop/k8s_manifest.h"
#include "interop/k8s_quantity.h"

namespace allot::interop::k8s_manifest_test {
namespace {

std::string data_path(const std::string& name) { return std::string(ALLOT_SOURCE_DIR) + "/tests/data/k8s/" + name; }

Result<ManifestJob> load(const std::string& name) {
  std::ifstream in(data_path(name));
  std::stringstream ss;
  ss << in.rdbuf();
  return job_from_manifest(YAML::Load(ss.str()), name);
}

TEST(K8s, CpuQuantities) {
  EXPECT_EQ(*parse_cpu_milli("500m"), 500);
  EXPECT_EQ(*parse_cpu_milli("2"), 2000);
  EXPECT_EQ(*parse_cpu_milli("1.5"), 1500);
  EXPECT_EQ(*parse_cpu_milli("0.0001"), 1);  // rounded up to the millicore, as Kubernetes does
  EXPECT_EQ(*parse_cpu_milli("1e3"), 1'000'000);
  EXPECT_FALSE(parse_cpu_milli("two").ok());
  EXPECT_FALSE(parse_cpu_milli("-1").ok());
  EXPECT_FALSE(parse_cpu_milli("").ok());
}

TEST(K8s, MemoryQuantities) {
  EXPECT_EQ(*parse_memory_mib("16Gi"), 16 * 1024);
  EXPECT_EQ(*parse_memory_mib("512Mi"), 512);
  EXPECT_EQ(*parse_memory_mib("1Ti"), 1024 * 1024);
  EXPECT_EQ(*parse_memory_mib("2048Ki"), 2);
  EXPECT_EQ(*parse_memory_mib("1G"), 954);  // 10^9 bytes, rounded up to whole MiB
  EXPECT_EQ(*parse_memory_mib("1M"), 1);
  EXPECT_EQ(*parse_memory_mib("1024K"), 1);
  EXPECT_EQ(*parse_memory_mib("1048576"), 1);
  EXPECT_EQ(*parse_memory_mib("0.5Gi"), 512);
  auto bad = parse_memory_mib("12XB");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown suffix"), std::string::npos);
}

TEST(K8s, DeviceCounts) {
  EXPECT_EQ(*parse_device_count("8"), 8);
  EXPECT_EQ(*parse_device_count("0"), 0);
  EXPECT_FALSE(parse_device_count("1.5").ok());
  EXPECT_FALSE(parse_device_count("500m").ok());
}

// Found by long fuzzing (issue 33): 999999999999999999E overflowed the 128-bit arithmetic (undefined behaviour)
// and came out as 2.998e+15 vCPU, and 1Ei, valid Kubernetes, was refused as a "bad exponent".
TEST(K8s, QuantitiesBeyondTheMaximumAreRefusedWithoutOverflow) {
  for (const char* q : {"999999999999999999E", "999999999999999999Ei", "999999999999999999e18", "100000001", "1Ei"}) {
    auto cpu = parse_cpu_milli(q);
    ASSERT_FALSE(cpu.ok()) << q;
    EXPECT_NE(cpu.error().message.find("is more than 100000000 CPUs, the most allot takes"), std::string::npos) << cpu.error().message;
  }
  EXPECT_EQ(*parse_cpu_milli("100000000"), 100'000'000'000);  // the maximum itself
  EXPECT_EQ(*parse_cpu_milli("0.00000000000000001e-18"), 1);  // den 10^35: still rounded up, no overflow
  EXPECT_EQ(*parse_memory_mib("1Ei"), int64_t{1} << 40);
  EXPECT_EQ(*parse_memory_mib("1E"), 953'674'316'407);  // 10^18 bytes, rounded up to whole MiB
  EXPECT_EQ(*parse_memory_mib("1Pi"), int64_t{1} << 30);
  auto mem = parse_memory_mib("999999999999999999E");
  ASSERT_FALSE(mem.ok());
  EXPECT_NE(mem.error().message.find("is more than 1073741824Gi of memory"), std::string::npos) << mem.error().message;
  EXPECT_FALSE(parse_memory_mib("1.00000000000001Ei").ok());  // just past 1Ei
  auto gpus = parse_device_count("1E");
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.error().message.find("10000000 devices"), std::string::npos) << gpus.error().message;
  EXPECT_EQ(*parse_device_count("1e3"), 1000);
  EXPECT_EQ(*parse_device_count("1k"), 1000);
}

TEST(K8s, NamesFromHyperPodConventions) {
  EXPECT_EQ(team_from_queue_name("hyperpod-ns-team-a-localqueue"), "team-a");
  EXPECT_EQ(team_from_queue_name("team-a"), "team-a");
  EXPECT_EQ(team_from_queue_name("my-localqueue"), "my-localqueue");  // only with the hyperpod-ns- prefix
  EXPECT_EQ(team_from_namespace("hyperpod-ns-ml-research"), "ml-research");
  EXPECT_EQ(team_from_namespace("ml-research"), "ml-research");
  EXPECT_EQ(priority_from_class("training-priority"), "training");
  EXPECT_EQ(priority_from_class("inference"), "inference");
}

TEST(K8s, HyperPodPyTorchJob) {
  auto m = load("hyperpod_pytorchjob.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.name, "llama-finetune");
  EXPECT_EQ(j.team, "team-a");
  EXPECT_EQ(j.priority, "training");
  EXPECT_EQ(j.max_retries, 2);
  // Master and workers ask for the same: one gang of 4 ranks, held together by the topology request.
  ASSERT_EQ(j.pod_sets.size(), 1u);
  const PodSetSpec& ps = j.pod_sets[0];
  EXPECT_EQ(ps.replicas, 4);
  EXPECT_EQ(ps.instance_type, "ml.p5.48xlarge");
  EXPECT_EQ(ps.per_replica.accelerators, 8);
  EXPECT_EQ(ps.per_replica.vcpu_milli, 96'000);
  EXPECT_EQ(ps.per_replica.memory_mib, 1024 * 1024);
  EXPECT_EQ(ps.topology.required, "topology.k8s.aws/network-node-layer-3");
  EXPECT_EQ(j.command, (std::vector<std::string>{"torchrun", "--nproc_per_node=8", "train.py", "--epochs", "3"}));
  EXPECT_EQ(j.env.at("NCCL_DEBUG"), "INFO");
  EXPECT_FALSE(j.env.count("POD_NAME"));
  bool warned_value_from = false, warned_efa = false;
  for (const auto& w : m->warnings) {
    warned_value_from |= w.find("POD_NAME") != std::string::npos;
    warned_efa |= w.find("EFA") != std::string::npos;
  }
  EXPECT_TRUE(warned_value_from);
  EXPECT_TRUE(warned_efa);
}

TEST(K8s, PyTorchJobWithDifferentMasterBecomesTwoPodSets) {
  auto doc = YAML::Load(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: hyperpod-ns-team-b}
spec:
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers: [{name: m, command: [python, main.py], resources: {requests: {cpu: "4", memory: 16Gi}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: w, command: [python, main.py], resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  auto m = job_from_manifest(doc, "pt.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->spec.team, "team-b");
  ASSERT_EQ(m->spec.pod_sets.size(), 2u);
  EXPECT_EQ(m->spec.pod_sets[0].name, "master");
  EXPECT_EQ(m->spec.pod_sets[0].replicas, 1);
  EXPECT_EQ(m->spec.pod_sets[0].per_replica.vcpu_milli, 4000);
  EXPECT_FALSE(m->spec.pod_sets[0].per_replica.accelerators.has_value());
  EXPECT_EQ(m->spec.pod_sets[1].name, "worker");
  EXPECT_EQ(m->spec.pod_sets[1].replicas, 2);
  EXPECT_EQ(m->spec.pod_sets[1].per_replica.accelerators, 4);
}

// elasticPolicy makes the workers elastic: min/max replicas bound the Worker count, and a Master merged into
// the one gang stays a fixed rank on top of them. nprocPerNode reaches the replicas as torchrun expects it.
TEST(K8s, PyTorchJobElasticPolicyMakesWorkersElastic) {
  auto doc = YAML::Load(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: hyperpod-ns-team-b}
spec:
  nprocPerNode: "8"
  elasticPolicy: {minReplicas: 2, maxReplicas: 6, rdzvBackend: c10d}
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers: [{name: w, command: [torchrun, train.py], resources: {limits: {nvidia.com/gpu: 8}}}]
)");
  auto m = job_from_manifest(doc, "pt.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->spec.pod_sets.size(), 1u);
  EXPECT_EQ(m->spec.pod_sets[0].replicas, 6);
  EXPECT_EQ(m->spec.pod_sets[0].min_replicas.value_or(0), 2);
  EXPECT_EQ(m->spec.env.at("PET_NPROC_PER_NODE"), "8");
  for (const auto& w : m->warnings) EXPECT_EQ(w.find("elasticPolicy"), std::string::npos) << w;

  auto upside_down = YAML::Load(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: hyperpod-ns-team-b}
spec:
  elasticPolicy: {minReplicas: 5, maxReplicas: 3}
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers: [{name: w, command: [torchrun, train.py], resources: {limits: {nvidia.com/gpu: 8}}}]
)");
  auto bad = job_from_manifest(upside_down, "pt.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("minReplicas"), std::string::npos) << bad.error().message;
}

TEST(K8s, BatchJobWithGpusAndPreferredTopology) {
  auto m = load("job_gpu_topology.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.name, "resnet-sweep");
  EXPECT_EQ(j.team, "team-b");
  EXPECT_EQ(j.priority, "experimentation");
  EXPECT_EQ(j.max_retries, 1);
  ASSERT_EQ(j.pod_sets.size(), 1u);
  EXPECT_EQ(j.pod_sets[0].replicas, 4);
  EXPECT_EQ(j.pod_sets[0].instance_type, "ml.g5.12xlarge");
  EXPECT_EQ(j.pod_sets[0].per_replica.accelerators, 1);  // from limits: the request defaults to the limit
  EXPECT_EQ(j.pod_sets[0].per_replica.vcpu_milli, 11'500);
  EXPECT_EQ(j.pod_sets[0].per_replica.memory_mib, 46 * 1024);
  EXPECT_EQ(j.pod_sets[0].topology.preferred, "topology.k8s.aws/network-node-layer-2");
  EXPECT_EQ(j.env.at("LR"), "0.1");
}

TEST(K8s, SlicesAndNodeAffinity) {
  auto m = load("job_slices.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const PodSetSpec& ps = m->spec.pod_sets.at(0);
  EXPECT_EQ(m->spec.team, "team-c");
  EXPECT_EQ(ps.replicas, 8);
  EXPECT_EQ(ps.instance_type, "ml.trn1.32xlarge");
  EXPECT_EQ(ps.per_replica.accelerators, 16);
  EXPECT_EQ(ps.topology.required, "topology.k8s.aws/network-node-layer-2");
  ASSERT_TRUE(ps.topology.slice.has_value());
  EXPECT_EQ(ps.topology.slice->level, "topology.k8s.aws/network-node-layer-3");
  EXPECT_EQ(ps.topology.slice->size, 2);
}

// Each malformed manifest fails with a message that names the field (and the file and line).
struct BadCase {
  const char* file;
  const char* expect;
};

class K8sBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(K8sBad, NamesTheField) {
  auto m = load(GetParam().file);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find(GetParam().expect), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find(GetParam().file), std::string::npos) << m.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    K8sManifests, K8sBad,
    ::testing::Values(BadCase{"bad_unknown_resource.yaml", "requests[\"example.com/fpga\"]"},
                      BadCase{"bad_quantity.yaml", "requests[\"memory\"]: \"12XB\" is not a Kubernetes quantity"},
                      BadCase{"bad_no_command.yaml", "containers[0].command: is required without an image"},
                      BadCase{"bad_kind.yaml", "apps/v1 Deployment"},
                      BadCase{"bad_no_team.yaml", "cannot tell the team"},
                      BadCase{"bad_misspelt_field.yaml", "spec.paralellism: unknown or unsupported field"},
                      BadCase{"bad_slice_size.yaml", "podset-slice-size 4 is larger than the 2 replicas"}));

TEST(K8s, RecognisesKubernetesObjects) {
  EXPECT_TRUE(is_k8s_manifest(YAML::Load("{apiVersion: batch/v1, kind: Job}")));
  EXPECT_FALSE(is_k8s_manifest(YAML::Load("{name: a-1, team: team-a}")));
  EXPECT_FALSE(is_k8s_manifest(YAML::Load("[1, 2]")));
}

TEST(K8s, RejectsGpuAndNeuronTogetherAndBothTopologies) {
  auto both = job_from_manifest(YAML::Load(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: x, namespace: t}
spec:
  template:
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1, aws.amazon.com/neurondevice: 1}}}]
)"), "x.yaml");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("both nvidia.com/gpu and aws.amazon.com/neurondevice"), std::string::npos);
  auto topo = job_from_manifest(YAML::Load(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: x, namespace: t}
spec:
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: zone
        kueue.x-k8s.io/podset-preferred-topology: zone
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)"), "x.yaml");
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.error().message.find("cannot both be set"), std::string::npos);
}

}  // namespace
}  // namespace allot::interop::k8s_manifest_test

namespace allot::interop::k8s_manifest_test {
namespace {

const char* kGenerated = R"(apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: hyperpod-ns-team-a
  labels:
    kueue.x-k8s.io/priority-class: inference-priority
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox
          command: ["sleep", "1"]
          resources: {requests: {cpu: "1"}}
)";

TEST(K8s, GenerateNameGetsTheApiServersSuffix) {
  auto a = job_from_manifest(YAML::Load(kGenerated), "sample.yaml");
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a->spec.name.size(), std::string("sample-job-").size() + 5);
  EXPECT_EQ(a->spec.name.rfind("sample-job-", 0), 0u);
  EXPECT_EQ(a->spec.name.find_first_not_of("sample-job-bcdfghjklmnpqrstvwxz2456789"), std::string::npos) << a->spec.name;
  EXPECT_TRUE(check_name(NameKind::kJob, a->spec.name).ok());
  bool said = false;
  for (const auto& w : a->warnings) said |= w.find("named " + a->spec.name) != std::string::npos;
  EXPECT_TRUE(said) << "the generated name is printed";
  // Two submissions of the same manifest get two names (5 characters of 27: equal once in 14 million).
  auto b = job_from_manifest(YAML::Load(kGenerated), "sample.yaml");
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->spec.name, b->spec.name);
  // Without either name the message says what is accepted.
  auto none = job_from_manifest(YAML::Load(std::string(kGenerated).replace(std::string(kGenerated).find("generateName"), 12, "labelz")),
                                "sample.yaml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("metadata.generateName"), std::string::npos) << none.error().message;
}

TEST(K8s, PriorityLabelAsWrittenFirstThenWithoutSuffix) {
  auto m = job_from_manifest(YAML::Load(kGenerated), "sample.yaml");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->priority_label, "inference-priority");
  EXPECT_EQ(m->spec.priority, "inference");
  EXPECT_EQ(pick_priority_class("inference-priority", {"training", "inference-priority", "inference"}), "inference-priority");
  EXPECT_EQ(pick_priority_class("inference-priority", {"training", "inference"}), "inference");
  EXPECT_EQ(pick_priority_class("inference-priority", {}), "inference");  // the server names its classes when it refuses
  EXPECT_EQ(pick_priority_class("training", {"training"}), "training");
}

}  // namespace
}  // namespace allot::interop::k8s_manifest_test

namespace allot::interop::k8s_manifest_test {
namespace {

TEST(K8s, JobSetSlicesAsKueueDocumentsThem) {
  auto m = load("jobset_slices.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.name, "jobset-sliced");
  EXPECT_EQ(j.team, "team-a");
  ASSERT_EQ(j.pod_sets.size(), 1u);
  EXPECT_EQ(j.pod_sets[0].name, "workers");
  EXPECT_EQ(j.pod_sets[0].replicas, 8);  // 2 replicas x parallelism 4
  ASSERT_TRUE(j.pod_sets[0].topology.slice.has_value());
  EXPECT_EQ(j.pod_sets[0].per_replica.vcpu_milli, 1000);
  EXPECT_EQ(j.command, (std::vector<std::string>{"sleep", "100s"}));
}

TEST(K8s, JobSetReplicatedJobsArePodSets) {
  auto m = load("jobset_driver_workers.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.team, "team-b");
  EXPECT_EQ(j.max_retries, 3);
  ASSERT_EQ(j.pod_sets.size(), 2u);
  EXPECT_EQ(j.pod_sets[0].name, "driver");
  EXPECT_EQ(j.pod_sets[0].replicas, 1);
  EXPECT_EQ(j.pod_sets[1].name, "workers");
  EXPECT_EQ(j.pod_sets[1].replicas, 6);
  EXPECT_EQ(j.pod_sets[1].instance_type, "ml.p5.48xlarge");
  EXPECT_EQ(j.pod_sets[1].per_replica.accelerators, 8);
  EXPECT_EQ(j.pod_sets[1].topology.required, "topology.k8s.aws/network-node-layer-2");
}

// Issue 28 item 8: fields that change what a job does are honoured, or refused, never dropped.
TEST(K8s, IndexedCompletionAndMinParallelism) {
  auto m = job_from_manifest(YAML::Load(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep
  namespace: hyperpod-ns-team-a
  annotations: {kueue.x-k8s.io/job-min-parallelism: "2"}
spec:
  parallelism: 6
  completions: 6
  completionMode: Indexed
  podFailurePolicy:
    rules:
      - {action: Count, onExitCodes: {operator: In, values: [1]}}
      - {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}
  template:
    spec:
      containers:
        - name: main
          command: [python, sweep.py]
          env: [{name: MASTER_ADDR, value: 10.0.0.1}, {name: SEED, value: "7"}]
          resources: {limits: {nvidia.com/gpu: 1}}
)"),
                             "sweep.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->spec.completion_index);
  ASSERT_EQ(m->spec.pod_sets.size(), 1u);
  EXPECT_EQ(m->spec.pod_sets[0].replicas, 6);
  EXPECT_EQ(m->spec.pod_sets[0].min_replicas, 2);
  EXPECT_EQ(m->spec.env.at("SEED"), "7");
  bool warned = false;
  for (const auto& w : m->warnings) warned |= w.find("MASTER_ADDR=10.0.0.1 is not used: allot sets MASTER_ADDR") != std::string::npos;
  EXPECT_TRUE(warned) << "a manifest's own MASTER_ADDR is warned about";

  auto with = [](const std::string& spec_lines, const std::string& annotations = "{}") {
    return job_from_manifest(YAML::Load("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: a, annotations: " + annotations +
                                        "}\nspec:\n  parallelism: 4\n" + spec_lines +
                                        "  template: {spec: {containers: [{name: m, command: [x], resources: {limits: {cpu: 1}}}]}}\n"),
                             "j.yaml");
  };
  auto fail_job = with("  podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [42]}}]}\n");
  ASSERT_FALSE(fail_job.ok());
  EXPECT_NE(fail_job.error().message.find("spec.podFailurePolicy.rules[0]: action FailJob cannot be honoured"), std::string::npos)
      << fail_job.error().message;
  auto ignore_codes = with("  podFailurePolicy: {rules: [{action: Ignore, onExitCodes: {operator: In, values: [3]}}]}\n");
  ASSERT_FALSE(ignore_codes.ok());
  EXPECT_NE(ignore_codes.error().message.find("action Ignore cannot be honoured"), std::string::npos) << ignore_codes.error().message;
  auto mode = with("  completionMode: Sideways\n");
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.error().message.find("must be NonIndexed or Indexed"), std::string::npos) << mode.error().message;
  auto too_many = with("", "{kueue.x-k8s.io/job-min-parallelism: \"5\"}");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("1..4 (the parallelism)"), std::string::npos) << too_many.error().message;
  auto same = with("", "{kueue.x-k8s.io/job-min-parallelism: \"4\"}");
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_FALSE(same->spec.pod_sets[0].min_replicas.has_value());  // the whole parallelism: not elastic
  EXPECT_FALSE(same->spec.completion_index);
}

TEST(K8s, ManifestWithoutRequestsLeavesTheRequestToTheTeam) {
  auto m = job_from_manifest(YAML::Load("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: a}\n"
                                        "spec: {template: {spec: {containers: [{name: m, command: [x]}]}}}\n"),
                             "j.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->spec.pod_sets[0].per_replica.asks_nothing());
  bool warned = false;
  for (const auto& w : m->warnings) warned |= w.find("the team's default_request applies") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(K8s, JobSetExclusiveTopology) {
  auto m = job_from_manifest(YAML::Load(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: js
  namespace: hyperpod-ns-team-a
  annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: network-node-layer-3}
spec:
  replicatedJobs:
    - name: leader
      replicas: 1
      template: {spec: {parallelism: 2, template: {spec: {containers: [{name: m, command: [x], resources: {limits: {nvidia.com/gpu: 1}}}]}}}}
    - name: workers
      replicas: 3
      template:
        metadata: {annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: network-node-layer-2}}
        spec: {template: {spec: {containers: [{name: m, command: [x], resources: {limits: {nvidia.com/gpu: 1}}}]}}}
)"),
                             "js.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->spec.pod_sets.size(), 2u);
  EXPECT_EQ(m->spec.pod_sets[0].topology.exclusive, "network-node-layer-3");
  EXPECT_EQ(m->spec.pod_sets[0].topology.required, "network-node-layer-3");  // one child job: in one domain, alone
  EXPECT_EQ(m->spec.pod_sets[1].topology.exclusive, "network-node-layer-2");
  EXPECT_EQ(m->spec.pod_sets[1].topology.required, "");
  bool warned = false;
  for (const auto& w : m->warnings) warned |= w.find("not one domain each") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(K8s, JobSetRefusals) {
  auto bad = job_from_manifest(YAML::Load("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: x, namespace: a}\n"
                                          "spec: {replicatedJobs: []}\n"),
                               "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("lists no replicated job"), std::string::npos) << bad.error().message;
  auto kind = job_from_manifest(YAML::Load("apiVersion: jobset.x-k8s.io/v1alpha1\nkind: JobSet\nmetadata: {name: x, namespace: a}\n"), "x.yaml");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.error().message.find("jobset.x-k8s.io/v1alpha2 JobSet"), std::string::npos) << kind.error().message;
}

}  // namespace
}  // namespace allot::interop::k8s_manifest_test

namespace allot::interop::k8s_manifest_test {
namespace {

TEST(K8s, MpiJobLauncherAndWorkers) {
  auto m = load("mpijob_pi.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.team, "team-a");
  EXPECT_EQ(j.max_retries, 2);
  ASSERT_EQ(j.pod_sets.size(), 2u);
  EXPECT_EQ(j.pod_sets[0].name, "launcher");
  EXPECT_EQ(j.pod_sets[0].replicas, 1);
  EXPECT_EQ(j.pod_sets[0].per_replica.vcpu_milli, 1000);
  EXPECT_EQ(j.pod_sets[1].name, "worker");
  EXPECT_EQ(j.pod_sets[1].replicas, 2);
  EXPECT_EQ(j.pod_sets[1].per_replica.accelerators, 1);
  EXPECT_EQ(j.command, (std::vector<std::string>{"mpirun", "-n", "2", "/home/mpiuser/pi"}));
  bool said = false;
  for (const auto& w : m->warnings) said |= w.find("Launcher's command") != std::string::npos;
  EXPECT_TRUE(said) << "what does not carry over is said";
}

}  // namespace
}  // namespace allot::interop::k8s_manifest_test

namespace allot::interop::k8s_manifest_test {
namespace {

TEST(K8s, HyperPodsOwnHyperPodPyTorchJobKind) {
  auto m = load("hyperpod_native_pytorchjob.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.team, "ml-research");
  EXPECT_EQ(m->priority_label, "training-priority");
  EXPECT_EQ(j.max_retries, 3);
  ASSERT_EQ(j.pod_sets.size(), 1u);
  EXPECT_EQ(j.pod_sets[0].name, "pod");
  EXPECT_EQ(j.pod_sets[0].replicas, 4);
  EXPECT_EQ(j.pod_sets[0].instance_type, "ml.p5.48xlarge");
  EXPECT_EQ(j.pod_sets[0].per_replica.accelerators, 8);
  EXPECT_EQ(j.command, (std::vector<std::string>{"torchrun", "--nproc_per_node=8", "pretrain.py"}));
  // nprocPerNode goes to torchrun as the training operator passes it.
  EXPECT_EQ(j.env.at("PET_NPROC_PER_NODE"), "8");
}

bool warned(const ManifestJob& m, const std::string& text) {
  for (const auto& w : m.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(K8s, ElasticHyperPodPyTorchJobAsAwsWritesIt) {
  auto m = load("hyperpod_elastic_pytorchjob.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const JobSpec& j = m->spec;
  EXPECT_EQ(j.team, "ml-research");
  EXPECT_EQ(j.max_retries, 5);
  ASSERT_EQ(j.pod_sets.size(), 1u);
  EXPECT_EQ(j.pod_sets[0].replicas, 8);
  EXPECT_EQ(j.pod_sets[0].min_replicas, 2);
  EXPECT_EQ(j.env.at("PET_NPROC_PER_NODE"), "8");
  for (const char* field : {"replicaIncrementStep", "gracefulShutdownTimeoutInSeconds", "scalingTimeoutInSeconds",
                            "faultyScaleDownTimeoutInSeconds"})
    EXPECT_TRUE(warned(*m, std::string("spec.elasticPolicy.") + field)) << field << ": " << ::testing::PrintToString(m->warnings);
}

TEST(K8s, ElasticHyperPodPyTorchJobVariants) {
  auto job = [](const std::string& elastic, const std::string& replica_spec) {
    const std::string y = "apiVersion: sagemaker.amazonaws.com/v1\nkind: HyperPodPyTorchJob\n"
                          "metadata: {name: e, namespace: hyperpod-ns-t}\nspec:\n" + elastic +
                          "  replicaSpecs:\n  - name: w\n" + replica_spec +
                          "    template: {spec: {containers: [{name: c, command: [run], resources: {requests: {nvidia.com/gpu: 1}}}]}}\n";
    return job_from_manifest(YAML::Load(y), "e.yaml");
  };
  // A replica spec's own minReplicas and maxReplicas, without elasticPolicy.
  auto own = job("", "    replicas: 3\n    minReplicas: 1\n    maxReplicas: 4\n");
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(own->spec.pod_sets[0].replicas, 4);
  EXPECT_EQ(own->spec.pod_sets[0].min_replicas, 1);
  // Without minReplicas anywhere, the replicas it starts with are the smallest size.
  auto start = job("", "    replicas: 3\n    maxReplicas: 6\n");
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(start->spec.pod_sets[0].min_replicas, 3);
  // elasticPolicy alone sizes the only replica spec.
  auto policy = job("  elasticPolicy: {minReplicas: 2, maxReplicas: 5}\n", "    replicas: 2\n");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(policy->spec.pod_sets[0].replicas, 5);
  EXPECT_EQ(policy->spec.pod_sets[0].min_replicas, 2);
  // Refused, naming the field: maxReplicas that disagree, min above max, minReplicas without maxReplicas.
  auto differ = job("  elasticPolicy: {maxReplicas: 8}\n", "    replicas: 2\n    maxReplicas: 4\n");
  ASSERT_FALSE(differ.ok());
  EXPECT_NE(differ.error().message.find("maxReplicas"), std::string::npos) << differ.error().message;
  EXPECT_NE(differ.error().message.find("must match"), std::string::npos) << differ.error().message;
  auto inverted = job("  elasticPolicy: {minReplicas: 6, maxReplicas: 4}\n", "    replicas: 2\n");
  ASSERT_FALSE(inverted.ok());
  EXPECT_NE(inverted.error().message.find("minReplicas"), std::string::npos) << inverted.error().message;
  auto half = job("", "    replicas: 2\n    minReplicas: 1\n");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.error().message.find("needs maxReplicas"), std::string::npos) << half.error().message;
}

TEST(K8s, HyperPodPytorchJobAsAwsDocsSpellItAndQueueNameFromTheCommandLine) {
  std::ifstream in(data_path("hyperpod_docs_pytorchjob.yaml"));
  std::stringstream ss;
  ss << in.rdbuf();
  const YAML::Node doc = YAML::Load(ss.str());
  // Neither a queue label nor a namespace: refused, saying what would name the team.
  auto bare = job_from_manifest(doc, "docs.yaml");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message.find("cannot tell the team"), std::string::npos) << bare.error().message;
  // --queue-name names it, and the job carries the label.
  auto named = job_from_manifest(doc, "docs.yaml", "hyperpod-ns-team-a-localqueue");
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->spec.team, "team-a");
  EXPECT_EQ(named->spec.labels.at("kueue.x-k8s.io/queue-name"), "hyperpod-ns-team-a-localqueue");
  EXPECT_EQ(named->spec.pod_sets[0].replicas, 4);
  EXPECT_EQ(named->spec.env.at("PET_NPROC_PER_NODE"), "1");
  EXPECT_TRUE(warned(*named, "spares")) << ::testing::PrintToString(named->warnings);
  EXPECT_FALSE(doc["metadata"]["labels"]) << "the caller's document was changed";
  // It replaces a queue label the file has.
  auto m = load("hyperpod_native_pytorchjob.yaml");
  ASSERT_TRUE(m.ok());
  std::ifstream in2(data_path("hyperpod_native_pytorchjob.yaml"));
  std::stringstream ss2;
  ss2 << in2.rdbuf();
  auto over = job_from_manifest(YAML::Load(ss2.str()), "native.yaml", "other-team");
  ASSERT_TRUE(over.ok()) << over.error().message;
  EXPECT_EQ(over->spec.team, "other-team");
  EXPECT_EQ(over->spec.labels.at("kueue.x-k8s.io/queue-name"), "other-team");
}

}  // namespace
}  // namespace allot::interop::k8s_manifest_test
