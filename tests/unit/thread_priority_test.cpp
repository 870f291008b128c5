// A thread's own CPU priority and name (server/thread_priority.h), and the writer thread started with
// ServerOptions::writer_priority: named allot-writer, at the priority the kernel granted, the rest untouched.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "server/thread_priority.h"
#include "server_test_fixture.h"

namespace allot::server::test::thread_priority_test {
namespace {

// Whether this process may raise a thread's priority: CAP_SYS_NICE (bit 23) in its effective capabilities.
bool may_raise_priority() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("CapEff:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> 23) & 1;
  return false;
}

std::string comm_of(const std::filesystem::path& task) {
  std::ifstream in(task / "comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The nice value of one of this process's threads, from /proc (field 19 of its stat line).
int nice_of(const std::filesystem::path& task) {
  std::ifstream in(task / "stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), {});
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; fields >> field; ++i)
    if (i == 19) return std::stoi(field);
  ADD_FAILURE() << "no nice value in " << stat;
  return 0;
}

// The thread of this process named `name`, if one is.
std::optional<std::filesystem::path> thread_named(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    if (comm_of(task.path()) == name) return task.path();
  return std::nullopt;
}

TEST(ThreadPriority, ALowerPriorityIsGrantedToTheCallingThreadOnly) {
  const int mine = thread_nice();
  int before = 0, after = 0, granted = 0;
  std::thread([&] {
    before = thread_nice();
    granted = adjust_thread_nice(3, "the test's thread");
    after = thread_nice();
  }).join();
  EXPECT_EQ(granted, std::min(3, 19 - before)) << "nice values stop at 19";
  EXPECT_EQ(after, before + granted);
  EXPECT_EQ(thread_nice(), mine) << "the caller's own priority is untouched";
  EXPECT_EQ(adjust_thread_nice(0, "nothing"), 0);
}

TEST(ThreadPriority, AHigherPriorityIsGrantedWithCapSysNiceAndOtherwiseRefusedAsNoChange) {
  int before = 0, after = 0, granted = 0;
  std::thread([&] {
    before = thread_nice();
    granted = adjust_thread_nice(-2, "the test's thread");
    after = thread_nice();
  }).join();
  EXPECT_EQ(after, before + granted) << "what it says was granted is what the thread has";
  if (may_raise_priority())
    EXPECT_EQ(granted, std::max(-2, -20 - before)) << "CAP_SYS_NICE lets a thread raise its priority";
  else
    EXPECT_EQ(granted, 0) << "refused without CAP_SYS_NICE (or an RLIMIT_NICE that allows it)";
}

// A thread started from a raised one inherits its nice value; back_to_process_priority takes it back down (the
// writer's snapshot thread and the thread that drops its old views).
TEST(ThreadPriority, AThreadStartedFromARaisedOneGoesBackToTheProcessPriority) {
  const int process = thread_nice();
  int raised = 0, inherited = 0, helper = 0;
  std::thread([&] {
    raised = -adjust_thread_nice(-2, "the test's raised thread");
    EXPECT_EQ(thread_raised(), raised);
    std::thread([&, from = thread_raised()] {
      inherited = thread_nice();
      back_to_process_priority(from, "the test's helper thread");
      helper = thread_nice();
    }).join();
  }).join();
  EXPECT_EQ(inherited, process - raised) << "a thread starts at its creator's nice value";
  EXPECT_EQ(helper, process);
  if (may_raise_priority()) EXPECT_GT(raised, 0) << "with CAP_SYS_NICE the raise is granted, so the test sees it undone";
}

TEST(ThreadPriority, AThreadIsNamedAsProcShowsIt) {
  std::string seen;
  std::thread([&] {
    name_thread("allot-test-name-longer-than-fifteen");
    seen = comm_of("/proc/thread-self");
  }).join();
  EXPECT_EQ(seen, "allot-test-name") << "names are cut at 15 characters";
}

class WriterPriority : public ServerTest {};

TEST_F(WriterPriority, TheWriterThreadRunsAtThePriorityGrantedAndTheRequestThreadsAtTheServers) {
  options_.writer_priority = 4;
  start();
  const int process = thread_nice();
  const auto writer = thread_named("allot-writer");
  ASSERT_TRUE(writer) << "no thread named allot-writer";
  const int granted = server_->stats().writer_priority;
  EXPECT_EQ(nice_of(*writer), process - granted);
  if (may_raise_priority())
    EXPECT_EQ(granted, std::min(4, 20 + process));
  else
    EXPECT_EQ(granted, 0) << "without CAP_SYS_NICE the writer keeps the server's priority";
  // The server serves as before, and its other threads keep the process's priority.
  const auto made = put("/v1/teams/t", "allocation: [{instance_type: g5.8xlarge, accelerators: 1}]\n", "application/yaml");
  EXPECT_TRUE(made.status == 200 || made.status == 201) << made.status << " " << made.body;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const std::string name = comm_of(task.path());
    if (name == "allot-writer" || name == "allot-listing") continue;
    EXPECT_EQ(nice_of(task.path()), process) << "thread " << name << " (" << task.path() << ")";
  }
}

TEST_F(WriterPriority, ByDefaultTheWriterRunsAtTheServersPriority) {
  start();
  const auto writer = thread_named("allot-writer");
  ASSERT_TRUE(writer) << "no thread named allot-writer";
  EXPECT_EQ(server_->stats().writer_priority, 0);
  EXPECT_EQ(nice_of(*writer), thread_nice());
}

}  // namespace
}  // namespace allot::server::test::thread_priority_test
