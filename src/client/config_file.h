#pragma once
// The CLI's config file (docs/security.md, "Contexts"), kubeconfig-like: named contexts, each a server URL
// and the token to use there, and which one is current. YAML at $ALLOT_CONFIG, else
// $XDG_CONFIG_HOME/allot/config, else ~/.config/allot/config; written with mode 0600 because it holds tokens.
//
//   current-context: demo
//   contexts:
//     - name: demo
//       server: http://127.0.0.1:7070
//       token: allot_...          # or token-file: /path/to/file
#include <optional>
#include <string>
#include <vector>

#include "core/model/result.h"

namespace allot::client {

struct ConfigContext {
  std::string name;
  std::string server;
  std::string token;
  std::string token_file;
  std::string ca;
};

struct ClientConfig {
  std::string current;
  std::vector<ConfigContext> contexts;

  const ConfigContext* find(const std::string& name) const;
  ConfigContext& upsert(const std::string& name);
};

std::string config_path();
// A missing file is an empty config; a malformed one an error naming the file and what is wrong.
Result<ClientConfig> load_config(const std::string& path);
// Atomically (a temporary file renamed into place), mode 0600.
Status save_config(const std::string& path, const ClientConfig& config);

// What a command connects with once flags, environment and config are taken together.
struct Connection {
  std::string server;
  std::string token;
  std::string ca;
};
// --server, else $ALLOT_SERVER, else the context's server, else http://127.0.0.1:7070; --token, else
// $ALLOT_TOKEN, else the context's token (or token file). The context is --context, else $ALLOT_CONTEXT, else
// the config's current one; naming one that does not exist is an error.
Result<Connection> resolve_connection(const std::string& server_flag, const std::string& token_flag,
                                      const std::string& context_flag);

}  // namespace allot::client
