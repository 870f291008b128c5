#include "server/lifecycle/rendezvous_port.h"

#include <algorithm>

namespace allot::server {

int master_port(const ServerOptions& options, JobId job, int attempt, int epoch) {
  const uint64_t range = static_cast<uint64_t>(std::max(1, options.master_port_max - options.master_port_min + 1));
  const uint64_t step = static_cast<uint64_t>(job.index()) + static_cast<uint64_t>(std::max(0, attempt)) * kAttemptStride +
                        static_cast<uint64_t>(std::max(0, epoch)) * kEpochStride;
  return options.master_port_min + static_cast<int>(step % range);
}

Status parse_not_started(const nlohmann::json& r, const std::string& where, ReplicaReport& rep) {
  // One cause today; a closed set, so an agent's new cause is refused rather than taken for this one.
  if (!r.contains("cause") || r["cause"] != "port_in_use")
    return Error::invalid(where + ": a replica not started needs its cause, which must be port_in_use");
  if (!r.contains("port") || !r["port"].is_number_integer() || r["port"].get<int64_t>() < 1 || r["port"].get<int64_t>() > 65535)
    return Error::invalid(where + ": port must be the port in use, an integer 1..65535");
  rep.port_in_use = static_cast<int>(r["port"].get<int64_t>());
  return ok_status();
}

void requeue_for_port(Txn& txn, const Job& job, const std::string& node, const ServerOptions& options, int port) {
  const std::string name = job.spec.name;
  const std::string what = "MASTER_PORT " + std::to_string(port) + " was in use on node " + node + ", rank 0's";
  txn.state().exits.erase(job.id.index());
  if (options.master_port_min == options.master_port_max) {
    (void)txn.apply(store::Finish{name, false, what + " (--master-ports has this one port: the next attempt could not get another)"});
    return;
  }
  (void)txn.apply(store::Requeue{name, node, port, what + "; requeued without using a retry, the next attempt gets another port"});
}

}  // namespace allot::server
