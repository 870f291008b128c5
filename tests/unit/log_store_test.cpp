// The replica log store (server/lifecycle/log_store.h): every valid job name can be stored whatever its length, logs kept
// under the spelling of earlier versions stay readable, and a log that cannot be read is an error, not "".
#include "server/lifecycle/log_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace allot::server::log_store_test {
namespace {

namespace fs = std::filesystem;

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-log-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string dotted(int dots) {
  std::string name;
  for (int i = 0; i < dots; ++i) name += "a.";
  return name + "a";
}

TEST_F(LogStoreTest, EveryNameHasAKeyThatFitsAFileName) {
  EXPECT_EQ(LogStore::key("train-1"), "train-1");
  EXPECT_EQ(LogStore::key("a.b"), "a%2Eb");  // the spelling logs always had
  // 129 characters, 321 once encoded (issue 33); the longest valid name; and 100 KB of anything.
  for (const std::string& name : {dotted(64), dotted(126), std::string(100000, '.')}) {
    const std::string key = LogStore::key(name);
    EXPECT_LE(key.size(), 255u) << name.size();
    EXPECT_NE(key.find('~'), std::string::npos);
    EXPECT_EQ(key.find('/'), std::string::npos);
  }
  // Names that share their first 120 encoded bytes still get keys of their own.
  EXPECT_NE(LogStore::key(dotted(64)), LogStore::key(dotted(65)));
  // A key cut never splits a %XX: it ends in whole escapes before its '~'.
  const std::string key = LogStore::key(dotted(64));
  const std::string prefix = key.substr(0, key.find('~'));
  EXPECT_EQ(prefix.size() % 4, 0u) << prefix << " is not whole 'a%2E' pairs";
}

TEST_F(LogStoreTest, LongNamesAreStoredAndReadBack) {
  LogStore store(dir_.string(), 1 << 20);
  const std::string name = dotted(64);
  ASSERT_TRUE(store.append(name, 0, "first\n", LogStore::Attempt{0, "n1", 0}).ok());
  ASSERT_TRUE(store.append(name, 0, "second\n", LogStore::Attempt{1, "n2", 0}).ok());
  auto back = store.read(name, 0, 0);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, "first\nallot: ==> attempt 1 of replica 0 on node n2 <==\nsecond\n");
  ASSERT_TRUE(store.remove(name).ok());
  EXPECT_EQ(*store.read(name, 0, 0), "");
  EXPECT_TRUE(fs::is_empty(dir_));
}

// A data directory written before long names were hashed: its logs are where the store looks for them.
TEST_F(LogStoreTest, LogsOfEarlierVersionsStayReadable) {
  const std::string name = dotted(60);  // 121 characters, 241 bytes encoded: it always fitted
  fs::create_directories(dir_ / LogStore::key(name));
  ASSERT_EQ(LogStore::key(name).find('~'), std::string::npos) << "a name that fitted keeps its spelling";
  std::ofstream(dir_ / LogStore::key(name) / "0.log") << "written by an earlier version\n";
  LogStore store(dir_.string(), 1 << 20);
  EXPECT_EQ(*store.read(name, 0, 0), "written by an earlier version\n");
}

TEST_F(LogStoreTest, ALogThatCannotBeReadIsAnErrorSayingWhy) {
  LogStore store(dir_.string(), 1 << 20);
  EXPECT_EQ(*store.read("never-logged", 0, 0), "") << "nothing logged yet is an empty log";
  // A directory where the file should be (permissions would not stop a test run as root).
  fs::create_directories(dir_ / "j" / "0.log");
  auto r = store.read("j", 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot read the log of job j replica 0"), std::string::npos) << r.error().message;
  auto w = store.append("j", 0, "x");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("cannot store the log of job j replica 0"), std::string::npos) << w.error().message;
}

}  // namespace
}  // namespace allot::server::log_store_test
