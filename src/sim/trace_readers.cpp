// Trace readers: one small table per format names its columns; one row parser serves all formats, so the
// formats differ only in which header names they map to which field.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "core/ascii_text.h"
#include "sim/trace.h"

namespace allot::sim {
namespace {

// Values beyond these are typos or corrupt cells, not jobs; rejecting them also keeps submit + duration and
// gpus x duration far from int64 overflow.
constexpr int64_t kMaxSeconds = 1'000'000'000'000;
constexpr int64_t kMaxGpus = 1'000'000;

struct Columns {
  TraceFormat format;
  const char* id;
  const char* submit;
  const char* duration;
  const char* gpus;
  const char* team;  // nullptr: the format has no team column; otherwise optional in the header
};

constexpr Columns kFormats[] = {
    {TraceFormat::kAllot, "id", "submit_s", "duration_s", "gpus", "team"},
    {TraceFormat::kPhilly, "job_id", "submit_time", "real_duration", "num_gpu", nullptr},
    {TraceFormat::kItp, "job_id", "submission_time", "duration", "num_gpu", nullptr},
};

const Columns& columns_of(TraceFormat f) {
  for (const Columns& c : kFormats)
    if (c.format == f) return c;
  return kFormats[0];  // unreachable for kAuto: callers resolve it first
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    cells.push_back(trim(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

std::string expected_header(const Columns& c) {
  std::string s = std::string(c.id) + "," + c.submit + "," + c.duration + "," + c.gpus;
  if (c.team) s += std::string("[,") + c.team + "]";
  return s;
}

std::string all_expected_headers() {
  std::string s;
  for (const Columns& c : kFormats) {
    if (!s.empty()) s += "; ";
    s += std::string(trace_format_name(c.format)) + " (" + expected_header(c) + ")";
  }
  return s;
}

// Header cell name -> index; names compared case-insensitively.
using HeaderIndex = std::unordered_map<std::string, size_t>;

HeaderIndex index_header(std::string_view header_line) {
  HeaderIndex idx;
  auto cells = split_cells(header_line);
  for (size_t i = 0; i < cells.size(); ++i) idx.emplace(ascii_lower(cells[i]), i);
  return idx;
}

std::vector<std::string> missing_columns(const HeaderIndex& idx, const Columns& c) {
  std::vector<std::string> missing;
  for (const char* name : {c.id, c.submit, c.duration, c.gpus})
    if (!idx.count(name)) missing.emplace_back(name);
  return missing;
}

// Seconds: a whole number, or a decimal rounded to the nearest second (some trace exports write "123.0").
bool parse_seconds(std::string_view cell, const char* column, int64_t& out, std::string& why) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || p != cell.data() + cell.size()) {
    double d = 0;
    auto [pd, ecd] = std::from_chars(cell.data(), cell.data() + cell.size(), d);
    if (cell.empty() || ecd != std::errc() || pd != cell.data() + cell.size() || !std::isfinite(d) ||
        std::fabs(d) > static_cast<double>(kMaxSeconds)) {
      why = std::string(column) + ": '" + std::string(cell) + "' is not a number of seconds";
      return false;
    }
    v = std::llround(d);
  }
  if (v < 0) {
    why = std::string(column) + ": '" + std::string(cell) + "' is negative";
    return false;
  }
  if (v > kMaxSeconds) {
    why = std::string(column) + ": '" + std::string(cell) + "' is beyond 10^12 seconds";
    return false;
  }
  out = v;
  return true;
}

bool parse_gpus(std::string_view cell, const char* column, int& out, std::string& why) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (cell.empty() || ec != std::errc() || p != cell.data() + cell.size()) {
    why = std::string(column) + ": '" + std::string(cell) + "' is not a whole number";
    return false;
  }
  if (v < 0 || v > kMaxGpus) {
    why = std::string(column) + ": '" + std::string(cell) + "' is out of range 0.." + std::to_string(kMaxGpus);
    return false;
  }
  out = static_cast<int>(v);
  return true;
}

// Splits text into lines, keeping 1-based line numbers; yields only lines that carry data.
template <typename F>
void for_each_data_line(std::string_view text, F&& f) {
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    ++line_no;
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 BOM
    std::string_view t = trim(line);
    if (!t.empty() && t.front() != '#' && !f(line_no, t)) return;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
}

}  // namespace

std::string TraceIssues::summary() const {
  if (skipped() == 0) return "";
  std::ostringstream out;
  out << "skipped " << skipped() << (skipped() == 1 ? " row" : " rows") << ":";
  const char* sep = " ";
  if (invalid_rows > 0) {
    out << sep << invalid_rows << " invalid (first at line " << first_invalid_line << ": " << first_invalid_reason
        << ")";
    sep = ", ";
  }
  if (zero_gpu_rows > 0) {
    out << sep << zero_gpu_rows << " with zero GPUs";
    sep = ", ";
  }
  if (zero_duration_rows > 0) out << sep << zero_duration_rows << " with zero duration";
  if (zero_gpu_rows + zero_duration_rows > 0) out << " (first at line " << first_zero_line << ")";
  return out.str();
}

Result<TraceFormat> parse_trace_format(std::string_view name) {
  std::string n = ascii_lower(name);
  if (n == "auto") return TraceFormat::kAuto;
  if (n == "itp") return TraceFormat::kItp;
  if (n == "philly") return TraceFormat::kPhilly;
  if (n == "allot") return TraceFormat::kAllot;
  return Error::invalid("unknown trace format '" + std::string(name) + "'; valid: itp, philly, allot, auto");
}

const char* trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kItp: return "itp";
    case TraceFormat::kPhilly: return "philly";
    case TraceFormat::kAllot: return "allot";
  }
  return "?";
}

