// Job specs as `allot submit FILE` reads them: one YAML document through load_yaml and parse_job_spec. An
// accepted spec must survive the journal's JSON form unchanged (store/spec_json.h), since that is how the
// server keeps it.
#include <nlohmann/json.hpp>

#include "config/spec_yaml.h"
#include "fuzz_checks.h"
#include "store/spec_json.h"

namespace {
const allot::Catalog& catalog() {
  static const allot::Catalog c = allot::Catalog::builtin();
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  const YamlContext ctx{"job.yaml", "", 0};
  auto doc = load_yaml(fuzz::text_of(data, size), ctx);
  if (!fuzz::accepted(doc, "load_yaml")) return 0;
  auto spec = parse_job_spec(*doc, catalog(), ctx);
  if (!fuzz::accepted(spec, "parse_job_spec")) return 0;
  // The journal stores JSON text; names and commands that are not UTF-8 cannot be written as JSON at all,
  // which is why the server checks request bodies for UTF-8 first (server/api/api.cpp). Round-trip the rest.
  std::string dumped;
  try {
    dumped = store::to_json(*spec).dump();
  } catch (const nlohmann::json::type_error&) {
    return 0;
  }
  JobSpec back = store::job_from_json(nlohmann::json::parse(dumped));
  fuzz::require(back == *spec, "journal round trip of a job spec", dumped);
  return 0;
}
