// The agents' endpoints: register, heartbeat (exits in, assignments out), logs. Bodies are JSON.
#include "server/agents.h"
#include "server/api.h"
#include "server/views.h"

namespace allot::server {
namespace {

using nlohmann::json;

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

struct Registration {
  NodeSpec node;
  std::string address;
};

Result<Registration> parse_registration(const json& body, const Catalog& catalog) {
  if (auto st = only_keys(body, {"name", "instance_type", "instance_group", "labels", "inventory", "address"}, "register"); !st)
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
  r.node = NodeSpec{*name, catalog.at(*id).name, *group, std::move(*labels)};
  r.address = address->empty() ? "127.0.0.1" : *address;
  return r;
}

Render node_render(const std::string& name) {
  return [name](const ServerState& st) -> Reply {
    const Node* n = st.cluster.find_node(name);
    if (!n) return error_reply(Error::not_found("no node named " + name + " in the cluster"));
    return json_reply(200, node_view(st, *n));
  };
}

Result<Render> register_node(Txn& txn, const Registration& r) {
  const Node* n = txn.cluster().find_node(r.node.name);
  if (!n) {
    auto st = txn.apply(store::AddNode{r.node, r.address, true});
    if (!st) return st.error();
  } else {
    const std::string& known = txn.cluster().catalog.at(n->type).name;
    if (known != r.node.instance_type)
      return Error::precondition("node " + r.node.name + " is registered as " + known + ", not " + r.node.instance_type +
                                 "; remove it first (DELETE /v1/nodes/" + r.node.name + ")");
    const NodeInfo& info = txn.state().nodes[r.node.name];
    if (n->health != NodeHealth::kSchedulable || info.address != r.address || !info.agent) {
      auto st = txn.apply(store::NodeHealthChange{r.node.name, NodeHealth::kSchedulable, store::HealthCause::kAgent, r.address});
      if (!st) return st.error();
    }
  }
  txn.state().nodes[r.node.name].last_heartbeat_ms = txn.now_ms();
  return node_render(r.node.name);
}

Result<Render> heartbeat(Txn& txn, const ServerOptions& options, const std::string& name, std::vector<ReplicaReport> reports) {
  const Node* n = txn.cluster().find_node(name);
  if (!n) return Error::not_found("no node named " + name + " in the cluster; register it first (POST /v1/agents/register)");
  NodeInfo& info = txn.state().nodes[name];
  info.last_heartbeat_ms = txn.now_ms();
  // Only a health the server set because heartbeats stopped is undone by a heartbeat; an administrator's is not.
  if (info.timed_out && n->health == NodeHealth::kUnschedulablePendingReboot) {
    auto st = txn.apply(store::NodeHealthChange{name, NodeHealth::kSchedulable, store::HealthCause::kAgent, ""});
    if (!st) return st.error();
  }
  apply_exits(txn, name, reports);
  return Render([&options, name, reports = std::move(reports)](const ServerState& st) {
    return json_reply(200, heartbeat_answer(st, options, name, reports));
  });
}

}  // namespace

void add_agent_routes(Routes& http, Api& api) {
  http.Post("/v1/agents/register", guarded([&api](const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto reg = parse_registration(*body, api.catalog);
    if (!reg) return answer(res, error_reply(reg.error()));
    run(api, res, [r = std::move(*reg)](Txn& txn) { return register_node(txn, r); });
  }));
  http.Post(R"(/v1/agents/([^/]+)/heartbeat)", guarded([&api](const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = req.body.empty() ? Result<json>(json::object()) : json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto reports = parse_heartbeat(*body);
    if (!reports) return answer(res, error_reply(reports.error()));
    run(api, res, [&api, name = param(req), reports = std::move(*reports)](Txn& txn) {
      return heartbeat(txn, api.options, name, reports);
    });
  }));
  http.Post(R"(/v1/agents/([^/]+)/logs)", guarded([&api](const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    if (auto st = only_keys(*body, {"job", "rank", "data"}, "logs"); !st) return answer(res, error_reply(st.error()));
    const json& b = *body;
    if (!b.contains("job") || !b["job"].is_string()) return answer(res, error_reply(Error::invalid("logs: job (a name) is required")));
    if (!b.contains("rank") || !b["rank"].is_number_integer() || b["rank"].get<int64_t>() < 0)
      return answer(res, error_reply(Error::invalid("logs: rank must be a non-negative integer")));
    if (!b.contains("data") || !b["data"].is_string()) return answer(res, error_reply(Error::invalid("logs: data must be a string")));
    const std::string job = b["job"].get<std::string>();
    const int64_t rank = b["rank"].get<int64_t>();
    Reply check = api.writer.call([job, rank](Txn& txn) -> Result<Render> {
      const Job* j = txn.cluster().find_job(job);
      if (!j) return Error::not_found("no job named " + job);
      int64_t replicas = 0;
      for (const auto& ps : j->spec.pod_sets) replicas += ps.replicas;
      if (rank >= replicas) return Error::invalid("logs: job " + job + " has no replica " + std::to_string(rank));
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
    if (check.status != 204) return answer(res, check);
    auto st = api.logs.append(job, static_cast<int>(rank), b["data"].get<std::string>());
    answer(res, st ? Reply{204, "", ""} : error_reply(st.error()));
  }));
}

}  // namespace allot::server
