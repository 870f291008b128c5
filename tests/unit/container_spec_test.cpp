// A job's container and a team's container settings (docs/jobs.md, "Images"; docs/teams-and-policy.md,
// "Containers") through every reader and writer of them: the rules (config/container_rules.h), the job and team
// YAML with their errors and defaults, the journal's JSON (old records read as before), the CLI's request bodies,
// Kubernetes manifests, Kueue export and import, and the agents' heartbeats.
#include <gtest/gtest.h>

#include "client/render.h"
#include "client/spec_json.h"
#include "config/container_rules.h"
#include "config/spec_yaml.h"
#include "interop/k8s_manifest.h"
#include "interop/kueue.h"
#include "server/lifecycle/agents.h"
#include "server/lifecycle/node_lifecycle.h"
#include "core/model/state.h"
#include "store/spec_json.h"
#include "view/state_json.h"

namespace allot::container_spec_test {
namespace {

using nlohmann::json;

Result<JobSpec> job(const std::string& text) {
  auto d = load_yaml(text, {"t.yaml", "", 0});
  if (!d) return d.error();
  return parse_job_spec(*d, Catalog::builtin(), {"t.yaml", "", 0});
}
Result<std::vector<TeamSpec>> teams(const std::string& text) {
  auto d = load_yaml(text, {"t.yaml", "", 0});
  if (!d) return d.error();
  return parse_teams(*d, Catalog::builtin(), {"t.yaml", "teams", 0});
}
std::string error_of(const Result<JobSpec>& r) { return r ? std::string("(accepted)") : r.error().message; }

const std::string kHead = "name: j\nteam: a\nreplicas: 2\nper_replica: {accelerators: 1, memory_gib: 8}\n";

// A job with every container field set, and a team with every setting.
JobSpec full_job() {
  JobSpec j;
  j.name = "train";
  j.team = "a";
  PodSetSpec ps;
  ps.replicas = 2;
  ps.per_replica.accelerators = 1;
  ps.per_replica.memory_mib = 8 * 1024;
  j.pod_sets = {ps};
  j.command = {"torchrun", "train.py"};
  j.container.image = "registry.example.com:5000/ml/train:1.4";
  j.container.pull_policy = PullPolicy::kAlways;
  j.container.shm_mib = 1537;  // not a whole number of GiB: 1.500976563 GiB on the wire
  j.container.volumes = {{"/datasets/imagenet", "/data", true}, {"/scratch/a", "/scratch", false}};
  j.container.args = {"--epochs", "3", "a b", "$HOME"};
  return j;
}
TeamSpec full_team() {
  TeamSpec t;
  t.name = "a";
  t.containers.host_paths = {"/datasets", "/scratch/a"};
  t.containers.capabilities = {Capability::kNetRaw, Capability::kIpcLock};  // sorted: in the kernel's order
  t.containers.registry_auth_file = "/etc/allot/auth/a.json";
  return t;
}

// --- the rules ---------------------------------------------------------------------------------------------

TEST(ContainerRules, ImageReferencesOfEveryShapeAreAcceptedAndFaultsNamed) {
  for (const char* ok : {"busybox", "busybox:1.36", "library/busybox", "docker.io/library/busybox:latest", "localhost/x",
                         "localhost:5000/team/train:v1.4-rc_2", "registry.example.com/a/b/c", "my_image", "a__b", "a--b",
                         "nvcr.io/nvidia/pytorch:24.01-py3",
                         "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                         "r.io/x:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
    EXPECT_TRUE(config::check_image_reference(ok)) << ok << ": " << config::check_image_reference(ok).error().message;
  const std::pair<std::string, std::string> bad[] = {
      {"", "is empty"},
      {"Busybox", "upper-case"},
      {"busy box", "space"},
      {"busybox:", "empty tag"},
      {"busybox:-x", "tag that does not begin"},
      {"a//b", "empty path component"},
      {"a/b/", "empty path component"},
      {"-a", "does not begin and end"},
      {"a..b", "separator"},
      {"busybox@sha256:abc", "64 lowercase hex"},
      {"busybox@x@y", "more than one '@'"},
      {"reg:port/x", "not a number"},
      {"busybox;rm", "character ';'"},
      {"x\xc3\xa9", "beyond ASCII"},
      {std::string(600, 'a'), "at most 512"},
      {"a:" + std::string(129, 't'), "at most 128"},
  };
  for (const auto& [image, why] : bad) {
    auto st = config::check_image_reference(image);
    ASSERT_FALSE(st) << image;
    EXPECT_NE(st.error().message.find(why), std::string::npos) << image << ": " << st.error().message;
  }
}

TEST(ContainerRules, ThePullPolicyDefaultsAsKubernetesDoes) {
  EXPECT_EQ(config::default_pull_policy("busybox"), PullPolicy::kAlways);
  EXPECT_EQ(config::default_pull_policy("busybox:latest"), PullPolicy::kAlways);
  EXPECT_EQ(config::default_pull_policy("localhost:5000/busybox"), PullPolicy::kAlways);  // the port is no tag
  EXPECT_EQ(config::default_pull_policy("busybox:1.36"), PullPolicy::kIfNotPresent);
  EXPECT_EQ(config::default_pull_policy("localhost:5000/busybox:1"), PullPolicy::kIfNotPresent);
  EXPECT_EQ(config::default_pull_policy("busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
            PullPolicy::kIfNotPresent);
  for (PullPolicy p : kPullPolicies) EXPECT_EQ(config::pull_policy_named(pull_policy_name(p)), p);
  EXPECT_FALSE(config::pull_policy_named("always"));
}

TEST(ContainerRules, PathsAreNormalisedAndComparedComponentWise) {
  EXPECT_EQ(*config::normal_path("/a//b/./c/", "p"), "/a/b/c");
  EXPECT_EQ(*config::normal_path("///", "p"), "/");
  for (const char* bad : {"a/b", "", "/a/../b", "/a/..", "/a\nb", "/a,b"}) EXPECT_FALSE(config::normal_path(bad, "p")) << bad;
  EXPECT_TRUE(config::path_within("/data", "/data"));
  EXPECT_TRUE(config::path_within("/data/x/y", "/data"));
  EXPECT_FALSE(config::path_within("/data2", "/data"));
  EXPECT_FALSE(config::path_within("/dat", "/data"));
  EXPECT_TRUE(config::path_within("/anything", "/"));
  EXPECT_EQ(config::reserved_container_path("/dev/shm"), "/dev");
  EXPECT_EQ(config::reserved_container_path("/"), "/");
  EXPECT_EQ(config::reserved_container_path("/etc/hosts"), "/etc/hosts");
  EXPECT_FALSE(config::reserved_container_path("/etc/hostsx"));
  EXPECT_FALSE(config::reserved_container_path("/data"));
  EXPECT_EQ(config::default_shm_mib(0), 64);
  EXPECT_EQ(config::default_shm_mib(100), 64);
  EXPECT_EQ(config::default_shm_mib(64 * 1024), 16 * 1024);
}

TEST(ContainerRules, TheAllowListNamesTheVolumeThePathAndWhatIsAllowed) {
  const TeamSpec t = full_team();
  ContainerSpec c;
  c.image = "x";
  c.volumes = {{"/datasets", "/d", true}, {"/scratch/a/run-1", "/s", false}};
  EXPECT_TRUE(config::check_host_paths_allowed(c, "a", t.containers));
  c.volumes.push_back({"/scratch/ab", "/t", false});
  auto st = config::check_host_paths_allowed(c, "a", t.containers);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "volume 2 (host_path /scratch/ab, path /t): /scratch/ab is not inside a host path team a may mount; allowed: "
            "/datasets, /scratch/a");
  st = config::check_host_paths_allowed(c, "b", TeamContainerSettings{});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("volume 0 (host_path /datasets, path /d): team b may mount no host paths"), std::string::npos)
      << st.error().message;
  c.volumes.clear();
  EXPECT_TRUE(config::check_host_paths_allowed(c, "b", TeamContainerSettings{})) << "no volumes, nothing to allow";
}

TEST(ContainerRules, CapabilitiesAreAClosedListWithOneSpelling) {
  for (int i = 0; i < kCapabilityCount; ++i) {
    const auto c = static_cast<Capability>(i);
    EXPECT_EQ(config::capability_named(capability_name(c)), c);
    EXPECT_EQ(config::capability_named(std::string("CAP_") + capability_name(c)), c);
  }
  EXPECT_EQ(std::string(capability_name(Capability::kNetRaw)), "NET_RAW");
  EXPECT_EQ(std::string(capability_name(Capability::kCheckpointRestore)), "CHECKPOINT_RESTORE");
  EXPECT_FALSE(config::capability_named("net_raw"));
  EXPECT_FALSE(config::capability_named("ALL"));
}

// --- job YAML ----------------------------------------------------------------------------------------------

TEST(ContainerJobYaml, AnImageMakesTheCommandOptionalAndThePullPolicyIsResolved) {
  auto j = job(kHead + "image: nvcr.io/nvidia/pytorch:24.01-py3\n");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_TRUE(j->command.empty());
  EXPECT_EQ(j->container.image, "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(j->container.pull_policy, PullPolicy::kIfNotPresent);
  EXPECT_FALSE(j->container.shm_mib);
  j = job(kHead + "image: busybox\n");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->container.pull_policy, PullPolicy::kAlways) << "no tag: Always";
  j = job(kHead + "image: busybox\nimage_pull_policy: Never\nshm_size_gib: 0.5\ncommand: [sh, -c, 'true']\n"
                  "volumes:\n  - {host_path: /datasets//x/, path: /data, read_only: true}\n  - {host_path: /s, path: /s}\n");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->container.pull_policy, PullPolicy::kNever);
  EXPECT_EQ(j->container.shm_mib, 512);
  ASSERT_EQ(j->container.volumes.size(), 2u);
  EXPECT_EQ(j->container.volumes[0], (VolumeSpec{"/datasets/x", "/data", true}));
  EXPECT_EQ(j->container.volumes[1], (VolumeSpec{"/s", "/s", false}));
  // Without an image: a bare process, as before.
  j = job(kHead + "command: train\n");
  ASSERT_TRUE(j);
  EXPECT_TRUE(j->container.empty());
}

// args (Kubernetes' args): a list after the image's entrypoint, or after the command; each item as it is.
TEST(ContainerJobYaml, ArgsAreAListForTheImagesEntrypoint) {
  auto j = job(kHead + "image: busybox:1.36\nargs: [--epochs, '3', 'a b', '$HOME']\n");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_TRUE(j->command.empty());
  EXPECT_EQ(j->container.args, (std::vector<std::string>{"--epochs", "3", "a b", "$HOME"}));
  j = job(kHead + "image: busybox:1.36\ncommand: [python3, train.py]\nargs: [--epochs, '3']\n");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->command, (std::vector<std::string>{"python3", "train.py"})) << "kept apart: the agent runs command, then args";
  EXPECT_EQ(j->container.args, (std::vector<std::string>{"--epochs", "3"}));
  const std::pair<std::string, std::string> cases[] = {
      {"args: [x]\n", "t.yaml:5: args is given without an image; args are the arguments of an image's entrypoint"},
      {"command: [x]\nargs: [y]\n", "args is given without an image"},
      {"image: x\nargs: --epochs 3\n", "args is a string"},
      {"image: x\nargs: []\n", "args is empty"},
      {"image: x\nargs: [[a]]\n", "is a list"},
  };
  for (const auto& [tail, want] : cases) {
    auto r = job(kHead + tail);
    EXPECT_NE(error_of(r).find(want), std::string::npos) << tail << "\n  got: " << error_of(r);
  }
  // The command and args are one argv in the container: the command's limits hold for both together.
  std::string many = kHead + "image: x\ncommand: [" + std::string("a") + "]\nargs: [";
  for (size_t i = 0; i < kMaxCommandArgs; ++i) many += (i ? ", " : "") + std::string("b");
  EXPECT_NE(error_of(job(many + "]\n")).find("makes 4097 arguments with command"), std::string::npos) << error_of(job(many + "]\n"));
  const std::string big(70 * 1024, 'x');
  const std::string two = kHead + "image: x\ncommand: [" + big + "]\nargs: [" + big + "]\n";
  EXPECT_NE(error_of(job(two)).find("bytes with command"), std::string::npos) << error_of(job(two)).substr(0, 200);
}

TEST(ContainerJobYaml, MistakesAreNamedWithTheirLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"image: Busy\n", "t.yaml:5: image: image 'Busy' has the upper-case letter 'B'"},
      {"image: ''\n", "image '' is empty"},
      {"image: [a]\n", "image is a list"},
      {"image: x\nimage_pull_policy: always\n", "image_pull_policy is 'always'; allowed: IfNotPresent, Always, Never"},
      {"image_pull_policy: Always\n", "image_pull_policy is given without an image"},
      {"shm_size_gib: 1\n", "shm_size_gib is given without an image"},
      {"volumes: []\n", "volumes is given without an image"},
      {"image: x\nshm_size_gib: 0\n", "shm_size_gib is 0"},
      {"image: x\nshm_size_gib: 9\n", "above the memory_gib of pod set main (8192 MiB)"},
      {"image: x\nshm_size_gib: -1\n", "a negative number"},
      {"image: x\nvolumes: [{host_path: data, path: /d}]\n", "host_path 'data' is not absolute"},
      {"image: x\nvolumes: [{host_path: /a/../etc, path: /d}]\n", "has a '..' component"},
      {"image: x\nvolumes: [{host_path: /a, path: /}]\n", "allot mounts / itself"},
      {"image: x\nvolumes: [{host_path: /a, path: /dev/shm}]\n", "allot mounts /dev itself"},
      {"image: x\nvolumes: [{host_path: /a, path: /proc/x}]\n", "allot mounts /proc itself"},
      {"image: x\nvolumes: [{host_path: /a, path: /d}, {host_path: /b, path: /d/}]\n", "volume 1 (path /d): another volume"},
      {"image: x\nvolumes: [{path: /d}]\n", "host_path"},
      {"image: x\nvolumes: [{host_path: /a, path: /d, mode: rw}]\n", "mode"},
      {"image: x\nvolumes: [{host_path: /a, path: /d, read_only: maybe}]\n", "read_only"},
  };
  for (const auto& [tail, want] : cases) {
    auto r = job(kHead + tail);
    EXPECT_NE(error_of(r).find(want), std::string::npos) << tail << "\n  got: " << error_of(r);
  }
  std::string many = kHead + "image: x\nvolumes:\n";
  for (int i = 0; i < 65; ++i) many += "  - {host_path: /a, path: /d" + std::to_string(i) + "}\n";
  EXPECT_NE(error_of(job(many)).find("at most 64"), std::string::npos) << error_of(job(many));
}

