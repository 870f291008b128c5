// The replicas' PID namespace (agent/pid_namespace.h): a replica started in it runs there (and the table still
// reports its exit, stop and pid as the node names them); the namespace's init cannot be signalled from inside; and
// when the agent, its watchdog and the replica's shim are all killed, everything the replica started dies with the
// agent, which was the last gap of issue 25 item 9 (before, it lived until an agent started again).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "agent/pid_namespace.h"
#include "agent/process.h"
#include "process_probes.h"

namespace allot::agent::agent_pid_namespace_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using namespace process_probes;

std::string ns_of(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec).string();
}

// Each process of the replica writes its pid as the node names it (`read` runs in the shell itself, so
// /proc/self/stat is the shell's) and as it sees it ($$); the grandchild leaves the group and session, and its
// parent exits.
const char* kTree =
    "read -r me _ < /proc/self/stat; echo $me > shell; echo $$ > shell-inside; "
    "sh -c 'read -r me _ < /proc/self/stat; echo $me > child; exec sleep 300' & "
    "setsid sh -c \"sh -c 'read -r me _ < /proc/self/stat; echo \\$me > grand; exec sleep 301' &\"; wait";

class AgentPidNamespace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-pidns-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  LaunchSpec tree(int ns) const { return {.argv = {"sh", "-c", kTree}, .work_dir = dir_.string(), .pid_namespace = ns}; }
  fs::path dir_;
};

#define SKIP_WITHOUT_NAMESPACES(ns)                                                                   \
  if (!(ns)) GTEST_SKIP() << "this machine gives this process no PID namespace (" << (ns).error().message \
                          << "): the agent then runs replicas in its own, and says so"

TEST_F(AgentPidNamespace, TheReplicaRunsInItAndTheTableSeesItAsTheNodeNamesIt) {
  auto ns = ReplicaPidNamespace::create("");
  SKIP_WITHOUT_NAMESPACES(ns);
  ProcessTable t(1s);
  auto pid = t.start("j/0", tree((*ns)->fd()));
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  const pid_t shell = wait_for_pid_file(path("shell"));
  const pid_t inside = wait_for_pid_file(path("shell-inside"));
  const pid_t grand = wait_for_pid_file(path("grand"));
  ASSERT_GT(grand, 0);
  EXPECT_EQ(shell, *pid) << "start() returns the replica's first process as the node names it";
  EXPECT_NE(inside, shell) << "inside, the replica has a pid of the namespace's";
  EXPECT_EQ(ns_of(shell), ns_of((*ns)->init()));
  EXPECT_NE(ns_of(shell), ns_of(getpid()));
  EXPECT_EQ(ns_of(*t.shim_pid("j/0")), ns_of(getpid())) << "the shim stays in the agent's namespace";
  // The grandchild's parent exited: it is the namespace init's now, not the shim's.
  for (auto deadline = Clock::now() + 5s; Clock::now() < deadline && stat_field(grand, 4) != std::to_string((*ns)->init());)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(stat_field(grand, 4), std::to_string((*ns)->init()));
  // A stop reaches the replica's group across the namespace; the shim passes on its death by SIGTERM.
  t.stop("j/0", Clock::now());
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 128 + SIGTERM);
  EXPECT_EQ(e->pid, shell);
  kill(grand, SIGKILL);  // outside the group and (here) without a cgroup, as before
}

TEST_F(AgentPidNamespace, ItsInitCannotBeSignalledFromInside) {
  auto ns = ReplicaPidNamespace::create("");
  SKIP_WITHOUT_NAMESPACES(ns);
  ProcessTable t(1s);
  // Root inside the namespace (the test runs as root where namespaces are allowed) tries every way it has.
  auto pid = t.start("j/0", {.argv = {"sh", "-c", "kill -KILL 1; kill -TERM 1; kill -KILL -1; echo done > tried"},
                             .work_dir = dir_.string(), .pid_namespace = (*ns)->fd()});
  ASSERT_TRUE(pid.ok());
  ASSERT_TRUE(wait_exit(t, "j/0").has_value());
  EXPECT_EQ(slurp(path("tried")), "done\n");
  int status = 0;
  EXPECT_FALSE((*ns)->ended(&status)) << "the namespace's init outlives what its replicas send it";
  EXPECT_TRUE(alive((*ns)->init()));
}

