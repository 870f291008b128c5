// What a dead agent leaves behind (agent/leftovers.h): the state file, and the sweep a restarted agent runs
// before it registers, which ends a replica's orphans and never an unrelated process that got a recorded pid.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/fencing.h"
#include "agent/leftovers.h"
#include "agent/process.h"

namespace allot::agent::agent_leftovers_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class AgentLeftovers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-leftovers-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t p : cleanup_) kill(p, SIGKILL);
    fs::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static bool alive(pid_t pid) {
    std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
  }
  static bool wait_for_file(const std::string& p) {
    for (int i = 0; i < 1000; ++i, std::this_thread::sleep_for(10ms))
      if (slurp(p).find('\n') != std::string::npos) return true;
    return false;
  }
  // A process unrelated to any replica: a child of the test that sleeps (reaped by the test).
  pid_t unrelated_sleeper() {
    pid_t p = fork();
    if (p == 0) {
      execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
      _exit(127);
    }
    cleanup_.push_back(p);
    return p;
  }

  fs::path dir_;
  std::vector<pid_t> cleanup_;
};

TEST_F(AgentLeftovers, StateFileRoundTripsAndIsReplacedWhole) {
  const std::string file = path("replicas.json");
  auto empty = load_state(file);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->replicas.empty());
  std::vector<ReplicaRecord> list = {{"a/0#0", 100, 100, 12345, "/sys/fs/cgroup/x/r-a-0-0", {"/sys/fs/cgroup/cpu/x/r-a-0-0"}},
                                     {"b/1#2", 200, 200, 67890, ""}};
  ASSERT_TRUE(save_state(file, list, "/sys/fs/cgroup/x", {"/sys/fs/cgroup/cpu/x"}).ok());
  EXPECT_FALSE(fs::exists(file + ".tmp"));
  auto back = load_state(file);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->boot_id, boot_id());
  ASSERT_EQ(back->replicas.size(), 2u);
  EXPECT_EQ(back->replicas[0].key, "a/0#0");
  EXPECT_EQ(back->replicas[0].start_time, 12345u);
  EXPECT_EQ(back->replicas[0].cgroup, "/sys/fs/cgroup/x/r-a-0-0");
  EXPECT_EQ(back->replicas[1].pid, 200);
  EXPECT_EQ(back->cgroup_dir, "/sys/fs/cgroup/x");
  // cgroup v1: the replica's and the agent's directories in the other hierarchies, for the watchdog's cleanup.
  EXPECT_EQ(back->replicas[0].more_cgroups, std::vector<std::string>{"/sys/fs/cgroup/cpu/x/r-a-0-0"});
  EXPECT_TRUE(back->replicas[1].more_cgroups.empty());
  EXPECT_EQ(back->more_cgroup_dirs, std::vector<std::string>{"/sys/fs/cgroup/cpu/x"});
  ASSERT_TRUE(save_state(file, {}).ok());
  EXPECT_TRUE(load_state(file)->replicas.empty());
  std::ofstream(file) << "{\"boot_id\": 3";
  auto bad = load_state(file);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(file), std::string::npos);
}

TEST_F(AgentLeftovers, StartTimeAndGroupOfAProcess) {
  auto mine = process_start_time(getpid());
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(process_start_time(getpid()), mine);
  EXPECT_EQ(process_group(getpid()), getpgrp());
  pid_t p = unrelated_sleeper();
  auto theirs = process_start_time(p);
  ASSERT_TRUE(theirs.has_value());
  EXPECT_GE(*theirs, *mine);
  kill(p, SIGKILL);
  waitpid(p, nullptr, 0);
  EXPECT_FALSE(process_start_time(p).has_value());
}