// --- team YAML ---------------------------------------------------------------------------------------------

TEST(ContainerTeamYaml, SettingsAreReadNormalisedAndSorted) {
  auto t = teams("- name: a\n  containers:\n    host_paths: [/datasets/, /scratch/a]\n    capabilities: [NET_RAW, CAP_IPC_LOCK]\n"
                 "    registry_auth_file: /etc/allot/auth/a.json\n- name: b\n");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ((*t)[0], full_team());
  EXPECT_TRUE((*t)[1].containers.empty());
  const std::pair<std::string, std::string> cases[] = {
      {"host_paths: [data]", "not absolute"},
      {"host_paths: [/]", "is /, which would let"},
      {"host_paths: [/a, /a/]", "(/a) is given twice"},
      {"host_paths: [/a/../b]", "'..'"},
      {"capabilities: [NET_RAWR]", "not a Linux capability; allowed: CHOWN, DAC_OVERRIDE"},
      {"capabilities: [NET_RAW, CAP_NET_RAW]", "(NET_RAW) is given twice"},
      {"registry_auth_file: auth.json", "registry_auth_file 'auth.json' is not absolute"},
      {"allowed: [/a]", "allowed"},
  };
  for (const auto& [line, want] : cases) {
    auto r = teams("- name: a\n  containers:\n    " + line + "\n");
    ASSERT_FALSE(r) << line;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << line << "\n  got: " << r.error().message;
  }
}

