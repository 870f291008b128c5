// The agent's process table (agent/process.h): exit codes, environment, CPU lists, and stops that escalate
// from SIGTERM to SIGKILL for the whole process group.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/cgroups.h"
#include "agent/process.h"
#include "agent/run_as.h"

namespace allot::agent::agent_process_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class AgentProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-agent-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Polls until `key` exits or 10 s pass.
  static std::optional<Exited> wait_exit(ProcessTable& t, const std::string& key) {
    for (auto deadline = Clock::now() + 10s; Clock::now() < deadline; std::this_thread::sleep_for(10ms))
      for (const auto& e : t.poll(Clock::now()))
        if (e.key == key) return e;
    return std::nullopt;
  }
  static bool wait_for_text(const std::string& p, const std::string& text) {
    for (auto deadline = Clock::now() + 10s; Clock::now() < deadline; std::this_thread::sleep_for(10ms))
      if (slurp(p).find(text) != std::string::npos) return true;
    return false;
  }
  // Alive and not a zombie waiting for a parent that is not us.
  static bool alive(pid_t pid) {
    if (kill(pid, 0) != 0) return false;
    std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
  }

  fs::path dir_;
};

TEST_F(AgentProcess, ReportsTheExitCode) {
  ProcessTable t(1s);
  ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", "exit 3"}}).ok());
  EXPECT_TRUE(t.running("j/0"));
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 3);
  EXPECT_FALSE(e->stopped);
  EXPECT_FALSE(t.running("j/0"));
  EXPECT_FALSE(t.start("j/1", {.argv = {}}).ok());
}

TEST_F(AgentProcess, PassesEnvironmentLogAndWorkDir) {
  ProcessTable t(1s);
  LaunchSpec s{.argv = {"sh", "-c", "echo \"$RANK $WORLD_SIZE $CUDA_VISIBLE_DEVICES $(pwd)\"; echo oops >&2"},
               .env = {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"CUDA_VISIBLE_DEVICES", "4,5"}},
               .log_path = path("r.log"),
               .work_dir = dir_.string()};
  ASSERT_TRUE(t.start("j/3", s).ok());
  auto e = wait_exit(t, "j/3");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 0);
  const std::string log = slurp(path("r.log"));
  EXPECT_NE(log.find("3 8 4,5 " + fs::canonical(dir_).string()), std::string::npos) << log;
  EXPECT_NE(log.find("oops"), std::string::npos) << log;
}

TEST_F(AgentProcess, AProgramThatCannotRunExits127WithAReason) {
  ProcessTable t(1s);
  ASSERT_TRUE(t.start("j/0", {.argv = {"/nonexistent/allot-test-program"}, .log_path = path("r.log")}).ok());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 127);
  EXPECT_NE(slurp(path("r.log")).find("cannot run /nonexistent/allot-test-program"), std::string::npos);
}

// A container's `podman run` gets the agent's lifeline as its fd 3 (agent/container.h), and never the pipe's write
// end, which must stay the agent's alone.
TEST_F(AgentProcess, Fd3IsTheGivenFdAndNeverThePipesWriteEnd) {
  int lifeline[2];
  ASSERT_EQ(pipe2(lifeline, O_CLOEXEC), 0);
  // Every fd of the child on that pipe, with its access mode (the low bits of fdinfo's octal flags: 0 read, 1 write).
  const std::string script =
      "for f in /proc/$$/fd/*; do [ \"$(readlink \"$f\")\" = \"$LIFELINE\" ] || continue; "
      "m=$(awk '/^flags/ {print substr($2, length($2))}' /proc/$$/fdinfo/${f##*/}); echo \"fd ${f##*/} mode $m\"; done";
  const std::string pipe_name = fs::read_symlink("/proc/self/fd/" + std::to_string(lifeline[0])).string();
  ProcessTable t(1s);
  ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", script}, .env = {{"LIFELINE", pipe_name}}, .log_path = path("r.log"),
                              .fd3 = lifeline[0]})
                  .ok());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 0);
  EXPECT_EQ(slurp(path("r.log")), "fd 3 mode 0\n");
  // Without fd3 the replica has no fd on the pipe at all.
  ASSERT_TRUE(t.start("j/1", {.argv = {"sh", "-c", script}, .env = {{"LIFELINE", pipe_name}}, .log_path = path("r1.log")}).ok());
  ASSERT_TRUE(wait_exit(t, "j/1").has_value());
  EXPECT_EQ(slurp(path("r1.log")), "");
  close(lifeline[0]);
  close(lifeline[1]);
}

