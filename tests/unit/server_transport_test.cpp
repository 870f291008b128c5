// The server's transport: HTTPS with a CA made at test time by the `openssl` command line, the client's
// verification of the server certificate and its messages when it fails, the TLS flag checks, the refusal of
// plain HTTP beyond loopback, a port another server holds, and the bearer token header the client sends.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "client/http_client.h"
#include "server/http/listen_address.h"
#include "server/server.h"
#include "store/mem_store.h"

namespace allot::server::server_transport_test {
namespace {

namespace fs = std::filesystem;
using client::ApiClient;

bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

// A CA and the certificates signed by it, made once for the whole file (EC keys: fast to generate).
struct Pki {
  fs::path dir;
  bool ok = false;
  std::string file(const std::string& name) const { return (dir / name).string(); }

  // A self-signed CA NAME.pem / NAME.key.
  bool make_ca(const std::string& name) {
    return run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj '/CN=" + name +
               "' -keyout " + file(name + ".key") + " -out " + file(name + ".pem"));
  }
  // NAME.pem / NAME.key signed by CA, for the subjectAltName entries `san`.
  bool make_cert(const std::string& name, const std::string& ca, const std::string& san) {
    std::ofstream(file(name + ".ext")) << "subjectAltName=" << san << "\n";
    return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=" + name + "' -keyout " +
               file(name + ".key") + " -out " + file(name + ".csr")) &&
           run("openssl x509 -req -days 2 -in " + file(name + ".csr") + " -CA " + file(ca + ".pem") + " -CAkey " +
               file(ca + ".key") + " -CAcreateserial -extfile " + file(name + ".ext") + " -out " + file(name + ".pem"));
  }
  // NAME.pem / NAME.key signed by CA with the subject CN=`cn` and no subjectAltName at all.
  bool make_cn_only_cert(const std::string& name, const std::string& ca, const std::string& cn) {
    return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=" + cn + "' -keyout " +
               file(name + ".key") + " -out " + file(name + ".csr")) &&
           run("openssl x509 -req -days 2 -in " + file(name + ".csr") + " -CA " + file(ca + ".pem") + " -CAkey " +
               file(ca + ".key") + " -CAcreateserial -out " + file(name + ".pem"));
  }
};

const Pki& pki() {
  static const Pki made = [] {
    Pki p;
    p.dir = fs::temp_directory_path() / ("allot-tls-test-" + std::to_string(::getpid()));
    fs::create_directories(p.dir);
    p.ok = run("openssl version") && p.make_ca("ca") && p.make_ca("other-ca") &&
           p.make_cert("server", "ca", "IP:127.0.0.1,DNS:localhost") &&
           p.make_cert("elsewhere", "ca", "DNS:elsewhere.example") && p.make_cn_only_cert("cn-only", "ca", "localhost") &&
           run("openssl pkey -in " + p.file("server.key") + " -aes256 -passout pass:secret -out " +
               p.file("encrypted.key"));
    std::ofstream(p.file("garbage.pem")) << "not a certificate\n";
    return p;
  }();
  return made;
}

class TransportTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { fs::remove_all(pki().dir); }
  void SetUp() override {
    if (!pki().ok) GTEST_SKIP() << "the openssl command line is missing or failed (bash scripts/deps.sh installs it)";
    data_dir_ = fs::temp_directory_path() / ("allot-transport-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_.listen = "127.0.0.1:0";
    options_.data_dir = data_dir_.string();
  }
  void TearDown() override {
    for (auto& s : servers_) s->stop();
    fs::remove_all(data_dir_);
  }

  Result<std::unique_ptr<Server>> open(const ServerOptions& o) { return Server::open(o, std::make_unique<store::MemStore>()); }
  // A started server, kept until the end of the test; null (and the test failed) when it does not start.
  Server* start(const ServerOptions& o) {
    auto s = open(o);
    if (!s.ok()) return ADD_FAILURE() << s.error().message, nullptr;
    if (auto st = (*s)->start(); !st.ok()) return ADD_FAILURE() << st.error().message, nullptr;
    servers_.push_back(std::move(*s));
    return servers_.back().get();
  }
  ServerOptions tls(const std::string& cert = "server") {
    ServerOptions o = options_;
    o.tls_cert = pki().file(cert + ".pem");
    o.tls_key = pki().file(cert + ".key");
    return o;
  }
  // GET /v1/health through a client with these options.
  static Result<nlohmann::json> health(const std::string& url, const client::ConnectOptions& co = {}) {
    auto c = ApiClient::connect(url, co);
    if (!c) return c.error();
    return c->get("/v1/health");
  }

  fs::path data_dir_;
  ServerOptions options_;
  std::vector<std::unique_ptr<Server>> servers_;
};