// --- every encoder: a round trip over every field -------------------------------------------------------------

TEST(ContainerRoundTrip, TheJournalKeepsEveryFieldAndOldRecordsReadAsBefore) {
  const JobSpec j = full_job();
  EXPECT_EQ(store::job_from_json(store::to_json(j)), j);
  const json wire = store::to_json(j)["container"];
  EXPECT_EQ(wire, (json{{"image", "registry.example.com:5000/ml/train:1.4"},
                        {"pull_policy", "Always"},
                        {"shm_mib", 1537},
                        {"volumes", {{{"host_path", "/datasets/imagenet"}, {"path", "/data"}, {"read_only", true}},
                                     {{"host_path", "/scratch/a"}, {"path", "/scratch"}, {"read_only", false}}}},
                        {"args", {"--epochs", "3", "a b", "$HOME"}}}));
  // Without args the record is as before args existed, and a record without them reads as none.
  JobSpec no_args = j;
  no_args.container.args.clear();
  EXPECT_FALSE(store::to_json(no_args)["container"].contains("args"));
  EXPECT_EQ(store::job_from_json(store::to_json(no_args)), no_args);
  // A bare job's record has no container key, so records read and written before containers stay the same.
  JobSpec bare = j;
  bare.container = {};
  EXPECT_FALSE(store::to_json(bare).contains("container"));
  EXPECT_EQ(store::job_from_json(store::to_json(bare)), bare);
  const TeamSpec t = full_team();
  EXPECT_EQ(store::team_from_json(store::to_json(t)), t);
  EXPECT_FALSE(store::to_json(TeamSpec{.name = "b"}).contains("containers"));
  json unknown = store::to_json(j);
  unknown["container"]["pull_policy"] = "Sometimes";
  EXPECT_THROW(store::job_from_json(unknown), std::invalid_argument);
}