TEST_F(AgentProcess, StopSendsTermToTheWholeGroup) {
  ProcessTable t(5s);
  // The shell records its background child's pid; both must go when the replica is stopped.
  ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", "sleep 30 & echo $! > " + path("child") + "; wait"}}).ok());
  ASSERT_TRUE(wait_for_text(path("child"), "\n"));
  pid_t child = std::stoi(slurp(path("child")));
  ASSERT_TRUE(alive(child));
  t.stop("j/0", Clock::now());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->stopped);
  EXPECT_EQ(e->exit_code, 128 + SIGTERM);
  for (int i = 0; i < 200 && alive(child); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(child));
}

TEST_F(AgentProcess, StopEscalatesToKillAfterTheGrace) {
  ProcessTable t(200ms);
  ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"},
                              .log_path = path("r.log")})
                  .ok());
  ASSERT_TRUE(wait_for_text(path("r.log"), "ready"));
  const auto t0 = Clock::now();
  t.stop("j/0", t0);
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(t.poll(t0 + 100ms).empty());  // TERM is ignored and the grace has not run out
  EXPECT_TRUE(t.running("j/0"));
  auto e = t.poll(t0 + 250ms);  // past the grace: SIGKILL to the group
  if (e.empty()) {
    auto later = wait_exit(t, "j/0");
    ASSERT_TRUE(later.has_value());
    e.push_back(*later);
  }
  EXPECT_EQ(e[0].exit_code, 128 + SIGKILL);
  EXPECT_TRUE(e[0].stopped);
}

TEST_F(AgentProcess, StopAllAndWait) {
  ProcessTable t(2s);
  ASSERT_TRUE(t.start("a/0", {.argv = {"sleep", "30"}}).ok());
  ASSERT_TRUE(t.start("b/0", {.argv = {"sleep", "30"}}).ok());
  auto exits = t.stop_all_and_wait();
  EXPECT_EQ(exits.size(), 2u);
  EXPECT_EQ(t.size(), 0u);
}

TEST_F(AgentProcess, CpuAffinityIsApplied) {
  ProcessTable t(1s);
  const std::vector<int> cpus = available_cpus();
  ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", "grep Cpus_allowed_list /proc/self/status"},
                              .cpus = {cpus.front()}, .log_path = path("r.log")})
                  .ok());
  ASSERT_TRUE(wait_exit(t, "j/0").has_value());
  EXPECT_NE(slurp(path("r.log")).find("Cpus_allowed_list:\t" + std::to_string(cpus.front()) + "\n"), std::string::npos)
      << slurp(path("r.log"));
}

TEST_F(AgentProcess, ReplicaGetsOnlyItsOwnEnvironment) {
  // The agent's environment may hold its credentials: none of it may reach a replica.
  ASSERT_EQ(setenv("ALLOT_TOKEN", "agent-secret-token", 1), 0);
  ASSERT_EQ(setenv("ALLOT_TEST_AGENT_ONLY", "agent-only", 1), 0);
  ProcessTable t(1s);
  LaunchSpec s{.argv = {"env"}, .env = {{"PATH", "/usr/bin:/bin"}, {"RANK", "0"}}, .log_path = path("r.log")};
  ASSERT_TRUE(t.start("j/0", s).ok());
  auto e = wait_exit(t, "j/0");
  unsetenv("ALLOT_TOKEN");
  unsetenv("ALLOT_TEST_AGENT_ONLY");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 0);
  // `env` runs without a shell in between, so it prints exactly the environment it was given.
  EXPECT_EQ(slurp(path("r.log")), "PATH=/usr/bin:/bin\nRANK=0\n");
}

