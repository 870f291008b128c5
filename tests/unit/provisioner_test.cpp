// The provisioner's command (server/outside/provisioner.h) runs with its stdin, stdout and stderr only: a descriptor
// the server holds without close-on-exec (a client's connection, as cpp-httplib accepts them) is not inherited, so
// a connection the server closes is closed for its client even while a provisioner runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "server/outside/provisioner.h"
#include "server/thread_priority.h"
#include "server/writer/server_state.h"

namespace allot::server::provisioner_test {
namespace {

namespace fs = std::filesystem;

// A replacement of node n1, as the lifecycle asks for one.
ProvisionRequest replacement_of_n1() {
  ProvisionRequest r;
  r.node = "n1";
  r.instance_type = "ml.g5.8xlarge";
  r.replacement = "n1-r1";
  r.reason = "test";
  r.join_token = "allot_join_secret";
  return r;
}

TEST(Provisioner, TheCommandInheritsNoDescriptorButItsStandardOnes) {
  const fs::path dir = fs::temp_directory_path() / ("allot-provisioner-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int opened = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC, as an accepted connection
  ASSERT_GE(opened, 0);
  const int held = ::fcntl(opened, F_DUPFD, 100);  // a number the shell would not open for itself
  ::close(opened);
  ASSERT_GE(held, 100);
  const fs::path result = dir / "result";
  const std::string probe = "if [ -e /proc/$$/fd/" + std::to_string(held) + " ]; then echo inherited; else echo closed; fi > " +
                            result.string() + ".tmp && mv " + result.string() + ".tmp " + result.string();
  Provisioner p(probe, (dir / "provision").string());
  const ProvisionRequest r = replacement_of_n1();
  p.launch(r, "http://127.0.0.1:1");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(result) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::close(held);
  ASSERT_TRUE(fs::exists(result)) << "the provisioner did not run; its log: " << (dir / "provision" / "n1.log");
  std::ifstream in(result);
  std::string said;
  std::getline(in, said);
  EXPECT_EQ(said, "closed");
  p.reap();
  fs::remove_all(dir);
}

// Launched from a thread whose priority was raised (the writer's, `--writer-priority`), the command runs at the
// process's priority: a fork inherits the calling thread's nice value, and a replacement's provisioning is no
// reason to be served before the server's own threads.
TEST(Provisioner, TheCommandRunsAtTheProcessPriorityNotTheWritersRaisedOne) {
  const fs::path dir = fs::temp_directory_path() / ("allot-provisioner-nice-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path result = dir / "result";
  // Field 19 of the shell's own stat line is its nice value.
  const std::string probe = "cut -d' ' -f19 /proc/$$/stat > " + result.string() + ".tmp && mv " + result.string() + ".tmp " + result.string();
  Provisioner p(probe, (dir / "provision").string());
  const ProvisionRequest r = replacement_of_n1();
  const int process = thread_nice();
  int raised = 0;
  std::thread([&] {
    raised = -adjust_thread_nice(-3, "the test's launching thread");
    EXPECT_EQ(thread_raised(), raised);
    p.launch(r, "http://127.0.0.1:1");
  }).join();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(result) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(result)) << "the provisioner did not run; its log: " << (dir / "provision" / "n1.log");
  std::ifstream in(result);
  int said = -100;
  in >> said;
  EXPECT_EQ(said, process) << "the command kept the launching thread's nice (raised by " << raised << ")";
  p.reap();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace allot::server::provisioner_test
