// Job traces for `allot sim replay` (sim/trace.h): ITP, Philly, Slurm sacct and allot CSV, the format found from the
// header. A trace that parses is written in allot's format and read again: the jobs must come back the same
// (that is how `allot sim replay` saves a trace with its teams), and its GPU-hours must be computable.
#include "fuzz_checks.h"
#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  auto trace = sim::parse_trace(fuzz::text_of(data, size), sim::TraceFormat::kAuto, "fuzz.csv");
  if (!fuzz::accepted(trace, "parse_trace")) return 0;
  (void)sim::trace_gpu_hours(*trace);
  (void)trace->issues.summary();
  const std::string csv = sim::to_allot_csv(*trace);
  auto back = sim::parse_trace(csv, sim::TraceFormat::kAllot, "saved.csv");
  if (!back) fuzz::fail("a trace saved in allot's format does not read back", back.error().message);
  bool same = back->jobs.size() == trace->jobs.size() && back->issues.skipped() == 0;
  for (size_t i = 0; same && i < trace->jobs.size(); ++i) {
    const sim::TraceJob &a = trace->jobs[i], &b = back->jobs[i];
    same = a.id == b.id && a.submit_s == b.submit_s && a.duration_s == b.duration_s && a.gpus == b.gpus && a.team == b.team &&
           a.time_limit_s == b.time_limit_s;
  }
  fuzz::require(same, "trace -> allot CSV -> trace", csv.substr(0, 2000));
  return 0;
}
