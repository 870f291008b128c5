// Request smuggling over a raw socket (docs/security.md, "HTTP"): a request whose body length is ambiguous (two
// different Content-Length headers, or Content-Length with Transfer-Encoding) gets 400 and its connection is
// closed, so a second request hidden in its body is never read. cpp-httplib 0.11.4 alone frames such a body by
// its first Content-Length, and the hidden request submitted a job.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>

#include "server_test_fixture.h"

namespace allot::server::test::server_smuggling_test {
namespace {

using nlohmann::json;

struct Exchange {
  std::string received;
  bool closed = false;  // the server closed the connection before the deadline
};

// Sends `bytes` on a fresh connection and reads until the server closes it, or 10 s have passed.
Exchange send_raw(int port, const std::string& bytes) {
  Exchange out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return out;
  }
  (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      out.closed = true;
      break;
    }
    out.received.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ServerSmuggling : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    small_cluster();
  }
  // A whole request that submits job `name`, as a proxy in front of the server would pass it on.
  std::string submission(const std::string& name) const {
    const std::string body = job(name).dump();
    return "POST /v1/jobs HTTP/1.1\r\nHost: allot\r\nAuthorization: Bearer " + admin_token_ +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  // The head of a request to GET /v1/jobs with the given framing headers; its body follows.
  std::string head(const std::string& framing) const {
    return "POST /v1/jobs HTTP/1.1\r\nHost: allot\r\nAuthorization: Bearer " + admin_token_ +
           "\r\nContent-Type: application/json\r\n" + framing + "\r\n";
  }
  void expect_refused_and_closed(const Exchange& x, const std::string& hidden) {
    EXPECT_EQ(x.received.rfind("HTTP/1.1 400", 0), 0u) << x.received;
    EXPECT_EQ(count(x.received, "HTTP/1.1 "), 1u) << "a second answer came on the connection: " << x.received;
    EXPECT_TRUE(x.closed) << "the connection must be closed after the refusal";
    EXPECT_EQ(get("/v1/jobs/" + hidden).status, 404) << "the hidden request was read and submitted " << hidden;
  }
};

TEST_F(ServerSmuggling, TwoDifferentContentLengthsAreRefusedAndTheConnectionClosed) {
  // The front end frames by the second length (the whole hidden request is the body); cpp-httplib by the first.
  const std::string hidden = submission("smuggled-cl");
  const auto x = send_raw(server_->port(), head("Content-Length: 0\r\nContent-Length: " + std::to_string(hidden.size()) + "\r\n") + hidden);
  expect_refused_and_closed(x, "smuggled-cl");
  EXPECT_NE(x.received.find("two different Content-Length headers"), std::string::npos) << x.received;
}

TEST_F(ServerSmuggling, ContentLengthWithTransferEncodingIsRefusedAndTheConnectionClosed) {
  // Chunked, the body ends at once; by its length, it runs on into the hidden request (and the other way round).
  const std::string hidden = submission("smuggled-te");
  const std::string body = "0\r\n\r\n" + hidden;
  const auto x = send_raw(server_->port(), head("Content-Length: " + std::to_string(body.size()) + "\r\nTransfer-Encoding: chunked\r\n") + body);
  expect_refused_and_closed(x, "smuggled-te");
  EXPECT_NE(x.received.find("both Content-Length and Transfer-Encoding"), std::string::npos) << x.received;
  // The same with the headers the other way round and in other cases: header names ignore case.
  const auto y = send_raw(server_->port(), head("transfer-encoding: chunked\r\ncontent-length: 5\r\n") + body);
  expect_refused_and_closed(y, "smuggled-te");
}

TEST_F(ServerSmuggling, ClearFramingStillWorks) {
  // One length given twice alike is one length (RFC 9112, 6.3); the job is submitted and nothing else happens.
  const std::string body = job("twice").dump();
  const std::string len = "Content-Length: " + std::to_string(body.size()) + "\r\n";
  const auto x = send_raw(server_->port(), head(len + len + "Connection: close\r\n") + body);
  EXPECT_EQ(x.received.rfind("HTTP/1.1 201", 0), 0u) << x.received;
  EXPECT_EQ(get("/v1/jobs/twice").status, 200);
  // A length that is not a number, and a coding that is not chunked, are refused.
  const auto bad = send_raw(server_->port(), head("Content-Length: 12abc\r\n") + body);
  EXPECT_EQ(bad.received.rfind("HTTP/1.1 400", 0), 0u) << bad.received;
  const auto gzip = send_raw(server_->port(), head("Transfer-Encoding: gzip\r\n") + body);
  EXPECT_EQ(gzip.received.rfind("HTTP/1.1 501", 0), 0u) << gzip.received;
  EXPECT_TRUE(gzip.closed);
}

}  // namespace
}  // namespace allot::server::test::server_smuggling_test
