#pragma once
// Charts of a trace replay as hand-written SVG (no library, so the simulator stays easy to build anywhere):
//   queue_utilization_svg  two panels on one time axis: GPU utilisation (%) above, queued jobs below.
//   team_usage_svg         one small panel per team: busy GPUs as a stepped area, the part above the team's
//                          quota (borrowing) in a second colour, the quota as a dashed line. Up to 10 panels;
//                          with more teams the 9 that used the most GPU-time are drawn and the rest are summed
//                          into one "other teams" panel whose quota is the sum of theirs.
// The time axis is in hours since the trace's first submission. Series longer than `max_points` vertices are
// averaged over equal time bins (time-weighted, so areas and means stay right) and the chart says so.
// Output is a pure function of the inputs: the same replay gives byte-identical files.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "sim/replay_metrics.h"

namespace allot::sim {

struct ChartOptions {
  std::string title;         // empty: a default title per chart
  size_t max_points = 2000;  // per series, counting both vertices of every step
  int width = 960;           // pixels; heights follow from the layout
};

// A value that holds from `t` until the next point's `t` (the last one until the series' end).
struct StepPoint {
  double t = 0;
  double v = 0;
};

// At most max(max_points / 2, 1) steps covering [points.front().t, t_end): the input itself when it is short
// enough, otherwise the time-weighted mean over equal bins. REQUIRES: points sorted by t.
std::vector<StepPoint> downsample_steps(const std::vector<StepPoint>& points, double t_end, size_t max_points);

// `end_t`: when the last sample stops holding (e.g. first submission + makespan); earlier values are ignored.
std::string queue_utilization_svg(const std::vector<Sample>& samples, int64_t end_t, int64_t total_gpus,
                                  const ChartOptions& options = {});
std::string team_usage_svg(const std::vector<Sample>& samples, int64_t end_t, const ClusterInfo& cluster,
                           const ChartOptions& options = {});

// Writes DIR/queue_utilization.svg and DIR/team_usage.svg (creating DIR) and returns their paths. `title`
// prefixes both chart titles, e.g. the trace's file name.
Result<std::vector<std::string>> write_replay_charts(const std::string& dir, const std::vector<Sample>& samples,
                                                     int64_t end_t, const ClusterInfo& cluster,
                                                     const std::string& title);

// Text for SVG content and attribute values: & < > " ' as entities.
std::string svg_escape(std::string_view text);

}  // namespace allot::sim
