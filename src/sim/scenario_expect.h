#pragma once
// Checking one `expect` event against the state; each mismatch becomes a line that names what was expected
// and what was found.
#include <string>
#include <vector>

#include "core/model/state.h"
#include "sim/scenario.h"

namespace allot::sim {

// Appends mismatches to `failures`; returns the number of entries checked. Unknown job or team names are
// reported as mismatches too (the job may never have been submitted).
int check_expect(const ClusterState& s, const Event& e, std::vector<std::string>& failures);

}  // namespace allot::sim
