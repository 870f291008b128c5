#pragma once
// A manager server's worker clusters (docs/multicluster.md), read from `allot server --workers FILE` at start:
//
//   teams: [research, vision]      # whose jobs go to the workers (the manager runs none of them itself)
//   lease: 60                      # seconds without an answer before a worker is lost (default 60)
//   poll: 1                        # seconds between the dispatcher's looks (default 1)
//   workers:
//     - name: east                 # a DNS label
//       url: https://east.example.com:7070
//       token_file: /etc/allot/east.token   # a token of the worker's: a member of those teams there, or an admin
//       ca: /etc/allot/east-ca.pem          # optional, https only
//
// Every token file is read now: a missing or empty one refuses the start, naming the file (never its content).
#include <string>

#include "core/model/result.h"
#include "server/options.h"

namespace allot::server {

Result<MulticlusterOptions> load_workers_file(const std::string& path);

}  // namespace allot::server
