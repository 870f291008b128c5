// From a replica assignment to the process's environment (agent/replica.h) and the inventory readers.
#include <gtest/gtest.h>

#include <set>

#include "agent/inventory.h"
#include "agent/replica.h"

namespace allot::agent::agent_replica_test {
namespace {

using nlohmann::json;

json assignment() {
  return {{"job", "a-1"},          {"rank", 3},         {"world_size", 4},
          {"local_rank", 1},       {"master_addr", "10.0.0.5"}, {"master_port", 29501},
          {"command", {"python", "train.py"}}, {"env", {{"LR", "0.1"}, {"RANK", "99"}}},
          {"accelerators", {2, 3}}, {"accelerator_kind", "nvidia-gpu"}, {"cpus", "48-95"}, {"attempt", 2}};
}

TEST(Agent, AssignmentFromJson) {
  auto a = assignment_from_json(assignment());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->job, "a-1");
  EXPECT_EQ(a->rank, 3);
  EXPECT_EQ(a->attempt, 2);
  EXPECT_EQ(a->slot(), "a-1/3");
  EXPECT_EQ(a->accelerators, (std::vector<int>{2, 3}));
  EXPECT_FALSE(a->hold) << "an assignment is to be started unless the server holds it";
  json held = assignment();
  held["hold"] = true;
  EXPECT_TRUE(assignment_from_json(held)->hold);
  EXPECT_FALSE(assignment_from_json(json{{"rank", 0}}).ok());
  EXPECT_FALSE(assignment_from_json(json{{"job", "x"}, {"rank", "zero"}, {"command", {"true"}}}).ok());
  EXPECT_FALSE(assignment_from_json(json{{"job", "x"}, {"rank", 0}}).ok());  // no command
}

TEST(Agent, ContainerAssignmentFromJson) {
  json j = assignment();
  j.erase("command");
  j["container"] = {{"image", "registry.example/team/train:1.2"}, {"pull_policy", "Always"}, {"shm_mib", 2048},
                    {"volumes", {{{"host_path", "/fsx/data"}, {"path", "/data"}, {"read_only", true}}}},
                    {"cap_add", {"NET_RAW"}}, {"auth_file", "/etc/allot/auth/team-a.json"}, {"args", {"--epochs", "3 4", "$X"}}};
  auto a = assignment_from_json(j);
  ASSERT_TRUE(a.ok()) << a.error().message;  // no command: the image's own runs
  ASSERT_TRUE(a->container.has_value());
  EXPECT_EQ(a->container->image, "registry.example/team/train:1.2");
  EXPECT_EQ(a->container->pull_policy, PullPolicy::kAlways);
  EXPECT_EQ(a->container->shm_mib, 2048);
  EXPECT_EQ(a->container->volumes, (std::vector<Volume>{{"/fsx/data", "/data", true}}));
  EXPECT_EQ(a->container->cap_add, (std::vector<std::string>{"NET_RAW"}));
  EXPECT_EQ(a->container->auth_file, "/etc/allot/auth/team-a.json");
  EXPECT_EQ(a->container->args, (std::vector<std::string>{"--epochs", "3 4", "$X"}));
  json no_args = j;
  no_args["container"].erase("args");
  auto b = assignment_from_json(no_args);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_TRUE(b->container->args.empty()) << "without args: the image's CMD";
  // Shapes the agent could not run safely are refused, naming the replica and what was wrong.
  auto refused = [&](const json& container, const std::string& says) {
    json bad = j;
    bad["container"] = container;
    auto r = assignment_from_json(bad);
    ASSERT_FALSE(r.ok()) << container.dump();
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("a-1/3"), std::string::npos) << r.error().message;
  };
  refused({{"image", ""}}, "image reference");
  refused({{"image", "--privileged"}}, "not starting with '-'");
  refused({{"image", "x:1"}, {"pull_policy", "Sometimes"}}, "IfNotPresent, Always, Never");
  refused({{"image", "x:1"}, {"volumes", {{{"host_path", "data"}, {"path", "/data"}}}}}, "must be absolute");
  refused({{"image", "x:1"}, {"volumes", {{{"host_path", "/data"}, {"path", "/data:rw,suid"}}}}}, "without ':'");
  refused({{"image", "x:1"}, {"cap_add", {"ALL; rm"}}}, "capability");
  refused({{"image", "x:1"}, {"shm_mib", 0}}, "shm_mib");
  refused({{"image", "x:1"}, {"auth_file", "relative.json"}}, "auth_file");
  refused({{"image", "x:1"}, {"args", {std::string("a\0b", 3)}}}, "NUL byte");
}

TEST(Agent, NvidiaEnvironment) {
  auto a = assignment_from_json(assignment());
  ASSERT_TRUE(a.ok());
  MachineFacts m{.kind = AcceleratorKind::kNvidiaGpu, .cpus = {0, 1}};
  auto env = replica_env(*a, m);
  EXPECT_EQ(env["ALLOT_JOB"], "a-1");
  EXPECT_EQ(env["RANK"], "3");  // the scheduler's rank wins over the job's env
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.5");
  EXPECT_EQ(env["MASTER_PORT"], "29501");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "2,3");
  EXPECT_EQ(env["LR"], "0.1");
  EXPECT_FALSE(env.count("NEURON_RT_VISIBLE_CORES"));
}

