#include "agent/attempt_journal.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/durable_file.h"

namespace allot::agent {
using nlohmann::json;

Result<AttemptJournal> AttemptJournal::load(const std::string& path) {
  AttemptJournal out;
  out.path_ = path;
  std::ifstream in(path);
  if (!in) return out;
  try {
    const json j = json::parse(in);
    for (const auto& e : j.at("attempts")) {
      StartedAttempt a;
      a.job = e.at("job").get<std::string>();
      a.rank = e.at("rank").get<int>();
      a.attempt = e.at("attempt").get<int>();
      a.dir = e.value("dir", std::string());
      a.log_path = e.value("log", std::string());
      if (e.contains("exit_code")) a.exit_code = e["exit_code"].get<int>();
      a.reported = e.value("reported", false);
      a.oom_limit_mib = e.value("oom_limit_mib", int64_t{0});
      if (e.contains("log_rule")) {
        const json& f = e["log_rule"];
        auto kind = parse_log_rule_kind(f.at("kind").get<std::string>());
        if (!kind) throw json::other_error::create(501, "log_rule: unknown kind " + f.at("kind").dump(), nullptr);
        a.log_rule = LogRuleFiring{*kind, f.at("index").get<int>(), f.at("rank").get<int>(), f.at("line").get<std::string>()};
      }
      out.entries_[a.key()] = std::move(a);
    }
  } catch (const json::exception& e) {
    // Not guessed around: a journal that cannot be read could let an attempt run twice.
    return Error::internal("the agent's journal of started attempts " + path + " is malformed (" + e.what() +
                           "); an agent that cannot tell what it started does not start anything. Remove the file "
                           "only once no replica of this node runs and the server has restarted its jobs");
  }
  return out;
}

Status AttemptJournal::save() const {
  json list = json::array();
  for (const auto& [key, a] : entries_) {
    json e = {{"job", a.job}, {"rank", a.rank}, {"attempt", a.attempt}, {"dir", a.dir}, {"log", a.log_path}};
    if (a.exit_code) e["exit_code"] = *a.exit_code;
    if (a.reported) e["reported"] = true;
    if (a.oom_limit_mib > 0) e["oom_limit_mib"] = a.oom_limit_mib;
    if (a.log_rule)
      e["log_rule"] = {{"kind", log_rule_kind_name(a.log_rule->kind)}, {"index", a.log_rule->index}, {"rank", a.log_rule->rank},
                       {"line", a.log_rule->line}};
    list.push_back(std::move(e));
  }
  return write_file_durably(path_, json{{"attempts", list}}.dump(1) + "\n");
}

Status AttemptJournal::started(StartedAttempt a) {
  entries_[a.key()] = std::move(a);
  return save();
}

Status AttemptJournal::ended(const std::string& key, int exit_code, int64_t oom_limit_mib) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return ok_status();
  it->second.exit_code = exit_code;
  it->second.oom_limit_mib = oom_limit_mib;
  return save();
}

Status AttemptJournal::log_rule_fired(const std::string& key, const LogRuleFiring& firing) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return ok_status();
  it->second.log_rule = firing;
  return save();
}

Status AttemptJournal::reported(const std::vector<std::string>& keys) {
  bool changed = false;
  for (const auto& k : keys)
    if (auto it = entries_.find(k); it != entries_.end() && !it->second.reported) it->second.reported = changed = true;
  return changed ? save() : ok_status();
}

std::vector<StartedAttempt> AttemptJournal::forget_unlisted(const std::set<std::string>& listed) {
  std::vector<StartedAttempt> gone;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.reported && !listed.count(it->first)) {
      gone.push_back(std::move(it->second));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  // A failed save keeps them in the file: the next agent reports them again (harmless) and forgets them then.
  if (!gone.empty()) (void)save();
  return gone;
}

}  // namespace allot::agent
