// Large answers in pieces (issue 25 item 7, "stream large answers"; http/reply.h Reply::pieces): the node
// listing is sent chunked from the view it was asked of, gives the same bytes as the whole answer did, stays
// one consistent view while changes land during the send, and a client that goes away mid-answer costs the
// server nothing (the next request is answered).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "server/http/reply.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_streamed_answer_test {
namespace {

using nlohmann::json;

TEST(JsonArrayPieces, GiveTheBytesOfTheWholeAnswer) {
  // Invalid UTF-8 in an item (a name could carry it) is replaced as json_reply replaces it.
  auto item = [](size_t i) { return json{{"i", i}, {"name", i == 3 ? std::string("bad\xff") : "n" + std::to_string(i)}}; };
  for (size_t n : {0u, 1u, 63u, 64u, 65u, 200u}) {
    for (size_t per : {1u, 7u, 64u, 1000u}) {
      json whole = json::array();
      for (size_t i = 0; i < n; ++i) whole.push_back(item(i));
      Reply r = json_array_pieces(200, n, item, per);
      EXPECT_EQ(static_cast<bool>(r.pieces), n > 0);
      std::string sent = r.body;
      size_t calls = 0;
      while (r.pieces && (++calls, r.pieces(sent))) {
      }
      EXPECT_EQ(sent, json_reply(200, whole).body) << n << " items, " << per << " per piece";
      if (n > 0) EXPECT_EQ(calls, (n + per - 1) / per) << n << " items, " << per << " per piece";
      Reply drained = json_array_pieces(200, n, item, per);
      drain_pieces(drained);
      EXPECT_EQ(drained.body, sent);
      EXPECT_FALSE(drained.pieces);
    }
  }
}

class ServerStreamedAnswer : public ServerTest {
 protected:
  // POST /v1/nodes of `count` nodes named PREFIX-1..count.
  void add_nodes(const std::string& prefix, int count) {
    auto r = post("/v1/nodes", json{{"nodes", {{{"name", prefix + "-[1-" + std::to_string(count) + "]"},
                                                {"instance_type", "ml.p5.48xlarge"}}}}});
    ASSERT_EQ(r.status, 201) << r.body;
  }

  // A raw connection that sends GET PATH and reads `bytes` of the answer (head included), then stops reading.
  int start_reading(const std::string& path, size_t bytes, std::string& got) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // A small receive buffer, so that the server cannot have written the whole answer into the kernel already.
    const int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                admin_token_ + "\r\n\r\n";
    if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) return -1;
    char buf[4096];
    while (got.size() < bytes) {
      const ssize_t r = read(fd, buf, sizeof buf);
      if (r <= 0) break;
      got.append(buf, static_cast<size_t>(r));
    }
    return fd;
  }
};

// The chunked body's data (HTTP/1.1 chunked transfer coding), read to its end.
std::string read_rest_chunked(int fd, std::string got) {
  char buf[65536];
  for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;) {
    got.append(buf, static_cast<size_t>(r));
    if (got.size() >= 5 && got.compare(got.size() - 5, 5, "0\r\n\r\n") == 0) break;
  }
  std::string body;
  size_t at = got.find("\r\n\r\n");
  if (at == std::string::npos) return "";
  at += 4;
  for (;;) {
    const size_t eol = got.find("\r\n", at);
    if (eol == std::string::npos) return "";
    const size_t len = std::stoul(got.substr(at, eol - at), nullptr, 16);
    if (len == 0) return body;
    body += got.substr(eol + 2, len);
    at = eol + 2 + len + 2;
  }
}

TEST_F(ServerStreamedAnswer, TheNodeListingIsSentInPiecesWithTheSameBody) {
  add_nodes("n", 300);
  auto r = client_->Get("/v1/nodes");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
  const json nodes = json::parse(r->body);
  ASSERT_EQ(nodes.size(), 300u);
  for (size_t i = 1; i < nodes.size(); ++i) EXPECT_LT(nodes[i - 1]["name"], nodes[i]["name"]) << "sorted by name";
  // Each item is the node's own answer.
  EXPECT_EQ(nodes[0], get("/v1/nodes/" + nodes[0]["name"].get<std::string>()).json);
  // A node that left is not listed.
  ASSERT_EQ(del("/v1/nodes/n-1").status, 204);
  EXPECT_EQ(json::parse(client_->Get("/v1/nodes")->body).size(), 299u);
}

// 12,000 nodes are about 9 MB of answer: more than the kernel's socket buffers hold, so the server is still
// rendering pieces while the client has stopped reading.
constexpr int kMany = 12000;

TEST_F(ServerStreamedAnswer, ASlowListingStaysOneViewWhileChangesLand) {
  add_nodes("n", kMany);
  std::string got;
  const int fd = start_reading("/v1/nodes", 4096, got);
  ASSERT_GE(fd, 0);
  ASSERT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got.substr(0, 300);
  // While the listing is held half-sent, nodes join and leave; the writer goes on answering.
  add_nodes("late", 5);
  ASSERT_EQ(del("/v1/nodes/n-999").status, 204);
  EXPECT_EQ(get("/v1/nodes/late-1").status, 200);
  const json listed = json::parse(read_rest_chunked(fd, got), nullptr, false);
  close(fd);
  ASSERT_TRUE(listed.is_array());
  EXPECT_EQ(listed.size(), static_cast<size_t>(kMany)) << "the listing is the view it was asked of";
  bool has_999 = false, has_late = false;
  for (const auto& n : listed) has_999 |= n["name"] == "n-999", has_late |= n["name"].get<std::string>().rfind("late-", 0) == 0;
  EXPECT_TRUE(has_999);
  EXPECT_FALSE(has_late);
  EXPECT_EQ(json::parse(client_->Get("/v1/nodes")->body).size(), static_cast<size_t>(kMany + 4));
}

TEST_F(ServerStreamedAnswer, AClientThatGoesAwayMidAnswerCostsNothing) {
  add_nodes("n", kMany);
  for (int i = 0; i < 5; ++i) {
    std::string got;
    const int fd = start_reading("/v1/nodes", 4096, got);
    ASSERT_GE(fd, 0);
    ASSERT_NE(got.find("200 OK"), std::string::npos) << got.substr(0, 200);
    close(fd);  // mid-answer
  }
  // The server answers on, reads and writes alike.
  add_nodes("after", 3);
  auto r = client_->Get("/v1/nodes");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body).size(), static_cast<size_t>(kMany + 3));
}

}  // namespace
}  // namespace allot::server::test::server_streamed_answer_test
