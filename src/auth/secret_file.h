#pragma once
// Files that hold tokens (the bootstrap admin token, an agent's node credential, the CLI's config file): written
// whole or not at all (a temporary file renamed into place, synced first), readable by their owner only (mode
// 0600, also when the file existed with another mode), and never followed through a symbolic link.
#include <string>

#include "core/model/result.h"

namespace allot::auth {

// Writes `text` to `path`, creating its directory when missing. `what` names the file in errors ("the admin
// token file").
Status write_secret_file(const std::string& path, const std::string& text, const std::string& what);

// The first line of a token file, without trailing white space; an error naming the file when it cannot be read
// or holds nothing.
Result<std::string> read_token_file(const std::string& path);

}  // namespace allot::auth
