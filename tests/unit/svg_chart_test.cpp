// SVG charts: well-formed, carrying their series, escaped, bounded in size and byte-for-byte deterministic.
#include "sim/svg_chart.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace allot::sim::svg_chart_test {
namespace {

// Tags balance and nest; every '&' starts an entity. Returns "" when well-formed, else what is wrong.
std::string well_formed(const std::string& svg) {
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = svg.find('<', pos)) != std::string::npos) {
    const size_t end = svg.find('>', pos);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(pos);
    std::string tag = svg.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag.back() == '/') continue;
    const std::string name = tag.substr(tag[0] == '/' ? 1 : 0, tag.find_first_of(" \n", 0) - (tag[0] == '/' ? 1 : 0));
    if (tag[0] == '/') {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
    } else {
      open.push_back(name);
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  for (size_t a = svg.find('&'); a != std::string::npos; a = svg.find('&', a + 1)) {
    const size_t semi = svg.find(';', a);
    if (semi == std::string::npos || semi - a > 6) return "bare & at " + std::to_string(a);
  }
  return "";
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

// Two days of a 16-GPU cluster shared by three teams, one sample per 10 minutes.
std::vector<Sample> two_days() {
  std::vector<Sample> out;
  for (int64_t t = 0; t < 2 * 86400; t += 600) {
    const int64_t k = t / 600;
    const int64_t a = (k % 7) + 2, b = (k % 5), c = (k / 20) % 4;
    out.push_back({t, a + b + c, (k % 11) / 3, {a, b, c}});
  }
  return out;
}

const ClusterInfo kThreeTeams{.total_gpus = 16, .teams = {{"inference", 8}, {"R&D <ml>", 4}, {"training", 4}}};

TEST(SvgChart, QueueUtilizationIsWellFormedAndCarriesBothSeries) {
  const std::string svg = queue_utilization_svg(two_days(), 2 * 86400, 16, {.title = "cluster04 \"FIFO\""});
  EXPECT_EQ(well_formed(svg), "");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("<g id=\"utilization\">"), std::string::npos);
  EXPECT_NE(svg.find("<g id=\"queue\">"), std::string::npos);
  EXPECT_NE(svg.find("cluster04 &quot;FIFO&quot;"), std::string::npos);
  EXPECT_NE(svg.find("time since first submission (hours)"), std::string::npos);
  EXPECT_NE(svg.find(">utilisation (%)<"), std::string::npos);
  EXPECT_NE(svg.find(">queued jobs<"), std::string::npos);
  EXPECT_EQ(svg.find("averaged over"), std::string::npos);  // 288 samples: drawn as they are
}

TEST(SvgChart, TeamUsageHasOnePanelPerTeamAndEscapesNames) {
  const std::string svg = team_usage_svg(two_days(), 2 * 86400, kThreeTeams);
  EXPECT_EQ(well_formed(svg), "");
  EXPECT_EQ(count(svg, "<g class=\"team\""), 3u);
  EXPECT_NE(svg.find("data-team=\"inference\""), std::string::npos);
  EXPECT_NE(svg.find("data-team=\"R&amp;D &lt;ml&gt;\""), std::string::npos);
  EXPECT_NE(svg.find(">R&amp;D &lt;ml&gt;<"), std::string::npos);
  EXPECT_EQ(svg.find("R&D"), std::string::npos);
  EXPECT_NE(svg.find("quota 8 GPUs"), std::string::npos);
  EXPECT_EQ(count(svg, "stroke-dasharray=\"6 4\""), 3u);  // one quota line per panel
}

