#include "view/reservation_json.h"

namespace allot::view {

nlohmann::json reservation_json(const ClusterState& s, const Reservation& r, Times times) {
  nlohmann::json nodes = nlohmann::json::array();
  if (r.state == ReservationState::kActive || r.spec.count == 0)
    for (NodeId n : r.nodes) nodes.push_back(s.nodes[n.index()].name);
  nlohmann::json out = {{"name", r.spec.name},
                        {"team", r.spec.team},
                        {"start", time_json(r.spec.start, times)},
                        {"end", time_json(r.spec.end, times)},
                        {"state", reservation_state_name(r.state)},
                        {"nodes", std::move(nodes)}};
  if (!r.spec.user.empty()) out["user"] = r.spec.user;
  if (!r.spec.instance_type.empty()) out["instance_type"] = r.spec.instance_type;
  if (r.spec.count > 0) out["count"] = r.spec.count;
  return out;
}

}  // namespace allot::view
