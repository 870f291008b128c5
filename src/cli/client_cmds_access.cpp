// Access commands: `allot token create|list|revoke`, `allot audit` (admins), and `allot config
// use-context|set-context|get-contexts|current-context` (the local config file; no server needed).
#include <iostream>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/config_file.h"
#include "client/output.h"
#include "client/render.h"
#include "view/times.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::report;
using client::Session;
using nlohmann::json;

struct AccessArgs {
  ClientFlags flags;
  std::string role, node, ttl, description, id, since, team, user;
  std::vector<std::string> teams;
  int64_t limit = 1000;
  int max_nodes = 0;  // agent-join: 0 leaves it unlimited
  std::string command = "token create";  // or "node adopt", which makes a token the same way
};

// "90s", "30m", "12h", "7d" or a number of seconds.
Result<int64_t> parse_duration(const std::string& text, const std::string& flag) {
  const Error bad = Error::invalid(flag + " wants a duration such as 3600s, 30m, 12h or 7d, got '" + text + "'");
  if (text.empty()) return bad;
  size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0 || digits + 1 < text.size() || text.size() > 12) return bad;
  const int64_t n = std::stoll(text.substr(0, digits));
  const char unit = digits == std::string::npos ? 's' : text[digits];
  switch (unit) {
    case 's': return n;
    case 'm': return n * 60;
    case 'h': return n * 3600;
    case 'd': return n * 86400;
    default: return bad;
  }
}

std::string tokens_table(const json& tokens, int64_t now) {
  client::Table t({"ID", "ROLE", "SCOPE", "CREATED", "EXPIRES", "STATE", "DESCRIPTION"});
  for (const auto& k : tokens) {
    std::string scope = k.contains("node") ? "node " + client::text(k, "node") : client::join(k.value("teams", json::array()));
    if (k.contains("user")) scope += (scope.empty() ? "" : ", ") + std::string("user ") + client::text(k, "user");
    // A join token: the nodes it registered, of how many it may.
    if (k.contains("nodes_joined"))
      scope += (scope.empty() ? "" : ", ") + client::number(k["nodes_joined"]) + "/" +
               (k.contains("max_nodes") ? client::number(k["max_nodes"]) : std::string("any")) + " joined";
    std::string expires = "never";
    if (k.contains("expires_at")) {
      const int64_t at = client::time_at(k, "expires_at");
      expires = at > now ? "in " + client::ago(now, at) : "expired";
    }
    t.add({client::text(k, "id"), client::text(k, "role"), scope.empty() ? "-" : scope,
           client::ago(client::time_at(k, "created_at"), now) + " ago", expires,
           k.value("revoked", false) ? "revoked" : "active", client::text(k, "description")});
  }
  return t.empty() ? "no tokens\n" : t.str();
}

std::string audit_table(const json& entries) {
  client::Table t({"SEQ", "TIME", "TOKEN", "ROLE", "SOURCE", "ACTION", "TARGET", "STATUS", "MESSAGE"});
  for (const auto& e : entries)
    t.add({client::number(e["seq"]), client::clock_time(client::time_at(e, "at")), client::text(e, "token", "-"),
           client::text(e, "role"), client::text(e, "source", "-"), client::text(e, "action"), client::text(e, "target", "-"),
           client::number(e["status"]), client::text(e, "message")});
  return t.empty() ? "no audit entries\n" : t.str();
}

int run_token_create(Session& s, AccessArgs& a) {
  json body = {{"role", a.role}};
  if (!a.teams.empty()) body["teams"] = a.teams;
  if (!a.node.empty()) body["node"] = a.node;
  if (!a.description.empty()) body["description"] = a.description;
  if (!a.user.empty()) body["user"] = a.user;
  if (a.max_nodes > 0) body["max_nodes"] = a.max_nodes;
  if (!a.ttl.empty()) {
    auto ttl = parse_duration(a.ttl, "--ttl");
    if (!ttl) return report(a.command, ttl.error());
    body["ttl_s"] = *ttl;
  }
  auto r = s.api().post("/v1/tokens", body);
  if (!r) return report(a.command, r.error());
  return s.print(*r, [](const json& t) {
    // The token alone on stdout, so `T=$(allot token create ...)` works; what it is goes to stderr.
    std::cerr << "token " << client::text(t, "id") << " (" << client::text(t, "role") << ") made; it is shown only now\n";
    return client::text(t, "token") + "\n";
  });
}

