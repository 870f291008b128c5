#pragma once
// The inverse of core/model/hostlist.h: a set of names written as a Slurm host list ("gpu-[1-4,7],cpu-1").
// Slurm's own parser reads the result back into the same set, and so does expand_hostlist.
#include <string>
#include <string_view>
#include <vector>

#include "core/model/hostlist.h"  // natural_less

namespace allot::interop {

// Compresses names that differ only in a trailing number into bracket ranges, keeping zero padding
// ("n01,n02,n03" -> "n[01-03]"). The order of the input does not matter and duplicates collapse.
// REQUIRES: no name contains '[', ']', ',' or whitespace (Slurm could not read such a name either).
std::string compress_hostlist(std::vector<std::string> names);

}  // namespace allot::interop
