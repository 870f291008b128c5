// Replay charts as SVG text. Layout is fixed arithmetic (no text measuring), so every label is placed where
// there is room for it by construction: tick labels left of or below their panel, titles above.
#include "sim/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace allot::sim {
namespace {

constexpr const char* kBlue = "#4c78a8";
constexpr const char* kBlueLine = "#2b5580";
constexpr const char* kOrange = "#e45756";
constexpr const char* kBorrow = "#f58518";

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  std::string s = b;
  return s == "-0.0" || s == "-0" ? s.substr(1) : s;
}
std::string num(double x) { return fmt("%.1f", x); }

// An axis from 0 to `max` with ticks every `step`.
struct Axis {
  double max = 1;
  double step = 1;
};

// Two to `ticks` steps of 1, 2, 2.5 or 5 times a power of ten, the one whose top (a whole number of steps at
// or above max_value) is lowest, so the data fills the panel; on a tie, the finer step. `whole`: counts of
// GPUs or jobs, whose ticks must be whole numbers.
Axis nice_axis(double max_value, int ticks, bool whole = false) {
  if (!(max_value > 0)) max_value = 1;
  double mag = std::pow(10.0, std::floor(std::log10(max_value / ticks)));
  if (whole) mag = std::max(mag, 1.0);
  for (int min_steps : {2, 1}) {  // one step only when no finer step fits (e.g. a whole-number axis up to 1)
    Axis best{0, 0};
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 25.0, 50.0}) {
      const double step = m * mag, top = std::ceil(max_value / step - 1e-9) * step, steps = std::round(top / step);
      if (steps > ticks || steps < min_steps || (whole && std::fabs(step - std::round(step)) > 1e-9)) continue;
      if (best.step == 0 || top < best.max - 1e-9) best = {top, step};
    }
    if (best.step > 0) return best;
  }
  return {max_value, max_value};
}

// Hours fall on clock-friendly steps (6 h, a day, a week); the axis ends where the data ends.
Axis hours_axis(double span_h) {
  if (!(span_h > 0)) span_h = 1;
  for (double step :
       {0.25, 0.5, 1.0, 2.0, 3.0, 6.0, 12.0, 24.0, 48.0, 72.0, 168.0, 336.0, 720.0, 1440.0, 2160.0, 4320.0, 8760.0}) {
    if (span_h / step <= 10) {
      if (span_h / step >= 2) return {span_h, step};
      break;  // shorter than half an hour: at least two gridlines, in fractions of an hour
    }
  }
  return {span_h, nice_axis(span_h, 8).step};
}

// As many decimals as the step needs (0.25 -> 2, 2.5 -> 1, 24 -> 0), at most 3.
std::string tick_label(double v, double step) {
  int decimals = 0;
  while (decimals < 3 && std::fabs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) >
                             1e-6 * std::pow(10.0, decimals))
    ++decimals;
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// A panel's rectangle in pixels and the data ranges it shows.
struct Frame {
  double x, y, w, h;
  Axis t, v;
  double px(double t_h) const { return x + std::clamp(t_h / t.max, 0.0, 1.0) * w; }
  double py(double val) const { return y + h - std::clamp(val / v.max, 0.0, 1.0) * h; }
};

std::string text(double x, double y, std::string_view s, const char* attrs) {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" " + attrs + ">" + svg_escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* attrs) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " + attrs +
         "/>\n";
}

