// The naming rule for teams, jobs, nodes and priority classes (core/model/spec.h), as the scenario readers apply it,
// and the CLI's bounded input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "client/session.h"
#include "config/spec_yaml.h"

namespace allot::names_test {
namespace {

using ::testing::HasSubstr;

TEST(Names, TeamsAreDnsLabels) {
  for (const char* ok : {"a", "team-a", "ml-research", "0", "a1-b2", "x23456789012345678901234567890123456789012345678901234567890123"})
    EXPECT_TRUE(check_name(NameKind::kTeam, ok).ok()) << ok;
  struct Bad {
    std::string name, why;
  };
  for (const Bad& b : std::vector<Bad>{{"", "is empty"},
                                       {"Team", "upper-case letter 'T'"},
                                       {"team.a", "character '.'"},
                                       {"-a", "begin and end"},
                                       {"a-", "begin and end"},
                                       {"team_a", "character '_'"},
                                       {"a b", "character ' '"},
                                       {"a/b", "character '/'"},
                                       {std::string(64, 'a'), "64 characters long"}}) {
    auto st = check_name(NameKind::kTeam, b.name);
    ASSERT_FALSE(st.ok()) << b.name;
    EXPECT_THAT(st.error().message, HasSubstr(b.why));
    EXPECT_THAT(st.error().message, HasSubstr("team name"));
  }
}

TEST(Names, JobsAndNodesAreDnsSubdomains) {
  for (const char* ok : {"train", "llama-3.1-sft", "ip-10-0-0-1.ec2.internal", "c9c620ea-4336-c1a9-8abe-e26bd13076b8", "7"})
    for (NameKind k : {NameKind::kJob, NameKind::kNode, NameKind::kPriorityClass}) EXPECT_TRUE(check_name(k, ok).ok()) << ok;
  EXPECT_TRUE(check_name(NameKind::kJob, std::string(253, 'a')).ok());
  EXPECT_FALSE(check_name(NameKind::kJob, std::string(254, 'a')).ok());
  for (const char* bad : {".a", "a.", "a..b", "a.-b", "a-.b", "A.b", "a_b"})
    EXPECT_FALSE(check_name(NameKind::kNode, bad).ok()) << bad;
}

TEST(Names, ControlAndBidiCharactersAreRefusedAndNotEchoed) {
  // U+202E (right-to-left override), U+2066 (left-to-right isolate), U+200F (right-to-left mark), a tab,
  // a NUL and DEL.
  for (const std::string& bad : {std::string("ab\xE2\x80\xAE" "cd"), std::string("a\xE2\x81\xA6" "b"), std::string("a\xE2\x80\x8F"),
                                 std::string("a\tb"), std::string("a\0b", 3), std::string("a\x7f")}) {
    auto st = check_name(NameKind::kJob, bad);
    ASSERT_FALSE(st.ok());
    for (char c : st.error().message)
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "the message holds the byte " << int(static_cast<unsigned char>(c)) << ": "
                                         << st.error().message;
  }
  EXPECT_EQ(printable("a\xE2\x80\xAE\n"), "a\\xe2\\x80\\xae\\x0a");
  EXPECT_EQ(printable(std::string(100, 'x'), 10), "xxxxxxxxxx...");
}

TEST(Names, ScenarioReadersCheckNamesWithTheirLines) {
  auto load = [](const std::string& text) {
    auto d = load_yaml(text, YamlContext{"t.yaml", "", 0});
    EXPECT_TRUE(d.ok());
    return *d;
  };
  auto teams = parse_teams(load("- name: ok\n- name: Bad_Team\n"), Catalog::builtin(), YamlContext{"t.yaml", "teams", 0});
  ASSERT_FALSE(teams.ok());
  EXPECT_THAT(teams.error().message, HasSubstr("t.yaml:2: teams[1].name: team name 'Bad_Team' has the upper-case letter 'B'"));
  auto nodes = parse_nodes(load("- {name: gpu-[1-2], instance_type: ml.g5.8xlarge}\n- {name: GPU-3, instance_type: ml.g5.8xlarge}\n"),
                           Catalog::builtin(), YamlContext{"t.yaml", "nodes", 0});
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.error().message, HasSubstr("t.yaml:2:"));
  EXPECT_THAT(nodes.error().message, HasSubstr("node name 'GPU-3'"));
  auto job = parse_job_spec(load("name: My Job\nteam: a\nper_replica: {accelerators: 1}\n"), Catalog::builtin(),
                            YamlContext{"t.yaml", "submit", 0});
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.error().message, HasSubstr("t.yaml:1: submit.name: job name 'My Job'"));
  auto policy = parse_policy(load("priority_classes: [{name: Urgent, weight: 9}]\n"), YamlContext{"t.yaml", "policy", 0});
  ASSERT_FALSE(policy.ok());
  EXPECT_THAT(policy.error().message, HasSubstr("priority class name 'Urgent'"));
}

TEST(ClientInput, FilesAreReadUpToTheLimit) {
  const std::string path = ::testing::TempDir() + "allot-input-" + std::to_string(::getpid());
  std::ofstream(path) << std::string(100, 'x');
  auto fits = client::read_input(path, 100);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->size(), 100u);
  auto over = client::read_input(path, 99);
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.error().message, HasSubstr("larger than 99 bytes"));
  std::remove(path.c_str());
  EXPECT_FALSE(client::read_input(path).ok()) << "a missing file";
}

}  // namespace
}  // namespace allot::names_test
