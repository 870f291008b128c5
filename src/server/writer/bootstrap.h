#pragma once
// The first admin token. A server whose journal holds no token yet makes one admin token at start and writes
// it to a file that only its owner can read, so the operator who started the server (and nobody else on the
// machine) can make every other token. A later start leaves the tokens alone.
#include <string>

#include "core/model/result.h"
#include "server/writer/writer.h"

namespace allot::server {

// What start-up did about the admin token, for the log line that says where it is.
struct BootstrapOutcome {
  bool created = false;
  std::string file;
};

// REQUIRES: the writer is started. `file` is written (mode 0600) before the token is journaled and renamed into
// place once it is, so a failure leaves neither a token nobody knows nor a file naming a token that does not exist.
Result<BootstrapOutcome> ensure_admin_token(Writer& writer, const std::string& file);

}  // namespace allot::server