// Gridlines, tick labels, the y-axis title and the frame of one panel.
std::string panel_axes(const Frame& f, const std::string& y_title, bool x_labels) {
  std::string out = "<rect x=\"" + num(f.x) + "\" y=\"" + num(f.y) + "\" width=\"" + num(f.w) + "\" height=\"" +
                    num(f.h) + "\" fill=\"#ffffff\"/>\n";
  for (double v = 0; v <= f.v.max + 1e-9; v += f.v.step) {
    out += line(f.x, f.py(v), f.x + f.w, f.py(v), "stroke=\"#e3e3e3\"");
    out += text(f.x - 6, f.py(v) + 4, tick_label(v, f.v.step), "text-anchor=\"end\" font-size=\"11\" fill=\"#666666\"");
  }
  for (double t = 0; t <= f.t.max + 1e-9; t += f.t.step) {
    out += line(f.px(t), f.y, f.px(t), f.y + f.h, "stroke=\"#e3e3e3\"");
    if (x_labels)
      out += text(f.px(t), f.y + f.h + 15, tick_label(t, f.t.step),
                  "text-anchor=\"middle\" font-size=\"11\" fill=\"#666666\"");
  }
  out += "<path d=\"M" + num(f.x) + " " + num(f.y) + " V" + num(f.y + f.h) + " H" + num(f.x + f.w) +
         "\" fill=\"none\" stroke=\"#333333\"/>\n";
  if (!y_title.empty()) {
    const std::string cx = num(f.x - 44), cy = num(f.y + f.h / 2);
    out += "<text x=\"" + cx + "\" y=\"" + cy + "\" transform=\"rotate(-90 " + cx + " " + cy +
           ")\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333333\">" + svg_escape(y_title) + "</text>\n";
  }
  return out;
}

// "M x y H .. V .. H .." through every step; `close` turns it into the area down to v = 0.
std::string step_path(const std::vector<StepPoint>& pts, double t_end, const Frame& f, bool close) {
  if (pts.empty()) return "";
  std::string d = "M" + num(f.px(pts[0].t)) + " " + num(f.py(pts[0].v));
  for (size_t i = 1; i < pts.size(); ++i) d += " H" + num(f.px(pts[i].t)) + " V" + num(f.py(pts[i].v));
  d += " H" + num(f.px(t_end));
  if (close) d += " V" + num(f.py(0)) + " H" + num(f.px(pts[0].t)) + " Z";
  return d;
}

// Time-weighted mean of a step series over [t0, t_end).
double step_mean(const std::vector<StepPoint>& pts, double t_end) {
  if (pts.empty() || !(t_end > pts[0].t)) return pts.empty() ? 0 : pts.back().v;
  double area = 0;
  for (size_t i = 0; i < pts.size(); ++i) area += pts[i].v * ((i + 1 < pts.size() ? pts[i + 1].t : t_end) - pts[i].t);
  return area / (t_end - pts[0].t);
}

std::string svg_open(int width, int height) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " +
         h + "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<rect width=\"" + w + "\" height=\"" + h +
         "\" fill=\"#fafafa\"/>\n";
}

std::string header(const std::string& title, const std::string& subtitle) {
  return text(20, 28, title, "font-size=\"18\" font-weight=\"bold\" fill=\"#333333\"") +
         text(20, 48, subtitle, "font-size=\"12\" fill=\"#666666\"");
}

// One legend entry at (x, y); `swatch` is the SVG of a 14 x 10 mark whose top left corner is (x, y - 9).
std::string legend_item(double x, double y, const std::string& swatch, std::string_view label) {
  return swatch + text(x + 20, y, label, "font-size=\"12\" fill=\"#333333\"");
}
std::string box_swatch(double x, double y, const char* fill, const char* opacity) {
  return "<rect x=\"" + num(x) + "\" y=\"" + num(y - 9) + "\" width=\"14\" height=\"10\" fill=\"" + fill +
         "\" fill-opacity=\"" + opacity + "\"/>\n";
}

std::string bin_note(size_t raw, size_t drawn, double bin_h) {
  if (raw <= drawn) return "";
  return bin_h >= 2 ? " · averaged over " + fmt("%.0f", bin_h) + "-hour bins"
                    : " · averaged over " + fmt("%.0f", std::max(1.0, bin_h * 60)) + "-minute bins";
}

// The per-sample series in hours, in time order; `value` maps a sample to the plotted value.
template <typename F>
std::vector<StepPoint> series(const std::vector<Sample>& samples, F value) {
  std::vector<StepPoint> pts;
  pts.reserve(samples.size());
  for (const Sample& s : samples) pts.push_back({static_cast<double>(s.t) / 3600.0, value(s)});
  std::stable_sort(pts.begin(), pts.end(), [](const StepPoint& a, const StepPoint& b) { return a.t < b.t; });
  return pts;
}