TEST_F(TransportTest, HttpsServerAndVerifyingClient) {
  Server* s = start(tls());
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->url(), "https://127.0.0.1:" + std::to_string(s->port()));
  auto r = health(s->url(), {.ca_file = pki().file("ca.pem")});
  EXPECT_TRUE(r.ok()) << r.error().message;
  // localhost is in the certificate too.
  auto by_name = health("https://localhost:" + std::to_string(s->port()), {.ca_file = pki().file("ca.pem")});
  EXPECT_TRUE(by_name.ok()) << by_name.error().message;
}

TEST_F(TransportTest, CertificateFromAnotherCaIsRefusedPlainly) {
  Server* s = start(tls());
  ASSERT_NE(s, nullptr);
  for (const std::string& ca : {pki().file("other-ca.pem"), std::string()}) {  // a wrong CA, the system's CAs
    auto r = health(s->url(), {.ca_file = ca});
    ASSERT_FALSE(r.ok()) << "verified against " << (ca.empty() ? "the system CAs" : ca);
    const std::string& m = r.error().message;
    EXPECT_NE(m.find("certificate of the allot server at " + s->url() + " does not verify against"), std::string::npos) << m;
    EXPECT_NE(m.find(ca.empty() ? "the system's CA certificates" : ca), std::string::npos) << m;
    EXPECT_NE(m.find("--ca"), std::string::npos) << m;
    EXPECT_EQ(m.find("cannot reach"), std::string::npos) << m;
    EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
    EXPECT_EQ(client::exit_code_for(r.error()), 2);
  }
}

