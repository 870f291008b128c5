// Replicas' logs (agent/log_capture.h): output through the agent's pipe arrives whole, and a log path that is
// a symlink or a hard link is neither written nor read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/log_capture.h"

namespace allot::agent::agent_log_capture_test {
namespace {
namespace fs = std::filesystem;

class LogCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-logcap-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "secret") << "secret-bytes\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  fs::path dir_;
};

TEST_F(LogCaptureTest, OutputThroughThePipeArrivesWholeBeforeFinishReturns) {
  LogCapture cap;
  const std::string log = (dir_ / "r.log").string();
  auto fd = cap.open("j/0#0", log);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  std::string sent;
  for (int i = 0; i < 20000; ++i) sent += "line " + std::to_string(i) + "\n";
  ASSERT_EQ(write(*fd, sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  close(*fd);
  cap.finish("j/0#0", std::chrono::seconds(10));
  EXPECT_EQ(slurp(log), sent);
  EXPECT_EQ(log_size(log), sent.size());
  auto chunk = read_log_chunk(log, 5, 6);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(*chunk, "0\nline");
  EXPECT_EQ(fs::status(log).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(LogCaptureTest, SymlinksAndHardLinksAreNeitherWrittenNorRead) {
  fs::create_symlink(dir_ / "secret", dir_ / "link.log");
  fs::create_hard_link(dir_ / "secret", dir_ / "hard.log");
  for (const char* name : {"link.log", "hard.log"}) {
    const std::string p = (dir_ / name).string();
    EXPECT_FALSE(open_log_for_append(p).ok()) << name;
    EXPECT_FALSE(append_log_line(p, "planted").ok()) << name;
    EXPECT_FALSE(read_log_chunk(p, 0, 100).ok()) << name;
    EXPECT_EQ(log_size(p), 0u) << name;
    LogCapture cap;
    EXPECT_FALSE(cap.open("k", p).ok()) << name;
  }
  EXPECT_EQ(slurp(dir_ / "secret"), "secret-bytes\n");
  // A missing log reads as empty; a private directory is made 0700.
  EXPECT_EQ(*read_log_chunk((dir_ / "none.log").string(), 0, 10), "");
  ASSERT_TRUE(make_private_dir((dir_ / "a/b").string()).ok());
  EXPECT_EQ(fs::status(dir_ / "a/b").permissions() & fs::perms::all, fs::perms::owner_all);
}

}  // namespace
}  // namespace allot::agent::agent_log_capture_test
