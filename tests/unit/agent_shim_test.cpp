// Each replica's shim (agent/shim.h): it passes the replica's exit status up unchanged, stays out of the
// replica's process group, shrugs off stray signals while the agent lives, and ends the replica's whole tree (a
// background child, a setsid'd double-forked grandchild) when the agent is killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "agent/process.h"
#include "agent/shim.h"
#include "process_probes.h"

namespace allot::agent::agent_shim_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using namespace process_probes;

class AgentShim : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-shim-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The replica's processes: a shell (its first process), a background child in its group, and a grandchild that
  // left the group (setsid) and whose parent exited (double fork), so that it is reparented to the shim.
  std::string tree_command() const {
    return "sleep 300 & echo $! > " + path("child") + "; setsid sh -c 'sleep 301 & echo $! > " + path("grand") +
           "'; echo $$ > " + path("shell") + "; wait";
  }

  fs::path dir_;
};

// What exit_like makes of `raw` (a waitpid status): the raw status of a process that called it.
int status_passed_on(int raw) {
  const pid_t p = fork();
  if (p == 0) exit_like(raw);
  int status = 0;
  waitpid(p, &status, 0);
  return status;
}

// The status of a process that ended as `how` says, as waitpid tells it.
int raw_status_of(const char* how) {
  const pid_t p = fork();
  if (p == 0) {
    execl("/bin/sh", "sh", "-c", how, static_cast<char*>(nullptr));
    _exit(126);
  }
  int status = 0;
  waitpid(p, &status, 0);
  return status;
}

TEST_F(AgentShim, PassesTheExitStatusUpUnchanged) {
  for (const char* how : {"exit 0", "exit 3", "exit 137", "kill -TERM $$", "kill -KILL $$", "kill -INT $$",
                          "kill -SEGV $$", "kill -ABRT $$", "kill -USR1 $$"}) {
    const int raw = raw_status_of(how);
    const int passed = status_passed_on(raw);
    SCOPED_TRACE(how);
    ASSERT_EQ(WIFEXITED(raw), WIFEXITED(passed));
    ASSERT_EQ(WIFSIGNALED(raw), WIFSIGNALED(passed));
    if (WIFEXITED(raw)) EXPECT_EQ(WEXITSTATUS(raw), WEXITSTATUS(passed));
    if (WIFSIGNALED(raw)) EXPECT_EQ(WTERMSIG(raw), WTERMSIG(passed));
    EXPECT_FALSE(WIFSIGNALED(passed) && WCOREDUMP(passed)) << "the shim writes no core file of its own";
  }
}

TEST_F(AgentShim, TheTableReportsWhatTheReplicaDidThroughTheShim) {
  ProcessTable t(1s);
  const std::pair<const char*, int> cases[] = {{"exit 3", 3}, {"kill -SEGV $$", 139}, {"kill -KILL $$", 137}};
  for (const auto& [how, code] : cases) {
    ASSERT_TRUE(t.start("j/0", {.argv = {"sh", "-c", how}}).ok());
    auto e = wait_exit(t, "j/0");
    ASSERT_TRUE(e.has_value()) << how;
    EXPECT_EQ(e->exit_code, code) << how;
    EXPECT_EQ(e->exited_itself, std::string(how).starts_with("exit")) << how;
  }
}

TEST_F(AgentShim, TheReplicaLeadsItsOwnGroupUnderTheShim) {
  ProcessTable t(1s);
  auto pid = t.start("j/0", {.argv = {"sh", "-c", "echo $$ > " + path("shell") + "; sleep 300"}});
  ASSERT_TRUE(pid.ok());
  const pid_t shim = t.shim_pid("j/0").value_or(0);
  ASSERT_GT(shim, 0);
  EXPECT_NE(shim, *pid);
  EXPECT_EQ(t.pid("j/0"), *pid);
  EXPECT_EQ(wait_for_pid_file(path("shell")), *pid) << "start() returns the replica's first process, not the shim";
  EXPECT_EQ(stat_field(*pid, 4), std::to_string(shim)) << "the replica is the shim's child";
  EXPECT_EQ(stat_field(*pid, 5), std::to_string(*pid)) << "and leads its own process group";
  EXPECT_EQ(stat_field(shim, 4), std::to_string(getpid())) << "the shim is the agent's child";
  EXPECT_NE(stat_field(shim, 5), std::to_string(*pid)) << "the shim is outside the replica's group";
  // A stray SIGTERM or SIGHUP (a systemd stop, a terminal) does nothing to a shim whose agent lives.
  kill(shim, SIGTERM);
  kill(shim, SIGHUP);
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(alive(shim));
  EXPECT_TRUE(alive(*pid));
  EXPECT_TRUE(t.poll(Clock::now()).empty());
  // A stop reaches the replica's group; the shim passes on its death by SIGTERM.
  t.stop("j/0", Clock::now());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(e->stopped);
  EXPECT_EQ(e->pid, *pid);
}