TEST_F(AgentLeftovers, ARestartedAgentEndsWhatAKilledOneLeft) {
  // A stand-in agent: a process that starts a replica through a ProcessTable (leader with PDEATHSIG, its own
  // process group, under its shim), records it as the agent does, and then waits to be killed with SIGKILL. Its
  // replica's shim is killed with it (first, while the stand-in is stopped, so that no one ends the group): a live
  // shim would end the replica's whole tree itself (agent_shim_test.cpp), and the sweep is for when it cannot.
  const std::string state = path("replicas.json");
  pid_t agent = fork();
  if (agent == 0) {
    ProcessTable t(1s);
    auto pid = t.start("j/0#0", {.argv = {"sh", "-c", "sleep 300 & echo $! > " + path("child") + "; echo $$ > " +
                                                          path("shell") + "; wait"},
                                 .env = {{"PATH", "/usr/bin:/bin"}}});
    if (!pid) _exit(1);
    if (!save_state(state, {{"j/0#0", *pid, *pid, process_start_time(*pid).value_or(0), ""}})) _exit(1);
    std::ofstream(path("shim")) << *t.shim_pid("j/0#0") << "\n";
    for (;;) pause();
  }
  ASSERT_GT(agent, 0);
  cleanup_.push_back(agent);
  ASSERT_TRUE(wait_for_file(path("child")));
  ASSERT_TRUE(wait_for_file(path("shell")));
  // The stand-in saves its record after starting the replica, which may be after the replica wrote its files:
  // killing it before then would test nothing (and made this test fail now and then on a loaded machine).
  ASSERT_TRUE(wait_for_file(state));
  ASSERT_TRUE(wait_for_file(path("shim")));
  const pid_t child = std::stoi(slurp(path("child")));
  const pid_t shell = std::stoi(slurp(path("shell")));
  const pid_t shim = std::stoi(slurp(path("shim")));
  kill(agent, SIGSTOP);
  kill(shim, SIGKILL);
  for (int i = 0; i < 500 && alive(shim); ++i) std::this_thread::sleep_for(10ms);
  kill(agent, SIGKILL);
  waitpid(agent, nullptr, 0);
  // The leader goes with its shim; what it started does not, and that is what the sweep is for.
  for (int i = 0; i < 500 && alive(shell); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(shell));
  ASSERT_TRUE(alive(child)) << "the replica's child should have outlived the killed agent";

  auto loaded = load_state(state);
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->replicas.size(), 1u);
  EXPECT_EQ(leftover_processes(loaded->replicas[0]), std::vector<pid_t>{child});
  std::vector<std::string> said;
  end_leftovers(*loaded, [&](const std::string& line) { said.push_back(line); });
  cleanup_.push_back(child);
  for (int i = 0; i < 200 && alive(child); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(child));
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find(std::to_string(child)), std::string::npos) << said[0];
}

TEST_F(AgentLeftovers, APidGivenToAnUnrelatedProcessIsNotKilled) {
  pid_t other = unrelated_sleeper();
  auto start = process_start_time(other);
  ASSERT_TRUE(start.has_value());
  // The record names the pid, but with the start time of the process that had it before.
  StateFile state{boot_id(), {{"old/0#0", other, other, *start - 1, ""}}};
  EXPECT_TRUE(leftover_processes(state.replicas[0]).empty());
  std::vector<std::string> said;
  end_leftovers(state, [&](const std::string& line) { said.push_back(line); });
  EXPECT_TRUE(alive(other));
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("left nothing behind"), std::string::npos) << said[0];
  // The same record with the right start time is the process it describes, and it is ended.
  state.replicas[0].start_time = *start;
  end_leftovers(state, [](const std::string&) {});
  int status = 0;
  ASSERT_EQ(waitpid(other, &status, 0), other);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST_F(AgentLeftovers, RecordsOfAnotherBootAreIgnored) {
  pid_t other = unrelated_sleeper();
  StateFile state{"another-boot", {{"old/0#0", other, other, *process_start_time(other), ""}}};
  std::vector<std::string> said;
  end_leftovers(state, [&](const std::string& line) { said.push_back(line); });
  EXPECT_TRUE(alive(other));
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("reboot"), std::string::npos);
}

TEST(AgentFencing, StopsBeforeTheServerGivesUp) {
  // The replicas are stopped and then killed while the server still counts the node as alive.
  for (auto timeout : {1500ms, 15000ms}) {
    auto f = fence_times(std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    EXPECT_LT(f.stop_after, f.kill_after);
    EXPECT_LT(f.kill_after, timeout);
    EXPECT_GE(f.stop_after, timeout / 2);  // a merely slow server is tolerated for most of its timeout
  }
  EXPECT_EQ(fence_times(15000ms).stop_after, 11250ms);
}

}  // namespace
}  // namespace allot::agent::agent_leftovers_test
