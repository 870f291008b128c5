#pragma once
// One admission attempt for one job against given room and usage (live or scratch): which instance type, what
// quota says, where it would be placed. Shared by the scheduler loop and the preemption planner.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/placement/fit_cache.h"
#include "core/placement/placement.h"
#include "core/quota/quota.h"

namespace allot {

// What an attempt that did not admit the job ran into: one closed set, read by switches without a default, so an
// outcome added here is handled by every reader before it compiles.
enum class Refusal : uint8_t {
  kQuota,        // no type the job may use passes quota (within nominal only: every one would need borrowing)
  kPlacement,    // quota allows it on some type, but no placement was found there now
  kPlan,         // its capacity plan is not Active or its nodes have not joined (core/model/plans.h)
  kReservation,  // the reservation it names is not Active (core/model/reservations.h)
  // It would fit spread, but waits for one domain of its preferred level (locality_wait.h); no reservation is
  // made for it while it does, and it preempts only to run in one domain (preempt_in_order.cpp). Set by the pass.
  kLocality,
  // Its user is at a per-user limit (user_limits.h): passed over, with no reservation or preemption made for it.
  // Set by the pass.
  kUser,
};
inline constexpr int kRefusalCount = 6;
// The refusal's name, for tests and diagnostics (never parsed back).
const char* refusal_name(Refusal r);

// The attempt admitted the job at `type` with `placement`.
struct Admitted {
  bool borrowing = false;  // the team would be above its nominal quota after admission
};

struct AdmissionAttempt {
  std::variant<Refusal, Admitted> outcome = Refusal::kQuota;
  TypeId type;          // admitted only
  Placement placement;  // admitted only
  // Why it was not admitted; not feasible when no type can ever hold it (quota or capacity that does not
  // exist). Empty on success.
  Explanation why;

  bool ok() const { return std::holds_alternative<Admitted>(outcome); }
  // Admitted with borrowed quota (false when not admitted).
  bool borrowing() const {
    const Admitted* a = std::get_if<Admitted>(&outcome);
    return a && a->borrowing;
  }
  // The refusal, or nothing when admitted.
  std::optional<Refusal> refusal() const {
    const Refusal* r = std::get_if<Refusal>(&outcome);
    return r ? std::optional<Refusal>(*r) : std::nullopt;
  }
  // No preemption or reservation can help it: it never fits, or it waits for its plan or its reservation.
  bool never() const;
};

enum class BorrowMode { kWithinNominalOnly, kAllowBorrowing };

// The instance types a job may use, in the order they are tried: for pod sets without a type, the team's
// allocation order first, then the other types the cluster has, by name (Team::candidate_types). The span
// lives as long as the job and its team are unchanged.
std::span<const TypeId> candidate_types(const ClusterState& s, const Job& job);

// Quota need of the job per type if its untyped pod sets went to `type`; empty when `type` cannot serve it.
std::vector<std::pair<TypeId, Resources>> job_request(const ClusterState& s, const Job& job, TypeId type, std::string* why);

// Whether the job would keep its team within nominal quota on some type it may use (no borrowing needed),
// with the team's usage in `usage`.
bool within_nominal_quota(const ClusterState& s, const UsageTable& usage, const Job& job);

// What is free per instance type on schedulable nodes: bounds of what placement can find, so a job that asks for
// more is turned away without a scan of the nodes.
struct FreeOfType {
  int64_t accelerators = 0;  // all free accelerators
  int64_t whole_nodes = 0;   // nodes with no replica at all
  int64_t largest = 0;       // the most free accelerators on one node
};
using FreeAccelerators = std::vector<FreeOfType>;  // by TypeId index
FreeAccelerators free_accelerators(const ClusterState& s, const RoomTable& room);

// free_accelerators(), kept up to date through admissions without a scan of every node: an admission changes
// only the nodes its placement uses (unless the job holds exclusive domains, which close other nodes too).
class FreeIndex {
 public:
  // Scans every node of `room`.
  void reset(const ClusterState& s, const RoomTable& room);
  // After `job` was charged with `p` on `room`.
  void took(const ClusterState& s, const RoomTable& room, const Job& job, const Placement& p);
  const FreeAccelerators& free() const { return free_; }

 private:
  FreeAccelerators free_;
  std::vector<std::vector<int64_t>> nodes_with_;  // [type][free accelerators]: usable nodes, for `largest`
};

struct AdmitOptions {
  BorrowMode mode = BorrowMode::kAllowBorrowing;
  // The empty cluster (placement.h): with it, a job that cannot be placed says whether it never fits and whether it
  // waits for unschedulable nodes; the answers are kept in `fit_cache` (fit_cache.h) when the caller has one.
  const RoomTable* pristine = nullptr;
  FitCache* fit_cache = nullptr;
  const std::vector<TypeId>* only_types = nullptr;  // try these instance types only
  const FreeAccelerators* free = nullptr;           // must describe `room`: enables the quick rejection
  PlacementScratch* scratch = nullptr;              // working memory of placement, for callers that place many jobs
  const PoolTotals* pool = nullptr;                 // must describe `usage` (quota.h): spares each check a sum over teams
  // Elastic jobs only: the sizes of the elastic pod set to try (0: its own min and max).
  int min_size = 0, max_size = 0;
};

// A copy of what placement and quota read of `job`, with its elastic pod set at `size` replicas.
Job job_at_size(const Job& job, int size);

// An elastic job is admitted at the largest size between its min and max that fits (docs/scheduling.md).
AdmissionAttempt try_admit(const ClusterState& s, const RoomTable& room, const UsageTable& usage, const Job& job,
                           const AdmitOptions& options = {});

}  // namespace allot