TEST(Agent, EnvironmentIsABaseTheJobsAndAllots) {
  json j = assignment();
  j["env"] = {{"PATH", "/opt/conda/bin:/usr/bin"}, {"LR", "0.1"}, {"WORLD_SIZE", "1"}};
  j["vcpu_milli"] = 4000;
  j["memory_mib"] = 65536;
  auto a = assignment_from_json(j);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->vcpu_milli, 4000);
  EXPECT_EQ(a->memory_mib, 65536);
  MachineFacts m{.kind = AcceleratorKind::kNone, .user = "nobody", .home = "/nonexistent"};
  auto env = replica_env(*a, m);
  EXPECT_EQ(env["PATH"], "/opt/conda/bin:/usr/bin");  // the job's own wins over the base
  EXPECT_EQ(env["HOME"], "/nonexistent");
  EXPECT_EQ(env["USER"], "nobody");
  EXPECT_EQ(env["LOGNAME"], "nobody");
  EXPECT_EQ(env["LANG"], "C.UTF-8");
  EXPECT_EQ(env["WORLD_SIZE"], "4");  // allot's wins over the job's
  // Nothing else: the base, the job's three, and allot's (the assignment is for an NVIDIA GPU).
  std::set<std::string> keys;
  for (const auto& [k, v] : env) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LR", "WORLD_SIZE", "ALLOT_JOB",
                                         "ALLOT_ATTEMPT", "ALLOT_RESTART_COUNT", "RANK", "LOCAL_RANK", "MASTER_ADDR",
                                         "MASTER_PORT", "CUDA_VISIBLE_DEVICES"}));
  // The job's checkpoint directory (made by the agent from the server's root) and its restarts so far.
  Assignment with_ckpt = *a;
  with_ckpt.checkpoint_dir = "/shared/ckpt/train";
  with_ckpt.restart_count = 2;
  auto ckpt_env = replica_env(with_ckpt, m);
  EXPECT_EQ(ckpt_env["ALLOT_CHECKPOINT_DIR"], "/shared/ckpt/train");
  EXPECT_EQ(ckpt_env["ALLOT_RESTART_COUNT"], "2");
  j.erase("env");
  auto bare = replica_env(*assignment_from_json(j), MachineFacts{});
  EXPECT_EQ(bare["PATH"], "/usr/local/bin:/usr/bin:/bin");
}

TEST(Agent, NeuronCoresFollowTheDevices) {
  json j = assignment();
  j["accelerator_kind"] = "neuron";
  auto a = assignment_from_json(j);
  ASSERT_TRUE(a.ok());
  // trn1: 2 NeuronCores per device; devices 2 and 3 own cores 4-7.
  MachineFacts m{.kind = AcceleratorKind::kNeuron, .neuron_cores_per_device = 2};
  auto env = replica_env(*a, m);
  EXPECT_EQ(env["NEURON_RT_VISIBLE_CORES"], "4-7");
  EXPECT_FALSE(env.count("CUDA_VISIBLE_DEVICES"));
}

TEST(Agent, CpuOnlyReplicaOnAGpuNodeSeesNoGpu) {
  json j = assignment();
  j["accelerators"] = json::array();
  j.erase("accelerator_kind");
  auto a = assignment_from_json(j);
  ASSERT_TRUE(a.ok());
  auto env = replica_env(*a, MachineFacts{.kind = AcceleratorKind::kNvidiaGpu});
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_FALSE(replica_env(*a, MachineFacts{.kind = AcceleratorKind::kNone}).count("CUDA_VISIBLE_DEVICES"));
}

TEST(Agent, LaunchSpecClampsCpus) {
  auto a = assignment_from_json(assignment());
  ASSERT_TRUE(a.ok());
  auto s = launch_spec(*a, MachineFacts{.kind = AcceleratorKind::kNvidiaGpu, .cpus = {0, 1}}, "/tmp/x.log", "/tmp");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(s->argv, (std::vector<std::string>{"python", "train.py"}));
  json bad = assignment();
  bad["cpus"] = "x-y";
  EXPECT_FALSE(launch_spec(*assignment_from_json(bad), MachineFacts{}, "", "").ok());
}

TEST(Agent, ParsesNvidiaSmiList) {
  auto gpus = parse_nvidia_smi_list(
      "GPU 0: NVIDIA A10G (UUID: GPU-0c3f7c6a-1111-2222-3333-444455556666)\n"
      "GPU 1: NVIDIA A10G (UUID: GPU-1d4f7c6a-1111-2222-3333-444455556666)\n"
      "No devices were found\n");
  EXPECT_EQ(gpus, (std::vector<std::string>{"NVIDIA A10G", "NVIDIA A10G"}));
  EXPECT_TRUE(parse_nvidia_smi_list("").empty());
}

TEST(Agent, EmulatesAnInstanceTypeFromTheCatalog) {
  auto inv = discover("p5.48xlarge", Catalog::builtin());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->instance_type, "ml.p5.48xlarge");
  EXPECT_EQ(inv->accelerators, 8);
  EXPECT_EQ(inv->kind, AcceleratorKind::kNvidiaGpu);
  EXPECT_FALSE(inv->cpus.empty());
  EXPECT_TRUE(inv->emulated || inv->cpus.size() >= 192);
  auto bad = discover("ml.nope.xlarge", Catalog::builtin());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("ml.p5.48xlarge"), std::string::npos);  // lists the known types
  EXPECT_EQ(inventory_json(*inv)["accelerators"], 8);
}

}  // namespace
}  // namespace allot::agent::agent_replica_test
