// Kueue objects as `allot import kueue` reads them (interop/kueue.h): ClusterQueues, LocalQueues, Cohorts and
// WorkloadPriorityClasses in a multi-document YAML file, with Kubernetes quantities in their quotas. Beyond "no
// crash", what an accepted file imports to must be a teams file allot reads back: its policy and teams sections
// pass the same readers as `allot apply` and a scenario's (config/spec_yaml.h).
#include "config/spec_yaml.h"
#include "fuzz_checks.h"
#include "interop/kueue.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  const Catalog catalog = Catalog::builtin();
  interop::KueueImport result;
  const Status st = interop::import_kueue(fuzz::text_of(data, size), "kueue.yaml", catalog, result);
  if (!st) {
    fuzz::check_rejection(st.error(), "import_kueue");
    return 0;
  }
  // Cohorts that are not a tree (an unknown parent, a cycle) are refused here, with a message like any rejection.
  if (const Status done = interop::finish_kueue_import(result); !done) {
    fuzz::check_rejection(done.error(), "finish_kueue_import");
    return 0;
  }
  const std::string teams = interop::teams_file_yaml(result);
  const YamlContext ctx{"teams.yaml", "", 0};
  auto doc = load_yaml(teams, ctx);
  if (!doc) fuzz::fail("teams_file_yaml", "wrote YAML that does not read back: " + doc.error().message + "\n" + teams);
  if (const YAML::Node policy = (*doc)["policy"]) {
    auto p = parse_policy(policy, YamlContext{"teams.yaml", "policy", 0});
    if (!p) fuzz::fail("teams_file_yaml", "wrote a policy allot refuses: " + p.error().message + "\n" + teams);
  }
  auto t = parse_teams((*doc)["teams"], catalog, YamlContext{"teams.yaml", "teams", 0});
  if (!t) fuzz::fail("teams_file_yaml", "wrote teams allot refuses: " + t.error().message + "\n" + teams);
  return 0;
}
