// Administrators' endpoints for nodes (list, add without an agent, remove, cordon, uncordon, drain, health)
// and the topology tree.
#include <algorithm>

#include "config/spec_yaml.h"
#include "server/lifecycle/in_place_recovery.h"
#include "server/api/api.h"
#include "server/lifecycle/network_layers.h"
#include "server/views/views.h"

namespace allot::server {
namespace {

using nlohmann::json;
Render node_render(const std::string& name, int status = 200) {
  return [name, status](const ServerState& st) -> Reply {
    const Node* n = st.cluster.find_node(name);
    if (!n) return error_reply(Error::not_found("no node named " + name + " in the cluster"));
    return json_reply(status, node_view(st, *n));
  };
}

Error no_node(const std::string& name) { return Error::not_found("no node named " + name + " in the cluster"); }

// POST /v1/nodes/{name}/{action} for the actions that take no body.
void action_route(Routes& http, Api& api, const std::string& action, std::function<store::Op(const std::string&)> op) {
  route(http, api, "POST", R"(/v1/nodes/([^/]+)/)" + action, Access::kAdmin, [&api, op](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req), op](Txn& txn) -> Result<Render> {
      if (!txn.cluster().find_node(name)) return no_node(name);
      auto st = txn.apply(op(name));
      if (!st) return st.error();
      return node_render(name);
    });
  });
}

void node_read_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/nodes", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) {
        std::vector<const Node*> nodes;
        for (const Node& n : st.cluster.nodes)
          if (!n.removed) nodes.push_back(&n);
        std::sort(nodes.begin(), nodes.end(), [](const Node* a, const Node* b) { return a->name < b->name; });
        // In pieces, read from the view as the client takes them: at 10,000 nodes the whole answer is 7.4 MB, and
        // built at once it held 66 MiB of the server's memory per request and 230 ms before the first byte.
        const size_t n = nodes.size();
        return json_array_pieces(200, n, [view = &st, nodes = std::move(nodes)](size_t i) { return node_view(*view, *nodes[i]); });
      });
    });
  });
  route(http, api, "GET", R"(/v1/nodes/([^/]+))", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      if (!txn.cluster().find_node(name)) return no_node(name);
      return node_render(name);
    });
  });
  route(http, api, "GET", "/v1/topology", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) { return json_reply(200, topology_json(st.cluster)); });
    });
  });
}

void node_change_routes(Routes& http, Api& api) {
  // Nodes without an agent (a static inventory, a dry run): the scenario format's cluster.nodes list.
  route(http, api, "POST", "/v1/nodes", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto nodes = parse_nodes_text(req.body, api.catalog, "request body");
    if (!nodes) return answer(res, error_reply(nodes.error()));
    if (nodes->empty()) return answer(res, error_reply(Error::invalid("request body lists no nodes")));
    run(api, who, req, res, [nodes = std::move(*nodes)](Txn& txn) -> Result<Render> {
      for (const NodeSpec& n : nodes)  // all or nothing: every name must be free before any node joins
        if (txn.cluster().find_node(n.name)) return Error::exists("node " + n.name + " is already in the cluster");
      std::vector<std::string> names;
      {
        // A record per node, but the topology tree is built once for all of them (issue 33: 5,000 nodes took
        // 18 s of the writer thread when it was rebuilt for each).
        ClusterState& cluster = txn.state().cluster;
        begin_node_batch(cluster);
        struct End {
          ClusterState& c;
          ~End() { end_node_batch(c); }
        } end{cluster};
        for (const NodeSpec& n : nodes) {
          auto st = txn.apply(store::AddNode{n, "", false});
          if (!st) return st.error();
          names.push_back(n.name);
        }
      }
      return Render([names](const ServerState& st) {
        json out = json::array();
        for (const auto& n : names)
          if (const Node* node = st.cluster.find_node(n)) out.push_back(node_view(st, *node));
        return json_reply(201, out);
      });
    });
  });
  route(http, api, "DELETE", R"(/v1/nodes/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      auto st = txn.apply(store::RemoveNode{name});
      if (!st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
  action_route(http, api, "cordon", [](const std::string& n) -> store::Op { return store::Cordon{n, true}; });
  action_route(http, api, "uncordon", [](const std::string& n) -> store::Op { return store::Cordon{n, false}; });
  action_route(http, api, "drain", [](const std::string& n) -> store::Op { return store::Drain{n}; });
  route(http, api, "PUT", R"(/v1/nodes/([^/]+)/health)", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    auto fields = config::Fields::open(kRequestBody, config::root(*doc, kRequestBody), {"health"});
    if (!fields) return answer(res, error_reply(fields.error()));
    auto h = fields->need(kRequestBody, "health");
    if (!h) return answer(res, error_reply(h.error()));
    const std::vector<std::string_view> names = {"Schedulable", "Unschedulable", "UnschedulablePendingReboot",
                                                 "UnschedulablePendingReplacement"};
    auto choice = config::read_choice(kRequestBody, *h, names);
    if (!choice) return answer(res, error_reply(choice.error()));
    const auto health = static_cast<NodeHealth>(*choice);  // the order of the enum
    run(api, who, req, res, [name = param(req), health](Txn& txn) -> Result<Render> {
      if (!txn.cluster().find_node(name)) return no_node(name);
      if (health != NodeHealth::kSchedulable) recover_in_place_from(txn, name);  // in_place_recovery.h
      auto st = txn.apply(store::NodeHealthChange{name, health, store::HealthCause::kAdmin, "", "set by an administrator"});
      if (!st) return st.error();
      return node_render(name);
    });
  });
  // EC2 topology on live nodes (docs/topology.md, "Live nodes"): the layers of the registered nodes the entries
  // name by instance id, as one journal record; entries no node carries are reported, not refused.
  route(http, api, "POST", "/v1/topology/apply", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto entries = parse_apply_body(*body);
    if (!entries) return answer(res, error_reply(entries.error()));
    run(api, who, req, res, [entries = std::move(*entries)](Txn& txn) -> Result<Render> {
      auto match = match_instances(txn.cluster(), entries);
      if (!match) return match.error();
      if (!match->changes.empty())  // an apply that changes nothing writes no record
        if (auto st = txn.apply(store::SetNetworkLayers{match->changes}); !st) return st.error();
      return Render([m = std::move(*match)](const ServerState&) {
        json nodes = json::array();
        for (const auto& x : m.matched)
          nodes.push_back({{"node", x.node}, {"instance_id", x.instance_id}, {"layers", x.layers}, {"changed", x.changed}});
        return json_reply(200, {{"nodes", nodes}, {"unknown", m.unknown}, {"changed", m.changes.size()}});
      });
    });
  });
}

}  // namespace

void add_node_routes(Routes& http, Api& api) {
  node_read_routes(http, api);
  node_change_routes(http, api);
}

}  // namespace allot::server
