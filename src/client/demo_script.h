#pragma once
// The walkthrough `allot demo` narrates against a running server and its agents: submission and borrowing,
// reclaim with the preempted job resuming later, preemption by priority inside a team, topology placement,
// cancellation, and a node fault handled (reboot, one restart, resume from the checkpoint). Every step waits for what it expects with a deadline, and a step that does not happen
// in time fails with what the job's state and reason were instead.
#include <iosfwd>
#include <string>

#include "client/http_client.h"
#include "core/model/result.h"

namespace allot::client::demo {

struct Cluster {
  std::string data_dir;  // where teams.yaml and jobs/*.yaml are written, as the user will type it
  std::string cli;       // how the user runs allot ("allot" or a path), for the commands shown
  // Step 7 (jobs in containers): a local image the demo built (cli/demo_cmd.cpp), or why there is none, which
  // the step says instead.
  std::string image;
  std::string no_image;
};

// Writes teams.yaml and the job files into the data directory.
Status write_files(const Cluster& c);
// Applies teams.yaml (as `allot apply` does).
Status apply_teams(ApiClient& api, const Cluster& c);
// The numbered steps; leaves b-ring running for the user to look at.
Status walkthrough(ApiClient& api, const Cluster& c, std::ostream& out);

}  // namespace allot::client::demo