TEST_F(AgentPidNamespace, AnEndedInitTakesEveryReplicaWithIt) {
  auto ns = ReplicaPidNamespace::create("");
  SKIP_WITHOUT_NAMESPACES(ns);
  ProcessTable t(1s);
  ASSERT_TRUE(t.start("j/0", tree((*ns)->fd())).ok());
  const pid_t child = wait_for_pid_file(path("child"));
  const pid_t grand = wait_for_pid_file(path("grand"));
  ASSERT_GT(child, 0);
  ASSERT_GT(grand, 0);
  kill((*ns)->init(), SIGKILL);
  EXPECT_TRUE(gone_within(child, 3s));
  EXPECT_TRUE(gone_within(grand, 3s));
  auto e = wait_exit(t, "j/0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 137);
  // The init's own exit completes only after every task of its namespace has been reaped, the replica by its shim
  // outside it, so it may become a zombie a moment after the shim's exit was collected.
  int status = 0;
  bool ended = false;
  for (auto deadline = Clock::now() + 3s; !(ended = (*ns)->ended(&status)) && Clock::now() < deadline;)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(ended);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ((*ns)->fd(), -1);
}

TEST_F(AgentPidNamespace, TheAgentWatchdogAndShimKilledTogetherLeaveNothingRunning) {
  // The "agent": a child of the test with the namespace and the replica, stopped (so its table collects nothing)
  // while its replica's shim is killed, then killed itself. There is no watchdog here, which is the worst case.
  const pid_t agent = fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    auto ns = ReplicaPidNamespace::create("");
    if (!ns) {
      std::ofstream(path("no-namespace")) << ns.error().message << "\n";
      _exit(0);
    }
    ProcessTable t(1s);
    auto pid = t.start("j/0", tree((*ns)->fd()));
    if (!pid) _exit(1);
    std::ofstream(path("shim")) << *t.shim_pid("j/0") << "\n";
    std::ofstream(path("init")) << (*ns)->init() << "\n";
    for (;;) pause();
  }
  for (auto deadline = Clock::now() + 10s; Clock::now() < deadline && !fs::exists(path("init")) &&
                                           !fs::exists(path("no-namespace"));)
    std::this_thread::sleep_for(10ms);
  if (fs::exists(path("no-namespace"))) {
    waitpid(agent, nullptr, 0);
    GTEST_SKIP() << "no PID namespace here: " << slurp(path("no-namespace"));
  }
  const pid_t shim = wait_for_pid_file(path("shim"));
  const pid_t init = wait_for_pid_file(path("init"));
  const pid_t shell = wait_for_pid_file(path("shell"));
  const pid_t child = wait_for_pid_file(path("child"));
  const pid_t grand = wait_for_pid_file(path("grand"));
  ASSERT_TRUE(shim > 0 && init > 0 && shell > 0 && child > 0 && grand > 0);
  kill(agent, SIGSTOP);
  kill(shim, SIGKILL);
  EXPECT_TRUE(gone_within(shell, 3s)) << "the replica's first process dies with its shim (PDEATHSIG)";
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(alive(child) && alive(grand)) << "before the agent dies, the rest of the tree still runs";
  kill(agent, SIGKILL);
  waitpid(agent, nullptr, 0);
  EXPECT_TRUE(gone_within(init, 3s)) << "the namespace's init exits when the agent is gone";
  EXPECT_TRUE(gone_within(child, 3s)) << "the replica's child " << child << " outlived its agent and shim";
  EXPECT_TRUE(gone_within(grand, 3s)) << "the replica's setsid'd grandchild " << grand << " outlived its agent and shim";
  for (pid_t p : {child, grand})
    if (alive(p)) kill(p, SIGKILL);
}

TEST(AgentPidInit, TheHiddenCommandRunsOnlyAsANamespacesFirstProcess) {
  std::string self = "allot", cmd = kPidInitCommand, agent = std::to_string(getpid());
  char* argv[] = {self.data(), cmd.data(), agent.data(), nullptr};
  EXPECT_EQ(pid_init_main(3, argv), 2);
  char* short_argv[] = {self.data(), cmd.data(), nullptr};
  EXPECT_EQ(pid_init_main(2, short_argv), 2);
}

}  // namespace
}  // namespace allot::agent::agent_pid_namespace_test
