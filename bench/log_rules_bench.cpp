// The cost of log rules on the agent (core/lifecycle/log_rules.h): the agent's log reader matches every line a replica
// prints against the job's rules, on the one thread that captures every replica's output on the node. Prints, for
// typical training output (a progress line with loss and throughput, an occasional NCCL warning), the median over
// --reps of the time per line and the bytes per second, without rules (splitting only is not done then: the
// baseline is a copy of the bytes) and with 1, 5 and 33 patterns (the most a job may declare: progress + 16 + 16).
//
//   log_rules_bench [--lines 200000] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/lifecycle/log_rules.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string output(int lines) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    if (i % 100 == 99) out += "NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory, retrying\n";
    else
      out += "[rank 3] step " + std::to_string(i) + " loss: " + std::to_string(2.5 - i * 1e-6) +
             " lr: 3.0e-04 tokens/s: 151234 grad_norm: 0.83\n";
  }
  return out;
}

allot::LogRules rules(int n) {
  allot::LogRules r;
  if (n >= 1) r.fail_on.push_back("loss.*nan");
  if (n >= 5) {
    r.progress = allot::ProgressRule{"step \\d+", 600};
    r.restart_on = {"NCCL (timeout|error)", "CUDA error: an illegal memory access"};
    r.fail_on.push_back("Traceback \\(most recent call last\\)");
  }
  if (n >= 33) {
    r.restart_on.clear();
    r.fail_on.clear();
    for (int i = 0; i < 16; ++i) r.restart_on.push_back("NCCL error " + std::to_string(i) + ".*timeout");
    for (int i = 0; i < 16; ++i) r.fail_on.push_back("fatal " + std::to_string(i) + ": .*");
  }
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int lines = 200000, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lines")) lines = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  const std::string out = output(lines);
  std::printf("%d lines, %zu bytes, median of %d runs\n", lines, out.size(), reps);
  std::printf("%-10s %12s %12s\n", "patterns", "ns/line", "MB/s");
  for (int n : {0, 1, 5, 33}) {
    std::vector<double> secs;
    uint64_t sink = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      if (n == 0) {
        std::string copy;
        for (size_t at = 0; at < out.size(); at += 65536) copy.assign(out, at, 65536), sink += copy.size();
      } else {
        allot::LogLineMatcher m(rules(n), 3);
        for (size_t at = 0; at < out.size(); at += 65536) sink += m.feed(std::string_view(out).substr(at, 65536)).has_value();
        sink += m.progress_lines();
      }
      secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    const double s = median(secs);
    std::printf("%-10d %12.0f %12.1f\n", n, s * 1e9 / lines, out.size() / s / 1e6);
    if (sink == 42) std::printf(" ");
  }
  return 0;
}
