#include "client/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>

#include "auth/secret_file.h"
#include "client/http_client.h"

namespace allot::client {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

Result<std::string> text_field(const YAML::Node& n, const char* key, const std::string& where) {
  if (!n[key]) return std::string();
  if (!n[key].IsScalar()) return Error::invalid(where + ": " + key + " must be a string");
  return n[key].as<std::string>();
}

}  // namespace

const ConfigContext* ClientConfig::find(const std::string& name) const {
  for (const auto& c : contexts)
    if (c.name == name) return &c;
  return nullptr;
}

ConfigContext& ClientConfig::upsert(const std::string& name) {
  for (auto& c : contexts)
    if (c.name == name) return c;
  contexts.push_back(ConfigContext{name, "", "", "", ""});
  return contexts.back();
}

std::string config_path() {
  if (auto p = env("ALLOT_CONFIG"); !p.empty()) return p;
  if (auto x = env("XDG_CONFIG_HOME"); !x.empty()) return x + "/allot/config";
  const std::string home = env("HOME");
  return (home.empty() ? std::string(".") : home) + "/.config/allot/config";
}

Result<ClientConfig> load_config(const std::string& path) {
  ClientConfig cfg;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return cfg;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return Error::invalid("config file " + path + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) return cfg;
  if (!root.IsMap()) return Error::invalid("config file " + path + ": expected a mapping with current-context and contexts");
  auto current = text_field(root, "current-context", "config file " + path);
  if (!current) return current.error();
  cfg.current = *current;
  if (root["contexts"]) {
    if (!root["contexts"].IsSequence()) return Error::invalid("config file " + path + ": contexts must be a list");
    for (size_t i = 0; i < root["contexts"].size(); ++i) {
      const YAML::Node c = root["contexts"][i];
      const std::string where = "config file " + path + ": contexts[" + std::to_string(i) + "]";
      if (!c.IsMap()) return Error::invalid(where + " must be a mapping");
      for (const auto& kv : c) {
        const std::string k = kv.first.as<std::string>();
        if (k != "name" && k != "server" && k != "token" && k != "token-file" && k != "ca")
          return Error::invalid(where + ": unknown key '" + k + "'; allowed: name, server, token, token-file, ca");
      }
      ConfigContext ctx;
      for (auto [key, field] : {std::pair{"name", &ctx.name}, std::pair{"server", &ctx.server}, std::pair{"token", &ctx.token},
                                std::pair{"token-file", &ctx.token_file}, std::pair{"ca", &ctx.ca}}) {
        auto v = text_field(c, key, where);
        if (!v) return v.error();
        *field = *v;
      }
      if (ctx.name.empty()) return Error::invalid(where + ": name is required");
      cfg.contexts.push_back(std::move(ctx));
    }
  }
  return cfg;
}

Status save_config(const std::string& path, const ClientConfig& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "current-context" << YAML::Value << config.current;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : config.contexts) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.name;
    if (!c.server.empty()) out << YAML::Key << "server" << YAML::Value << c.server;
    if (!c.token.empty()) out << YAML::Key << "token" << YAML::Value << c.token;
    if (!c.token_file.empty()) out << YAML::Key << "token-file" << YAML::Value << c.token_file;
    if (!c.ca.empty()) out << YAML::Key << "ca" << YAML::Value << c.ca;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return auth::write_secret_file(path, std::string(out.c_str()) + "\n", "the config file");
}

Result<Connection> resolve_connection(const std::string& server_flag, const std::string& token_flag,
                                      const std::string& context_flag) {
  Connection c;
  const ConfigContext* ctx = nullptr;
  ClientConfig cfg;
  std::string name = !context_flag.empty() ? context_flag : env("ALLOT_CONTEXT");
  const std::string path = config_path();
  auto loaded = load_config(path);
  if (!loaded) {
    // A broken config file matters only when nothing else says where to go.
    if (!name.empty() || server_flag.empty() || (token_flag.empty() && env("ALLOT_TOKEN").empty())) return loaded.error();
  } else {
    cfg = std::move(*loaded);
    if (name.empty()) name = cfg.current;
    if (!name.empty()) {
      ctx = cfg.find(name);
      if (!ctx && (!context_flag.empty() || !env("ALLOT_CONTEXT").empty()))
        return Error::invalid("no context named " + name + " in " + path + " (allot config get-contexts lists them)");
    }
  }
  c.server = !server_flag.empty() ? server_flag : !env("ALLOT_SERVER").empty() ? env("ALLOT_SERVER")
             : ctx && !ctx->server.empty()                                   ? ctx->server
                                                                             : kDefaultServer;
  if (!token_flag.empty()) {
    c.token = token_flag;
  } else if (!env("ALLOT_TOKEN").empty()) {
    c.token = env("ALLOT_TOKEN");
  } else if (ctx && !ctx->token.empty()) {
    c.token = ctx->token;
  } else if (ctx && !ctx->token_file.empty()) {
    auto t = auth::read_token_file(ctx->token_file);
    if (!t) return t.error();
    c.token = *t;
  }
  if (ctx) c.ca = ctx->ca;
  return c;
}

}  // namespace allot::client
