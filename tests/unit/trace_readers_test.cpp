// Trace readers on the real traces (the figures were computed independently of allot) and on small texts that
// exercise detection, normalization and every kind of skipped row.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "sim/trace.h"

namespace allot::sim::trace_readers_test {
namespace {

const std::string kTraces = ALLOT_TRACES_DIR;

int64_t gpu_seconds(const Trace& t) {
  return std::accumulate(t.jobs.begin(), t.jobs.end(), int64_t{0},
                         [](int64_t s, const TraceJob& j) { return s + j.duration_s * j.gpus; });
}

bool sorted_by_submit(const Trace& t) {
  return std::is_sorted(t.jobs.begin(), t.jobs.end(),
                        [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
}

// Expected figures, computed with Python's csv module (no allot code):
//   python3 -c "import csv; r=list(csv.DictReader(open('itp/cluster04.csv')));
//     print(len(r), sum(int(x['duration'])*int(x['num_gpu']) for x in r))"     -> 15802 2540458386
//   first submission 5810, last 5142627 (awk -F, 'NR>1{...min/max of $2}')      -> span 5136817 s
// 2540458386 GPU-seconds = 705682.885 GPU-hours. The file has no zero, negative or malformed rows.
TEST(TraceReaders, ItpCluster04) {
  auto trace = load_trace_file(kTraces + "/itp/cluster04.csv");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->format, "itp");
  EXPECT_EQ(trace->jobs.size(), 15802u);
  EXPECT_EQ(gpu_seconds(*trace), 2540458386);
  EXPECT_NEAR(trace_gpu_hours(*trace), 705682.885, 1e-3);
  EXPECT_EQ(trace->issues.skipped(), 0);
  EXPECT_EQ(trace->issues.summary(), "");
  EXPECT_EQ(trace->origin_s, 5810);
  EXPECT_EQ(trace->jobs.front().submit_s, 0);
  EXPECT_EQ(trace->jobs.front().id, "c9c620ea-4336-c1a9-8abe-e26bd13076b8");
  EXPECT_EQ(trace->jobs.front().gpus, 16);
  EXPECT_EQ(trace->jobs.back().submit_s, 5136817);
  EXPECT_TRUE(sorted_by_submit(*trace));
  EXPECT_TRUE(std::all_of(trace->jobs.begin(), trace->jobs.end(), [](const TraceJob& j) { return j.team.empty(); }));
}

// python3 -c "import csv; r=list(csv.DictReader(open('philly/philly_103959.csv')));
//   print(len(r), sum(int(x['real_duration'])*int(x['num_gpu']) for x in r))"   -> 876 154137879
// = 42816.0775 GPU-hours; first submission 0, last 7910536.
TEST(TraceReaders, PhillyVc103959) {
  auto trace = load_trace_file(kTraces + "/philly/philly_103959.csv");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->format, "philly");
  EXPECT_EQ(trace->jobs.size(), 876u);
  EXPECT_EQ(gpu_seconds(*trace), 154137879);
  EXPECT_NEAR(trace_gpu_hours(*trace), 42816.0775, 1e-4);
  EXPECT_EQ(trace->issues.skipped(), 0);
  EXPECT_EQ(trace->origin_s, 0);
  EXPECT_EQ(trace->jobs.back().submit_s, 7910536);
  EXPECT_EQ(trace->jobs[1].id, "1");
  EXPECT_EQ(trace->jobs[1].gpus, 4);
  EXPECT_EQ(trace->jobs[1].duration_s, 1792395);  // real_duration, not iteration or ddl
}

TEST(TraceReaders, DetectsEveryFormatFromItsHeader) {
  EXPECT_EQ(*detect_trace_format("job_id,submission_time,duration,num_gpu"), TraceFormat::kItp);
  EXPECT_EQ(*detect_trace_format(
                "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,duration,iteration"),
            TraceFormat::kPhilly);
  EXPECT_EQ(*detect_trace_format("id,submit_s,duration_s,gpus,team"), TraceFormat::kAllot);
  EXPECT_EQ(*detect_trace_format("gpus, ID ,duration_s,submit_s\r"), TraceFormat::kAllot);  // any order and case
  EXPECT_EQ(*detect_trace_format("JobID|Submit|Elapsed|Timelimit|AllocTRES|Account"), TraceFormat::kSlurm);
  EXPECT_EQ(*detect_trace_format("jobid|alloctres|submit|elapsed"), TraceFormat::kSlurm);
  auto unknown = detect_trace_format("name,start,end");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("matches no trace format"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("itp (job_id,submission_time,duration,num_gpu)"), std::string::npos);
}

TEST(TraceReaders, FormatNames) {
  EXPECT_EQ(*parse_trace_format("ITP"), TraceFormat::kItp);
  EXPECT_EQ(*parse_trace_format("philly"), TraceFormat::kPhilly);
  EXPECT_EQ(*parse_trace_format("allot"), TraceFormat::kAllot);
  EXPECT_EQ(*parse_trace_format("auto"), TraceFormat::kAuto);
  EXPECT_EQ(*parse_trace_format("Slurm"), TraceFormat::kSlurm);
  EXPECT_STREQ(trace_format_name(TraceFormat::kSlurm), "slurm");
  auto bad = parse_trace_format("sacct");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unknown trace format 'sacct'; valid: itp, philly, allot, slurm, auto");
  EXPECT_STREQ(trace_format_name(TraceFormat::kPhilly), "philly");
}

TEST(TraceReaders, ExplicitFormatMustMatchTheHeader) {
  auto t = parse_trace("job_id,submission_time,duration,num_gpu\na,1,2,3\n", TraceFormat::kPhilly, "x.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message,
            "x.csv:1: header lacks 'submit_time', 'real_duration' for format philly "
            "(expected job_id,submit_time,real_duration,num_gpu)");
  EXPECT_TRUE(parse_trace("job_id,submission_time,duration,num_gpu\na,1,2,3\n", TraceFormat::kItp, "x").ok());
}

TEST(TraceReaders, FileAndHeaderErrors) {
  auto missing = load_trace_file(kTraces + "/no-such-trace.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("no-such-trace.csv' does not exist"), std::string::npos);
  EXPECT_FALSE(load_trace_file(kTraces).ok());  // a directory

  auto empty = parse_trace("\n# only a comment\n\n", TraceFormat::kAuto, "e.csv");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "e.csv: no header line (the trace is empty)");

  auto unknown = parse_trace("\nfoo,bar\n1,2\n", TraceFormat::kAuto, "u.csv");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message.rfind("u.csv:2: header 'foo,bar' matches no trace format", 0), 0u);

