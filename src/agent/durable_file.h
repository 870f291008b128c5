#pragma once
// A small file replaced atomically and durably: written to a temporary file, synced, renamed over the old one,
// and the directory synced, so that a crash (kill -9, a power cut) leaves the old content or the new, never
// half of either. For the agent's records that a restarted agent trusts (agent/leftovers.h,
// agent/attempt_journal.h).
#include <string>

#include "core/model/result.h"

namespace allot::agent {

// Readable by the agent's user only (0600).
Status write_file_durably(const std::string& path, const std::string& text);

}  // namespace allot::agent
