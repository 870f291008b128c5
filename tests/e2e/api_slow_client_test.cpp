// Hostile clients at the HTTP level against the real `allot server` binary, over raw sockets:
//   - a 20 MB chunked job body gets 413 with a JSON error, and no job is journaled (cpp-httplib's payload limit
//     used to apply to Content-Length bodies only, and such a job went into the journal);
//   - 80 connections that send half a request and then trickle a byte now and then do not keep GET /v1/health
//     from being answered, and the server drops them (they used to hold all 64 HTTP threads for as long as
//     they kept trickling);
//   - past --max-connections a connection is answered 503 at once instead of waiting behind the others.
// Every wait is bounded; no assertion is about how long something took.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>

#include "durability_harness.h"

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

// One HTTP answer (headers and a Content-Length body), or what arrived before `wait` ran out or the
// connection closed.
std::string read_answer(int fd, std::chrono::seconds wait) {
  std::string in;
  const auto until = SteadyClock::now() + wait;
  while (SteadyClock::now() < until) {
    const size_t head_end = in.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      size_t length = 0;
      if (auto at = in.find("Content-Length: "); at != std::string::npos && at < head_end) length = std::stoul(in.substr(at + 16));
      if (in.size() >= head_end + 4 + length) return in.substr(0, head_end + 4 + length);
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  return in;
}

int status_of(const std::string& answer) { return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(answer.c_str() + 9) : 0; }

json body_of(const std::string& answer) {
  const size_t at = answer.find("\r\n\r\n");
  return at == std::string::npos ? json() : json::parse(answer.substr(at + 4), nullptr, false);
}

// Waits until the server has closed `fd` (a read gives end-of-file or an error), at most until `until`.
bool closed_by_server(int fd, SteadyClock::time_point until) {
  while (SteadyClock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

void chunked_body_is_limited(const std::string& allot) {
  e2e::TempDir dir;
  e2e::ServerProcess server(allot, dir.path());
  if (!server.start()) return void(++e2e::failures);
  const std::string token = server.admin_token();
  auto c = e2e::client(server.port(), token);
  auto ok = e2e::wrap(c.Post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}]}]})",
                             "application/json"));
  E2E_CHECK(ok.status == 200, "apply: " << ok.body);

  int fd = connect_to(server.port());
  E2E_CHECK(fd >= 0, "cannot connect");
  if (fd < 0) return;
  send_all(fd, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
                   "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string head = R"({"name": "big", "team": "a", "per_replica": {"accelerators": 1}, "env": {"BLOB": ")";
  const std::string tail = "\"}}";
  const size_t blob = 20'000'000;
  const std::string piece(64 * 1024, 'x');
  auto chunk = [](const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
  };
  bool sent = send_all(fd, chunk(head));
  // Stop sending as soon as the server answers: it need not read 20 MB to refuse them.
  for (size_t done = 0; sent && done < blob && !readable_now(fd); done += piece.size()) sent = send_all(fd, chunk(piece));
  if (sent && !readable_now(fd)) send_all(fd, chunk(tail) + "0\r\n\r\n");
  const std::string answer = read_answer(fd, std::chrono::seconds(30));
  close(fd);
  E2E_CHECK(status_of(answer) == 413, "a 20 MB chunked body: status " << status_of(answer) << ": " << answer.substr(0, 300));
  const json err = body_of(answer);
  E2E_CHECK(err.is_object() && err.contains("error") && err["error"].value("code", "") == "PayloadTooLarge",
            "the 413 has no JSON error: " << answer.substr(0, 300));
  auto job = e2e::wrap(c.Get("/v1/jobs/big"));
  E2E_CHECK(job.status == 404, "the oversize chunked job was accepted: GET /v1/jobs/big is " << job.status);
  // A small chunked body is read as any other.
  fd = connect_to(server.port());
  const std::string small = R"({"name": "small", "team": "a", "per_replica": {"accelerators": 1}})";
  send_all(fd, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
                   "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(small.substr(0, 10)) + chunk(small.substr(10)) + "0\r\n\r\n");
  const std::string small_answer = read_answer(fd, std::chrono::seconds(30));
  close(fd);
  E2E_CHECK(status_of(small_answer) == 201, "a small chunked job: " << small_answer.substr(0, 300));
  E2E_CHECK(server.alive(), "the server died");
  E2E_CHECK(server.terminate() == 0, "the server did not stop cleanly");
}

void slow_clients_do_not_lock_out(const std::string& allot) {
  e2e::TempDir dir;
  e2e::ServerProcess server(allot, dir.path(), {"--read-timeout", "2"});
  if (!server.start()) return void(++e2e::failures);
  // 80 connections (more than the 64 threads of old) that each send half a request, then one more byte of a
  // header line now and then, never finishing it.
  std::vector<int> slow;
  for (int i = 0; i < 80; ++i) {
    int fd = connect_to(server.port());
    if (fd < 0) continue;
    send_all(fd, i % 2 ? "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: " : "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slo");
    slow.push_back(fd);
  }
  E2E_CHECK(slow.size() == 80, "only " << slow.size() << " of 80 connections opened");
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop) {
      for (int fd : slow) (void)send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      for (int i = 0; i < 5 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto c = e2e::client(server.port());
  c.set_read_timeout(10, 0);
  auto health = e2e::wrap(c.Get("/v1/health"));
  E2E_CHECK(health.status == 200, "GET /v1/health with 80 slow clients connected: status " << health.status
                                      << " (0: no answer within the client's 10 s)");
  // The slow ones are dropped: each had --read-timeout 2 s to send its request.
  size_t dropped = 0;
  const auto until = SteadyClock::now() + std::chrono::seconds(30);
  for (int fd : slow) dropped += closed_by_server(fd, until) ? 1 : 0;
  stop = true;
  trickle.join();
  for (int fd : slow) close(fd);
  E2E_CHECK(dropped == slow.size(), dropped << " of " << slow.size() << " slow connections were dropped by the server");
  health = e2e::wrap(c.Get("/v1/health"));
  E2E_CHECK(health.status == 200, "GET /v1/health afterwards: " << health.status);
  E2E_CHECK(server.terminate() == 0, "the server did not stop cleanly");
}

void connections_past_the_limit_are_refused(const std::string& allot) {
  e2e::TempDir dir;
  e2e::ServerProcess server(allot, dir.path(), {"--max-connections", "8"});
  if (!server.start()) return void(++e2e::failures);
  // Eight stalled connections fill the server; a ninth is then answered 503 at once. The stalled ones are
  // replaced when one of them was itself refused (the ninth can be counted before the eighth).
  std::vector<int> stalled;
  std::string refused;
  for (int attempt = 0; attempt < 100 && refused.empty(); ++attempt) {
    for (auto it = stalled.begin(); it != stalled.end();)
      if (readable_now(*it)) {
        close(*it);
        it = stalled.erase(it);
      } else {
        ++it;
      }
    while (stalled.size() < 8) {
      int fd = connect_to(server.port());
      if (fd < 0) break;
      send_all(fd, "GET /v1/health HTTP/1.1\r\nHost: x\r\n");
      stalled.push_back(fd);
    }
    int probe = connect_to(server.port());
    if (probe < 0) break;
    send_all(probe, "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string answer = read_answer(probe, std::chrono::seconds(10));
    close(probe);
    if (status_of(answer) == 503) refused = answer;
    else std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  E2E_CHECK(status_of(refused) == 503, "a connection past --max-connections 8 was not refused");
  const json err = body_of(refused);
  E2E_CHECK(err.is_object() && err.contains("error") && err["error"].value("message", "").find("8 connections") != std::string::npos,
            "the 503 does not name the limit: " << refused.substr(0, 300));
  for (int fd : stalled) close(fd);
  // With the stalled connections gone, requests are served again.
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    auto c = e2e::client(server.port());
    status = e2e::wrap(c.Get("/v1/health")).status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  E2E_CHECK(status == 200, "GET /v1/health after the stalled connections closed: " << status);
  E2E_CHECK(server.terminate() == 0, "the server did not stop cleanly");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: api_slow_client_test PATH/TO/allot\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  chunked_body_is_limited(argv[1]);
  slow_clients_do_not_lock_out(argv[1]);
  connections_past_the_limit_are_refused(argv[1]);
  std::cerr << (e2e::failures ? "FAILED" : "PASSED") << "\n";
  return e2e::failures ? 1 : 0;
}
