#pragma once
// Slurm-style host lists: "gpu-[1-4]" -> gpu-1..gpu-4, "n[01-03,7]" keeps the zero padding, several bracket
// groups multiply ("r[1-2]-n[1-2]"), and top-level commas separate names ("a,b[1-2]").
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace allot {

inline constexpr size_t kMaxHostlistNames = 200000;
// The longest number a bracket range may hold. Writers of host lists (interop/hostlist_compress.h) keep
// longer numbers as literal names so that what they write reads back.
inline constexpr size_t kMaxHostlistDigits = 9;

// Refused before anything is expanded: more than kMaxHostlistNames names in all, or a name longer than a node
// name may be (kMaxSubdomainName, core/model/spec.h), so a short expression cannot build gigabytes of names.
Result<std::vector<std::string>> expand_hostlist(std::string_view expr);

// Orders names the way people count: "gpu-2" before "gpu-10"; ties on the number fall back to plain order
// so "gpu-01" and "gpu-1" stay distinct and ordered.
bool natural_less(std::string_view a, std::string_view b);

}  // namespace allot