int run_token_list(Session& s, AccessArgs&) {
  auto r = s.api().get("/v1/tokens");
  return s.show("token list", r, [](const json& t) { return tokens_table(t, client::unix_now()); });
}

int run_token_revoke(Session& s, AccessArgs& a) {
  auto r = s.api().del("/v1/tokens/" + client::url_encode(a.id));
  if (!r) return report("token revoke", r.error());
  std::cout << "token " << a.id << " revoked\n";
  return 0;
}

int run_audit(Session& s, AccessArgs& a) {
  std::map<std::string, std::string> query{{"team", a.team}, {"limit", std::to_string(a.limit)}};
  if (!a.since.empty()) {
    // A time (RFC 3339) as it is, or a duration back from now.
    if (view::parse_rfc3339(a.since)) {
      query["since"] = a.since;
    } else {
      auto d = parse_duration(a.since, "--since");
      if (!d) return report("audit", Error::invalid(d.error().message + ", or a time like 2026-11-24T20:05:00Z"));
      query["since"] = view::rfc3339(client::unix_now() - *d);
    }
  }
  auto r = s.api().get(client::with_query("/v1/audit", query));
  return s.show("audit", r, audit_table);
}

void add_token_commands(CLI::App& app, Context& ctx) {
  auto* token = app.add_subcommand("token", "Make, list and revoke bearer tokens (admins)");
  token->require_subcommand(1);
  auto a = std::make_shared<AccessArgs>();
  auto* create = token->add_subcommand("create", "Make a token and print it (shown only this once)");
  create->add_option("--role", a->role, "admin, member, viewer, agent or agent-join")->required();
  create->add_option("--team", a->teams, "A team the token acts for (member: at least one; repeat for more)");
  create->add_option("--node", a->node, "The node an agent token acts for, or the one node an agent-join token registers");
  create->add_option("--max-nodes", a->max_nodes, "agent-join: how many nodes it may register (default: no limit)")
      ->check(CLI::Range(1, 1'000'000));
  create->add_option("--ttl", a->ttl, "Lifetime, e.g. 12h or 30d (default: until revoked)");
  create->add_option("--description", a->description, "What the token is for");
  create->add_option("--user", a->user, "admin, member, viewer: the user the token acts for (its jobs carry it; a team's per-user limits apply)");
  client::add_client_flags(create, a->flags);
  on_run(create, ctx, a, "token create", run_token_create);

  auto l = std::make_shared<AccessArgs>();
  auto* list = token->add_subcommand("list", "List tokens: id, role, scope, state (never secrets)");
  client::add_client_flags(list, l->flags);
  on_run(list, ctx, l, "token list", run_token_list);

  auto r = std::make_shared<AccessArgs>();
  auto* revoke = token->add_subcommand("revoke", "Revoke a token: it stops working at once");
  revoke->add_option("ID", r->id, "Token id (allot token list)")->required();
  client::add_client_flags(revoke, r->flags);
  on_run(revoke, ctx, r, "token revoke", run_token_revoke);

  auto au = std::make_shared<AccessArgs>();
  auto* audit = app.add_subcommand("audit", "Who changed what, when, with which token, and the answer (admins)");
  audit->add_option("--since", au->since, "Only entries newer than this: a duration back from now (1h, 7d) or an RFC 3339 time (2026-11-24T20:05:00Z)");
  audit->add_option("--team", au->team, "Only changes by the team's tokens or about the team or its jobs");
  audit->add_option("--limit", au->limit, "At most this many (the newest)")->capture_default_str();
  client::add_client_flags(audit, au->flags);
  on_run(audit, ctx, au, "audit", run_audit);
}

struct ConfigArgs {
  std::string name, server, token, token_file, ca;
};

int with_config(const std::string& what, const std::function<int(client::ClientConfig&, const std::string&)>& body) {
  const std::string path = client::config_path();
  auto cfg = client::load_config(path);
  if (!cfg) return report(what, cfg.error());
  return body(*cfg, path);
}

