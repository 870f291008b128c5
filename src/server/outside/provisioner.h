#pragma once
// Runs `allot server --provisioner CMD` for a node that needs replacing (docs/resiliency.md). The command runs
// with /bin/sh -c in its own session, with the server's environment plus:
//   ALLOT_NODE_NAME         the failed node            ALLOT_INSTANCE_TYPE  its instance type
//   ALLOT_NODE_LABELS       its labels, k=v,k=v        ALLOT_REPLACEMENT_NAME  the name the new node registers with
//   ALLOT_SERVER            this server's URL          ALLOT_JOIN_TOKEN_FILE   a fresh agent-join token (0600 file)
//   ALLOT_REASON            why the node is replaced
//   ALLOT_PLAN              empty; for a capacity plan's node, the plan (server/lifecycle/plan_steps.h)
// Its output goes to <data dir>/provision/<node>.log; it inherits no other descriptor of the server's. The new agent registers with `--replaces NODE`, which
// retires the failed node; a plan's node (ALLOT_NODE_NAME = ALLOT_REPLACEMENT_NAME, the node to start) registers
// with `--plan PLAN` instead. The provisioner is not waited for: the writer reaps it between batches.
//
// Thread-safety: none; the writer thread owns it.
#include <string>
#include <sys/types.h>
#include <vector>

#include "server/writer/server_state.h"

namespace allot::server {

class Provisioner {
 public:
  Provisioner(std::string command, std::string dir) : command_(std::move(command)), dir_(std::move(dir)) {}
  void launch(const ProvisionRequest& r, const std::string& server_url);
  // Collects the provisioners that ended and logs how.
  void reap();

 private:
  std::string command_, dir_;
  std::vector<std::pair<pid_t, std::string>> running_;  // pid, node
};

}  // namespace allot::server