TEST(ContainerRoundTrip, TheClientsBodiesReadBackAsTheSameSpecs) {
  const JobSpec j = full_job();
  auto back = parse_job_spec(YAML::Load(client::job_body(j).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back) << back.error().message << "\n" << client::job_body(j).dump();
  EXPECT_EQ(*back, j);
  // Every size of /dev/shm a job can have comes back to the same MiB.
  for (int64_t mib : {int64_t{1}, int64_t{1023}, int64_t{1025}, int64_t{8191}, int64_t{8192}}) {
    JobSpec k = j;
    k.container.shm_mib = mib;
    auto r = parse_job_spec(YAML::Load(client::job_body(k).dump()), Catalog::builtin(), {});
    ASSERT_TRUE(r) << mib << ": " << r.error().message;
    EXPECT_EQ(r->container.shm_mib, mib);
  }
  const TeamSpec t = full_team();
  auto tb = parse_team(YAML::Load(client::team_body(t).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(tb) << tb.error().message;
  EXPECT_EQ(*tb, t);
  // `allot team allocation set` rewrites a team from its view: the settings survive it.
  ClusterState s(Catalog::builtin());
  ASSERT_TRUE(upsert_team(s, t));
  const json view = client::team_body_from_view(view::team_json(s, s.teams[0]));
  auto tv = parse_team(YAML::Load(view.dump()), Catalog::builtin(), {});
  ASSERT_TRUE(tv) << tv.error().message;
  EXPECT_EQ(tv->containers, t.containers);
}

TEST(ContainerRoundTrip, DescribeShowsTheImageAndWhetherItIsPulling) {
  json j = {{"name", "train"}, {"team", "a"}, {"state", "Running"},
            {"container", {{"image", "r.io/x:1"}, {"pull_policy", "IfNotPresent"}, {"shm_mib", 1536},
                           {"volumes", {{{"host_path", "/datasets"}, {"path", "/data"}, {"read_only", true}}}}}},
            {"pulling_image_on", {"g1", "g2"}}};
  const std::string out = client::describe_job(j, 0);
  for (const char* line : {"Image:       r.io/x:1", "Pull policy: IfNotPresent", "Shm:         1.50 GiB",
                           "Volumes:     /datasets -> /data (read-only)", "Starting:    Pulling image on g1,g2"})
    EXPECT_NE(out.find(line), std::string::npos) << line << " not in\n" << out;
  EXPECT_EQ(out.find("Args:"), std::string::npos) << "no args: no line";
  j["container"].erase("shm_mib");
  EXPECT_NE(client::describe_job(j, 0).find("Shm:         default"), std::string::npos);
  j["container"]["args"] = {"--epochs", "a b", "$HOME"};
  EXPECT_NE(client::describe_job(j, 0).find("Args:        [\"--epochs\",\"a b\",\"$HOME\"]"), std::string::npos)
      << client::describe_job(j, 0);
}

// --- Kubernetes manifests ------------------------------------------------------------------------------------

Result<interop::ManifestJob> manifest(const std::string& container, const std::string& pod_extra = "") {
  const std::string text = R"(apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: hyperpod-ns-a}
spec:
  parallelism: 2
  template:
    spec:
)" + pod_extra + R"(      containers:
        - name: main
          resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}}
)" + container;
  return interop::job_from_manifest(YAML::Load(text), "m.yaml");
}