  auto header_only = parse_trace("id,submit_s,duration_s,gpus\n", TraceFormat::kAuto, "h");
  ASSERT_TRUE(header_only.ok());
  EXPECT_TRUE(header_only->jobs.empty());
}

// Every kind of skipped row, counted, with the first bad line named; good rows around them are kept.
TEST(TraceReaders, MalformedRowsAreCountedNotFatal) {
  const std::string text =
      "job_id,submission_time,duration,num_gpu\n"  // line 1
      "a,100,60,1\n"                               // 2 ok
      "b,100,sixty,1\n"                            // 3 invalid: duration
      "c,101,60\n"                                 // 4 invalid: 3 cells
      "d,102,60,0\n"                               // 5 zero GPUs
      "e,103,0,2\n"                                // 6 zero duration
      "f,-1,60,1\n"                                // 7 invalid: negative
      "a,104,60,1\n"                               // 8 invalid: repeated id
      ",105,60,1\n"                                // 9 invalid: empty id
      "g,106,60,1.5\n"                             // 10 invalid: fractional GPUs
      "h,107,60,1,extra\n"                         // 11 invalid: 5 cells
      "i,99,60,2";                                 // 12 ok, no final newline, earliest submission
  auto t = parse_trace(text, TraceFormat::kAuto, "bad.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "i");
  EXPECT_EQ(t->jobs[1].id, "a");
  EXPECT_EQ(t->jobs[1].submit_s, 1);  // relative to i's 99
  EXPECT_EQ(t->issues.invalid_rows, 7);
  EXPECT_EQ(t->issues.first_invalid_line, 3);
  EXPECT_EQ(t->issues.first_invalid_reason, "duration: 'sixty' is not a number of seconds");
  EXPECT_EQ(t->issues.zero_gpu_rows, 1);
  EXPECT_EQ(t->issues.zero_duration_rows, 1);
  EXPECT_EQ(t->issues.first_zero_line, 5);
  EXPECT_EQ(t->issues.skipped(), 9);
  EXPECT_EQ(t->issues.summary(),
            "skipped 9 rows: 7 invalid (first at line 3: duration: 'sixty' is not a number of seconds), "
            "1 with zero GPUs, 1 with zero duration (first at line 5)");
}

TEST(TraceReaders, InvalidRowReasons) {
  auto reason = [](const std::string& row) {
    auto t = parse_trace("id,submit_s,duration_s,gpus\n" + row + "\n", TraceFormat::kAllot, "r");
    return t.ok() ? t->issues.first_invalid_reason : t.error().message;
  };
  EXPECT_EQ(reason("x,1,2,-3"), "gpus: '-3' is out of range 0..1000000");
  EXPECT_EQ(reason("x,1,2,2000000"), "gpus: '2000000' is out of range 0..1000000");
  EXPECT_EQ(reason("x,1,-2,1"), "duration_s: '-2' is negative");
  EXPECT_EQ(reason("x,1e13,2,1"), "submit_s: '1e13' is not a number of seconds");
  EXPECT_EQ(reason("x,99999999999999,2,1"), "submit_s: '99999999999999' is beyond 10^12 seconds");
  EXPECT_EQ(reason("x,,2,1"), "submit_s: '' is not a number of seconds");
  EXPECT_EQ(reason("x,nan,2,1"), "submit_s: 'nan' is not a number of seconds");
  // Found by fuzz/trace_fuzz.cpp: written first in allot's format, this id turned its row into a comment.
  auto hash = parse_trace("n,id,submit_s,duration_s,gpus\n1,#56,0,10,1\n", TraceFormat::kAllot, "r");
  ASSERT_TRUE(hash.ok()) << hash.error().message;
  EXPECT_EQ(hash->issues.first_invalid_reason, "id: '#56' starts with '#', which marks a comment");
}

TEST(TraceReaders, GpuHoursOfTheLargestJobsDoNotOverflow) {
  std::string text = "id,submit_s,duration_s,gpus\n";
  for (int i = 0; i < 10; ++i) text += "j" + std::to_string(i) + ",0,1000000000000,1000000\n";  // 10^18 GPU-s each
  auto t = parse_trace(text, TraceFormat::kAllot, "r");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->jobs.size(), 10u);
  EXPECT_NEAR(trace_gpu_hours(*t), 1e19 / 3600, 1e6);
}

// Equal submission times keep file order; decimals round; CRLF, a byte-order mark, comments, blank lines and
// spaces around cells are accepted.
TEST(TraceReaders, NormalizesAndToleratesFormatting) {
  const std::string text =
      "\xEF\xBB\xBF# exported by hand\r\n"
      "id,submit_s,duration_s,gpus,team\r\n"
      "late, 500 ,10,1,\r\n"
      "\r\n"
      "first,200,9.6,8,infer\r\n"
      "second,200,10.4,1,\r\n"
      "# a comment between rows\n"
      "third,200.5,7,2,train\r\n";
  auto t = parse_trace(text, TraceFormat::kAuto, "n.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->format, "allot");
  EXPECT_EQ(t->issues.skipped(), 0);
  ASSERT_EQ(t->jobs.size(), 4u);
  EXPECT_EQ(t->origin_s, 200);
  EXPECT_EQ(t->jobs[0].id, "first");
  EXPECT_EQ(t->jobs[0].duration_s, 10);  // 9.6 rounds to 10
  EXPECT_EQ(t->jobs[0].team, "infer");
  EXPECT_EQ(t->jobs[1].id, "second");
  EXPECT_EQ(t->jobs[1].team, "");
  EXPECT_EQ(t->jobs[2].id, "third");
  EXPECT_EQ(t->jobs[2].submit_s, 1);  // 200.5 rounds half away from zero to 201
  EXPECT_EQ(t->jobs[3].id, "late");
  EXPECT_EQ(t->jobs[3].submit_s, 300);
}

TEST(TraceReaders, AllotFormatWithoutTeamColumnAndRoundTrip) {
  auto t = parse_trace("id,submit_s,duration_s,gpus\nj1,5,100,4\nj2,0,50,1\n", TraceFormat::kAuto, "a");
  ASSERT_TRUE(t.ok()) << t.error().message;
  t->jobs[0].team = "team-b";
  const std::string csv = to_allot_csv(*t);
  EXPECT_EQ(csv, "id,submit_s,duration_s,gpus,team\nj2,0,50,1,team-b\nj1,5,100,4,\n");
  auto back = parse_trace(csv, TraceFormat::kAllot, "rt");
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->jobs.size(), 2u);
  EXPECT_EQ(back->jobs[0].team, "team-b");
  EXPECT_EQ(back->jobs[1].gpus, 4);
  EXPECT_EQ(to_allot_csv(*back), csv);
}

// allot's format with limits: an empty cell is none; a zero or a bad one makes the row invalid; saved and read back.
TEST(TraceReaders, AllotFormatTimeLimits) {
  auto t = parse_trace("id,submit_s,duration_s,gpus,team,time_limit_s\nj1,0,100,4,a,3600\nj2,5,50,1,,\n"
                       "j3,6,50,1,,0\nj4,7,50,1,,soon\n",
                       TraceFormat::kAuto, "l.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].time_limit_s, 3600);
  EXPECT_FALSE(t->jobs[1].time_limit_s.has_value());
  EXPECT_EQ(t->issues.invalid_rows, 2);
  EXPECT_EQ(t->issues.first_invalid_line, 4);
  EXPECT_EQ(t->issues.first_invalid_reason, "time_limit_s: '0' is zero (leave the cell empty for no limit)");
  const std::string csv = to_allot_csv(*t);
  EXPECT_EQ(csv, "id,submit_s,duration_s,gpus,team,time_limit_s\nj1,0,100,4,a,3600\nj2,5,50,1,,\n");
  auto back = parse_trace(csv, TraceFormat::kAllot, "rt");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_allot_csv(*back), csv);
  EXPECT_EQ(trace_limits(*back).jobs, 1);
  EXPECT_EQ(trace_limits(*back).below_duration, 0);
}

// sacct --allusers -X --parsable2 -o JobID,Submit,Elapsed,Timelimit,AllocTRES,Account, as Slurm 22.05 prints it.
// Worked by hand: j 101 submitted 2026-03-01T23:59:30, 102 thirty seconds later (the next day), 103 a day and an
// hour after 101; Elapsed 1-02:03:04 is 93784 s; the GPUs are gres/gpu, or the typed entries' sum without it.
TEST(TraceReaders, SlurmAccounting) {
  const std::string text =
      "JobID|Submit|Elapsed|Timelimit|AllocTRES|Account\n"
      "101|2026-03-01T23:59:30|01:00:00|02:00:00|billing=16,cpu=16,gres/gpu=8,gres/gpu:a100=8,mem=500G,node=1|vision\n"
      "102|2026-03-02T00:00:00|1-02:03:04|2-00:00:00|cpu=8,gres/gpu:h100=2,gres/gpu:a100=1,node=1|nlp\n"
      "103_7|2026-03-03T00:59:30|05:10|UNLIMITED|cpu=2,gres/gpu=1|\n"
      "104|2026-03-03T01:00:00|00:00:00|01:00:00|cpu=2,gres/gpu=1|nlp\n"     // never ran: zero duration
      "105|2026-03-03T01:00:00|00:10:00|Partition_Limit|cpu=2,mem=4G|nlp\n"  // no GPU: zero GPUs
      "101.batch|2026-03-01T23:59:30|01:00:00||cpu=16|vision\n"             // a step: sacct without -X
      "106|2026-02-30 10:00:00|01:00:00|01:00:00|gres/gpu=1|nlp\n"          // not sacct's time
      "107|2026-03-03T02:00:00|01:61:00|01:00:00|gres/gpu=1|nlp\n"          // 61 minutes
      "108|2026-03-03T02:00:00|01:00:00|01:00:00|gres/gpu=x|nlp\n"
      "109|2026-03-03T02:00:00|01:00:00|01:00:00|gres/gpu=1|a,b\n";
  auto t = parse_trace(text, TraceFormat::kAuto, "sacct.txt");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->format, "slurm");
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[0].id, "101");
  EXPECT_EQ(t->jobs[0].submit_s, 0);
  EXPECT_EQ(t->jobs[0].duration_s, 3600);
  EXPECT_EQ(t->jobs[0].time_limit_s, 7200);
  EXPECT_EQ(t->jobs[0].gpus, 8);
  EXPECT_EQ(t->jobs[0].team, "vision");
  EXPECT_EQ(t->jobs[1].id, "102");
  EXPECT_EQ(t->jobs[1].submit_s, 30);
  EXPECT_EQ(t->jobs[1].duration_s, 93784);
  EXPECT_EQ(t->jobs[1].time_limit_s, 172800);
  EXPECT_EQ(t->jobs[1].gpus, 3);
  EXPECT_EQ(t->jobs[2].id, "103_7");
  EXPECT_EQ(t->jobs[2].submit_s, 90000);
  EXPECT_EQ(t->jobs[2].duration_s, 310);
  EXPECT_FALSE(t->jobs[2].time_limit_s.has_value());
  EXPECT_EQ(t->jobs[2].team, "");
  EXPECT_EQ(t->issues.zero_duration_rows, 1);
  EXPECT_EQ(t->issues.zero_gpu_rows, 1);
  EXPECT_EQ(t->issues.invalid_rows, 5);
  EXPECT_EQ(t->issues.first_invalid_line, 7);
  EXPECT_EQ(t->issues.first_invalid_reason, "JobID: '101.batch' is a job step (run sacct with -X)");
  auto reason = [](const std::string& row) {
    auto r = parse_trace("JobID|Submit|Elapsed|Timelimit|AllocTRES|Account\n" + row + "\n", TraceFormat::kSlurm, "s");
    return r.ok() ? r->issues.first_invalid_reason : r.error().message;
  };
  EXPECT_EQ(reason("106|2026-02-30 10:00:00|01:00:00|01:00:00|gres/gpu=1|nlp"),
            "Submit: '2026-02-30 10:00:00' is not a time YYYY-MM-DDTHH:MM:SS from 1970 on");
  EXPECT_EQ(reason("107|2026-03-03T02:00:00|01:61:00|01:00:00|gres/gpu=1|nlp"),
            "Elapsed: '01:61:00' is not a Slurm time ([D-]HH:MM:SS, M, M:S, D-H or D-H:M)");
  EXPECT_EQ(reason("108|2026-03-03T02:00:00|01:00:00|01:00:00|gres/gpu=x|nlp"),
            "AllocTRES: 'gres/gpu=x' is not a GPU count 0..1000000");
  EXPECT_EQ(reason("109|2026-03-03T02:00:00|01:00:00|01:00:00|gres/gpu=1|a,b"), "Account: holds a comma");
  EXPECT_EQ(reason("110|2026-03-03T02:00:00|01:00:00|00:00:00|gres/gpu=1|nlp"),
            "Timelimit: '00:00:00' is zero (leave the cell empty for no limit)");
  // Slurm's input forms: M, M:S, D-H, D-H:M.
  auto limit = [](const std::string& cell) -> int64_t {
    auto r = parse_trace("JobID|Submit|Elapsed|Timelimit|AllocTRES\n1|2026-01-01T00:00:00|1|" + cell + "|gres/gpu=1\n",
                         TraceFormat::kAuto, "s");
    return r.ok() && r->jobs.size() == 1 && r->jobs[0].time_limit_s ? *r->jobs[0].time_limit_s : -1;
  };
  EXPECT_EQ(limit("90"), 5400);
  EXPECT_EQ(limit("90:30"), 5430);
  EXPECT_EQ(limit("2-5"), 2 * 86400 + 5 * 3600);
  EXPECT_EQ(limit("2-5:30"), 2 * 86400 + 5 * 3600 + 1800);
  EXPECT_EQ(limit("1-24:00:00"), -1);
  EXPECT_EQ(limit("1:2:3:4"), -1);
  // Saved in allot's format (the limits as a column) and read back the same.
  auto back = parse_trace(to_allot_csv(*t), TraceFormat::kAllot, "rt");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->jobs.size(), 3u);
  EXPECT_EQ(back->jobs[1].time_limit_s, 172800);
  EXPECT_EQ(back->jobs[2].id, "103_7");
}

}  // namespace
}  // namespace allot::sim::trace_readers_test
