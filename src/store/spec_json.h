#pragma once
// Exact JSON for the core's specs, as the journal stores them. Readers throw nlohmann::json::exception or
// std::invalid_argument on malformed input; record_from_json (record_json.h) turns that into an Error, so no
// exception leaves the store.
#include <nlohmann/json.hpp>

#include "core/model/reservations.h"
#include "core/model/resources.h"
#include "core/model/spec.h"

namespace allot::store {

nlohmann::json to_json(const AmountSpec& a);
nlohmann::json to_json(const TeamSpec& t);
nlohmann::json to_json(const PolicySpec& p);
nlohmann::json to_json(const NodeSpec& n);
nlohmann::json to_json(const JobSpec& j);
nlohmann::json to_json(const Resources& r);
nlohmann::json to_json(const PlanSpec& p);

AmountSpec amount_from_json(const nlohmann::json& j);
TeamSpec team_from_json(const nlohmann::json& j);
PolicySpec policy_from_json(const nlohmann::json& j);
NodeSpec node_from_json(const nlohmann::json& j);
JobSpec job_from_json(const nlohmann::json& j);
Resources resources_from_json(const nlohmann::json& j);
PlanSpec plan_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ReservationSpec& r);
ReservationSpec reservation_from_json(const nlohmann::json& j);

NodeHealth node_health_from_name(const std::string& s);  // throws std::invalid_argument when unknown

}  // namespace allot::store
