#include "server/lifecycle/reservation_steps.h"

#include <spdlog/spdlog.h>

#include "core/model/reservations.h"

namespace allot::server {

bool step_reservations(Txn& txn) {
  bool any = false;
  AsServer as(txn);  // steps are the server's own records
  while (auto step = next_reservation_step(txn.cluster())) {
    if (step->at > txn.now()) break;
    auto st = txn.apply(store::ReservationStepRecord{step->name, reservation_state_name(step->to)});
    if (!st) {
      spdlog::error("reservation {}: cannot move to {}: {}", step->name, reservation_state_name(step->to), st.error().message);
      break;
    }
    spdlog::info("reservation {} is {}", step->name, reservation_state_name(step->to));
    any = true;
  }
  return any;
}

}  // namespace allot::server
