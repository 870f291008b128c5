// `allot usage` output (client/usage_render.h): the table in hours with one decimal and the grouped columns only,
// CSV with a header line and quoted fields, from a GET /v1/usage answer.
#include <gtest/gtest.h>

#include "client/usage_render.h"

namespace allot::client::client_usage_render_test {
namespace {

using nlohmann::json;

json answer() {
  return json::parse(R"J({"since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00Z", "by": ["team", "user"],
    "rows": [{"team": "a", "user": "alice", "used_s": 5400, "borrowed_s": 0, "lent_s": 0, "lost_preemption_s": 360,
              "lost_failure_s": 0, "queued_s": 90, "admitted": 2},
             {"team": "a", "user": "(team)", "used_s": 0, "borrowed_s": 1800, "lent_s": 0, "lost_preemption_s": 0,
              "lost_failure_s": 0, "queued_s": 0, "admitted": 0},
             {"team": "b,c", "user": "bob", "used_s": 36000, "borrowed_s": 0, "lent_s": 1800, "lost_preemption_s": 0,
              "lost_failure_s": 7200, "queued_s": 0, "admitted": 1}],
    "total": {"used_s": 41400, "borrowed_s": 1800, "lent_s": 1800, "lost_preemption_s": 360, "lost_failure_s": 7200,
              "queued_s": 90, "admitted": 3}})J");
}

TEST(UsageRender, TableInHoursWithOneDecimal) {
  const std::string t = usage_table(answer());
  EXPECT_EQ(t,
            "accelerator-hours from 2026-11-01T00:00:00Z to 2026-11-02T00:00:00Z\n"
            "TEAM  USER    USED  BORROWED  LENT  LOST-PREEMPTION  LOST-FAILURE  QUEUED  ADMITTED\n"
            "a     alice   1.5   0.0       0.0   0.1              0.0           0.0     2\n"
            "a     (team)  0.0   0.5       0.0   0.0              0.0           0.0     0\n"
            "b,c   bob     10.0  0.0       0.5   0.0              2.0           0.0     1\n"
            "total: used 11.5 h, borrowed 0.5 h, lent 0.5 h, lost 0.1 h to preemption and 2.0 h to failures; 3 admissions "
            "waited 0.0 h\n");
}

TEST(UsageRender, CsvHasAHeaderAndQuotesCommas) {
  const std::string c = usage_csv(answer());
  EXPECT_EQ(c,
            "team,user,used_hours,borrowed_hours,lent_hours,lost_preemption_hours,lost_failure_hours,queued_hours,admitted\n"
            "a,alice,1.500,0.000,0.000,0.100,0.000,0.025,2\n"
            "a,(team),0.000,0.500,0.000,0.000,0.000,0.000,0\n"
            "\"b,c\",bob,10.000,0.000,0.500,0.000,2.000,0.000,1\n");
}

TEST(UsageRender, NoRowsSaysSo) {
  json empty = answer();
  empty["rows"] = json::array();
  EXPECT_EQ(usage_table(empty), "no usage from 2026-11-01T00:00:00Z to 2026-11-02T00:00:00Z\n");
}

}  // namespace
}  // namespace allot::client::client_usage_render_test