Result<TraceFormat> detect_trace_format(std::string_view header_line) {
  HeaderIndex idx = index_header(trim(header_line));
  for (const Columns& c : kFormats)
    if (missing_columns(idx, c).empty()) return c.format;
  return Error::invalid("header '" + std::string(trim(header_line)) +
                        "' matches no trace format; expected one of: " + all_expected_headers());
}

Result<Trace> parse_trace(std::string_view text, TraceFormat format, std::string_view origin) {
  const std::string where(origin);
  Trace trace;
  std::optional<Error> error;
  bool have_header = false;
  Columns cols{};
  size_t n_cells = 0, i_id = 0, i_submit = 0, i_duration = 0, i_gpus = 0;
  std::optional<size_t> i_team;
  std::unordered_map<std::string, int> first_line_of_id;

  auto invalid = [&](int line_no, std::string why) {
    if (trace.issues.invalid_rows++ == 0) {
      trace.issues.first_invalid_line = line_no;
      trace.issues.first_invalid_reason = std::move(why);
    }
  };

  for_each_data_line(text, [&](int line_no, std::string_view line) -> bool {
    if (!have_header) {
      have_header = true;
      TraceFormat f = format;
      if (f == TraceFormat::kAuto) {
        auto detected = detect_trace_format(line);
        if (!detected) {
          error = Error::invalid(where + ":" + std::to_string(line_no) + ": " + detected.error().message);
          return false;
        }
        f = *detected;
      }
      cols = columns_of(f);
      HeaderIndex idx = index_header(line);
      auto missing = missing_columns(idx, cols);
      if (!missing.empty()) {
        std::string names;
        for (const auto& m : missing) names += (names.empty() ? "'" : ", '") + m + "'";
        error = Error::invalid(where + ":" + std::to_string(line_no) + ": header lacks " + names + " for format " +
                               trace_format_name(f) + " (expected " + expected_header(cols) + ")");
        return false;
      }
      n_cells = split_cells(line).size();
      i_id = idx[cols.id], i_submit = idx[cols.submit], i_duration = idx[cols.duration], i_gpus = idx[cols.gpus];
      if (cols.team && idx.count(cols.team)) i_team = idx[cols.team];
      trace.format = trace_format_name(f);
      return true;
    }
    auto cells = split_cells(line);
    if (cells.size() != n_cells) {
      invalid(line_no, "expected " + std::to_string(n_cells) + " cells, found " + std::to_string(cells.size()));
      return true;
    }
    TraceJob job;
    std::string why;
    if (!parse_seconds(cells[i_submit], cols.submit, job.submit_s, why) ||
        !parse_seconds(cells[i_duration], cols.duration, job.duration_s, why) ||
        !parse_gpus(cells[i_gpus], cols.gpus, job.gpus, why)) {
      invalid(line_no, std::move(why));
      return true;
    }
    job.id = std::string(cells[i_id]);
    if (job.id.empty()) {
      invalid(line_no, std::string(cols.id) + ": empty");
      return true;
    }
    // allot's own format writes the id first, where a leading '#' makes the line a comment: such a job
    // would vanish from a saved trace (found by fuzz/trace_fuzz.cpp).
    if (job.id.front() == '#') {
      invalid(line_no, std::string(cols.id) + ": '" + job.id + "' starts with '#', which marks a comment");
      return true;
    }
    auto [it, fresh] = first_line_of_id.emplace(job.id, line_no);
    if (!fresh) {
      invalid(line_no, std::string(cols.id) + ": '" + job.id + "' repeats line " + std::to_string(it->second));
      return true;
    }
    if (job.gpus == 0 || job.duration_s == 0) {
      (job.gpus == 0 ? trace.issues.zero_gpu_rows : trace.issues.zero_duration_rows)++;
      if (trace.issues.first_zero_line == 0) trace.issues.first_zero_line = line_no;
      return true;
    }
    if (i_team) job.team = std::string(cells[*i_team]);
    trace.jobs.push_back(std::move(job));
    return true;
  });

  if (error) return *error;
  if (!have_header) return Error::invalid(where + ": no header line (the trace is empty)");

  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  if (!trace.jobs.empty()) {
    trace.origin_s = trace.jobs.front().submit_s;
    for (TraceJob& j : trace.jobs) j.submit_s -= trace.origin_s;
  }
  return trace;
}

Result<Trace> load_trace_file(const std::string& path, TraceFormat format) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Error::not_found("trace file '" + path + "' does not exist");
  if (std::filesystem::is_directory(path, ec))
    return Error::invalid("trace file '" + path + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::internal("trace file '" + path + "' cannot be opened for reading");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Error::internal("trace file '" + path + "': read error");
  return parse_trace(buf.str(), format, path);
}

std::string to_allot_csv(const Trace& trace) {
  std::string out = "id,submit_s,duration_s,gpus,team\n";
  for (const TraceJob& j : trace.jobs) {
    out += j.id + "," + std::to_string(j.submit_s) + "," + std::to_string(j.duration_s) + "," + std::to_string(j.gpus) +
           "," + j.team + "\n";
  }
  return out;
}

double trace_gpu_hours(const Trace& trace) {
  // One job may ask for 10^18 GPU-seconds (10^12 s x 10^6 GPUs), so ten of them overflow int64.
  __int128 gpu_s = 0;
  for (const TraceJob& j : trace.jobs) gpu_s += static_cast<__int128>(j.duration_s) * j.gpus;
  return static_cast<double>(gpu_s) / 3600.0;
}

}  // namespace allot::sim
