#include "agent/team_uids.h"

#include <grp.h>
#include <pwd.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "auth/secret_file.h"

namespace allot::agent {
namespace {

bool parse_uid(std::string_view s, uid_t& out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v >= 4294967295ull) return false;
  out = static_cast<uid_t>(v);
  return true;
}

}  // namespace

Result<UidRange> parse_uid_range(std::string_view text, uid_t block) {
  const std::string shown = "--run-as-range " + std::string(text);
  const auto dash = text.find('-');
  UidRange r;
  r.block = block;
  if (dash == std::string_view::npos || !parse_uid(text.substr(0, dash), r.first) || !parse_uid(text.substr(dash + 1), r.last) || r.first > r.last)
    return Error::invalid(shown + ": not a uid range FIRST-LAST such as 1000000000-1999999999");
  if (r.first == 0) return Error::invalid(shown + ": the range must not hold uid 0 (root)");
  if (block == 0) return Error::invalid("--uids-per-team must be at least 1");
  if (r.blocks() < 2)
    return Error::invalid(shown + ": holds " + std::to_string(static_cast<uint64_t>(r.last) - r.first + 1) + " uids, fewer than two teams' " +
                          std::to_string(block) + " each (--uids-per-team); give a larger range");
  setpwent();
  while (const passwd* pw = getpwent()) {
    if (pw->pw_uid >= r.first && pw->pw_uid <= r.last) {
      const std::string name = pw->pw_name;
      const uid_t uid = pw->pw_uid;
      endpwent();
      return Error::invalid(shown + ": uid " + std::to_string(uid) + " (" + name +
                            ") of /etc/passwd is in the range, so a team's replicas could act as that user; choose uids no account uses");
    }
  }
  endpwent();
  // Replicas run with the gid of their uid's number: it must not be a group that grants something.
  setgrent();
  while (const group* gr = getgrent()) {
    if (gr->gr_gid >= r.first && gr->gr_gid <= r.last) {
      const std::string name = gr->gr_name;
      const gid_t gid = gr->gr_gid;
      endgrent();
      return Error::invalid(shown + ": gid " + std::to_string(gid) + " (group " + name +
                            ") of /etc/group is in the range, and a team's replicas run with the gid of their uid; choose ids no group uses");
    }
  }
  endgrent();
  return r;
}

uid_t team_uid(const UidRange& range, std::string_view team) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits: stable across builds and machines, unlike std::hash
  for (unsigned char c : team) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<uid_t>(range.first + (h % range.blocks()) * range.block);
}

Result<TeamUids> TeamUids::load(const std::string& path, const UidRange& range) {
  TeamUids t;
  t.path_ = path;
  t.range_ = range;
  std::ifstream in(path);
  if (!in) return t;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("blocks") || !j["blocks"].is_object())
    return Error::invalid(path + ": not the agent's team-uid registry (remove it to start afresh)");
  const bool same_range = j.value("first", int64_t{-1}) == range.first && j.value("last", int64_t{-1}) == range.last &&
                          j.value("block", int64_t{-1}) == range.block;
  if (!same_range) return t;
  for (const auto& [uid, team] : j["blocks"].items()) {
    uid_t u = 0;
    if (!parse_uid(uid, u) || !team.is_string()) return Error::invalid(path + ": a malformed entry \"" + uid + "\"");
    t.owners_[u] = team.get<std::string>();
  }
  return t;
}

Result<Identity> TeamUids::identity_for(const std::string& team, const std::string& home) {
  const uid_t uid = team_uid(range_, team);
  auto it = owners_.find(uid);
  if (it != owners_.end() && it->second != team)
    return Error::precondition("teams " + it->second + " and " + team + " would share uid " + std::to_string(uid) +
                               " (their names fall into the same block of --run-as-range), and replicas of two teams never share "
                               "a uid; this node runs " + it->second + "'s. Give the agents a larger range");
  if (it == owners_.end()) {
    owners_[uid] = team;
    nlohmann::json blocks = nlohmann::json::object();
    for (const auto& [u, t] : owners_) blocks[std::to_string(u)] = t;
    const nlohmann::json j = {{"first", range_.first}, {"last", range_.last}, {"block", range_.block}, {"blocks", blocks}};
    if (auto st = auth::write_secret_file(path_, j.dump(1) + "\n", "the team-uid registry"); !st) {
      owners_.erase(uid);
      return st.error();
    }
  }
  Identity id;
  id.uid = uid;
  id.gid = static_cast<gid_t>(uid);
  id.groups = {id.gid};
  id.name = "allot-" + std::to_string(uid);
  id.home = home;
  return id;
}

}  // namespace allot::agent
