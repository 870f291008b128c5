// The agents' endpoints: register, heartbeat (exits in, assignments out), logs. Bodies are JSON.
#include <limits>
#include <memory>

#include "auth/token.h"
#include "core/model/plans.h"
#include "core/placement/topology_levels.h"
#include "server/lifecycle/in_place_recovery.h"
#include "server/lifecycle/agents.h"
#include "server/api/api.h"
#include "server/lifecycle/heartbeat_board.h"
#include "server/http/http_server.h"
#include "server/api/log_upload.h"
#include "server/lifecycle/network_layers.h"
#include "server/lifecycle/node_lifecycle.h"
#include "server/api/registration.h"
#include "server/lifecycle/start_gate.h"
#include "server/views/views.h"

namespace allot::server {
namespace {

using nlohmann::json;

// How long an agent refused a watch (429) waits before it asks again, on heartbeats alone meanwhile.
constexpr int kWatchRetryAfterS = 60;

// Why a watch was refused, naming the flag that sets the limit, and what the agent does meanwhile.
std::string watch_refusal(const ServerOptions& o, size_t limit) {
  const std::string connections = std::to_string(o.max_connections);
  std::string why;
  if (limit == 0)
    why = "this server lets no agent watch (allot server --max-watches 0)";
  else if (o.max_watches)
    why = "this server lets at most " + std::to_string(limit) + " agents watch at once (allot server --max-watches " +
          std::to_string(limit) + "; the rest of its --max-connections " + connections + " are kept for heartbeats)";
  else
    why = "this server lets at most " + std::to_string(limit) + " agents watch at once (half of allot server --max-connections " +
          connections + ", the rest are kept for heartbeats; allot server --max-watches sets another limit)";
  return why + "; this agent learns of new work at its heartbeats and may watch again after " +
         std::to_string(kWatchRetryAfterS) + " s";
}

Status check_node_name(const std::string& name) {
  auto st = check_name(NameKind::kNode, name);
  if (!st) return Error::invalid("register: " + st.error().message);
  return st;
}

Result<std::map<std::string, std::string>> read_labels(const json& body) {
  std::map<std::string, std::string> labels;
  if (!body.contains("labels")) return labels;
  if (!body["labels"].is_object()) return Error::invalid("register: labels must be an object of strings");
  for (const auto& [k, v] : body["labels"].items()) {
    if (!v.is_string()) return Error::invalid("register: label " + k + " must be a string");
    labels[k] = v.get<std::string>();
  }
  return labels;
}

}  // namespace

Result<LogUpload> parse_log_upload(const json& b) {
  if (auto st = only_keys(b, {"job", "rank", "data", "attempt"}, "logs"); !st) return st.error();
  if (!b.contains("job") || !b["job"].is_string()) return Error::invalid("logs: job (a name) is required");
  if (!b.contains("rank") || !b["rank"].is_number_integer() || b["rank"].get<int64_t>() < 0 ||
      b["rank"].get<int64_t>() > std::numeric_limits<int>::max())
    return Error::invalid("logs: rank must be a non-negative integer");
  if (!b.contains("data") || !b["data"].is_string()) return Error::invalid("logs: data must be a string");
  LogUpload up{b["job"].get<std::string>(), static_cast<int>(b["rank"].get<int64_t>()), b["data"].get<std::string>()};
  if (b.contains("attempt")) {
    if (!b["attempt"].is_number_integer() || b["attempt"].get<int64_t>() < 0 ||
        b["attempt"].get<int64_t>() > std::numeric_limits<int>::max())
      return Error::invalid("logs: attempt must be a non-negative integer");
    up.attempt = static_cast<int>(b["attempt"].get<int64_t>());
  }
  return up;
}

Result<Registration> parse_registration(const json& body, const Catalog& catalog) {
  if (auto st = only_keys(body, {"name", "instance_type", "instance_group", "labels", "inventory", "address", "replaces",
                                 "heartbeat_interval_ms", "boot", "network_layers"}, "register"); !st)
    return st.error();
  Registration r;
  auto text = [&](const char* key, bool required) -> Result<std::string> {
    if (!body.contains(key)) {
      if (required) return Error::invalid(std::string("register: ") + key + " is required");
      return std::string();
    }
    if (!body[key].is_string()) return Error::invalid(std::string("register: ") + key + " must be a string");
    return body[key].get<std::string>();
  };
  auto name = text("name", true);
  if (!name) return name.error();
  if (auto st = check_node_name(*name); !st) return st.error();
  auto type = text("instance_type", true);
  if (!type) return type.error();
  auto id = catalog.lookup(*type);
  if (!id) return Error::invalid("register: " + id.error().message);
  auto group = text("instance_group", false);
  if (!group) return group.error();
  auto address = text("address", false);
  if (!address) return address.error();
  auto labels = read_labels(body);
  if (!labels) return labels.error();
  if (body.contains("inventory") && !body["inventory"].is_object()) return Error::invalid("register: inventory must be an object");
  auto replaces = text("replaces", false);
  if (!replaces) return replaces.error();
  if (!replaces->empty())
    if (auto st = check_node_name(*replaces); !st) return st.error();
  if (body.contains("heartbeat_interval_ms")) {
    const json& v = body["heartbeat_interval_ms"];
    if (!v.is_number_integer() || v.get<int64_t>() < 10 || v.get<int64_t>() > 3'600'000)
      return Error::invalid("register: heartbeat_interval_ms must be an integer 10..3600000");
    r.heartbeat_interval_ms = v.get<int64_t>();
  }
  if (body.contains("boot")) {
    const json& v = body["boot"];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1'000'000'000)
      return Error::invalid("register: boot must be a non-negative integer");
    r.boot = v.get<int>();
  }
  r.node = NodeSpec{*name, catalog.at(*id).name, *group, std::move(*labels)};
  if (body.contains("network_layers")) {
    const json& v = body["network_layers"];
    std::vector<std::string> layers;
    if (!v.is_array()) return Error::invalid("register: network_layers must be an array of 3 or 4 network node ids, top first");
    for (const auto& l : v) {
      if (!l.is_string()) return Error::invalid("register: network_layers must be strings");
      layers.push_back(l.get<std::string>());
    }
    if (auto st = check_network_layers(layers); !st) return Error::invalid("register: " + st.error().message);
    // The layers replace whatever layer labels the registration also gave, in either spelling.
    for (int l = 1; l <= kMaxNetworkLayers; ++l) {
      r.node.labels.erase(network_layer_key(l));
      r.node.labels.erase(short_level(network_layer_key(l)));
    }
    for (size_t l = 0; l < layers.size(); ++l) r.node.labels[network_layer_key(static_cast<int>(l) + 1)] = layers[l];
    r.network_layers = std::move(layers);
  }
  r.address = address->empty() ? "127.0.0.1" : *address;
  r.replaces = *replaces;
  return r;
}

namespace {

// The live agent token bound to a node, if any.
const TokenInfo* node_credential(const ServerState& st, const std::string& node) {
  for (const auto& [id, t] : *st.tokens)
    if (!t.revoked && t.token.role == auth::Role::kAgent && t.token.node == node) return &t;
  return nullptr;
}

// Whether `now` names the same machine as `registered` with its GPUs partitioned otherwise: both are the same base
// type or MIG types of it (core/model/mig.h), and they differ.
bool mig_layout_change(const Catalog& catalog, TypeId registered, const std::string& now) {
  const auto other = catalog.find(now);
  if (!other || *other == registered) return false;
  auto gpus_of = [&](TypeId t) { return catalog.at(t).is_mig() ? catalog.at(t).mig_base : catalog.at(t).name; };
  return gpus_of(registered) == gpus_of(*other);
}

// Whether an agent credential of `node` was ever revoked (by an admin, or when the node was replaced).
bool credential_revoked(const ServerState& st, const std::string& node) {
  for (const auto& [id, t] : *st.tokens)
    if (t.revoked && t.token.role == auth::Role::kAgent && t.token.node == node) return true;
  return false;
}

// What a join token may register (docs/security.md, "Join tokens"): only a name that is not in the cluster and
// whose credential was never revoked, and at most --max-nodes of them; a join token an admin made for one node
// (`allot node adopt NAME`) registers that name alone, once, whether the node exists or its credential was
// revoked. Never a name whose agent holds a live credential.
Status check_join(const ServerState& st, const ClusterState& cluster, const store::TokenRecord& join, const std::string& name) {
  if (!join.node.empty() && join.node != name)
    return Error::denied("register: join token " + join.id + " was made for node " + join.node + " alone, not " + name);
  const int limit = !join.node.empty() ? 1 : join.max_nodes;
  if (limit > 0 && joins_of(*st.tokens, join.id) >= limit)
    return Error::denied("register: join token " + join.id + " has registered the " + std::to_string(limit) + " node" +
                         (limit == 1 ? "" : "s") + " it was made for (--max-nodes " + std::to_string(limit) +
                         "); an admin makes another: allot token create --role agent-join --max-nodes N");
  if (const TokenInfo* cred = node_credential(st, name))
    return Error::precondition("node " + name + " already has an agent credential (token " + cred->token.id +
                               "); its agent registers with that credential (kept in its work directory). To join "
                               "it anew, an admin revokes that token (allot token revoke " + cred->token.id +
                               ") and adopts the node: allot node adopt " + name);
  if (!join.node.empty()) return ok_status();
  if (cluster.find_node(name))
    return Error::precondition("node " + name + " is already in the cluster, and a join token registers only new names; "
                               "an admin adopts an existing node with a token made for it alone: allot node adopt " + name);
  if (credential_revoked(st, name))
    return Error::denied("register: the credential of node " + name + " was revoked, so the name joins again only with a "
                         "token an admin makes for it: allot node adopt " + name);
  return ok_status();
}

// Registration (docs/security.md, "Agents"). An agent-join token registers a node as check_join allows and gets a
// credential bound to that node name, shown once in the answer; from then on only that credential acts for the
// node. Nobody can re-register a node to move its address (MASTER_ADDR of its jobs) or its type.
Result<Render> register_node(Txn& txn, const ServerOptions& options, const Registration& r, const auth::Caller& who,
                             const auth::IssuedToken& fresh) {
  const std::string& name = r.node.name;
  if (who.role == auth::Role::kAgent && who.node != name)
    return denied(who, "registering node " + name, "an agent-join token or the agent token of node " + name);
  const Node* n = txn.cluster().find_node(name);
  if (auto it = txn.state().retired.find(name); it != txn.state().retired.end() && !n)
    return Error::precondition("register: node " + name + " was retired and replaced by " + it->second +
                               "; its agent stops here (a machine that is healthy again joins under a new name)");
  const bool joining = who.role == auth::Role::kAgentJoin;
  if (joining) {
    auto join = txn.state().tokens->find(who.token_id);
    if (join == txn.state().tokens->end()) return Error::unauthenticated("the bearer token is not valid");
    if (auto st = check_join(txn.state(), txn.cluster(), join->second.token, name); !st) return st.error();
  }
  // A replacement boots again with the command line its provisioner gave it (--replaces OLD): once it has joined, its
  // credential speaks for it, and the replacement it names is the one it already made (docs/resiliency.md).
  const bool rebooted_replacement = !joining && n && !r.replaces.empty() && [&] {
    auto it = txn.state().retired.find(r.replaces);
    return it != txn.state().retired.end() && it->second == name;
  }();
  const std::string replaces = rebooted_replacement ? "" : r.replaces;
  if (!replaces.empty() && !joining)
    return Error::denied("register: only an agent-join token registers a replacement (node " + name + " replaces " + replaces + ")");
  if (!n) {
    if (!replaces.empty()) {
      // Checked before anything changes: an error must leave nothing behind.
      const Node* old = txn.cluster().find_node(replaces);
      if (!old || old->health != NodeHealth::kUnschedulablePendingReplacement)
        return Error::precondition("register: node " + replaces + " is not waiting for a replacement (it is " +
                                   (old ? node_health_name(old->health) : "not in the cluster") + ")");
    }
    auto st = txn.apply(store::AddNode{r.node, r.address, true});
    if (!st) return st.error();
    if (auto lc = on_register(txn, options, name, true, replaces); !lc) return lc.error();
  } else {
    // A node's plan is fixed when it joins: an agent cannot move its node into a plan, out of one, or to another
    // (it would take a plan's place, or its quota, that another node holds).
    const auto label = r.node.labels.find(std::string(kPlanLabel));
    const std::string claimed = label == r.node.labels.end() ? "" : label->second;
    const std::string holds = n->plan.valid() ? txn.cluster().plans[n->plan.index()].spec.name : "";
    if (claimed != holds)
      return Error::precondition("node " + name + (holds.empty() ? " is on no capacity plan" : " is on plan " + holds) +
                                 ", not " + (claimed.empty() ? "on none" : "on plan " + claimed) +
                                 "; a node's plan is set when it joins (an admin removes the node first: allot node remove " + name + ")");
    const std::string known = txn.cluster().catalog.at(n->type).name;
    if (known != r.node.instance_type) {
      if (!mig_layout_change(txn.cluster().catalog, n->type, r.node.instance_type))
        return Error::precondition("node " + name + " is registered as " + known + ", not " + r.node.instance_type +
                                   "; remove it first (DELETE /v1/nodes/" + name + ")");
      // The same machine with its GPUs partitioned anew (docs/mig.md): the node leaves and joins again as its new
      // type, so the jobs on devices that are gone are suspended (with the reason) and placed again elsewhere.
      const std::string cause = "its MIG layout changed from " + known + " to " + r.node.instance_type +
                                " (the agent registered again)";
      if (auto st = txn.apply(store::RemoveNode{name, cause}); !st) return st.error();
      if (auto st = txn.apply(store::AddNode{r.node, r.address, true}); !st) return st.error();
      n = txn.cluster().find_node(name);
    }
    const NodeInfo& info = txn.state().nodes[name];
    if (info.agent && info.address != r.address)
      return Error::precondition("node " + name + " is registered at address " + info.address + ", not " + r.address +
                                 "; an agent cannot move a node (its jobs' ranks connect to that address): an admin "
                                 "removes the node first (allot node remove " + name + " or DELETE /v1/nodes/" + name + ")");
    // A node the lifecycle holds (a reboot, a replacement or a deep check under way) stays where it is: its
    // health reports move it on (server/lifecycle/node_lifecycle.h).
    const bool held = n->health != NodeHealth::kSchedulable &&
                      (info.cause == store::HealthCause::kHealthCheck || info.cause == store::HealthCause::kDeepCheck ||
                       n->health == NodeHealth::kUnschedulablePendingReplacement);
    if (!replaces.empty()) return Error::precondition("register: node " + name + " is already in the cluster; a replacement registers under a new name");
    if (!held && (n->health != NodeHealth::kSchedulable || info.address != r.address || !info.agent)) {
      auto st = txn.apply(store::NodeHealthChange{name, NodeHealth::kSchedulable, store::HealthCause::kAgent, r.address, "the agent registered again"});
      if (!st) return st.error();
    }
    // An agent started with another EC2 topology file than its node's layers: the same record as an apply, for
    // this node; its running replicas stay (docs/topology.md, "Live nodes").
    if (r.network_layers && network_layers_of(*txn.cluster().find_node(name)) != *r.network_layers)
      if (auto st = txn.apply(store::SetNetworkLayers{{NodeLayers{name, *r.network_layers}}}); !st) return st.error();
  }
  std::string credential;
  if (joining) {
    store::TokenRecord t{fresh.id, fresh.secret_hash, auth::Role::kAgent, {}, name, 0,
                         "agent credential of node " + name + " (joined with token " + who.token_id + ")", 0, who.token_id};
    if (auto st = txn.apply(store::CreateToken{std::move(t)}); !st) return st.error();
    credential = fresh.bearer;
  }
  NodeInfo& info = txn.state().nodes[name];
  info.last_heartbeat_ms = txn.now_ms();
  txn.state().nodes_touched.push_back(name);
  if (r.heartbeat_interval_ms > 0 && r.heartbeat_interval_ms != info.heartbeat_interval_ms) {
    info.heartbeat_interval_ms = r.heartbeat_interval_ms;
    txn.state().round_nodes_changed = true;  // it may miss a heartbeat sooner (round_nodes.h)
  }
  info.boot = r.boot;
  return Render([name, credential, timeout = options.heartbeat_timeout.count()](const ServerState& st) -> Reply {
    const Node* node = st.cluster.find_node(name);
    if (!node) return error_reply(Error::not_found("no node named " + name + " in the cluster"));
    json out = node_view(st, *node);
    // The failure timeout the agent fences itself by (it stops its replicas when it cannot heartbeat for
    // about this long).
    out["heartbeat_timeout_ms"] = timeout;
    // The only time the credential's secret leaves the server: the agent keeps it for its restarts.
    if (!credential.empty()) out["credential"] = credential;
    return json_reply(200, out);
  });
}

Result<Render> heartbeat(Txn& txn, const ServerOptions& options, const std::string& name, std::vector<ReplicaReport> reports,
                         const std::optional<HealthReport>& health) {
  const Node* n = txn.cluster().find_node(name);
  if (!n) return Error::not_found("no node named " + name + " in the cluster; register it first (POST /v1/agents/register)");
  NodeInfo& info = txn.state().nodes[name];
  info.last_heartbeat_ms = txn.now_ms();
  txn.state().nodes_touched.push_back(name);
  // Only a health the server set because heartbeats stopped is undone by a heartbeat; an administrator's is not.
  if (info.timed_out && n->health == NodeHealth::kUnschedulablePendingReboot) {
    auto st = txn.apply(store::NodeHealthChange{name, NodeHealth::kSchedulable, store::HealthCause::kAgent, "", "heartbeats resumed"});
    if (!st) return st.error();
  }
  if (health) on_health_report(txn, options, name, *health);
  note_pulls(txn, name, reports);
  note_starts(txn, name, reports);  // before the exits: an exit may end the run
  note_recovered(txn, name, reports);
  apply_exits(txn, name, reports, options);
  note_replica_cpus(txn, name, reports);
  note_heartbeat(txn.state(), name, reports);
  // The same answer as a heartbeat answered off the writer gets (heartbeat_board.h), from the state after the batch.
  return Render([&options, name, reports = std::move(reports)](const ServerState& st) {
    return json_reply(200, render_heartbeat(node_answer(st, options, name), options, reports));
  });
}

}  // namespace

void add_agent_routes(Routes& http, Api& api) {
  route(http, api, "POST", "/v1/agents/register", Access::kRegister, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto reg = parse_registration(*body, api.catalog);
    if (!reg) return answer(res, error_reply(reg.error()));
    // The audit trail names the node a registration names, joined or refused.
    const std::string node = reg->node.name;
    run(api, who, req, res, [&api, r = std::move(*reg), who, fresh = auth::issue_token()](Txn& txn) {
      return register_node(txn, api.options, r, who, fresh);
    }, node);
  });
  route(http, api, "POST", R"(/v1/agents/([^/]+)/heartbeat)", Access::kAgent, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = req.body.empty() ? Result<json>(json::object()) : json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    std::optional<HealthReport> health;
    if (body->is_object() && body->contains("health")) {
      auto h = parse_health_report((*body)["health"]);
      if (!h) return answer(res, error_reply(h.error()));
      health = std::move(*h);
      body->erase("health");
    }
    auto reports = parse_heartbeat(*body);
    if (!reports) return answer(res, error_reply(reports.error()));
    // A heartbeat that changes nothing but the node's time is answered here, off the writer (heartbeat_board.h);
    // route() has checked that the caller is this node's agent.
    const std::string name = param(req);
    if (auto fast = api.writer.heartbeats().try_answer(name, api.options, *reports, health)) return answer(res, json_reply(200, *fast));
    // Heartbeats are not audited (docs/security.md): at one per node per second they would crowd the audit trail
    // and journal a record for each.
    answer(res, api.writer.call([&api, name, reports = std::move(*reports), health = std::move(health)](Txn& txn) {
      return heartbeat(txn, api.options, name, reports, health);
    }, CallContext{actor_of(who), std::nullopt}));
  });
  // Long poll: answered when the node's run tag differs from `known`, with the node's run list and orders
  // (heartbeat_board.h), so that the agent starts new work at once instead of at its next heartbeat. It reads the
  // board, never the writer; route() has checked that the caller is this node's agent.
  route(http, api, "GET", R"(/v1/agents/([^/]+)/changes)", Access::kAgent, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    auto wait_ms = query_int(req, "wait_ms", 0, 60000);
    if (!wait_ms) return answer(res, error_reply(wait_ms.error()));
    const std::string known = req.has_param("known") ? req.get_param_value("known") : "";
    if (known.size() > 16 || known.find_first_not_of("0123456789abcdef") != std::string::npos)
      return answer(res, error_reply(Error::invalid("known: \"" + known.substr(0, 40) +
                                                    "\" is not a run tag (up to 16 lowercase hex digits, from a heartbeat answer's run_tag)")));
    // A waiting watch holds a connection (parked, without a thread: http_server.h): at most --max-watches of them
    // may wait (half of --max-connections by default), the rest stay for heartbeats.
    HeartbeatBoard& board = api.writer.heartbeats();
    const std::string node = param(req);
    const auto now = std::chrono::steady_clock::now();
    const std::optional<Resumed> resumed = resumed_request();
    if (resumed && (resumed->woken || now >= resumed->until))
      return answer(res, json_reply(200, render_changes(board.current(node).get())));  // what wait_for_change returns then
    if (resumed) {
      board.add_watcher();  // admitted at its first run, and waiting again
    } else {
      const size_t limit = watch_limit(api.options);
      if (!board.try_add_watcher(limit)) {
        answer(res, error_reply(429, "TooManyWatches", watch_refusal(api.options, limit)));
        res.set_header("Retry-After", std::to_string(kWatchRetryAfterS));
        return;
      }
    }
    const auto deadline = resumed ? resumed->until : now + std::chrono::milliseconds(*wait_ms);
    // Deferred: the connection parks until the board's wake or the deadline, and this runs again (resumed).
    auto ticket = std::make_shared<uint64_t>(0);
    Wake wake = defer_request(deadline, [b = &board, node, ticket] {
      if (*ticket != 0) b->unsubscribe(node, *ticket);
      b->remove_watcher();
    });
    if (wake) {
      const HeartbeatBoard::Check check = board.check_or_subscribe(node, known, std::move(wake));
      if (check.ready || deadline <= now) {
        undefer_request();  // its end (leaving the watcher count) runs once this answer is written
        if (check.ready) return answer(res, json_reply(200, render_changes(check.answer.get())));
        board.unsubscribe(node, check.ticket);
        return answer(res, json_reply(200, render_changes(board.current(node).get())));
      }
      *ticket = check.ticket;
      return;  // the answer written now is dropped
    }
    // Not deferrable (a watch with a body): it waits on this thread.
    struct Leave {
      HeartbeatBoard& b;
      ~Leave() { b.remove_watcher(); }
    } leave{board};
    const auto now_known = board.wait_for_change(node, known, deadline);
    answer(res, json_reply(200, render_changes(now_known.get())));
  });
  route(http, api, "POST", R"(/v1/agents/([^/]+)/logs)", Access::kAgent, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto upload = parse_log_upload(*body);
    if (!upload) return answer(res, error_reply(upload.error()));
    const std::string& job = upload->job;
    const int64_t rank = upload->rank;
    // The job's Job::attempt_folded, for the attempt the log's lines name (shared: on a timeout the command may
    // run after this handler returned).
    auto folded = std::make_shared<int>(0);
    // Shipping is not audited, a refusal is (as every refused change): set by the command, read once it answered.
    auto refusal = std::make_shared<std::optional<Error>>();
    Reply check = api.writer.call([job, rank, node = who.node, folded, refusal](Txn& txn) -> Result<Render> {
      const Job* j = txn.cluster().find_job(job);
      if (!j) return Error::not_found("no job named " + job);
      *folded = j->attempt_folded;
      int64_t replicas = 0;
      for (const auto& ps : j->spec.pod_sets) replicas += ps.replicas;
      if (rank >= replicas) return Error::invalid("logs: job " + job + " has no replica " + std::to_string(rank));
      // An agent writes the logs of replicas that were placed on its own node, and of no others.
      auto it = txn.state().nodes.find(node);
      if (it == txn.state().nodes.end() || !it->second.ranks_placed->count({j->id.index(), static_cast<int>(rank)})) {
        *refusal = Error::denied("logs: replica " + std::to_string(rank) + " of job " + job + " never ran on node " + node);
        return **refusal;
      }
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    }, CallContext{actor_of(who), std::nullopt});
    if (check.status == 403 && *refusal) return refuse(api, who, req, res, **refusal, job);
    if (check.status != 204) return answer(res, check);
    std::optional<LogStore::Attempt> attempt;
    if (upload->attempt >= 0) attempt = LogStore::Attempt{upload->attempt, who.node, *folded};
    auto st = api.logs.append(job, upload->rank, upload->data, attempt);
    answer(res, st ? Reply{204, "", ""} : error_reply(st.error()));
  });
}

}  // namespace allot::server
