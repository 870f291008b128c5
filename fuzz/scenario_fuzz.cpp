// Scenario files (`allot sim run FILE`): the whole YAML document through parse_scenario, which reads every
// section with config/ and the events with sim/. A parsed scenario that is small enough is also built into
// a cluster state, so what the parser lets through must be something the core accepts or refuses cleanly.
#include "fuzz_checks.h"
#include "sim/scenario.h"
#include "sim/scenario_run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  auto scenario = sim::parse_scenario(fuzz::text_of(data, size), "fuzz.yaml");
  if (!fuzz::accepted(scenario, "parse_scenario")) return 0;
  // Building the state is cheap for small clusters; host lists can name 200,000 nodes, which is slow but
  // not wrong, so larger ones stop here.
  if (scenario->nodes.size() > 256) return 0;
  auto state = sim::cluster_from_scenario(*scenario);
  if (!state) fuzz::check_rejection(state.error(), "cluster_from_scenario");
  return 0;
}
