// Slow clients over TLS meet the same limits as over plain HTTP (http_server.h): a client that trickles its
// TLS handshake or its request headers is dropped once --read-timeout has passed (cpp-httplib's SSLServer,
// used before, only bounded each single read, so a byte now and then kept the connection forever), and a
// connection past --max-connections is answered 503 over TLS instead of waiting. The certificate is
// self-signed and made at test time by the `openssl` command line; the raw clients here do not verify it.
// Every wait is bounded; no assertion is about how long something took.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "server/server.h"
#include "store/mem_store.h"

namespace allot::server::server_tls_limits_test {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};  // a blocking handshake or read here never waits longer than this
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` (end of file or reset) before `until`; reads and drops what arrives.
bool closed_by_server(int fd, SteadyClock::time_point until) {
  while (SteadyClock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

// A TLS client connection over a raw socket, so that a test can send a request a byte at a time.
struct TlsConn {
  int fd = -1;
  SSL* ssl = nullptr;
  TlsConn(SSL_CTX* ctx, int port) {
    fd = connect_to(port);
    if (fd < 0) return;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
      SSL_free(ssl);
      ssl = nullptr;
    }
  }
  ~TlsConn() {
    if (ssl) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
  bool ok() const { return ssl != nullptr; }
  bool send(const std::string& s) { return SSL_write(ssl, s.data(), static_cast<int>(s.size())) == static_cast<int>(s.size()); }
  // Everything up to the end of a Content-Length answer, or what arrived before the connection ended.
  std::string answer() {
    std::string in;
    char buf[4096];
    for (;;) {
      if (const size_t head = in.find("\r\n\r\n"); head != std::string::npos) {
        const size_t at = in.find("Content-Length: ");
        const size_t length = at != std::string::npos && at < head ? std::stoul(in.substr(at + 16)) : 0;
        if (in.size() >= head + 4 + length) return in;
      }
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) return in;
      in.append(buf, static_cast<size_t>(n));
    }
  }
  TlsConn(const TlsConn&) = delete;
  TlsConn& operator=(const TlsConn&) = delete;
};

class TlsLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("allot-tls-limits-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    made_ = run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost "
                "-addext subjectAltName=IP:127.0.0.1 -keyout " + (dir_ / "server.key").string() + " -out " +
                (dir_ / "server.pem").string());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  void SetUp() override {
    if (!made_) GTEST_SKIP() << "the openssl command line is missing or failed (bash scripts/deps.sh openssl installs it)";
    client_ctx_.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_verify(client_ctx_.get(), SSL_VERIFY_NONE, nullptr);  // the test talks to its own server
    options_.listen = "127.0.0.1:0";
    options_.data_dir = (dir_ / ::testing::UnitTest::GetInstance()->current_test_info()->name()).string();
    options_.tls_cert = (dir_ / "server.pem").string();
    options_.tls_key = (dir_ / "server.key").string();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  void start() {
    auto s = Server::open(options_, std::make_unique<store::MemStore>());
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    auto st = server_->start();
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  // GET /v1/health through allot's own client, trusting the self-signed certificate as its CA.
  bool healthy() {
    auto c = client::ApiClient::connect(server_->url(), {.ca_file = options_.tls_cert});
    return c.ok() && c->get("/v1/health").ok();
  }

  static inline fs::path dir_;
  static inline bool made_ = false;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> client_ctx_{nullptr, SSL_CTX_free};
  ServerOptions options_;
  std::unique_ptr<Server> server_;
};

// Trickles one byte to each connection every 200 ms until `stop`.
void trickle(const std::vector<std::function<bool()>>& senders, const std::atomic<bool>& stop) {
  while (!stop) {
    for (const auto& send_one : senders) (void)send_one();
    for (int i = 0; i < 2 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

TEST_F(TlsLimitsTest, TrickledHandshakeIsDropped) {
  options_.read_timeout = std::chrono::milliseconds(1000);
  start();
  ASSERT_TRUE(server_);
  // The first bytes of a TLS record header, then one byte of a ClientHello every 200 ms, never completing it.
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {
    const int fd = connect_to(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "\x16\x03\x01\x02\x00\x01", 6, MSG_NOSIGNAL), 6);
    slow.push_back(fd);
  }
  std::vector<std::function<bool()>> senders;
  for (int fd : slow) senders.push_back([fd] { return ::send(fd, "\x03", 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1; });
  std::atomic<bool> stop{false};
  std::thread t([&] { trickle(senders, stop); });
  EXPECT_TRUE(healthy()) << "GET /v1/health over TLS with handshakes being trickled";
  const auto until = SteadyClock::now() + std::chrono::seconds(30);
  size_t dropped = 0;
  for (int fd : slow) dropped += closed_by_server(fd, until) ? 1 : 0;
  stop = true;
  t.join();
  for (int fd : slow) ::close(fd);
  EXPECT_EQ(dropped, slow.size()) << "connections trickling their TLS handshake past --read-timeout 1 s were kept";
  EXPECT_TRUE(healthy());
}

TEST_F(TlsLimitsTest, TrickledHeadersAreDropped) {
  options_.read_timeout = std::chrono::milliseconds(1000);
  start();
  ASSERT_TRUE(server_);
  std::vector<std::unique_ptr<TlsConn>> slow;
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<TlsConn>(client_ctx_.get(), server_->port()));
    ASSERT_TRUE(slow.back()->ok()) << "TLS handshake " << i;
    ASSERT_TRUE(slow.back()->send("GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  }
  std::vector<std::function<bool()>> senders;
  for (auto& c : slow) senders.push_back([conn = c.get()] { return conn->send("a"); });
  std::atomic<bool> stop{false};
  std::thread t([&] { trickle(senders, stop); });
  EXPECT_TRUE(healthy()) << "GET /v1/health over TLS with headers being trickled";
  // A closed connection makes SSL_read end (0 or an error) instead of returning an answer.
  size_t dropped = 0;
  for (auto& c : slow) dropped += closed_by_server(c->fd, SteadyClock::now() + std::chrono::seconds(30)) ? 1 : 0;
  stop = true;
  t.join();
  EXPECT_EQ(dropped, slow.size()) << "connections trickling their headers over TLS past --read-timeout 1 s were kept";
}

TEST_F(TlsLimitsTest, ConnectionsPastTheLimitGet503OverTls) {
  options_.max_connections = 3;
  start();
  ASSERT_TRUE(server_);
  // Three connections that finished their handshake and sent half a request fill the server; one more is
  // answered 503 (over TLS) at once. Stalled connections that were themselves refused are replaced.
  std::vector<std::unique_ptr<TlsConn>> stalled;
  std::string refused;
  for (int attempt = 0; attempt < 50 && refused.empty(); ++attempt) {
    std::erase_if(stalled, [](const auto& c) {
      pollfd p{c->fd, POLLIN, 0};
      return ::poll(&p, 1, 0) > 0;  // answered (a refusal) or closed
    });
    while (stalled.size() < 3) {
      auto c = std::make_unique<TlsConn>(client_ctx_.get(), server_->port());
      if (!c->ok()) break;
      c->send("GET /v1/health HTTP/1.1\r\nHost: x\r\n");
      stalled.push_back(std::move(c));
    }
    TlsConn probe(client_ctx_.get(), server_->port());
    if (probe.ok() && probe.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")) {
      const std::string answer = probe.answer();
      if (answer.rfind("HTTP/1.1 503", 0) == 0) refused = answer;
    }
    if (refused.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << "no TLS connection past --max-connections 3 was refused";
  EXPECT_NE(refused.find("the server is serving its limit of 3 connections"), std::string::npos) << refused;
  stalled.clear();
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    served = healthy();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served) << "GET /v1/health after the stalled TLS connections closed";
}

// An idle keep-alive TLS connection is parked without a thread (http_server.h) and serves its next request on the
// same TLS session when it comes, even with a single request thread.
TEST_F(TlsLimitsTest, AParkedKeepAliveTlsConnectionServesItsNextRequest) {
  options_.http_threads = 1;
  options_.keep_alive_timeout = std::chrono::milliseconds(60000);
  start();
  ASSERT_TRUE(server_);
  TlsConn conn(client_ctx_.get(), server_->port());
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(conn.answer().rfind("HTTP/1.1 200", 0), 0u);
  bool parked = false;
  for (int i = 0; i < 300 && !parked; ++i) {
    parked = server_->connections_parked() == 1;
    if (!parked) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(parked) << "the idle TLS connection was not parked";
  EXPECT_TRUE(healthy()) << "another TLS client, with the only request thread free again";
  ASSERT_TRUE(conn.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(conn.answer().rfind("HTTP/1.1 200", 0), 0u) << "the parked TLS connection did not serve its next request";
}

}  // namespace
}  // namespace allot::server::server_tls_limits_test
