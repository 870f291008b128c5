#include "agent/membership.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/model/spec.h"

namespace allot::agent {

namespace {

// The number of each signal a job may choose (core/model/spec.h, kMembershipSignals), on this machine.
int signal_number(std::string_view name) {
  if (name == "SIGUSR1") return SIGUSR1;
  if (name == "SIGUSR2") return SIGUSR2;
  if (name == "SIGHUP") return SIGHUP;
  if (name == "SIGWINCH") return SIGWINCH;
  if (name == "SIGURG") return SIGURG;
  return 0;
}

}  // namespace

Result<Membership> membership_from_json(const nlohmann::json& j, const std::string& slot) {
  const std::string where = "the membership of " + slot;
  if (!j.is_object()) return Error::invalid(where + " must be an object");
  Membership m;
  m.epoch = j.value("epoch", 0);
  if (m.epoch < 0) return Error::invalid(where + ": epoch must be 0 or more");
  m.signal_name = j.value("signal", std::string());
  if (!m.signal_name.empty()) {
    m.signal = signal_number(m.signal_name);
    bool allowed = false;
    for (std::string_view s : kMembershipSignals) allowed |= s == m.signal_name;
    if (!allowed || m.signal == 0) return Error::invalid(where + ": signal " + m.signal_name + " is not one a job may choose");
  }
  for (const auto& r : j.value("ranks", nlohmann::json::array()))
    m.ranks.push_back({r.at("rank").get<int>(), r.at("node").get<std::string>(), r.value("address", std::string())});
  return m;
}

nlohmann::json membership_file_json(const Assignment& a) {
  nlohmann::json ranks = nlohmann::json::array();
  if (a.membership)
    for (const MemberRank& r : a.membership->ranks) ranks.push_back({{"rank", r.rank}, {"node", r.node}, {"address", r.address}});
  return {{"job", a.job},
          {"attempt", a.attempt_shown},
          {"epoch", a.membership ? a.membership->epoch : 0},
          {"world_size", a.world_size},
          {"master_addr", a.master_addr},
          {"master_port", a.master_port},
          {"ranks", std::move(ranks)}};
}

Status write_membership(const std::string& path, const Assignment& a) {
  const std::string text = membership_file_json(a).dump() + "\n";
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::internal("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Error::internal("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  (void)::fchmod(fd, 0644);  // the umask may have taken bits away
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0)
    return Error::internal("cannot replace " + path + ": " + std::strerror(errno));
  return ok_status();
}

}  // namespace allot::agent
