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

#include "core/model/ascii_text.h"
#include "sim/trace.h"

namespace allot::sim {
namespace {

// Values beyond these are typos or corrupt cells, not jobs; rejecting them also keeps submit + duration and
// gpus x duration far from int64 overflow.
constexpr int64_t kMaxSeconds = 1'000'000'000'000;
constexpr int64_t kMaxGpus = 1'000'000;

// How a format writes its cells: plain numbers (seconds, GPU counts), or as Slurm's sacct prints them.
enum class Cells { kNumbers, kSlurm };

struct Columns {
  TraceFormat format;
  char sep;  // between cells
  Cells cells;
  const char* id;
  const char* submit;
  const char* duration;
  const char* gpus;
  const char* team;        // nullptr: the format has no team column; otherwise optional in the header
  const char* time_limit;  // nullptr: the format has no limit column; otherwise optional in the header
};

constexpr Columns kFormats[] = {
    {TraceFormat::kAllot, ',', Cells::kNumbers, "id", "submit_s", "duration_s", "gpus", "team", "time_limit_s"},
    {TraceFormat::kPhilly, ',', Cells::kNumbers, "job_id", "submit_time", "real_duration", "num_gpu", nullptr, nullptr},
    {TraceFormat::kItp, ',', Cells::kNumbers, "job_id", "submission_time", "duration", "num_gpu", nullptr, nullptr},
    {TraceFormat::kSlurm, '|', Cells::kSlurm, "JobID", "Submit", "Elapsed", "AllocTRES", "Account", "Timelimit"},
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

std::vector<std::string_view> split_cells(std::string_view line, char sep) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    size_t at = line.find(sep, start);
    cells.push_back(trim(line.substr(start, at == std::string_view::npos ? line.npos : at - start)));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return cells;
}

std::string expected_header(const Columns& c) {
  const std::string sep(1, c.sep);
  std::string s = std::string(c.id) + sep + c.submit + sep + c.duration + sep + c.gpus;
  for (const char* optional : {c.team, c.time_limit})
    if (optional) s += "[" + sep + optional + "]";
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

// Header cell name (lower case) -> index; names compared case-insensitively.
struct HeaderIndex {
  std::unordered_map<std::string, size_t> at;
  bool has(const char* name) const { return at.count(ascii_lower(name)) > 0; }
  size_t operator[](const char* name) const { return at.at(ascii_lower(name)); }
};

HeaderIndex index_header(std::string_view header_line, char sep) {
  HeaderIndex idx;
  auto cells = split_cells(header_line, sep);
  for (size_t i = 0; i < cells.size(); ++i) idx.at.emplace(ascii_lower(cells[i]), i);
  return idx;
}

std::vector<std::string> missing_columns(const HeaderIndex& idx, const Columns& c) {
  std::vector<std::string> missing;
  for (const char* name : {c.id, c.submit, c.duration, c.gpus})
    if (!idx.has(name)) missing.emplace_back(name);
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

// A non-negative whole number of at most 12 digits (Slurm's fields), or nullopt.
std::optional<int64_t> whole(std::string_view s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = y / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// sacct's Submit: YYYY-MM-DDTHH:MM:SS, as seconds since 1970 (the offset of its time zone cancels out).
bool parse_slurm_time(std::string_view cell, const char* column, int64_t& out, std::string& why) {
  why = std::string(column) + ": '" + std::string(cell) + "' is not a time YYYY-MM-DDTHH:MM:SS from 1970 on";
  if (cell.size() != 19 || cell[4] != '-' || cell[7] != '-' || cell[10] != 'T' || cell[13] != ':' || cell[16] != ':')
    return false;
  auto y = whole(cell.substr(0, 4)), mo = whole(cell.substr(5, 2)), d = whole(cell.substr(8, 2));
  auto h = whole(cell.substr(11, 2)), mi = whole(cell.substr(14, 2)), se = whole(cell.substr(17, 2));
  if (!y || !mo || !d || !h || !mi || !se || *y < 1970 || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 ||
      *mi > 59 || *se > 60)
    return false;
  out = days_from_civil(*y, *mo, *d) * 86400 + *h * 3600 + *mi * 60 + *se;
  return true;
}

// Slurm's time format, as sacct prints Elapsed and Timelimit: [D-]HH:MM:SS, or what Slurm takes as input:
// M, M:S, H:M:S, D-H, D-H:M, D-H:M:S. Minutes and seconds after the first part are below 60.
bool parse_slurm_duration(std::string_view cell, const char* column, int64_t& out, std::string& why) {
  why = std::string(column) + ": '" + std::string(cell) + "' is not a Slurm time ([D-]HH:MM:SS, M, M:S, D-H or D-H:M)";
  std::optional<int64_t> days;
  std::string_view rest = cell;
  if (size_t dash = cell.find('-'); dash != std::string_view::npos) {
    days = whole(cell.substr(0, dash));
    if (!days) return false;
    rest = cell.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    auto v = whole(rest.substr(start, colon == std::string_view::npos ? rest.npos : colon - start));
    if (!v) return false;
    parts.push_back(*v);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return false;
  for (size_t i = 1; i < parts.size(); ++i)
    if (parts[i] > 59) return false;
  int64_t s = 0;
  if (days) {  // D-H, D-H:M, D-H:M:S
    if (parts[0] > 23) return false;
    s = *days * 86400 + parts[0] * 3600 + (parts.size() > 1 ? parts[1] * 60 : 0) + (parts.size() > 2 ? parts[2] : 0);
  } else if (parts.size() == 1) {  // M
    s = parts[0] * 60;
  } else if (parts.size() == 2) {  // M:S
    s = parts[0] * 60 + parts[1];
  } else {  // H:M:S
    s = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  if (s > kMaxSeconds) {
    why = std::string(column) + ": '" + std::string(cell) + "' is beyond 10^12 seconds";
    return false;
  }
  out = s;
  return true;
}

// sacct's AllocTRES (billing=8,cpu=8,gres/gpu=2,mem=64G,node=1): the GPUs are gres/gpu, or without it the sum of
// the typed entries gres/gpu:TYPE (sacct may print both, the typed ones repeating the total).
bool parse_tres_gpus(std::string_view cell, const char* column, int& out, std::string& why) {
  std::optional<int64_t> total;
  int64_t typed = 0;
  for (std::string_view entry : split_cells(cell, ',')) {
    size_t eq = entry.find('=');
    std::string_view key = entry.substr(0, eq);
    if (key != "gres/gpu" && key.substr(0, 9) != "gres/gpu:") continue;
    auto v = eq == std::string_view::npos ? std::nullopt : whole(entry.substr(eq + 1));
    if (!v || *v > kMaxGpus) {
      why = std::string(column) + ": '" + std::string(entry) + "' is not a GPU count 0.." + std::to_string(kMaxGpus);
      return false;
    }
    if (key == "gres/gpu") total = *v;
    else typed += *v;
  }
  int64_t gpus = total ? *total : typed;
  if (gpus > kMaxGpus) {
    why = std::string(column) + ": '" + std::string(cell) + "' holds more than " + std::to_string(kMaxGpus) + " GPUs";
    return false;
  }
  out = static_cast<int>(gpus);
  return true;
}

// A job's limit: empty (and, in Slurm, UNLIMITED or Partition_Limit) is none.
bool parse_time_limit(const Columns& c, std::string_view cell, std::optional<int64_t>& out, std::string& why) {
  if (cell.empty() || (c.cells == Cells::kSlurm && (cell == "UNLIMITED" || cell == "Partition_Limit"))) return true;
  int64_t v = 0;
  bool ok = c.cells == Cells::kSlurm ? parse_slurm_duration(cell, c.time_limit, v, why)
                                     : parse_seconds(cell, c.time_limit, v, why);
  if (!ok) return false;
  if (v == 0) {
    why = std::string(c.time_limit) + ": '" + std::string(cell) + "' is zero (leave the cell empty for no limit)";
    return false;
  }
  out = v;
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
  if (n == "slurm") return TraceFormat::kSlurm;
  return Error::invalid("unknown trace format '" + std::string(name) + "'; valid: itp, philly, allot, slurm, auto");
}

const char* trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kItp: return "itp";
    case TraceFormat::kPhilly: return "philly";
    case TraceFormat::kAllot: return "allot";
    case TraceFormat::kSlurm: return "slurm";
  }
  return "?";
}

Result<TraceFormat> detect_trace_format(std::string_view header_line) {
  for (const Columns& c : kFormats)
    if (missing_columns(index_header(trim(header_line), c.sep), c).empty()) return c.format;
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
  std::optional<size_t> i_team, i_time_limit;
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
      HeaderIndex idx = index_header(line, cols.sep);
      auto missing = missing_columns(idx, cols);
      if (!missing.empty()) {
        std::string names;
        for (const auto& m : missing) names += (names.empty() ? "'" : ", '") + m + "'";
        error = Error::invalid(where + ":" + std::to_string(line_no) + ": header lacks " + names + " for format " +
                               trace_format_name(f) + " (expected " + expected_header(cols) + ")");
        return false;
      }
      n_cells = split_cells(line, cols.sep).size();
      i_id = idx[cols.id], i_submit = idx[cols.submit], i_duration = idx[cols.duration], i_gpus = idx[cols.gpus];
      if (cols.team && idx.has(cols.team)) i_team = idx[cols.team];
      if (cols.time_limit && idx.has(cols.time_limit)) i_time_limit = idx[cols.time_limit];
      trace.format = trace_format_name(f);
      return true;
    }
    auto cells = split_cells(line, cols.sep);
    if (cells.size() != n_cells) {
      invalid(line_no, "expected " + std::to_string(n_cells) + " cells, found " + std::to_string(cells.size()));
      return true;
    }
    TraceJob job;
    std::string why;
    const bool slurm = cols.cells == Cells::kSlurm;
    if (!(slurm ? parse_slurm_time(cells[i_submit], cols.submit, job.submit_s, why)
                : parse_seconds(cells[i_submit], cols.submit, job.submit_s, why)) ||
        !(slurm ? parse_slurm_duration(cells[i_duration], cols.duration, job.duration_s, why)
                : parse_seconds(cells[i_duration], cols.duration, job.duration_s, why)) ||
        !(slurm ? parse_tres_gpus(cells[i_gpus], cols.gpus, job.gpus, why)
                : parse_gpus(cells[i_gpus], cols.gpus, job.gpus, why)) ||
        (i_time_limit && !parse_time_limit(cols, cells[*i_time_limit], job.time_limit_s, why))) {
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
    // sacct without -X lists each job's steps (123.batch, 123.0) under it: they are not jobs of their own.
    if (slurm && job.id.find('.') != std::string::npos) {
      invalid(line_no, std::string(cols.id) + ": '" + job.id + "' is a job step (run sacct with -X)");
      return true;
    }
    // A comma would split the cell when the trace is saved in allot's format.
    if (slurm && (job.id.find(',') != std::string::npos ||
                  (i_team && cells[*i_team].find(',') != std::string_view::npos))) {
      invalid(line_no, std::string(job.id.find(',') != std::string::npos ? cols.id : cols.team) + ": holds a comma");
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
  const bool limits = std::any_of(trace.jobs.begin(), trace.jobs.end(), [](const TraceJob& j) { return j.time_limit_s.has_value(); });
  std::string out = limits ? "id,submit_s,duration_s,gpus,team,time_limit_s\n" : "id,submit_s,duration_s,gpus,team\n";
  for (const TraceJob& j : trace.jobs) {
    out += j.id + "," + std::to_string(j.submit_s) + "," + std::to_string(j.duration_s) + "," + std::to_string(j.gpus) +
           "," + j.team;
    if (limits) out += "," + (j.time_limit_s ? std::to_string(*j.time_limit_s) : std::string());
    out += "\n";
  }
  return out;
}

TraceLimits trace_limits(const Trace& trace) {
  TraceLimits l;
  for (const TraceJob& j : trace.jobs) {
    if (!j.time_limit_s) continue;
    ++l.jobs;
    if (*j.time_limit_s < j.duration_s) ++l.below_duration;
  }
  return l;
}

double trace_gpu_hours(const Trace& trace) {
  // One job may ask for 10^18 GPU-seconds (10^12 s x 10^6 GPUs), so ten of them overflow int64.
  __int128 gpu_s = 0;
  for (const TraceJob& j : trace.jobs) gpu_s += static_cast<__int128>(j.duration_s) * j.gpus;
  return static_cast<double>(gpu_s) / 3600.0;
}

}  // namespace allot::sim
