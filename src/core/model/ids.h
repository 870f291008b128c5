#pragma once
// Interned, typed IDs: names live at the edges, the core works on small integers that cannot be mixed up.
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace allot {

template <typename Tag>
struct Id {
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  uint32_t value = kNone;

  constexpr Id() = default;
  constexpr explicit Id(uint32_t v) : value(v) {}
  constexpr bool valid() const { return value != kNone; }
  constexpr uint32_t index() const { return value; }
  friend constexpr auto operator<=>(Id, Id) = default;
};

using TypeId = Id<struct TypeTag>;
using NodeId = Id<struct NodeTag>;
using TeamId = Id<struct TeamTag>;
using JobId = Id<struct JobTag>;
using PlanId = Id<struct PlanTag>;

}  // namespace allot

template <typename Tag>
struct std::hash<allot::Id<Tag>> {
  size_t operator()(allot::Id<Tag> id) const noexcept { return std::hash<uint32_t>()(id.value); }
};
