#include "server/outside/workers_file.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "auth/secret_file.h"
#include "core/model/spec.h"

namespace allot::server {
namespace {

Status only_keys(const YAML::Node& n, std::set<std::string> allowed, const std::string& where) {
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Error::invalid(where + ": unknown key '" + key + "' (allowed: " + list + ")");
    }
  }
  return ok_status();
}

Result<std::chrono::milliseconds> seconds(const YAML::Node& n, const std::string& where, int64_t min_s, int64_t max_s) {
  const int64_t s = n.as<int64_t>();
  if (s < min_s || s > max_s)
    return Error::invalid(where + ": " + std::to_string(s) + " s is out of range " + std::to_string(min_s) + ".." + std::to_string(max_s));
  return std::chrono::milliseconds(s * 1000);
}

}  // namespace

Result<MulticlusterOptions> load_workers_file(const std::string& path) {
  const std::string file = "--workers " + path;
  try {
    const YAML::Node doc = YAML::LoadFile(path);
    if (!doc.IsMap()) return Error::invalid(file + ": a map with teams, workers, lease, poll and dispatch_timeout");
    if (auto st = only_keys(doc, {"teams", "workers", "lease", "poll", "dispatch_timeout"}, file); !st) return st.error();
    MulticlusterOptions o;
    if (doc["lease"]) {
      auto v = seconds(doc["lease"], file + ": lease", 1, 86400);
      if (!v) return v.error();
      o.lease = *v;
    }
    if (doc["poll"]) {
      auto v = seconds(doc["poll"], file + ": poll", 1, 3600);
      if (!v) return v.error();
      o.poll = *v;
    }
    if (doc["dispatch_timeout"]) {
      auto v = seconds(doc["dispatch_timeout"], file + ": dispatch_timeout", 0, 86400);
      if (!v) return v.error();
      o.dispatch_timeout = *v;
    }
    if (!doc["teams"] || !doc["teams"].IsSequence() || doc["teams"].size() == 0)
      return Error::invalid(file + ": teams must list the teams whose jobs go to the workers (one at least)");
    for (const auto& t : doc["teams"]) {
      const std::string team = t.as<std::string>();
      if (auto st = check_name(NameKind::kTeam, team); !st) return Error::invalid(file + ": teams: " + st.error().message);
      o.teams.push_back(team);
    }
    if (!doc["workers"] || !doc["workers"].IsSequence() || doc["workers"].size() == 0)
      return Error::invalid(file + ": workers must list one worker cluster at least");
    std::set<std::string> names;
    for (size_t i = 0; i < doc["workers"].size(); ++i) {
      const YAML::Node w = doc["workers"][i];
      const std::string where = file + ": workers[" + std::to_string(i) + "]";
      if (!w.IsMap()) return Error::invalid(where + ": a map with name, url, token_file and ca");
      if (auto st = only_keys(w, {"name", "url", "token_file", "ca"}, where); !st) return st.error();
      for (const char* key : {"name", "url", "token_file"})
        if (!w[key]) return Error::invalid(where + ": " + key + " is required");
      WorkerCluster c{w["name"].as<std::string>(), w["url"].as<std::string>(), w["token_file"].as<std::string>(), "",
                      w["ca"] ? w["ca"].as<std::string>() : ""};
      if (auto st = check_name(NameKind::kTeam, c.name); !st)  // a DNS label, as a team's name is
        return Error::invalid(where + ": name: " + st.error().message);
      if (!names.insert(c.name).second) return Error::invalid(where + ": worker " + c.name + " is named twice");
      if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0)
        return Error::invalid(where + ": url must be http://HOST:PORT or https://HOST:PORT, got '" + c.url + "'");
      auto token = auth::read_token_file(c.token_file);
      if (!token) return Error::invalid(where + ": token_file: " + token.error().message);
      c.token = std::move(*token);
      o.workers.push_back(std::move(c));
    }
    return o;
  } catch (const YAML::Exception& e) {
    return Error::invalid(file + ": " + e.what());
  }
}

}  // namespace allot::server