TEST_F(AgentProcess, RunsAsTheGivenUser) {
  if (geteuid() != 0) GTEST_SKIP() << "switching users needs root; this test runs as uid " << geteuid();
  auto nobody = lookup_user("nobody");
  ASSERT_TRUE(nobody.ok()) << nobody.error().message;
  const std::string work = path("work");
  fs::create_directories(work);
  ASSERT_TRUE(give_dir_to(work, *nobody).ok());
  ProcessTable t(1s);
  // The log is opened by the agent, so the replica writes it although nobody could not open it itself.
  LaunchSpec s{.argv = {"sh", "-c", "id -u; id -g; id -G; touch mine && echo wrote"},
               .env = {{"PATH", "/usr/bin:/bin"}},
               .log_path = path("r.log"),
               .work_dir = work,
               .run_as = *nobody};
  ASSERT_TRUE(t.start("j/0", s).ok());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 0) << slurp(path("r.log"));
  std::istringstream log(slurp(path("r.log")));
  std::string uid, gid, groups, wrote;
  std::getline(log, uid), std::getline(log, gid), std::getline(log, groups), std::getline(log, wrote);
  EXPECT_EQ(uid, "65534");
  EXPECT_EQ(gid, std::to_string(nobody->gid));
  EXPECT_EQ(groups.find(" 0"), std::string::npos) << "root's groups must be dropped: " << groups;
  EXPECT_NE(groups, "0");
  EXPECT_EQ(wrote, "wrote");
  struct stat st {};
  ASSERT_EQ(::stat((fs::path(work) / "mine").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
}

TEST_F(AgentProcess, ReplicasAsRootNeedAllowRoot) {
  if (geteuid() == 0) {
    auto refused = replica_identity("", false);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("--run-as"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("--allow-root"), std::string::npos) << refused.error().message;
    EXPECT_FALSE(replica_identity("root", false).ok());
    EXPECT_TRUE(replica_identity("", true).ok());
    auto nobody = replica_identity("nobody", false);
    ASSERT_TRUE(nobody.ok());
    EXPECT_EQ(nobody->uid, 65534u);
  } else {
    // Not root: replicas run as the agent's user, and no other user can be asked for.
    auto self = replica_identity("", false);
    ASSERT_TRUE(self.ok());
    EXPECT_EQ(self->uid, geteuid());
    EXPECT_FALSE(replica_identity("root", true).ok());
  }
  EXPECT_FALSE(replica_identity("no-such-user-allot-test", true).ok());
}

TEST_F(AgentProcess, CgroupHoldsEverythingTheReplicaStarts) {
  Cgroups cg = Cgroups::detect(Cgroups::dir_name_for("unit-test", dir_.string()));
  if (!cg.available()) GTEST_SKIP() << cg.summary();
  auto dir = cg.create("r-test-0-0", {.vcpu_milli = 500, .memory_mib = 256});
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  const bool v2 = cg.version() == CgroupVersion::kV2;
  if (cg.limits_memory()) {
    EXPECT_EQ(slurp(*dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes")), std::to_string(256ll << 20) + "\n");
  }
  if (cg.limits_cpu() && v2) {
    EXPECT_EQ(slurp(*dir + "/cpu.max"), "50000 100000\n");
  }
  // Under v1 the cpu hierarchy's directory of the same replica holds the quota.
  const std::vector<std::string> more = cg.extra_paths(*dir);
  for (const auto& m : more) EXPECT_EQ(slurp(m + "/cpu.cfs_quota_us"), "50000\n");
  ProcessTable t(5s);
  // setsid takes the child out of the replica's process group: only the cgroup still holds it.
  ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", "setsid sleep 30 & echo $! > " + path("child") + "; wait"},
                              .env = {{"PATH", "/usr/bin:/bin"}},
                              .cgroup = *dir,
                              .more_cgroups = more})
                  .ok());
  ASSERT_TRUE(wait_for_text(path("child"), "\n"));
  pid_t child = std::stoi(slurp(path("child")));
  for (int i = 0; i < 200 && getpgid(child) != child; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(alive(child));
  EXPECT_NE(slurp(*dir + "/cgroup.procs").find(std::to_string(child)), std::string::npos);
  for (const auto& m : more) EXPECT_NE(slurp(m + "/cgroup.procs").find(std::to_string(child)), std::string::npos) << m;
  t.stop("j/0", Clock::now());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->cgroup, *dir);
  for (int i = 0; i < 200 && alive(child); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(child));
  bool removed = false;
  for (int i = 0; i < 100 && !(removed = remove_cgroup(*dir)); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(removed);
  for (const auto& m : more) EXPECT_TRUE(remove_cgroup(m)) << m;
  cg.remove_if_empty();
}

TEST_F(AgentProcess, CgroupLimitsAreWrittenWhereTheControllersAre) {
  // A directory standing in for a delegated cgroup whose parent offers memory and cpu to its children.
  const std::string name = Cgroups::dir_name_for("limits", dir_.string());
  fs::create_directories(dir_ / name);
  std::ofstream(dir_ / name / "cgroup.controllers") << "cpuset cpu io memory pids\n";
  std::ofstream(dir_ / name / "cgroup.subtree_control") << "";
  Cgroups cg = Cgroups::detect(name, {.v2 = dir_.string()});
  ASSERT_TRUE(cg.available()) << cg.summary();
  EXPECT_TRUE(cg.limits_memory()) << cg.summary();
  EXPECT_TRUE(cg.limits_cpu()) << cg.summary();
  EXPECT_NE(cg.summary().find("with memory.max and cpu.max"), std::string::npos) << cg.summary();
  auto r = cg.create("r-train-0-0", {.vcpu_milli = 4000, .memory_mib = 16384});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(slurp(*r + "/cpu.max"), "400000 100000");
  EXPECT_EQ(slurp(*r + "/memory.max"), std::to_string(16384ll << 20));
  EXPECT_EQ(cg.children(), std::vector<std::string>{*r});
  // Without a request there is no limit to write.
  auto none = cg.create("r-idle-0-0", {});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(fs::exists(*none + "/memory.max"));

  // A parent that offers neither: replicas still get a cgroup, and the log says why there are no limits.
  const std::string bare = Cgroups::dir_name_for("bare", dir_.string());
  fs::create_directories(dir_ / bare);
  std::ofstream(dir_ / bare / "cgroup.controllers") << "pids\n";
  Cgroups without = Cgroups::detect(bare, {.v2 = dir_.string()});
  ASSERT_TRUE(without.available());
  EXPECT_FALSE(without.limits_memory());
  EXPECT_FALSE(without.limits_cpu());
  EXPECT_NE(without.summary().find("no memory or CPU limits apply"), std::string::npos) << without.summary();
}

TEST_F(AgentProcess, TheWatchdogSweepsTheReplicaCgroupsOfADeadAgent) {
  // Replica cgroups whose processes are gone (an exit the agent collected but had not cleaned up) go, then the
  // agent's directory; anything not a replica's keeps the directory (it is not the agent's to remove).
  const fs::path agent = dir_ / "allot-gpu-1-0123abcd";
  fs::create_directories(agent / "r-a-0-0");
  fs::create_directories(agent / "r-b-1-2");
  fs::create_directories(agent / "other");
  sweep_agent_dir(agent.string(), 0);
  EXPECT_FALSE(fs::exists(agent / "r-a-0-0"));
  EXPECT_FALSE(fs::exists(agent / "r-b-1-2"));
  EXPECT_TRUE(fs::exists(agent / "other"));
  fs::remove(agent / "other");
  sweep_agent_dir(agent.string(), 0);
  EXPECT_FALSE(fs::exists(agent));
  sweep_agent_dir(agent.string(), 0);  // gone already: nothing to do
}

TEST_F(AgentProcess, CgroupV1LimitsGoInTheMemoryAndCpuHierarchies) {
  // Two directories standing in for the agent's cgroups in the v1 memory and cpu hierarchies.
  const fs::path mem = dir_ / "v1" / "memory", cpu = dir_ / "v1" / "cpu";
  fs::create_directories(mem);
  fs::create_directories(cpu);
  const std::string name = Cgroups::dir_name_for("v1", dir_.string());
  Cgroups cg = Cgroups::detect(name, {.v1_memory = mem.string(), .v1_cpu = cpu.string()});
  ASSERT_TRUE(cg.available()) << cg.summary();
  EXPECT_EQ(cg.version(), CgroupVersion::kV1);
  EXPECT_TRUE(cg.limits_memory());
  EXPECT_TRUE(cg.limits_cpu());
  EXPECT_EQ(cg.dir(), (mem / name).string()) << "the memory hierarchy holds the replica's processes";
  EXPECT_NE(cg.summary().find("memory.limit_in_bytes and cpu.cfs_quota_us"), std::string::npos) << cg.summary();
  // The kernel makes memory.memsw.limit_in_bytes where it accounts swap: it follows the memory limit.
  fs::create_directories(mem / name / "r-train-0-0");
  std::ofstream(mem / name / "r-train-0-0" / "memory.memsw.limit_in_bytes") << "";
  auto r = cg.create("r-train-0-0", {.vcpu_milli = 1500, .memory_mib = 64});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (mem / name / "r-train-0-0").string());
  EXPECT_EQ(slurp(*r + "/memory.limit_in_bytes"), std::to_string(64ll << 20));
  EXPECT_EQ(slurp(*r + "/memory.memsw.limit_in_bytes"), std::to_string(64ll << 20));
  EXPECT_EQ(cg.extra_paths(*r), std::vector<std::string>{(cpu / name / "r-train-0-0").string()});
  EXPECT_EQ(slurp((cpu / name / "r-train-0-0" / "cpu.cfs_period_us").string()), "100000");
  EXPECT_EQ(slurp((cpu / name / "r-train-0-0" / "cpu.cfs_quota_us").string()), "150000");
  EXPECT_FALSE(fs::exists(cpu / name / "r-train-0-0" / "memory.limit_in_bytes"));
  // The sweep at a restart finds the replica in both hierarchies.
  EXPECT_EQ(cg.children(), (std::vector<std::string>{*r, (cpu / name / "r-train-0-0").string()}));

  // Only the cpu hierarchy is there: CPU limits only, and the log says so.
  const std::string only = Cgroups::dir_name_for("cpu-only", dir_.string());
  Cgroups cpu_only = Cgroups::detect(only, {.v1_memory = (dir_ / "missing" / "memory").string(), .v1_cpu = cpu.string()});
  ASSERT_TRUE(cpu_only.available()) << cpu_only.summary();
  EXPECT_FALSE(cpu_only.limits_memory());
  EXPECT_TRUE(cpu_only.limits_cpu());
  EXPECT_NE(cpu_only.summary().find("only CPU limits apply"), std::string::npos) << cpu_only.summary();
  EXPECT_NE(cpu_only.summary().find("cannot create"), std::string::npos) << cpu_only.summary();

  // Only the memory hierarchy is given: memory limits only, saying why there are no CPU limits.
  Cgroups mem_only = Cgroups::detect(Cgroups::dir_name_for("mem-only", dir_.string()), {.v1_memory = mem.string()});
  ASSERT_TRUE(mem_only.available()) << mem_only.summary();
  EXPECT_TRUE(mem_only.extra_dirs().empty());
  EXPECT_NE(mem_only.summary().find("only memory limits apply (no v1 cpu hierarchy is mounted)"), std::string::npos) << mem_only.summary();

  // Neither can be written: no cgroups at all, said once, and a replica still starts (without one).
  Cgroups none = Cgroups::detect("x", {.v1_memory = (dir_ / "missing" / "memory").string(), .v1_cpu = (dir_ / "missing" / "cpu").string()});
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.version(), CgroupVersion::kNone);
  EXPECT_NE(none.summary().find("no memory or CPU limits"), std::string::npos) << none.summary();
  EXPECT_FALSE(none.create("r-a-0-0", {.memory_mib = 64}).ok());
}