// The time axis title; with day-sized gridlines it says so, since "336" reads better as "two weeks".
std::string time_title(const Axis& t) {
  std::string s = "time since first submission (hours)";
  if (t.step >= 24) {
    const double days = t.step / 24;
    s += days == 7 ? "; a gridline every week"
                   : "; a gridline every " + fmt("%.0f", days) + (days == 1 ? " day" : " days");
  }
  return s;
}

std::string no_data_svg(const std::string& title) {
  return svg_open(640, 120) + header(title, "no samples were recorded") + "</svg>\n";
}

}  // namespace

std::string svg_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<StepPoint> downsample_steps(const std::vector<StepPoint>& pts, double t_end, size_t max_points) {
  const size_t bins = std::max<size_t>(1, max_points / 2);
  if (pts.size() <= bins || !(t_end > pts.front().t)) return pts;
  const double t0 = pts.front().t, width = (t_end - t0) / static_cast<double>(bins);
  std::vector<double> area(bins, 0);
  // Each step adds value x overlap to every bin it covers; a step covers few bins unless the series is sparse.
  for (size_t i = 0; i < pts.size(); ++i) {
    const double a = pts[i].t, b = std::min(t_end, i + 1 < pts.size() ? pts[i + 1].t : t_end);
    if (!(b > a)) continue;
    auto k = static_cast<size_t>(std::min<double>(static_cast<double>(bins - 1), std::floor((a - t0) / width)));
    for (; k < bins; ++k) {
      const double lo = t0 + width * static_cast<double>(k), hi = lo + width;
      if (lo >= b) break;
      area[k] += pts[i].v * (std::min(b, hi) - std::max(a, lo));
    }
  }
  std::vector<StepPoint> out(bins);
  for (size_t k = 0; k < bins; ++k) out[k] = {t0 + width * static_cast<double>(k), area[k] / width};
  return out;
}

std::string queue_utilization_svg(const std::vector<Sample>& samples, int64_t end_t, int64_t total_gpus,
                                  const ChartOptions& options) {
  const std::string title = options.title.empty() ? "Queue length and GPU utilisation" : options.title;
  if (samples.empty()) return no_data_svg(title);
  const double gpus = static_cast<double>(std::max<int64_t>(1, total_gpus));
  auto util = series(samples, [&](const Sample& s) { return 100.0 * static_cast<double>(s.busy_gpus) / gpus; });
  auto queue = series(samples, [](const Sample& s) { return static_cast<double>(s.queued_jobs); });
  const double t_end = std::max(static_cast<double>(end_t) / 3600.0, util.back().t);
  const size_t raw = util.size();
  util = downsample_steps(util, t_end, options.max_points);
  queue = downsample_steps(queue, t_end, options.max_points);
  double max_queue = 0;
  for (const StepPoint& p : queue) max_queue = std::max(max_queue, p.v);

  const int W = options.width, H = 600;
  const double left = 80, right = 24, pw = W - left - right;
  const Axis t_axis = hours_axis(t_end);
  const Frame top{left, 96, pw, 200, t_axis, {100, 20}};
  const Frame bottom{left, 336, pw, 200, t_axis, nice_axis(std::max(1.0, max_queue), 4, true)};
  const double bin_h = (t_end - util.front().t) / static_cast<double>(util.size());

  std::string out = svg_open(W, H);
  out += header(title, std::to_string(total_gpus) + " GPUs · mean utilisation " + fmt("%.1f", step_mean(util, t_end)) +
                           "% · mean queue " + fmt("%.1f", step_mean(queue, t_end)) + " jobs" +
                           bin_note(raw, util.size(), bin_h));
  out += legend_item(20, 74, box_swatch(20, 74, kBlue, "0.6"), "GPU utilisation (busy GPUs / all GPUs)");
  out += legend_item(300, 74, box_swatch(300, 74, kOrange, "0.6"), "queued jobs (waiting to start)");

  out += "<g id=\"utilization\">\n" + panel_axes(top, "utilisation (%)", true);
  out += "<path d=\"" + step_path(util, t_end, top, true) + "\" fill=\"" + kBlue + "\" fill-opacity=\"0.35\"/>\n";
  out += "<path d=\"" + step_path(util, t_end, top, false) + "\" fill=\"none\" stroke=\"" + kBlueLine +
         "\" stroke-width=\"1.2\"/>\n</g>\n";
  out += "<g id=\"queue\">\n" + panel_axes(bottom, "queued jobs", true);
  out += "<path d=\"" + step_path(queue, t_end, bottom, true) + "\" fill=\"" + kOrange + "\" fill-opacity=\"0.3\"/>\n";
  out += "<path d=\"" + step_path(queue, t_end, bottom, false) + "\" fill=\"none\" stroke=\"" + kOrange +
         "\" stroke-width=\"1.2\"/>\n</g>\n";
  out += text(left + pw / 2, H - 22, time_title(t_axis), "text-anchor=\"middle\" font-size=\"12\" fill=\"#333333\"");
  return out + "</svg>\n";
}

