#pragma once
// A reservation of existing nodes (core/model/reservations.h) as the API, `allot reservation list -o json` and the
// simulator show it: its spec, state and the nodes it holds (named nodes; an amount's once chosen at the start).
#include <nlohmann/json.hpp>

#include "core/model/state.h"
#include "view/times.h"

namespace allot::view {

nlohmann::json reservation_json(const ClusterState& s, const Reservation& r, Times times);

}  // namespace allot::view
