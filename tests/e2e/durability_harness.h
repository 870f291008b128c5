#pragma once
// Helpers for end-to-end tests of `allot server`: a temporary data directory, the server as a child process
// on a free loopback port (read from its first line of output), kill -9, and a JSON client. Everything is
// bounded in time; the destructors kill what is left and remove the directory.
#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace e2e {

inline int failures = 0;
#define E2E_CHECK(cond, what)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::cerr << "FAIL " << __FILE__ << ":" << __LINE__ << ": " << what << "\n"; \
      ++e2e::failures;                                                          \
    }                                                                           \
  } while (0)

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "allot-e2e-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `allot server --listen 127.0.0.1:0 --data DIR ...` as a child process.
class ServerProcess {
 public:
  ServerProcess(std::string allot, std::string data_dir, std::vector<std::string> extra = {})
      : allot_(std::move(allot)), data_(std::move(data_dir)), extra_(std::move(extra)) {}
  ~ServerProcess() { kill9(); }

  // Starts the server and waits (up to 20 s) for it to say where it listens.
  bool start() {
    int out[2];
    if (pipe(out) != 0) return false;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      int err = open((data_ + "/server.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) dup2(err, STDERR_FILENO);
      close(out[0]);
      std::vector<std::string> args = {allot_, "server", "--listen", "127.0.0.1:0", "--data", data_};
      args.insert(args.end(), extra_.begin(), extra_.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(allot_.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline && line.find("listening on") == std::string::npos) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    // Keep reading until the end of that line.
    while (std::chrono::steady_clock::now() < deadline && line.find('\n', line.find("listening on")) == std::string::npos) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    line = line.substr(0, line.find('\n', line.find("listening on")));
    auto at = line.rfind(':');
    if (line.find("listening on") == std::string::npos || at == std::string::npos) {
      std::cerr << "server did not start; its output: " << line << "\n";
      return false;
    }
    port_ = std::atoi(line.c_str() + at + 1);
    return port_ > 0;
  }
  void kill9() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // SIGTERM and wait (up to 10 s); returns the exit status, or -1.
  int terminate() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(100'000);
    }
    kill9();
    return -1;
  }
  bool alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }
  int port() const { return port_; }
  // The bootstrap admin token the server wrote into its data directory at its first start.
  std::string admin_token() const {
    std::ifstream in(data_ + "/admin-token");
    std::string token;
    std::getline(in, token);
    return token;
  }

 private:
  std::string allot_, data_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  int port_ = 0;
};

struct Reply {
  int status = 0;  // 0: no answer (connection refused or reset)
  nlohmann::json json;
  std::string body;
};

inline Reply wrap(const httplib::Result& r) {
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.json = nlohmann::json::parse(r->body, nullptr, false);
  if (out.json.is_discarded()) out.json = nullptr;
  return out;
}

// A client on loopback; with a token, every request carries it as a bearer token.
inline httplib::Client client(int port, const std::string& token = "") {
  httplib::Client c("127.0.0.1", port);
  if (!token.empty()) c.set_bearer_token_auth(token.c_str());
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  return c;
}

// Every job, following GET /v1/jobs's pages; a Reply with status 0 when a page could not be read.
inline Reply all_jobs(httplib::Client& c) {
  Reply out{200, nlohmann::json::array(), ""};
  std::string token;
  for (int pages = 0; pages < 100000; ++pages) {
    Reply page = wrap(c.Get(("/v1/jobs?limit=5000" + (token.empty() ? "" : "&continue=" + token)).c_str()));
    if (page.status != 200 || !page.json.is_object() || !page.json["items"].is_array()) return page;
    for (auto& j : page.json["items"]) out.json.push_back(j);
    token = page.json.value("continue", "");
    if (token.empty()) return out;
  }
  return Reply{};
}

}  // namespace e2e
