#include "view/job_refs.h"

namespace allot::view {
namespace {

// Job and team names are Kubernetes-style names (letters, digits, '-', '.', '_').
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// The length of the name starting at `at` (0 if none); a name does not end in '.', which ends a sentence.
size_t name_length(std::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size() && name_char(text[end])) ++end;
  while (end > at && text[end - 1] == '.') --end;
  return end - at;
}

}  // namespace

std::string hide_job_refs(const RefText& text, const SeesTeamJobs& sees) {
  if (!sees) return text.str();
  if (!text.refs_known()) return scan_job_refs(text.str(), sees);
  // References are in text order (concatenation keeps them so) and never overlap.
  const std::string& t = text.str();
  std::string out;
  size_t copied = 0;
  for (const JobRef& r : text.refs()) {
    if (sees(r.team)) continue;
    out.append(t, copied, r.at - copied);
    out += "a job of team " + r.team;
    copied = r.at + r.size;
  }
  if (copied == 0) return t;
  out.append(t, copied, std::string::npos);
  return out;
}

void hide_job_refs(nlohmann::json& job_view, const Job& job, const SeesTeamJobs& sees) {
  if (!sees) return;
  if (job_view.contains("reason")) job_view["reason"] = hide_job_refs(job.reason, sees);
  // job_json() lists every transition and resize, in order.
  auto hide_list = [&](const char* list, const auto& items) {
    if (!job_view.contains(list) || !job_view[list].is_array()) return;
    auto& view = job_view[list];
    for (size_t i = 0; i < view.size() && i < items.size(); ++i) view[i]["reason"] = hide_job_refs(items[i].reason, sees);
  };
  hide_list("history", job.history);
  hide_list("resizes", job.resizes);
}

std::string scan_job_refs(std::string_view text, const SeesTeamJobs& sees) {
  if (!sees) return std::string(text);
  static constexpr std::string_view kJob = "job ", kOfTeam = " of team ";
  std::string out;
  size_t copied = 0, at = 0;
  while ((at = text.find(kJob, at)) != std::string_view::npos) {
    // Only a whole word "job" starts a reference (not the end of a longer word).
    const bool word = at == 0 || !name_char(text[at - 1]);
    const size_t name_at = at + kJob.size();
    const size_t name_len = word ? name_length(text, name_at) : 0;
    const size_t of_at = name_at + name_len;
    if (name_len == 0 || text.substr(of_at, kOfTeam.size()) != kOfTeam) {
      at = name_at;
      continue;
    }
    const size_t team_at = of_at + kOfTeam.size();
    const size_t team_len = name_length(text, team_at);
    if (team_len == 0) {
      at = team_at;
      continue;
    }
    const std::string team(text.substr(team_at, team_len));
    if (!sees(team)) {
      out.append(text.substr(copied, at - copied));
      out += "a job of team " + team;
      copied = team_at + team_len;
    }
    at = team_at + team_len;
  }
  out.append(text.substr(copied));
  return out;
}


}  // namespace allot::view
