#pragma once
// The writer's clock for reservations of existing nodes (core/model/reservations.h): every step whose time has come (a
// reservation starting, or ending) is applied in time order and journaled as a reservation_step record, so that
// what it did (the nodes an amount chose, the jobs requeued at the start) replays exactly and a restarted server
// does not do it again. Only the leader calls it.
#include "server/writer/writer.h"

namespace allot::server {

// Returns whether any step was applied.
bool step_reservations(Txn& txn);

}  // namespace allot::server