TEST(ContainerManifest, TheImageIsHonouredWithItsPullPolicyVolumesAndShm) {
  auto m = manifest(R"(          image: nvcr.io/nvidia/pytorch:24.01-py3
          imagePullPolicy: Always
          command: [torchrun]
          args: [train.py]
          volumeMounts:
            - {name: data, mountPath: /data, readOnly: true}
            - {name: scratch, mountPath: /scratch, subPath: run-1}
            - {name: shm, mountPath: /dev/shm}
            - {name: config, mountPath: /etc/cfg}
)", R"(      volumes:
        - {name: data, hostPath: {path: /datasets/imagenet, type: Directory}}
        - {name: scratch, hostPath: {path: /scratch/a}}
        - {name: shm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}
        - {name: config, configMap: {name: cfg}}
)");
  ASSERT_TRUE(m) << m.error().message;
  const ContainerSpec& c = m->spec.container;
  EXPECT_EQ(c.image, "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(c.pull_policy, PullPolicy::kAlways);
  EXPECT_EQ(c.shm_mib, 2048);
  ASSERT_EQ(c.volumes.size(), 2u);
  EXPECT_EQ(c.volumes[0], (VolumeSpec{"/datasets/imagenet", "/data", true}));
  EXPECT_EQ(c.volumes[1], (VolumeSpec{"/scratch/a/run-1", "/scratch", false}));
  EXPECT_EQ(m->spec.command, (std::vector<std::string>{"torchrun", "train.py"}));
  std::string warnings;
  for (const auto& w : m->warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("volumeMounts[3]: not mounted"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("hostPath.type: not checked"), std::string::npos) << warnings;
  // The spec the manifest becomes goes to the server as the CLI's body, and reads back the same.
  auto back = parse_job_spec(YAML::Load(client::job_body(m->spec).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->container, c);
}

TEST(ContainerManifest, WithoutCommandTheEntrypointRunsWithTheArgs) {
  auto m = manifest("          image: busybox:1.36\n");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->spec.command.empty());
  EXPECT_TRUE(m->spec.container.args.empty());
  EXPECT_EQ(m->spec.container.pull_policy, PullPolicy::kIfNotPresent);
  m = manifest("          image: busybox:1.36\n          args: [--epochs, '3', 'a b', '$HOME']\n");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->spec.command.empty()) << "the image's entrypoint runs";
  EXPECT_EQ(m->spec.container.args, (std::vector<std::string>{"--epochs", "3", "a b", "$HOME"}));
  // The spec goes to the server as the CLI's body and reads back the same.
  auto back = parse_job_spec(YAML::Load(client::job_body(m->spec).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, m->spec);
  m = manifest("          image: busybox:1.36\n          args: --epochs\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("args"), std::string::npos) << m.error().message;
  m = manifest("          command: [x]\n");
  ASSERT_TRUE(m) << "no image: a bare process, as before";
  EXPECT_TRUE(m->spec.container.empty());
  m = manifest("          args: [x]\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("command: is required without an image"), std::string::npos) << m.error().message;
  m = manifest("          image: Bad:Image\n          command: [x]\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("containers[0].image: image 'Bad:Image'"), std::string::npos) << m.error().message;
  m = manifest("          image: x\n          imagePullPolicy: Sometimes\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("must be Always, IfNotPresent or Never"), std::string::npos) << m.error().message;
  m = manifest("          image: x\n          volumeMounts: [{name: nope, mountPath: /d}]\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("names no volume"), std::string::npos) << m.error().message;
  m = manifest("          image: x\n          volumeMounts: [{name: h, mountPath: /proc}]\n", "      volumes: [{name: h, hostPath: {path: /x}}]\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("allot mounts /proc itself"), std::string::npos) << m.error().message;
}

// --- Kueue: the team settings ride on the ClusterQueue ---------------------------------------------------------

TEST(ContainerKueue, TeamSettingsSurviveExportAndImport) {
  TeamSpec t = full_team();
  AmountSpec two;
  two.instances = 2;
  t.allocation = {{"ml.g5.8xlarge", two}};
  t.fair_share_weight = 1;
  TeamSpec plain = t;
  plain.name = "b";
  plain.containers = {};
  auto out = interop::export_kueue(PolicySpec{}, {t, plain}, Catalog::builtin(), {});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_NE(out->yaml.find("allot.scheduler/container-host-paths: \"/datasets,/scratch/a\""), std::string::npos) << out->yaml;
  interop::KueueImport back;
  ASSERT_TRUE(interop::import_kueue(out->yaml, "export", Catalog::builtin(), back));
  ASSERT_TRUE(interop::finish_kueue_import(back));
  ASSERT_EQ(back.teams.size(), 2u);
  EXPECT_EQ(back.teams[0].containers, t.containers);
  EXPECT_TRUE(back.teams[1].containers.empty());
  // And through the teams file the import writes.
  auto d = load_yaml(interop::teams_file_yaml(back), {"teams_file_yaml", "", 0});
  ASSERT_TRUE(d);
  auto read = parse_teams((*d)["teams"], Catalog::builtin(), {"teams_file_yaml", "teams", 0});
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ((*read)[0].containers, t.containers);
  // A bad annotation is a warning, and the entry is left out.
  std::string yaml = out->yaml;
  yaml.replace(yaml.find("/datasets,/scratch/a"), 20, "relative,/scratch/a");
  interop::KueueImport warned;
  ASSERT_TRUE(interop::import_kueue(yaml, "edited", Catalog::builtin(), warned));
  EXPECT_EQ(warned.teams[0].containers.host_paths, std::vector<std::string>{"/scratch/a"});
  std::string all;
  for (const auto& w : warned.warnings) all += w + "\n";
  EXPECT_NE(all.find("container-host-paths: 'relative' is not an absolute path"), std::string::npos) << all;
}

// --- heartbeats ----------------------------------------------------------------------------------------------

TEST(ContainerHeartbeat, PullingAndImagePullFailuresAreReadAndBounded) {
  auto r = server::parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", "pulling"}, {"attempt", 2}}}}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].state, server::ReplicaState::kPulling);
  EXPECT_FALSE((*r)[0].exited());
  r = server::parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", "exited"},
                                              {"failure", {{"reason", "image_pull"}, {"message", std::string(5000, 'm') + "\x07"}}}}}}});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE((*r)[0].failure);
  EXPECT_EQ((*r)[0].failure->reason, view::ReplicaFailureReason::kImagePull);
  EXPECT_EQ((*r)[0].failure->message, std::string(2000, 'm') + "...") << "cut to 2,000 bytes";
  r = server::parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", "exited"},
                                              {"failure", {{"reason", "image_pull"}, {"message", "x: \x1b[2Jdenied"}}}}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)[0].failure->message, "x: \\x1b[2Jdenied");
  const json bad[] = {
      {{"job", "j"}, {"rank", 0}, {"state", "exited"}},  // neither exit code nor failure
      {{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"failure", "image_pull"}},
      {{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"failure", {{"reason", "oom"}}}},
      {{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"failure", {{"reason", "image_pull"}, {"message", 3}}}},
      {{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"failure", {{"reason", "image_pull"}, {"code", 3}}}},
      {{"job", "j"}, {"rank", 0}, {"state", "pulling"}, {"failure", {{"reason", "image_pull"}}}},
      {{"job", "j"}, {"rank", 0}, {"state", "Pulling"}},
  };
  for (const json& rep : bad) EXPECT_FALSE(server::parse_heartbeat({{"replicas", {rep}}})) << rep.dump();
  for (view::ReplicaFailureReason reason : view::kReplicaFailureReasons)
    EXPECT_EQ(view::replica_failure_reason_named(view::replica_failure_reason_name(reason)), reason);
}

