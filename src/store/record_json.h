#pragma once
// The journal's JSON form of records. It is an internal, exact format (amounts in milli-vCPU and MiB, every
// field written), not the user-facing scenario format: what is written is read back equal (round-trip tests
// in tests/unit/store_record_test.cpp). Unknown kinds or malformed records read back as errors, never as
// guesses.
#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "store/record.h"

namespace allot::store {

nlohmann::json record_to_json(const Record& r);
Result<Record> record_from_json(const nlohmann::json& j);
// The op alone (without seq and time), as stored beside them.
nlohmann::json op_to_json(const Op& op);
Result<Op> op_from_json(const nlohmann::json& j);
// What a store keeps beside seq and time: the op and, when there is one, its actor.
nlohmann::json record_body_json(const Record& r);
// The stored bodies of a batch, encoded before a store takes its lock or opens its transaction. Text that is not
// UTF-8 cannot be written as JSON; replacing it would make replay differ from what was acknowledged, so the
// batch fails whole.
Result<std::vector<std::string>> record_bodies(const std::vector<Record>& batch);
// The actor of a stored body; empty for records written before actors were (and for the server's own).
Result<Actor> actor_of_body(const nlohmann::json& body);
// A stored row (seq, time, body text) back as a record; errors name `where` (the database) and the seq, since
// the journal is read as untrusted input.
Result<Record> record_from_row(uint64_t seq, Time at, std::string_view body, const std::string& where);

// Pieces of records that snapshots (cluster_snapshot.h, server/writer/state_snapshot.h) store too. The readers throw on malformed input.
nlohmann::json placement_to_json(const std::vector<PodSetRecord>& p);
std::vector<PodSetRecord> placement_from_json(const nlohmann::json& j);
nlohmann::json token_to_json(const TokenRecord& t);
TokenRecord token_from_json(const nlohmann::json& j);
nlohmann::json webhook_to_json(const WebhookRecord& w);  // with its secret: the journal's and snapshots' form only
WebhookRecord webhook_from_json(const nlohmann::json& j);
nlohmann::json admission_check_to_json(const AdmissionCheckRecord& c);  // the journal's, snapshots' and the API's form
AdmissionCheckRecord admission_check_from_json(const nlohmann::json& j);  // throws on malformed input
nlohmann::json actor_to_json(const Actor& a);
Actor actor_from_json(const nlohmann::json& j);
HealthCause health_cause_from_name(const std::string& s);
nlohmann::json preemption_group_to_json(const PreemptionGroup& g);
PreemptionGroup preemption_group_from_json(const nlohmann::json& j);
// A reason and the jobs it names (core/model/ref_text.h), as records and snapshots keep them: the text and, only when it
// names a job, its references as [{"job", "team", "at", "size"}] (so that records naming none keep their body).
nlohmann::json job_refs_to_json(const std::vector<JobRef>& refs);
// The text with the references read from `refs`; with none stored (null), RefText::refs_unknown: the record was
// written before references were kept, or names no job. Throws when a reference is not the words it says it is.
RefText ref_text_from_json(std::string text, const nlohmann::json& refs);
// `out[key]` and, when it names a job, `out[key + "_refs"]`; and back.
void put_ref_text(nlohmann::json& out, const std::string& key, const RefText& text);
RefText ref_text_at(const nlohmann::json& in, const std::string& key);

}  // namespace allot::store
