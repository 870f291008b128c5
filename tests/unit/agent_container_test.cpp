// The podman command lines of container replicas (agent/container.h), run against a real podman where it can run
// here: an image built from Debian's busybox-static, a team's user namespace, a private /dev/shm, the pull of a
// missing image. Skipped, saying why, where podman, busybox-static or user namespaces are missing.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/container.h"
#include "agent/health_checks.h"

namespace allot::agent::agent_container_test {
namespace {
namespace fs = std::filesystem;

TEST(ContainerArgv, RunsInTheTeamsUserNamespaceWithNothingExtra) {
  ContainerRun r{.name = "allot-j-0-0", .agent = "n1", .image = "localhost/x:1", .command = {"sh", "-c", "id"},
                 .env_file = "/w/env", .first_uid = 200000, .uids = 65536, .shm_mib = 256, .work_dir = "/w/j/attempt-0",
                 .checkpoint_dir = "/ck/j", .volumes = {{"/data", "/data", true}}, .devices = {"nvidia.com/gpu=1"}};
  auto a = podman_run_argv({}, r, {1000, 2000});
  std::string line;
  for (const auto& s : a) line += s + " ";
  for (const char* want : {"/usr/bin/podman --runtime runc", "--cgroup-manager cgroupfs", "--uidmap 0:200000:65536", "--gidmap 0:200000:65536",
                           "--network host", "--ipc private", "--shm-size 256m", "--security-opt no-new-privileges",
                           "--cap-drop all", "--ulimit nofile=1000:1000", "--ulimit nproc=2000:2000", "--env-file /w/env",
                           "--device nvidia.com/gpu=1", "--volume /w/j/attempt-0:/w/j/attempt-0 --workdir /w/j/attempt-0",
                           "--volume /ck/j:/ck/j", "--volume /data:/data:ro", "--pull never", "--entrypoint [\"sh\",\"-c\",\"id\"] localhost/x:1"})
    EXPECT_NE(line.find(want), std::string::npos) << want << " missing from: " << line;
  EXPECT_EQ(line.find("--privileged"), std::string::npos);
  EXPECT_EQ(line.find("--cap-add"), std::string::npos);
  // Without a command the image's own entrypoint runs: the image is the last word.
  r.command.clear();
  EXPECT_EQ(podman_run_argv({}, r, {1, 1}).back(), "localhost/x:1");
}

// The container's first process is allot's init, with the agent's lifeline (the podman process's fd 3) passed on.
TEST(ContainerArgv, TheInitAndItsLifelineComeBeforeTheImage) {
  ContainerRun r{.name = "allot-j-0-0", .agent = "n1", .image = "localhost/x:1", .command = {"true"}};
  auto a = podman_run_argv({}, r, {1, 1});
  EXPECT_EQ(std::find(a.begin(), a.end(), "--init"), a.end()) << "no init was given";
  r.init = "/opt/allot/allot-container-init";
  a = podman_run_argv({}, r, {1, 1});
  auto init = std::find(a.begin(), a.end(), "--init");
  auto image = std::find(a.begin(), a.end(), "localhost/x:1");
  ASSERT_NE(init, a.end());
  ASSERT_LT(init, image);
  EXPECT_EQ(std::vector<std::string>(init, init + 5),
            (std::vector<std::string>{"--init", "--init-path", "/opt/allot/allot-container-init", "--preserve-fds", "1"}));
}

TEST(ContainerArgv, AMissingInitIsNamed) {
  EXPECT_NE(container_init_problem("").find("no container init"), std::string::npos);
  EXPECT_NE(container_init_problem("/no/such/allot-container-init").find("is missing"), std::string::npos);
  EXPECT_NE(container_init_problem("/tmp").find("not an executable file"), std::string::npos);
  EXPECT_EQ(container_init_problem("/bin/sh"), "");
}

// A job's args (Kubernetes' args) follow the image, one argv item each: the image's entrypoint gets them, or the
// command when there is one. Nothing is quoted or split: no shell reads them.
TEST(ContainerArgv, ArgsFollowTheImageAsTheyAre) {
  ContainerRun r{.name = "allot-j-0-0", .agent = "n1", .image = "localhost/x:1", .args = {"--name", "a b", "$HOME", "-v"}};
  auto a = podman_run_argv({}, r, {1, 1});
  auto image = std::find(a.begin(), a.end(), "localhost/x:1");
  ASSERT_NE(image, a.end());
  EXPECT_EQ(std::vector<std::string>(image + 1, a.end()), r.args);
  EXPECT_EQ(std::find(a.begin(), a.end(), "--entrypoint"), a.end()) << "without a command the image's entrypoint runs";
  r.command = {"python3", "train.py"};
  a = podman_run_argv({}, r, {1, 1});
  image = std::find(a.begin(), a.end(), "localhost/x:1");
  ASSERT_NE(image, a.end());
  EXPECT_EQ(*(image - 2), "--entrypoint");
  EXPECT_EQ(*(image - 1), "[\"python3\",\"train.py\"]");
  EXPECT_EQ(std::vector<std::string>(image + 1, a.end()), r.args) << "the command, then the args";
}

TEST(ContainerArgv, PullFollowsThePolicy) {
  ContainerOptions opt;
  auto never = podman_pull_argv(opt, "x:1", "", PullPolicy::kNever);  // only `podman image exists`
  ASSERT_EQ(never.size(), 6u);
  EXPECT_EQ(never[4], "/usr/bin/podman");
  EXPECT_EQ(never[5], "x:1");
  EXPECT_EQ(std::count(never.begin(), never.end(), std::string("pull")), 0);  // no pull: only the check
  EXPECT_EQ(podman_pull_argv(opt, "x:1", "/etc/auth.json", PullPolicy::kAlways),
            (std::vector<std::string>{"/usr/bin/podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "pull", "--quiet",
                                      "--authfile", "/etc/auth.json", "x:1"}));
  // IfNotPresent: `podman image exists` first; the image and podman travel as the shell's arguments.
  auto a = podman_pull_argv(opt, "x:1; rm -rf /", "", PullPolicy::kIfNotPresent);
  ASSERT_GE(a.size(), 6u);
  EXPECT_EQ(a[0], "/bin/sh");
  EXPECT_EQ(a[2].find("x:1"), std::string::npos) << "the image must not be part of the script: " << a[2];
  EXPECT_EQ(a[4], "/usr/bin/podman");
  EXPECT_EQ(a[5], "x:1; rm -rf /");
  EXPECT_EQ(a.back(), "x:1; rm -rf /");
}

TEST(ContainerArgv, TailOfAPullsOutputStartsAtALine) {
  const fs::path dir = fs::temp_directory_path() / ("allot-tail-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "out") << std::string(3000, 'x') << "\nError: initializing source docker://x:1: pinging registry\n";
  EXPECT_EQ(read_tail((dir / "out").string(), 100), "Error: initializing source docker://x:1: pinging registry\n");
  EXPECT_EQ(read_tail((dir / "missing").string(), 100), "");
  fs::remove_all(dir);
}

TEST(ContainerArgv, UlimitsStayBelowTheAgentsHardLimits) {
  const Ulimits u = container_ulimits();
  rlimit nofile{}, nproc{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  getrlimit(RLIMIT_NPROC, &nproc);
  if (nofile.rlim_max != RLIM_INFINITY) EXPECT_LT(u.nofile, nofile.rlim_max);
  if (nproc.rlim_max != RLIM_INFINITY) EXPECT_LT(u.nproc, nproc.rlim_max);
  EXPECT_GT(u.nofile, 0u);
}

TEST(ContainerArgv, EnvironmentFileIsPrivateAndRefusesNewlines) {
  const fs::path dir = fs::temp_directory_path() / ("allot-env-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "env").string();
  ASSERT_TRUE(write_env_file(path, {{"A", "1"}, {"SECRET", "s3cret"}}).ok());
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "A=1\nSECRET=s3cret\n");
  auto bad = write_env_file(path, {{"A", "two\nlines"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("newline"), std::string::npos);
  // A symlink in its place is not followed.
  fs::remove(path);
  fs::create_symlink(dir / "elsewhere", path);
  EXPECT_FALSE(write_env_file(path, {{"A", "1"}}).ok());
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
  fs::remove_all(dir);
}

class RealPodman : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "rootful podman needs root; this test runs as uid " << geteuid();
    facts_ = detect_podman(opt_);
    if (!facts_.usable) GTEST_SKIP() << facts_.problem;
    if (!fs::exists("/bin/busybox")) GTEST_SKIP() << "busybox-static is not installed (apt-get install busybox-static)";
    dir_ = fs::temp_directory_path() / ("allot-podman-" + std::to_string(getpid()));
    fs::create_directories(dir_ / "rootfs/bin");
    fs::copy_file("/bin/busybox", dir_ / "rootfs/bin/busybox");
    for (const char* tool : {"sh", "id", "cat", "ls", "df", "echo", "sleep", "stat", "touch"})
      fs::create_symlink("busybox", dir_ / "rootfs/bin" / tool);
    fs::create_directories(dir_ / "rootfs/etc");
    std::ofstream(dir_ / "rootfs/etc/allot-image-marker") << "inside the image\n";
    auto tar = run_with_timeout({"/bin/tar", "-C", (dir_ / "rootfs").string(), "-cf", (dir_ / "bb.tar").string(), "."}, std::chrono::seconds(30));
    ASSERT_EQ(tar.exit_code, 0) << tar.output;
    auto imp = run_with_timeout({opt_.podman, "import", (dir_ / "bb.tar").string(), image_}, std::chrono::seconds(60));
    ASSERT_EQ(imp.exit_code, 0) << imp.output;
    // A user namespace is what keeps container root off host root: where the kernel refuses one, say so.
    ContainerRun probe = run_of("probe", {"/bin/sh", "-c", "true"});
    auto p = run_with_timeout(podman_run_argv(opt_, probe, container_ulimits()), std::chrono::seconds(60));
    if (p.exit_code != 0) GTEST_SKIP() << "podman cannot run a container with a user namespace here: " << p.output;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      (void)run_with_timeout({opt_.podman, "rmi", "--force", image_}, std::chrono::seconds(30));
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }
  ContainerRun run_of(const std::string& name, std::vector<std::string> command) {
    fs::create_directories(dir_ / name);
    EXPECT_EQ(chown((dir_ / name).c_str(), 1700000000, 1700000000), 0);  // the team's, as the agent gives it
    ContainerRun r{.name = "allot-test-" + std::to_string(getpid()) + "-" + name, .agent = "allot-test", .image = image_,
                   .command = std::move(command), .env_file = (dir_ / (name + ".env")).string(), .first_uid = 1700000000,
                   .uids = 65536, .shm_mib = 96, .work_dir = (dir_ / name).string()};
    EXPECT_TRUE(write_env_file(r.env_file, {{"PATH", "/bin"}, {"TEAM_SECRET", "kept-out-of-argv"}}).ok());
    return r;
  }
  ContainerOptions opt_;
  PodmanFacts facts_;
  fs::path dir_;
  std::string image_ = "localhost/allot-test-bb:" + std::to_string(getpid());
};

TEST_F(RealPodman, ReplicaSeesTheImageAsAnUnprivilegedHostUidWithItsOwnShm) {
  std::ofstream("/dev/shm/allot-host-marker-" + std::to_string(getpid())) << "host\n";
  auto r = run_of("a", {"/bin/sh", "-c",
                        "cat /etc/allot-image-marker; cat /proc/self/uid_map; id -u; echo \"secret=$TEAM_SECRET\"; "
                        "ls /dev/shm; df -m /dev/shm | tail -n 1; echo here >written-by-container; grep NoNewPrivs /proc/self/status; "
                        "grep CapEff /proc/self/status"});
  auto out = run_with_timeout(podman_run_argv(opt_, r, container_ulimits()), std::chrono::seconds(60));
  fs::remove("/dev/shm/allot-host-marker-" + std::to_string(getpid()));
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("inside the image"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("1700000000"), std::string::npos) << "container root should be host uid 1700000000: " << out.output;
  EXPECT_NE(out.output.find("secret=kept-out-of-argv"), std::string::npos) << out.output;
  EXPECT_EQ(out.output.find("allot-host-marker"), std::string::npos) << "the host's /dev/shm leaked in: " << out.output;
  EXPECT_NE(out.output.find(" 96 "), std::string::npos) << "/dev/shm should be 96 MiB: " << out.output;
  EXPECT_NE(out.output.find("NoNewPrivs:\t1"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("CapEff:\t0000000000000000"), std::string::npos) << out.output;
  // What it wrote in its working directory belongs to the team's host uid, not root.
  struct stat st {};
  ASSERT_EQ(stat((dir_ / "a/written-by-container").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1700000000u);
}

TEST_F(RealPodman, PullIfNotPresentFindsAnImportedImageWithoutARegistry) {
  auto out = run_with_timeout(podman_pull_argv(opt_, image_, "", PullPolicy::kIfNotPresent), std::chrono::seconds(60));
  EXPECT_EQ(out.exit_code, 0) << out.output;
  auto missing = run_with_timeout(podman_pull_argv(opt_, "localhost/allot-no-such-image:x", "", PullPolicy::kIfNotPresent),
                                  std::chrono::seconds(60));
  EXPECT_NE(missing.exit_code, 0) << missing.output;
  EXPECT_EQ(run_with_timeout(podman_pull_argv(opt_, image_, "", PullPolicy::kNever), std::chrono::seconds(60)).exit_code, 0);
  auto never = run_with_timeout(podman_pull_argv(opt_, "localhost/allot-no-such-image:x", "", PullPolicy::kNever), std::chrono::seconds(60));
  EXPECT_NE(never.exit_code, 0);
  EXPECT_NE(never.output.find("not on this node"), std::string::npos) << never.output;
}

TEST_F(RealPodman, PullOfAMissingImageFailsWithTheRegistrysAnswer) {
  auto out = run_with_timeout(podman_pull_argv(opt_, "localhost/allot-no-such-image:missing", ""), std::chrono::seconds(60));
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.output.find("allot-no-such-image"), std::string::npos) << out.output;
}

// A runtime podman cannot use makes containers off at the agent's start, naming the runtime and podman's answer.
TEST_F(RealPodman, ARuntimePodmanCannotUseTurnsContainersOffAndSaysWhy) {
  EXPECT_FALSE(facts_.version.empty());
  EXPECT_NE(describe(facts_, opt_).find("runtime runc, cgroup manager cgroupfs"), std::string::npos) << describe(facts_, opt_);
  ContainerOptions bad = opt_;
  bad.runtime = "allot-no-such-runtime";
  const PodmanFacts f = detect_podman(bad);
  EXPECT_FALSE(f.usable);
  EXPECT_NE(f.problem.find("runtime allot-no-such-runtime"), std::string::npos) << f.problem;
  EXPECT_NE(f.problem.find("not found"), std::string::npos) << f.problem;
  EXPECT_NE(describe(f, bad).find("containers: off"), std::string::npos) << describe(f, bad);
}

}  // namespace
}  // namespace allot::agent::agent_container_test
