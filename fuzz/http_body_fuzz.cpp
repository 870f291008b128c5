// Request bodies of the HTTP API, read the way the endpoints read them (server/api/api.h, the readers in
// config/, server/lifecycle/agents.h and server/api/registration.h). The first byte picks the endpoint and the
// Content-Type; the rest is the body. Bodies the server accepts are then written as the journal writes
// them (store/spec_json.h) and read back, which must give the same spec: a body that passes the checks but
// cannot be journaled would fail inside the writer instead of with a 400.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "config/spec_yaml.h"
#include "config/yaml_read.h"
#include "fuzz_checks.h"
#include "server/lifecycle/agents.h"
#include "server/api/api.h"
#include "server/api/registration.h"
#include "store/spec_json.h"

namespace {

using namespace allot;
using nlohmann::json;
const YamlContext kBody{"request body", "", 0};

const Catalog& catalog() {
  static const Catalog c = Catalog::builtin();
  return c;
}

// Writes a spec as the journal does and reads it back.
template <typename Spec, typename Read>
void journal_round_trip(const Spec& spec, Read read, const char* what) {
  std::string text;
  try {
    text = store::to_json(spec).dump();
  } catch (const json::exception& e) {
    fuzz::fail(what, std::string("an accepted body cannot be journaled: ") + e.what());
  }
  fuzz::require(read(json::parse(text)) == spec, what, text);
}

void registration(const httplib::Request& req) {
  auto body = server::json_body(req);
  if (!fuzz::accepted(body, "json_body")) return;
  fuzz::accepted(server::parse_registration(*body, catalog()), "parse_registration");
}

void heartbeat(const httplib::Request& req) {
  auto body = req.body.empty() ? Result<json>(json::object()) : server::json_body(req);
  if (!fuzz::accepted(body, "json_body")) return;
  fuzz::accepted(server::parse_heartbeat(*body), "parse_heartbeat");
}

void submit(const httplib::Request& req) {
  auto doc = server::yaml_body(req);
  if (!fuzz::accepted(doc, "yaml_body")) return;
  auto spec = parse_job_spec(*doc, catalog(), kBody);
  if (!fuzz::accepted(spec, "parse_job_spec")) return;
  journal_round_trip(*spec, store::job_from_json, "job spec journal round trip");
}

void policy(const httplib::Request& req) {
  auto doc = server::yaml_body(req);
  if (!fuzz::accepted(doc, "yaml_body")) return;
  auto p = parse_policy(*doc, kBody);
  if (!fuzz::accepted(p, "parse_policy")) return;
  journal_round_trip(*p, store::policy_from_json, "policy journal round trip");
}

void team(const httplib::Request& req) {
  auto doc = server::yaml_body(req);
  if (!fuzz::accepted(doc, "yaml_body")) return;
  if (!(*doc)["name"]) (*doc)["name"] = "fuzz-team";  // as PUT /v1/teams/{name} does with the path's name
  auto t = parse_team(*doc, catalog(), kBody);
  if (!fuzz::accepted(t, "parse_team")) return;
  journal_round_trip(*t, store::team_from_json, "team journal round trip");
}

// POST /v1/apply: a scenario file's policy and teams sections (server/api/api_config.cpp).
void apply(const httplib::Request& req) {
  auto doc = server::yaml_body(req);
  if (!fuzz::accepted(doc, "yaml_body")) return;
  auto fields = config::Fields::open(kBody, config::root(*doc, kBody), {"name", "policy", "teams"});
  if (!fuzz::accepted(fields, "apply")) return;
  if (auto p = fields->get("policy")) fuzz::accepted(parse_policy(p->node, config::sub(kBody, *p)), "parse_policy");
  if (auto t = fields->get("teams")) {
    auto teams = parse_teams(t->node, catalog(), config::sub(kBody, *t));
    if (!fuzz::accepted(teams, "parse_teams")) return;
    for (const TeamSpec& team : *teams) journal_round_trip(team, store::team_from_json, "team journal round trip");
  }
}

void nodes(const httplib::Request& req) {
  auto list = parse_nodes_text(req.body, catalog(), "request body");
  if (!fuzz::accepted(list, "parse_nodes_text")) return;
  for (const NodeSpec& n : *list) journal_round_trip(n, store::node_from_json, "node journal round trip");
}

// PUT /v1/nodes/{name}/health and PUT /v1/priority-classes/{name}: small mappings read with config/.
void small_mapping(const httplib::Request& req) {
  auto doc = server::yaml_body(req);
  if (!fuzz::accepted(doc, "yaml_body")) return;
  auto fields = config::Fields::open(kBody, config::root(*doc, kBody), {"health", "name", "weight"});
  if (!fuzz::accepted(fields, "Fields::open")) return;
  if (auto h = fields->get("health"))
    fuzz::accepted(config::read_choice(kBody, *h, {"Schedulable", "Unschedulable", "UnschedulablePendingReboot",
                                                   "UnschedulablePendingReplacement"}),
                   "read_choice");
  if (auto n = fields->get("name")) fuzz::accepted(config::read_name(kBody, *n), "read_name");
  if (auto w = fields->get("weight")) fuzz::accepted(config::read_int(kBody, *w, 0, 100), "read_int");
}

using Endpoint = void (*)(const httplib::Request&);
constexpr Endpoint kEndpoints[] = {registration, heartbeat, submit, policy, team, apply, nodes, small_mapping};
constexpr size_t kCount = sizeof(kEndpoints) / sizeof(kEndpoints[0]);
// The seeds in fuzz/corpus/http_body start with '0'..'7' (0x30..0x37), which picks application/json.
const char* const kContentTypes[] = {"", "text/plain; charset=utf-8", "application/json", "application/yaml; charset=utf-8"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  httplib::Request req;
  req.body = fuzz::text_of(data + 1, size - 1);
  req.set_header("Content-Type", kContentTypes[(data[0] / kCount) % 4]);
  if (server::check_content_type(req)) return 0;
  kEndpoints[data[0] % kCount](req);
  return 0;
}
