// The agent's process table (agent/process.h): exit codes, environment, CPU lists, and stops that escalate
// from SIGTERM to SIGKILL for the whole process group.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/process.h"

namespace allot::agent {
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
}  // namespace allot::agent
