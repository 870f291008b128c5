#include "server/http/tls_identity.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace allot::server {
namespace {

// The reason of the most recent OpenSSL error, or "" when the queue is empty; empties the queue.
std::string openssl_reason() {
  unsigned long last = 0;
  while (unsigned long e = ERR_get_error()) last = e;
  if (last == 0) return "";
  const char* reason = ERR_reason_error_string(last);
  return reason ? reason : "error " + std::to_string(last);
}

Status readable(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::invalid(std::string(flag) + " " + path + " cannot be read: " + std::strerror(errno));
  return ok_status();
}

// Called by OpenSSL when a key is encrypted. Returning 0 means "no passphrase": allot runs unattended, so a
// key that needs one fails to load instead of blocking on the terminal.
int no_passphrase(char*, int, int, void*) { return 0; }

}  // namespace

Status load_tls_identity(SSL_CTX& ctx, const std::string& cert_file, const std::string& key_file) {
  if (auto st = readable("--tls-cert", cert_file); !st) return st;
  if (auto st = readable("--tls-key", key_file); !st) return st;
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(&ctx, cert_file.c_str()) != 1)
    return Error::invalid("--tls-cert " + cert_file + " does not hold a PEM certificate (OpenSSL: " + openssl_reason() +
                          ")");
  // Read the key on its own first: SSL_CTX_use_PrivateKey_file would report a key of another certificate as
  // a file that does not load.
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(key_file.c_str(), "r"), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr) : nullptr, EVP_PKEY_free);
  if (!key)
    return Error::invalid("--tls-key " + key_file +
                          " does not hold an unencrypted PEM private key (OpenSSL: " + openssl_reason() + ")");
  if (SSL_CTX_use_PrivateKey(&ctx, key.get()) != 1 || SSL_CTX_check_private_key(&ctx) != 1)
    return Error::invalid("--tls-key " + key_file + " is not the private key of the certificate in --tls-cert " +
                          cert_file + " (OpenSSL: " + openssl_reason() + ")");
  // What cpp-httplib sets for its own contexts, with TLS 1.2 as the floor instead of 1.1.
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                                SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  return ok_status();
}

Status check_tls_identity(const std::string& cert_file, const std::string& key_file) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Error::internal("cannot create a TLS context (OpenSSL: " + openssl_reason() + ")");
  return load_tls_identity(*ctx, cert_file, key_file);
}

}  // namespace allot::server