std::string team_usage_svg(const std::vector<Sample>& samples, int64_t end_t, const ClusterInfo& cluster,
                           const ChartOptions& options) {
  const std::string title = options.title.empty() ? "GPU usage per team against quota" : options.title;
  if (samples.empty() || cluster.teams.empty()) return no_data_svg(title);
  const size_t n_teams = cluster.teams.size();
  auto busy = [](const Sample& s, size_t i) {
    return i < s.team_busy_gpus.size() ? static_cast<double>(s.team_busy_gpus[i]) : 0.0;
  };
  int64_t last_t = end_t;
  for (const Sample& s : samples) last_t = std::max(last_t, s.t);
  const double t_end = static_cast<double>(last_t) / 3600.0;

  // Panels: every team when there are at most 10; otherwise the 9 biggest users and the rest summed.
  struct Panel {
    std::string name;
    std::vector<size_t> members;
    double quota = 0;
  };
  std::vector<size_t> order(n_teams);
  std::iota(order.begin(), order.end(), 0);
  if (n_teams > 10) {
    std::vector<double> used(n_teams);
    for (size_t i = 0; i < n_teams; ++i)
      used[i] = step_mean(series(samples, [&](const Sample& s) { return busy(s, i); }), t_end);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return used[a] > used[b]; });
  }
  std::vector<Panel> panels;
  for (size_t k = 0; k < n_teams; ++k) {
    const size_t i = order[k];
    if (n_teams > 10 && k >= 9) {
      if (k == 9) panels.push_back({"other " + std::to_string(n_teams - 9) + " teams", {}, 0});
    } else {
      panels.push_back({cluster.teams[i].name, {}, 0});
    }
    panels.back().members.push_back(i);
    panels.back().quota += static_cast<double>(cluster.teams[i].entitled_gpus);
  }

  const int W = options.width, cols = panels.size() <= 3 ? 1 : 2;
  const int rows = static_cast<int>((panels.size() + cols - 1) / cols);
  const double cell_w = (W - 20.0) / cols, ph = cols == 1 ? 150 : 110, cell_h = ph + 52, top = 92;
  const int H = static_cast<int>(top + rows * cell_h + 30);
  const Axis t_axis = hours_axis(t_end);

  std::string body;
  size_t raw = 0, drawn = 0;
  double bin_h = 0;
  for (size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    auto pts = series(samples, [&](const Sample& s) {
      double sum = 0;
      for (size_t i : panel.members) sum += busy(s, i);
      return sum;
    });
    // The stated peak is the true one; the y scale fits what is drawn (bin means when downsampled).
    double peak = 0, drawn_top = panel.quota;
    for (const StepPoint& s : pts) peak = std::max(peak, s.v);
    raw = pts.size();
    pts = downsample_steps(pts, t_end, options.max_points);
    drawn = pts.size();
    bin_h = (t_end - pts.front().t) / static_cast<double>(pts.size());
    for (const StepPoint& s : pts) drawn_top = std::max(drawn_top, s.v);
    const double cx = 20 + (p % cols) * cell_w, cy = top + static_cast<double>(p / cols) * cell_h;
    const Frame f{cx + 60, cy + 24, cell_w - 80, ph, t_axis, nice_axis(std::max(1.0, drawn_top * 1.05), 4, true)};
    const std::string id = "team-" + std::to_string(p), qy = num(f.py(panel.quota));
    body += "<g class=\"team\" data-team=\"" + svg_escape(panel.name) + "\">\n";
    body += text(f.x, cy + 14, panel.name, "font-size=\"13\" font-weight=\"bold\" fill=\"#333333\"");
    body += text(f.x + f.w, cy + 14,
                 "quota " + fmt("%.0f", panel.quota) + " GPUs · mean use " + fmt("%.1f", step_mean(pts, t_end)) +
                     " · peak " + fmt("%.0f", peak),
                 "text-anchor=\"end\" font-size=\"11\" fill=\"#666666\"");
    body += panel_axes(f, "", true);
    // The area is drawn twice, clipped below and above the quota line, so borrowing stands out.
    body += "<clipPath id=\"" + id + "-in\"><rect x=\"" + num(f.x) + "\" y=\"" + qy + "\" width=\"" + num(f.w) +
            "\" height=\"" + num(f.y + f.h - f.py(panel.quota)) + "\"/></clipPath>\n";
    body += "<clipPath id=\"" + id + "-over\"><rect x=\"" + num(f.x) + "\" y=\"" + num(f.y) + "\" width=\"" + num(f.w) +
            "\" height=\"" + num(f.py(panel.quota) - f.y) + "\"/></clipPath>\n";
    const std::string area = step_path(pts, t_end, f, true);
    body +=
        "<path d=\"" + area + "\" fill=\"" + kBlue + "\" fill-opacity=\"0.45\" clip-path=\"url(#" + id + "-in)\"/>\n";
    body += "<path d=\"" + area + "\" fill=\"" + kBorrow + "\" fill-opacity=\"0.7\" clip-path=\"url(#" + id +
            "-over)\"/>\n";
    body += "<path d=\"" + step_path(pts, t_end, f, false) + "\" fill=\"none\" stroke=\"" + kBlueLine +
            "\" stroke-width=\"1\"/>\n";
    body += line(f.x, f.py(panel.quota), f.x + f.w, f.py(panel.quota),
                 "stroke=\"#333333\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
    body += "</g>\n";
  }

  std::string out = svg_open(W, H);
  out += header(title, std::to_string(n_teams) + " teams · " + std::to_string(cluster.total_gpus) +
                           " GPUs · busy GPUs per team; y scales differ per panel" + bin_note(raw, drawn, bin_h));
  out += legend_item(20, 74, box_swatch(20, 74, kBlue, "0.45"), "busy GPUs within quota");
  out += legend_item(210, 74, box_swatch(210, 74, kBorrow, "0.7"), "busy GPUs above quota (borrowed)");
  out +=
      legend_item(460, 74, line(460, 70, 474, 70, "stroke=\"#333333\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\""),
                  "quota (nominal GPUs)");
  out += body;
  out += text(W / 2.0, H - 10, time_title(t_axis), "text-anchor=\"middle\" font-size=\"12\" fill=\"#333333\"");
  return out + "</svg>\n";
}

Result<std::vector<std::string>> write_replay_charts(const std::string& dir, const std::vector<Sample>& samples,
                                                     int64_t end_t, const ClusterInfo& cluster,
                                                     const std::string& title) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error::internal("cannot create chart directory '" + dir + "': " + ec.message());
  const std::string prefix = title.empty() ? "" : title + ": ";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"queue_utilization.svg", queue_utilization_svg(samples, end_t, cluster.total_gpus,
                                                      {.title = prefix + "queue length and GPU utilisation"})},
      {"team_usage.svg",
       team_usage_svg(samples, end_t, cluster, {.title = prefix + "GPU usage per team against quota"})},
  };
  std::vector<std::string> paths;
  for (const auto& [name, svg] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << svg;
    if (!out.flush()) return Error::internal("cannot write chart '" + path + "'");
    paths.push_back(path);
  }
  return paths;
}

}  // namespace allot::sim
