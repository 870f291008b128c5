#pragma once
// Job traces for `allot sim replay`: what a trace file says (who submitted how many GPUs when, for how long),
// read from the public cluster traces and from allot's own format, normalized so a replay starts at t = 0.
//
// Formats (one header line, then one job per line; comma-separated, no quoting; columns are found by name,
// so their order does not matter and extra columns are ignored):
//   itp     Microsoft ITP clusters (ElasticFlow raw traces): job_id,submission_time,duration,num_gpu
//   philly  Philly VC traces as published with ElasticFlow: job_id,submit_time,...,num_gpu,real_duration,...
//           The duration is `real_duration` (the observed run time); the other columns are synthetic and unused.
//   allot   allot's own format:  id,submit_s,duration_s,gpus[,team][,time_limit_s]
//           id            a job name, unique in the file
//           submit_s      submission time in seconds (any origin; the reader makes it relative)
//           duration_s    run time in seconds when the job runs without interruption
//           gpus          accelerators the job needs, in total over all its replicas
//           team          optional column; an empty cell means "assign a team by rule" (trace_teams.h)
//           time_limit_s  optional column: the job's wall-time limit in seconds as its user gave it; an empty
//                         cell means none
//   slurm   Slurm's accounting, `sacct --allusers -X --parsable2 -o JobID,Submit,Elapsed,Timelimit,AllocTRES[,Account]`:
//           cells separated by '|' (AllocTRES holds commas), so the one format with another separator.
//           JobID        the id; a job step (a '.' in it: sacct without -X) is an invalid row
//           Submit       YYYY-MM-DDTHH:MM:SS, as sacct prints it (local time; only differences are used, so a
//                        daylight-saving change inside the trace shifts the later jobs by an hour)
//           Elapsed      [D-][HH:]MM:SS, the job's run time
//           Timelimit    the same form, or UNLIMITED, Partition_Limit or an empty cell: no limit of its own
//           AllocTRES    gres/gpu=N (or, without it, the sum of gres/gpu:TYPE=N); no GPU entry means zero GPUs
//           Account      optional: the team
//           A comma in a JobID or an Account is refused (the row is invalid), so the trace saves in allot's format.
// In every format: blank lines and lines starting with '#' are ignored; CRLF line ends and a UTF-8 byte-order
// mark are accepted. Times may be written with a fraction (rounded to the nearest second); GPU counts must be
// whole numbers.
//
// Rows the reader does not keep (they are counted in Trace::issues, never a hard error, so one bad line does
// not stop a 16,000-job replay; the caller decides whether to warn or refuse):
//   invalid        wrong number of cells, a number that does not parse, a negative value, a value beyond
//                  10^12 seconds or 10^6 GPUs, an empty or repeated id, an id starting
//                  with '#' (a comment where the id comes first).
//   zero GPUs      a job that holds no accelerator cannot contend for any, so it does not belong in a GPU replay.
//   zero duration  a job that ends when it is submitted would count as a zero queueing delay and zero JCT and
//                  pull every average down without ever being scheduled.
// Missing files, empty files and headers that match no format are errors.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace allot::sim {

struct TraceJob {
  std::string id;
  int64_t submit_s = 0;    // relative to the trace's first submission
  int64_t duration_s = 0;  // > 0
  int gpus = 0;            // > 0
  std::string team;        // empty: not given by the trace
  // The wall-time limit the trace gives the job (allot's time_limit_s, Slurm's Timelimit); nullopt: none. It may
  // be below the duration (Slurm ends a job a little after its limit); the replay raises it to the duration.
  std::optional<int64_t> time_limit_s;
};

enum class TraceFormat { kAuto, kItp, kPhilly, kAllot, kSlurm };

// What the reader skipped, and where, so a user can find the first bad line in the file.
struct TraceIssues {
  int64_t invalid_rows = 0;
  int first_invalid_line = 0;        // 1-based line in the file; 0 when there is none
  std::string first_invalid_reason;  // e.g. "num_gpu: 'x' is not a whole number"
  int64_t zero_gpu_rows = 0;
  int64_t zero_duration_rows = 0;
  int first_zero_line = 0;  // first zero-GPU or zero-duration row; 0 when there is none

  int64_t skipped() const { return invalid_rows + zero_gpu_rows + zero_duration_rows; }
  // One line for people, empty when nothing was skipped:
  // "skipped 3 rows: 2 invalid (first at line 7: duration: '-5' is negative), 1 with zero GPUs (line 9)".
  std::string summary() const;
};

struct Trace {
  std::vector<TraceJob> jobs;  // sorted by submit_s; rows with equal submit_s keep their file order
  std::string format;          // "itp", "philly", "allot" or "slurm"
  int64_t origin_s = 0;        // the raw submission time that became t = 0
  TraceIssues issues;
};

// "itp", "philly", "allot", "slurm" or "auto" (case-insensitive).
Result<TraceFormat> parse_trace_format(std::string_view name);
const char* trace_format_name(TraceFormat format);

// The format whose required columns a header line has (the first match in the order allot, philly, itp, slurm).
Result<TraceFormat> detect_trace_format(std::string_view header_line);

// Parses trace text. `origin` names the source in error messages. With kAuto the header decides.
Result<Trace> parse_trace(std::string_view text, TraceFormat format, std::string_view origin);
Result<Trace> load_trace_file(const std::string& path, TraceFormat format = TraceFormat::kAuto);

// The trace in allot's format (header included), e.g. to save a trace after teams were assigned. The column
// time_limit_s is written only when some job has a limit.
std::string to_allot_csv(const Trace& trace);

// The limits a trace gives its jobs: how many jobs have one, and how many of those a limit below their duration
// (the replay raises those to the duration).
struct TraceLimits {
  int64_t jobs = 0;
  int64_t below_duration = 0;
};
TraceLimits trace_limits(const Trace& trace);

// Sum of gpus x duration over the jobs, in GPU-hours: the work the trace asks for.
double trace_gpu_hours(const Trace& trace);

}  // namespace allot::sim
