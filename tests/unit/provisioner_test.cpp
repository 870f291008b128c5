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
#include "server/writer/server_state.h"

namespace allot::server::provisioner_test {
namespace {

namespace fs = std::filesystem;

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
  ProvisionRequest r;
  r.node = "n1";
  r.instance_type = "ml.g5.8xlarge";
  r.replacement = "n1-r1";
  r.reason = "test";
  r.join_token = "allot_join_secret";
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

}  // namespace
}  // namespace allot::server::provisioner_test