TEST(SvgChart, ManyTeamsAreSummarizedIntoTenPanels) {
  ClusterInfo cluster{.total_gpus = 64, .teams = {}};
  std::vector<Sample> samples;
  for (int i = 0; i < 14; ++i) cluster.teams.push_back({"team-" + std::to_string(i), 4});
  for (int64_t t = 0; t < 3600; t += 60) {
    Sample s{t, 0, 0, {}};
    for (int i = 0; i < 14; ++i) s.team_busy_gpus.push_back(i);  // team-13 uses the most
    samples.push_back(s);
  }
  const std::string svg = team_usage_svg(samples, 3600, cluster);
  EXPECT_EQ(well_formed(svg), "");
  EXPECT_EQ(count(svg, "<g class=\"team\""), 10u);
  EXPECT_NE(svg.find("data-team=\"team-13\""), std::string::npos);
  EXPECT_NE(svg.find("data-team=\"other 5 teams\""), std::string::npos);  // team-0 .. team-4
  EXPECT_EQ(svg.find("data-team=\"team-4\""), std::string::npos);
  EXPECT_NE(svg.find("quota 20 GPUs"), std::string::npos);  // 5 summed quotas of 4
}

TEST(SvgChart, LongSeriesAreDownsampled) {
  std::vector<Sample> samples;
  for (int64_t t = 0; t < 100000; ++t) samples.push_back({t * 30, t % 17, t % 5, {t % 17}});
  const int64_t end = 100000 * 30;
  const std::string svg = queue_utilization_svg(samples, end, 16);
  EXPECT_EQ(well_formed(svg), "");
  EXPECT_NE(svg.find("averaged over"), std::string::npos);
  EXPECT_LT(svg.size(), 200000u);  // 4 paths of 2,000 vertices, not 100,000
  const std::string team_svg = team_usage_svg(samples, end, {.total_gpus = 16, .teams = {{"only", 8}}});
  EXPECT_EQ(well_formed(team_svg), "");
  EXPECT_LT(team_svg.size(), 200000u);
}

TEST(SvgChart, DownsampleKeepsTheTimeWeightedMean) {
  // 0 for 1 s, 10 for 3 s, then 2 for 4 s (to t = 8): two bins of 4 s average (0 + 30)/4 and 2.
  const std::vector<StepPoint> pts = {{0, 0}, {1, 10}, {4, 2}};
  const auto two = downsample_steps(pts, 8, 4);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_DOUBLE_EQ(two[0].t, 0);
  EXPECT_DOUBLE_EQ(two[0].v, 7.5);
  EXPECT_DOUBLE_EQ(two[1].t, 4);
  EXPECT_DOUBLE_EQ(two[1].v, 2);
  EXPECT_EQ(downsample_steps(pts, 8, 6).size(), 3u);  // short enough: unchanged
  std::vector<StepPoint> many;
  for (int i = 0; i < 10000; ++i) many.push_back({static_cast<double>(i), static_cast<double>(i % 2)});
  const auto few = downsample_steps(many, 10000, 2000);
  EXPECT_EQ(few.size(), 1000u);
  for (const StepPoint& p : few) EXPECT_DOUBLE_EQ(p.v, 0.5);
}

TEST(SvgChart, OutputIsDeterministicAndEmptyInputIsValid) {
  EXPECT_EQ(queue_utilization_svg(two_days(), 172800, 16), queue_utilization_svg(two_days(), 172800, 16));
  EXPECT_EQ(team_usage_svg(two_days(), 172800, kThreeTeams), team_usage_svg(two_days(), 172800, kThreeTeams));
  const std::string empty = queue_utilization_svg({}, 0, 16);
  EXPECT_EQ(well_formed(empty), "");
  EXPECT_NE(empty.find("no samples"), std::string::npos);
  EXPECT_EQ(well_formed(team_usage_svg({}, 0, kThreeTeams)), "");
}

TEST(SvgChart, EscapesText) { EXPECT_EQ(svg_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;"); }

TEST(SvgChart, WritesBothFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("allot-svg-test-" + std::to_string(::getpid()));
  auto paths = write_replay_charts((dir / "charts").string(), two_days(), 172800, kThreeTeams, "two days");
  ASSERT_TRUE(paths.ok()) << paths.error().message;
  ASSERT_EQ(paths->size(), 2u);
  for (const std::string& p : *paths) {
    std::ifstream in(p);
    std::stringstream buf;
    buf << in.rdbuf();
    EXPECT_EQ(well_formed(buf.str()), "") << p;
    EXPECT_NE(buf.str().find("two days: "), std::string::npos) << p;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace allot::sim::svg_chart_test