TEST(OomHeartbeat, AnOutOfMemoryEndCarriesItsLimitAsData) {
  auto r = server::parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 1}, {"state", "exited"}, {"exit_code", 137},
                                                   {"failure", {{"reason", "oom_killed"}, {"memory_limit_mib", 64}}}}}}});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE((*r)[0].failure);
  EXPECT_EQ((*r)[0].failure->reason, view::ReplicaFailureReason::kOomKilled);
  EXPECT_EQ((*r)[0].failure->memory_limit_mib, 64);
  const json bad[] = {
      {{"reason", "oom_killed"}},                                  // the limit is required
      {{"reason", "oom_killed"}, {"memory_limit_mib", 0}},
      {{"reason", "oom_killed"}, {"memory_limit_mib", "64"}},
      {{"reason", "image_pull"}, {"message", "x"}, {"memory_limit_mib", 64}},  // only with oom_killed
      {{"reason", "OOMKilled"}, {"memory_limit_mib", 64}},          // the wire spelling is oom_killed
  };
  for (const json& f : bad)
    EXPECT_FALSE(server::parse_heartbeat({{"replicas", {{{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 137}, {"failure", f}}}}}))
        << f.dump();
}

TEST(OomHeartbeat, TheNodeSaysWhichLimitsItEnforces) {
  auto h = server::parse_health_report({{"limits_enforced", {{"memory", true}, {"cpu", false}}}});
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_TRUE(h->limits);
  EXPECT_TRUE(h->limits->memory);
  EXPECT_FALSE(h->limits->cpu);
  h = server::parse_health_report(json::object());
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->limits) << "an agent that does not say leaves it unknown";
  for (const json& bad : {json{{"memory", true}}, json{{"memory", 1}, {"cpu", true}}, json{{"memory", true}, {"cpu", true}, {"io", true}}, json("yes")}) {
    auto e = server::parse_health_report({{"limits_enforced", bad}});
    ASSERT_FALSE(e) << bad.dump();
    EXPECT_NE(e.error().message.find("limits_enforced"), std::string::npos) << e.error().message;
  }
}

}  // namespace
}  // namespace allot::container_spec_test
