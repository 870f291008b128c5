#include "server/outside/provisioner.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "auth/secret_file.h"
#include "server/thread_priority.h"
#include "view/label_list.h"

extern char** environ;

namespace allot::server {

void Provisioner::launch(const ProvisionRequest& r, const std::string& server_url) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    spdlog::error("node {}: cannot create {} for the provisioner: {}", r.node, dir_, ec.message());
    return;
  }
  const std::string token_file = dir_ + "/" + r.replacement + ".join-token";
  if (auto st = auth::write_secret_file(token_file, r.join_token + "\n", "the replacement's join token"); !st) {
    spdlog::error("node {}: {}", r.node, st.error().message);
    return;
  }
  const std::string log = dir_ + "/" + r.node + ".log";
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  env.push_back("ALLOT_NODE_NAME=" + r.node);
  env.push_back("ALLOT_INSTANCE_TYPE=" + r.instance_type);
  env.push_back("ALLOT_NODE_LABELS=" + view::format_label_list(r.labels));
  env.push_back("ALLOT_REPLACEMENT_NAME=" + r.replacement);
  env.push_back("ALLOT_SERVER=" + server_url);
  env.push_back("ALLOT_JOIN_TOKEN_FILE=" + token_file);
  env.push_back("ALLOT_REASON=" + r.reason);
  env.push_back("ALLOT_PLAN=" + r.plan);  // empty for a replacement
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  // The child keeps only its stdin, stdout and stderr. The server's other descriptors are not all close-on-exec (the
  // clients' connections, which cpp-httplib accepts without it): inherited, a connection the server closes would
  // stay open in the provisioner, its client waiting on it for as long as the command runs.
  rlimit files{};
  const int last_fd = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                          ? static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20))
                          : 1 << 16;
  const int raised = thread_raised();  // the writer's priority, which the command must not keep (thread_priority.h)
  pid_t pid = fork();
  if (pid < 0) {
    spdlog::error("node {}: cannot start the provisioner", r.node);
    if (out >= 0) close(out);
    return;
  }
  if (pid == 0) {
    setsid();
    back_to_process_priority_after_fork(raised);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    if (out >= 0) dup2(out, 1), dup2(out, 2);
    if (::close_range(3, ~0U, 0) != 0)  // a kernel before 5.9: one by one (nothing here may allocate)
      for (int fd = 3; fd < last_fd; ++fd) ::close(fd);
    execve("/bin/sh", const_cast<char**>(argv), envp.data());
    _exit(127);
  }
  if (out >= 0) close(out);
  running_.push_back({pid, r.node});
  if (r.plan.empty()) spdlog::info("node {}: provisioner started (pid {}) for replacement {}; output in {}", r.node, pid, r.replacement, log);
  else spdlog::info("node {}: provisioner started (pid {}) for plan {}; output in {}", r.node, pid, r.plan, log);
}

void Provisioner::reap() {
  std::erase_if(running_, [](const std::pair<pid_t, std::string>& p) {
    int status = 0;
    if (waitpid(p.first, &status, WNOHANG) != p.first) return false;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0) spdlog::info("node {}: the provisioner finished", p.second);
    else spdlog::warn("node {}: the provisioner exited with code {}", p.second, code);
    return true;
  });
}

}  // namespace allot::server