TEST_F(AgentProcess, ARefusedLimitIsAnErrorNamingTheFile) {
  // The kernel refuses a write (here: the limit's file is a directory): create() fails, saying which file, and
  // the agent starts the replica without a cgroup (unlimited, with a warning), never fails it.
  const fs::path mem = dir_ / "refuse" / "memory";
  fs::create_directories(mem);
  const std::string name = Cgroups::dir_name_for("refuse", dir_.string());
  Cgroups cg = Cgroups::detect(name, {.v1_memory = mem.string()});
  ASSERT_TRUE(cg.available()) << cg.summary();
  fs::create_directories(mem / name / "r-a-0-0" / "memory.limit_in_bytes");
  auto r = cg.create("r-a-0-0", {.memory_mib = 128});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("memory.limit_in_bytes"), std::string::npos) << r.error().message;
}

TEST_F(AgentProcess, OomKillsAreReadFromMemoryEvents) {
  // A stand-in for a replica cgroup: the kernel's memory.events after one process went past memory.max.
  const fs::path cg = dir_ / "r-oom-0-0";
  fs::create_directories(cg);
  EXPECT_EQ(oom_kills(cg.string()), 0) << "no memory.events: no kills";
  std::ofstream(cg / "memory.events") << "low 0\nhigh 0\nmax 12\noom 1\noom_kill 0\n";
  EXPECT_EQ(oom_kills(cg.string()), 0) << "an oom event that killed nothing";
  std::ofstream(cg / "memory.events") << "low 0\nhigh 0\nmax 40\noom 2\noom_kill 2\noom_group_kill 0\n";
  EXPECT_EQ(oom_kills(cg.string()), 2);
  // cgroup v1: memory.oom_control has the same counter.
  const fs::path v1 = dir_ / "r-oom-v1-0-0";
  fs::create_directories(v1);
  std::ofstream(v1 / "memory.oom_control") << "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n";
  EXPECT_EQ(oom_kills(v1.string()), 1);
}