TEST_F(TransportTest, CertificateForAnotherHostIsRefused) {
  Server* s = start(tls("elsewhere"));
  ASSERT_NE(s, nullptr);
  auto r = health(s->url(), {.ca_file = pki().file("ca.pem")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is not issued for the host"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
}

// RFC 6125: the host is matched against the subjectAltName alone. A certificate from the trusted CA that names
// the host only in its subject's Common Name (cpp-httplib would accept it by its CN) is refused.
TEST_F(TransportTest, CommonNameWithoutSubjectAltNameIsRefused) {
  ASSERT_FALSE(run("openssl x509 -in " + pki().file("cn-only.pem") + " -noout -ext subjectAltName | grep -q DNS"))
      << "the test certificate must have no subjectAltName";
  Server* s = start(tls("cn-only"));
  ASSERT_NE(s, nullptr);
  auto r = health("https://localhost:" + std::to_string(s->port()), {.ca_file = pki().file("ca.pem")});
  ASSERT_FALSE(r.ok()) << "a certificate with CN=localhost and no subjectAltName was accepted for localhost";
  EXPECT_NE(r.error().message.find("is not issued for the host"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("Common Name is not checked"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  // HttpsServerAndVerifyingClient: the same CA's certificate naming localhost in its subjectAltName is accepted.
}

TEST_F(TransportTest, PlainHttpAgainstHttpsAndBack) {
  Server* https = start(tls());
  ASSERT_NE(https, nullptr);
  auto plain = health("http://127.0.0.1:" + std::to_string(https->port()));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().message.find("https://"), std::string::npos) << plain.error().message;

  ServerOptions o = options_;
  o.data_dir += "-plain";
  Server* http = start(o);
  ASSERT_NE(http, nullptr);
  auto handshake = health("https://127.0.0.1:" + std::to_string(http->port()), {.ca_file = pki().file("ca.pem")});
  fs::remove_all(o.data_dir);
  ASSERT_FALSE(handshake.ok());
  EXPECT_NE(handshake.error().message.find("TLS handshake"), std::string::npos) << handshake.error().message;
}

TEST_F(TransportTest, ClientChecksItsCaFile) {
  auto http_with_ca = ApiClient::connect("http://127.0.0.1:7070", {.ca_file = pki().file("ca.pem")});
  ASSERT_FALSE(http_with_ca.ok());
  EXPECT_NE(http_with_ca.error().message.find("only for https://"), std::string::npos) << http_with_ca.error().message;
  auto missing = ApiClient::connect("https://127.0.0.1:7070", {.ca_file = pki().file("no-such.pem")});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot read the CA file"), std::string::npos) << missing.error().message;
  auto garbage = ApiClient::connect("https://127.0.0.1:7070", {.ca_file = pki().file("garbage.pem")});
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message.find("holds no PEM certificate"), std::string::npos) << garbage.error().message;
  EXPECT_TRUE(ApiClient::connect("https://127.0.0.1:7070", {.ca_file = pki().file("ca.pem")}).ok());
}

TEST_F(TransportTest, CaFileFromTheEnvironment) {
  EXPECT_EQ(client::resolve_ca_file("flag.pem"), "flag.pem");
  setenv("ALLOT_CA", "env.pem", 1);
  EXPECT_EQ(client::resolve_ca_file(""), "env.pem");
  EXPECT_EQ(client::resolve_ca_file("flag.pem"), "flag.pem");
  unsetenv("ALLOT_CA");
  EXPECT_EQ(client::resolve_ca_file(""), "");
}

// Each bad pair of TLS flags is refused by open(), before the store is touched, with the file and the fault.
TEST_F(TransportTest, BadTlsFilesAreRefused) {
  struct Case {
    std::string cert, key, says;
  };
  const std::vector<Case> cases = {
      {pki().file("server.pem"), "", "--tls-cert and --tls-key go together"},
      {"", pki().file("server.key"), "--tls-cert and --tls-key go together"},
      {pki().file("no-such.pem"), pki().file("server.key"), "--tls-cert " + pki().file("no-such.pem") + " cannot be read"},
      {pki().file("server.pem"), pki().file("no-such.key"), "--tls-key " + pki().file("no-such.key") + " cannot be read"},
      {pki().file("garbage.pem"), pki().file("server.key"), "does not hold a PEM certificate"},
      {pki().file("server.pem"), pki().file("garbage.pem"), "does not hold an unencrypted PEM private key"},
      {pki().file("server.pem"), pki().file("encrypted.key"), "does not hold an unencrypted PEM private key"},
      {pki().file("server.pem"), pki().file("elsewhere.key"), "is not the private key of the certificate"},
  };
  for (const auto& c : cases) {
    ServerOptions o = options_;
    o.tls_cert = c.cert;
    o.tls_key = c.key;
    auto s = open(o);
    ASSERT_FALSE(s.ok()) << c.says;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument) << s.error().message;
    EXPECT_NE(s.error().message.find(c.says), std::string::npos) << s.error().message;
  }
}

TEST_F(TransportTest, PlainHttpBeyondLoopbackNeedsInsecure) {
  ServerOptions o = options_;
  o.listen = "0.0.0.0:0";
  auto refused = open(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  for (const char* names : {"--tls-cert", "--tls-key", "--insecure", "0.0.0.0:0", "unencrypted"})
    EXPECT_NE(refused.error().message.find(names), std::string::npos) << refused.error().message;
  o.insecure = true;
  EXPECT_TRUE(open(o).ok());  // not started: nothing listens beyond loopback
  ServerOptions https = tls();
  https.listen = "0.0.0.0:0";
  EXPECT_TRUE(open(https).ok());
  for (const char* loopback : {"127.0.0.1:0", "127.3.2.1:0", "[::1]:0", "localhost:0"}) {
    ServerOptions l = options_;
    l.listen = loopback;
    EXPECT_TRUE(open(l).ok()) << loopback;
  }
}

TEST(ListenAddress, LoopbackIsThisMachineOnly) {
  for (const char* h : {"127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1", "localhost", "LocalHost"})
    EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "192.168.1.127", "localhost.example", "::ffff:10.0.0.1",
                        ""})
    EXPECT_FALSE(is_loopback_host(h)) << h;
  EXPECT_EQ(url_for("https", "::1", 7070), "https://[::1]:7070");
  EXPECT_EQ(url_for("http", "127.0.0.1", 80), "http://127.0.0.1:80");
  EXPECT_EQ(host_port("::1", 0), "[::1]:0");
}

TEST_F(TransportTest, PortInUseIsRefusedAndTheFirstServerKeepsIt) {
  Server* first = start(options_);
  ASSERT_NE(first, nullptr);
  ServerOptions second = options_;
  second.listen = "127.0.0.1:" + std::to_string(first->port());
  second.data_dir += "-second";
  auto s = open(second);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto st = (*s)->start();
  ASSERT_FALSE(st.ok()) << "a second server started on port " << first->port();
  EXPECT_EQ(st.error().code, ErrorCode::kInternal);  // exit 3: the server cannot start
  EXPECT_NE(st.error().message.find("127.0.0.1:" + std::to_string(first->port()) + ": the port is in use"),
            std::string::npos)
      << st.error().message;
  s->reset();
  fs::remove_all(second.data_dir);
  // Every new connection still reaches the first server.
  for (int i = 0; i < 8; ++i) {
    auto r = health(first->url());
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
}

TEST(ClientToken, EveryRequestCarriesTheBearerToken) {
  httplib::Server fake;
  std::vector<std::string> seen;
  std::mutex mu;
  auto record = [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    seen.push_back(req.has_header("Authorization") ? req.get_header_value("Authorization") : "(none)");
    res.set_content("{}", "application/json");
  };
  fake.Get("/v1/x", record);
  fake.Post("/v1/x", record);
  fake.Delete("/v1/x", record);
  const int port = fake.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { fake.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  auto with = ApiClient::connect(url, {.token = "s3cret"});
  ASSERT_TRUE(with.ok());
  EXPECT_TRUE(with->get("/v1/x").ok());
  EXPECT_TRUE(with->post("/v1/x").ok());
  EXPECT_TRUE(with->del("/v1/x").ok());
  auto without = ApiClient::connect(url);
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(without->get("/v1/x").ok());
  fake.stop();
  serving.join();
  EXPECT_EQ(seen, (std::vector<std::string>{"Bearer s3cret", "Bearer s3cret", "Bearer s3cret", "(none)"}));
}

}  // namespace
}  // namespace allot::server::server_transport_test