TEST_F(AgentShim, AKilledAgentTakesTheReplicasWholeTreeWithIt) {
  // The "agent": a child of the test that starts the replica and is then killed with SIGKILL, with no watchdog.
  const pid_t agent = fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    ProcessTable t(1s);
    auto pid = t.start("j/0", {.argv = {"sh", "-c", tree_command()}});
    if (!pid) _exit(1);
    std::ofstream(path("shim")) << *t.shim_pid("j/0") << "\n";
    for (;;) pause();
  }
  const pid_t shim = wait_for_pid_file(path("shim"));
  const pid_t shell = wait_for_pid_file(path("shell"));
  const pid_t child = wait_for_pid_file(path("child"));
  const pid_t grand = wait_for_pid_file(path("grand"));
  ASSERT_GT(shim, 0);
  ASSERT_GT(shell, 0);
  ASSERT_GT(child, 0);
  ASSERT_GT(grand, 0);
  // The grandchild left the replica's group and session, and its parent is gone: it is the shim's now.
  for (auto deadline = Clock::now() + 5s; Clock::now() < deadline && stat_field(grand, 4) != std::to_string(shim);)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(stat_field(grand, 4), std::to_string(shim));
  EXPECT_NE(stat_field(grand, 5), std::to_string(shell));
  ASSERT_TRUE(alive(child) && alive(grand));

  kill(agent, SIGKILL);
  waitpid(agent, nullptr, 0);
  EXPECT_TRUE(gone_within(shell, 3s)) << "the replica's first process outlived its agent";
  EXPECT_TRUE(gone_within(child, 3s)) << "the replica's child " << child << " outlived its agent";
  EXPECT_TRUE(gone_within(grand, 3s)) << "the replica's setsid'd grandchild " << grand << " outlived its agent";
  EXPECT_TRUE(gone_within(shim, 3s)) << "the shim should exit once the tree is gone";
  for (pid_t p : {child, grand})
    if (alive(p)) kill(p, SIGKILL);
}

TEST_F(AgentShim, AKilledShimTakesTheReplicasFirstProcessAndTheTableEndsItsGroup) {
  ProcessTable t(1s);
  auto pid = t.start("j/0", {.argv = {"sh", "-c", tree_command()}});
  ASSERT_TRUE(pid.ok());
  const pid_t shell = wait_for_pid_file(path("shell"));
  const pid_t child = wait_for_pid_file(path("child"));
  const pid_t grand = wait_for_pid_file(path("grand"));
  ASSERT_GT(shell, 0);
  ASSERT_GT(child, 0);
  ASSERT_GT(grand, 0);
  kill(*t.shim_pid("j/0"), SIGKILL);
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 137) << "reported as a replica killed";
  EXPECT_TRUE(gone_within(shell, 3s)) << "the replica's first process dies with its shim (PDEATHSIG)";
  EXPECT_TRUE(gone_within(child, 3s)) << "its group is ended by the table, as for any exit";
  // The setsid'd grandchild is outside the group and (here) without a cgroup: what a restarted agent's leftovers
  // sweep would find. It is ended here by the test.
  if (alive(grand)) kill(grand, SIGKILL);
}

TEST_F(AgentShim, TheHiddenCommandEndsNothingThatIsNotItsOwnChild) {
  // A process group of the test's (not the shim's child), named with a parent pid that is not the shim's: were the
  // command to believe it, it would take its agent for dead and end that group.
  const pid_t other = fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    setpgid(0, 0);
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(other, other);
  const pid_t shim = fork();
  ASSERT_GE(shim, 0);
  if (shim == 0) {
    std::string self = "allot", cmd = kShimCommand, agent = "1", replica = std::to_string(other);
    char* argv[] = {self.data(), cmd.data(), agent.data(), replica.data(), nullptr};
    _exit(replica_shim_main(4, argv));
  }
  int status = 0;
  ASSERT_EQ(waitpid(shim, &status, 0), shim);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
  EXPECT_TRUE(alive(other));
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}

}  // namespace
}  // namespace allot::agent::agent_shim_test
