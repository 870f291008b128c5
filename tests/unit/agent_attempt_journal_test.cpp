// The agent's journal of started attempts (agent/attempt_journal.h): what a restarted agent learns from it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/attempt_journal.h"

namespace allot::agent::agent_attempt_journal_test {
namespace {

namespace fs = std::filesystem;

class AttemptJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-journal-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "attempts.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(AttemptJournalTest, WhatWasStartedEndedAndReportedSurvivesAReload) {
  auto j = AttemptJournal::load(path_);
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_TRUE(j->entries().empty()) << "no file: nothing started";
  ASSERT_TRUE(j->started({"train", 0, 2, "/w/train/attempt-2", "/w/train/attempt-2/rank-0.log", std::nullopt, false}));
  ASSERT_TRUE(j->started({"train", 1, 2, "/w/train/attempt-2", "/w/train/attempt-2/rank-1.log", std::nullopt, false}));
  ASSERT_TRUE(j->ended("train/1#2", 0));
  ASSERT_TRUE(j->reported({"train/1#2"}));

  auto again = AttemptJournal::load(path_);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->entries(), j->entries());
  EXPECT_TRUE(again->contains("train/0#2"));
  EXPECT_TRUE(again->contains("train/1#2")) << "reported, but still listed: never started again";
  EXPECT_FALSE(again->entries().at("train/0#2").exit_code) << "never collected: a restarted agent reports it lost";
  EXPECT_EQ(again->entries().at("train/1#2").exit_code, 0);
  EXPECT_TRUE(again->entries().at("train/1#2").reported);
}

TEST_F(AttemptJournalTest, AnOutOfMemoryEndIsKeptWithItsLimit) {
  // An agent restarted between the kernel's kill and its report reports it as oom_killed, with the limit.
  auto j = AttemptJournal::load(path_);
  ASSERT_TRUE(j);
  ASSERT_TRUE(j->started({"hog", 0, 1, "/w/hog/attempt-1", "/w/hog/attempt-1/rank-0.log", std::nullopt, false}));
  ASSERT_TRUE(j->started({"ok", 0, 0, "/w/ok/attempt-0", "/w/ok/attempt-0/rank-0.log", std::nullopt, false}));
  ASSERT_TRUE(j->ended("hog/0#1", 137, 64));
  ASSERT_TRUE(j->ended("ok/0#0", 137));
  auto again = AttemptJournal::load(path_);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->entries().at("hog/0#1").oom_limit_mib, 64);
  EXPECT_EQ(again->entries().at("hog/0#1").exit_code, 137);
  EXPECT_EQ(again->entries().at("ok/0#0").oom_limit_mib, 0) << "a plain exit 137 is no out-of-memory end";
}

TEST_F(AttemptJournalTest, OnlyReportedAttemptsTheRunListNoLongerNamesAreForgotten) {
  auto j = AttemptJournal::load(path_);
  ASSERT_TRUE(j);
  ASSERT_TRUE(j->started({"a", 0, 0, "d0", "l0", std::nullopt, false}));
  ASSERT_TRUE(j->started({"a", 1, 0, "d0", "l1", std::nullopt, false}));
  ASSERT_TRUE(j->started({"b", 0, 3, "d1", "l2", std::nullopt, false}));
  ASSERT_TRUE(j->ended("a/0#0", 0));
  ASSERT_TRUE(j->reported({"a/0#0", "b/0#3"}));
  // a/0#0 is still listed (its peer runs), a/1#0 has not ended: only b/0#3 goes.
  auto gone = j->forget_unlisted({"a/0#0", "a/1#0"});
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].key(), "b/0#3");
  EXPECT_EQ(gone[0].dir, "d1");
  auto again = AttemptJournal::load(path_);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->contains("b/0#3"));
  EXPECT_TRUE(again->contains("a/0#0"));
  EXPECT_TRUE(again->forget_unlisted({"a/1#0"}).size() == 1u) << "a/0#0 once the server dropped it";
}

TEST_F(AttemptJournalTest, AMalformedJournalIsAnErrorNamingTheFileNotAnEmptyJournal) {
  std::ofstream(path_) << "{\"attempts\": [{\"job\": 3}]}";
  auto j = AttemptJournal::load(path_);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().message.find(path_), std::string::npos) << j.error().message;
  EXPECT_NE(j.error().message.find("does not start anything"), std::string::npos) << j.error().message;
}

TEST_F(AttemptJournalTest, AStartThatCannotBeSavedIsAnError) {
  auto j = AttemptJournal::load((dir_ / "missing-dir" / "attempts.json").string());
  ASSERT_TRUE(j);
  auto st = j->started({"a", 0, 0, "d", "l", std::nullopt, false});
  EXPECT_FALSE(st) << "the directory does not exist: the start is not durable, so it must not run";
}

}  // namespace
}  // namespace allot::agent::agent_attempt_journal_test