TEST(AgentCgroups, LimitsFromTheRequest) {
  EXPECT_EQ(cpu_max_value(4000), "400000 100000");
  EXPECT_EQ(cpu_max_value(500), "50000 100000");
  EXPECT_EQ(cpu_max_value(1), "1000 100000");  // the kernel's minimum quota
  EXPECT_EQ(cpu_max_value(0), "max");
  // An emulated ml.p5.48xlarge asks for more than a small machine has; the limit is still what it asked.
  EXPECT_EQ(cpu_max_value(192000), "19200000 100000");
  EXPECT_EQ(memory_max_value(2048), std::to_string(2048ll << 20));
  EXPECT_EQ(memory_max_value(1), std::to_string(kMinMemoryMib << 20));  // never too small for a shell
  EXPECT_EQ(memory_max_value(0), "max");
}

TEST(AgentCgroups, FindsTheHierarchy) {
  const char* mountinfo =
      "25 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
      "33 25 0:28 / /sys/fs/cgroup/unified rw,nosuid,nodev - cgroup2 cgroup2 rw\n"
      "34 25 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  EXPECT_EQ(cgroup2_mount(mountinfo), "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup2_mount("34 25 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"), std::nullopt);
  EXPECT_EQ(cgroup2_path("4:memory:/x\n0::/system.slice/allot-agent.service\n"), "/system.slice/allot-agent.service");
  EXPECT_EQ(cgroup2_path("4:memory:/x\n"), std::nullopt);
  const char* v1 =
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
      "33 31 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(cgroup1_mount(v1, "memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(cgroup1_mount(v1, "cpu"), "/sys/fs/cgroup/cpu,cpuacct") << "cpu, not cpuset";
  EXPECT_EQ(cgroup1_mount(v1, "pids"), std::nullopt);
  const char* self = "9:name=systemd:/\n4:memory:/process_api/c1\n2:cpu,cpuacct:/a\n3:cpuset:/b\n0::/\n";
  EXPECT_EQ(cgroup1_path(self, "memory"), "/process_api/c1");
  EXPECT_EQ(cgroup1_path(self, "cpu"), "/a");
  EXPECT_EQ(cgroup1_path(self, "pids"), std::nullopt);
  EXPECT_NE(Cgroups::dir_name_for("gpu-1", "/a"), Cgroups::dir_name_for("gpu-1", "/b"));
  EXPECT_EQ(Cgroups::dir_name_for("gpu-1", "/a"), Cgroups::dir_name_for("gpu-1", "/a"));
}

TEST(AgentCpus, ParseAndFormat) {
  EXPECT_EQ(*parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*parse_cpu_list(""), std::vector<int>{});
  EXPECT_FALSE(parse_cpu_list("3-1").ok());
  EXPECT_FALSE(parse_cpu_list("a").ok());
  EXPECT_FALSE(parse_cpu_list("1,,2").ok());
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(AgentCpus, ClampOntoTheRealCpus) {
  // An emulated p5.48xlarge's second NUMA domain (CPUs 96-191) on a 2-CPU machine.
  auto wanted = *parse_cpu_list("96-191");
  EXPECT_EQ(clamp_cpus(wanted, {0, 1}), (std::vector<int>{0, 1}));
  EXPECT_EQ(clamp_cpus({3}, {0, 1}), (std::vector<int>{1}));
  EXPECT_EQ(clamp_cpus({0, 1}, {0, 1, 2, 3}), (std::vector<int>{0, 1}));
  EXPECT_TRUE(clamp_cpus({}, {0, 1}).empty());
}

}  // namespace
}  // namespace allot::agent::agent_process_test
