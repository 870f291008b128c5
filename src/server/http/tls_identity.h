#pragma once
// The server's TLS identity: the PEM certificate chain of --tls-cert and the private key of --tls-key, loaded
// into an OpenSSL context with messages that say which file is wrong and why (cpp-httplib's own loader only
// says that something failed).
#include <string>

#include "core/model/result.h"

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT: OpenSSL's own declaration, repeated to keep <openssl/ssl.h> out

namespace allot::server {

// Loads the chain and the key into `ctx`, checks that the key belongs to the certificate, and sets the
// protocol floor (TLS 1.2). An encrypted key is refused rather than prompting for its passphrase on the
// terminal. Errors are kInvalidArgument: the operator fixes the files.
Status load_tls_identity(SSL_CTX& ctx, const std::string& cert_file, const std::string& key_file);

// The same checks on a scratch context, so `allot server` can refuse bad files before it touches its store.
Status check_tls_identity(const std::string& cert_file, const std::string& key_file);

}  // namespace allot::server
