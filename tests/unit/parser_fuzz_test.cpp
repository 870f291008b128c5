// Mutation fuzzing of the parsers that read user input other than scenarios (scenario_parse_test.cpp has its
// own): traces, host lists, EC2 topology JSON, Kubernetes manifests and quantities. Each starts from a valid
// input, applies a few seeded random edits, and requires that the parser never throws or crashes and that
// every rejection says something. Deterministic: a failure reproduces with the same seed.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "core/model/catalog.h"
#include "core/model/hostlist.h"
#include "interop/ec2_topology.h"
#include "interop/k8s_manifest.h"
#include "interop/k8s_quantity.h"
#include "sim/trace.h"

namespace allot::parser_fuzz_test {
namespace {

std::string read_data(const std::string& rel) {
  std::ifstream in(std::string(ALLOT_SOURCE_DIR) + "/tests/data/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Applies 1-4 random edits: deletions, duplications, swaps, noise characters, truncation.
std::string mutate(std::string text, std::mt19937& rng, const std::string& noise) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t i = pick(text.size());
    switch (rng() % 6) {
      case 0: text.erase(i, 1 + pick(4)); break;
      case 1: text.insert(i, 1, text[pick(text.size())]); break;
      case 2: std::swap(text[i], text[pick(text.size())]); break;
      case 3: text[i] = noise[pick(noise.size())]; break;
      case 4: text.resize(i); break;
      default: text.insert(i, text.substr(pick(text.size()), 1 + pick(16))); break;
    }
  }
  return text;
}

// Runs `parse` on `rounds` mutations of `valid`; `parse` returns the error message, or "" when accepted.
void fuzz(const std::string& valid, uint32_t seed, int rounds, const std::string& noise,
          const std::function<std::string(const std::string&)>& parse) {
  ASSERT_EQ(parse(valid), "") << "the starting input must be valid";
  std::mt19937 rng(seed);
  int rejected = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string text = mutate(valid, rng, noise);
    std::string error;
    EXPECT_NO_THROW(error = parse(text)) << text;
    if (!error.empty()) ++rejected;
  }
  // The mutations must reach the error paths, or the test proves nothing.
  EXPECT_GT(rejected, rounds / 20);
}

TEST(ParserFuzz, Traces) {
  const std::string valid =
      "job_id,submission_time,duration,num_gpu\n"
      "j1,100,3600,8\nj2,160,60,1\nj3,200,7200,16\nj4,200,10,2\n";
  fuzz(valid, 7, 3000, ",-.0123456789e\n\r\"x ", [](const std::string& t) {
    auto r = sim::parse_trace(t, sim::TraceFormat::kAuto, "fuzz.csv");
    if (!r.ok()) return r.error().message.empty() ? std::string("(empty message)") : r.error().message;
    for (const auto& j : r->jobs)
      if (j.gpus <= 0 || j.duration_s <= 0 || j.submit_s < 0) return std::string("kept an invalid row: ") + j.id;
    // Kept invalid rows would be a bug; skipped ones are fine. Count them as rejections for coverage.
    return r->issues.skipped() > 0 ? std::string("skipped rows") : std::string();
  });
}

TEST(ParserFuzz, HostLists) {
  fuzz("gpu-[01-04,7],cpu-[1-2]-n[1-3],login", 11, 5000, "[]-,0123456789a", [](const std::string& t) {
    auto r = expand_hostlist(t);
    if (r.ok()) {
      if (r->size() > kMaxHostlistNames) return std::string("more names than the limit");
      return std::string();
    }
    return r.error().message.empty() ? std::string("(empty message)") : r.error().message;
  });
}

TEST(ParserFuzz, Ec2Topology) {
  const std::string valid = read_data("topology/ec2_p5_3layer.json");
  ASSERT_FALSE(valid.empty());
  const Catalog catalog = Catalog::builtin();
  fuzz(valid, 13, 1500, "{}[]\":,0123456789 ", [&](const std::string& t) {
    auto r = interop::import_ec2_topology(t, catalog);
    if (r.ok()) return std::string();
    return r.error().message.empty() ? std::string("(empty message)") : r.error().message;
  });
}

TEST(ParserFuzz, KubernetesManifests) {
  const std::string valid = read_data("k8s/hyperpod_pytorchjob.yaml");
  ASSERT_FALSE(valid.empty());
  fuzz(valid, 17, 1500, "-:[]{}'\"# \n0123456789Gmi", [](const std::string& t) {
    YAML::Node doc;
    try {
      doc = YAML::Load(t);
    } catch (const YAML::Exception& e) {
      return std::string("yaml: ") + e.what();  // the CLI reports these with the line; not the mapper's job
    }
    if (!interop::is_k8s_manifest(doc)) return std::string("not a manifest");
    auto r = interop::job_from_manifest(doc, "fuzz.yaml");
    if (r.ok()) return std::string();
    return r.error().message.empty() ? std::string("(empty message)") : r.error().message;
  });
}

TEST(ParserFuzz, KubernetesQuantities) {
  for (const char* valid : {"1500m", "96", "512Gi", "1.5Ti", "100M"}) {
    fuzz(valid, 19, 500, "0123456789.eEkKmMgGiT-+", [](const std::string& t) {
      auto c = interop::parse_cpu_milli(t);
      auto m = interop::parse_memory_mib(t);
      if (c.ok() && *c < 0) return std::string("negative cpu");
      if (m.ok() && *m < 0) return std::string("negative memory");
      if (c.ok() || m.ok()) return std::string();
      return c.error().message.empty() || m.error().message.empty() ? std::string("(empty message)") : c.error().message;
    });
  }
}

}  // namespace
}  // namespace allot::parser_fuzz_test