void add_config_commands(CLI::App& app, Context& ctx) {
  auto* config = app.add_subcommand("config", "Contexts of the CLI's config file (server URL and token per context)");
  config->require_subcommand(1);
  auto a = std::make_shared<ConfigArgs>();

  auto* use = config->add_subcommand("use-context", "Make a context the current one");
  use->add_option("NAME", a->name)->required();
  use->callback([a, &ctx] {
    ctx.exit_code = with_config("config use-context", [&](client::ClientConfig& cfg, const std::string& path) {
      if (!cfg.find(a->name))
        return report("config use-context", Error::not_found("no context named " + a->name + " in " + path));
      cfg.current = a->name;
      if (auto st = client::save_config(path, cfg); !st) return report("config use-context", st.error());
      std::cout << "switched to context " << a->name << "\n";
      return 0;
    });
  });

  auto* set = config->add_subcommand("set-context", "Create or change a context (and make it current when it is the only one)");
  set->add_option("NAME", a->name)->required();
  set->add_option("--server", a->server, "Server URL");
  set->add_option("--token", a->token, "Bearer token, kept in the file (mode 0600)");
  set->add_option("--token-file", a->token_file, "A file to read the token from instead");
  set->add_option("--ca", a->ca, "CA certificate to verify an https server with");
  set->callback([a, &ctx] {
    ctx.exit_code = with_config("config set-context", [&](client::ClientConfig& cfg, const std::string& path) {
      client::ConfigContext& c = cfg.upsert(a->name);
      if (!a->server.empty()) c.server = a->server;
      if (!a->token.empty()) c.token = a->token, c.token_file.clear();
      if (!a->token_file.empty()) c.token_file = a->token_file, c.token.clear();
      if (!a->ca.empty()) c.ca = a->ca;
      if (cfg.current.empty()) cfg.current = a->name;
      if (auto st = client::save_config(path, cfg); !st) return report("config set-context", st.error());
      std::cout << "context " << a->name << " saved in " << path << "\n";
      return 0;
    });
  });

  auto* get = config->add_subcommand("get-contexts", "List the contexts (tokens are not shown)");
  get->callback([&ctx] {
    ctx.exit_code = with_config("config get-contexts", [&](client::ClientConfig& cfg, const std::string&) {
      client::Table t({"CURRENT", "NAME", "SERVER", "TOKEN"});
      for (const auto& c : cfg.contexts)
        t.add({c.name == cfg.current ? "*" : "", c.name, c.server.empty() ? "-" : c.server,
               !c.token_file.empty() ? "file " + c.token_file : c.token.empty() ? "-" : "set"});
      std::cout << (t.empty() ? "no contexts\n" : t.str());
      return 0;
    });
  });

  auto* current = config->add_subcommand("current-context", "Print the current context's name");
  current->callback([&ctx] {
    ctx.exit_code = with_config("config current-context", [&](client::ClientConfig& cfg, const std::string& path) {
      if (cfg.current.empty()) return report("config current-context", Error::not_found("no current context in " + path));
      std::cout << cfg.current << "\n";
      return 0;
    });
  });
}

}  // namespace

void add_node_adopt_command(CLI::App& node, Context& ctx) {
  auto a = std::make_shared<AccessArgs>();
  a->role = "agent-join";
  a->ttl = "24h";
  a->command = "node adopt";
  auto* adopt = node.add_subcommand("adopt", "Print a join token for this one node: an existing node (added by an admin) "
                                             "or a name whose credential was revoked joins only with such a token");
  adopt->add_option("name", a->node, "Node name")->required();
  adopt->add_option("--ttl", a->ttl, "Lifetime of the token")->capture_default_str();
  client::add_client_flags(adopt, a->flags);
  adopt->callback([&ctx, a] {
    a->description = "adoption of node " + a->node;
    auto s = Session::open(a->flags);
    ctx.exit_code = s ? run_token_create(*s, *a) : report("node adopt", s.error());
  });
}

void add_client_access_commands(CLI::App& app, Context& ctx) {
  add_token_commands(app, ctx);
  add_config_commands(app, ctx);
}

}  // namespace allot::cli
