#pragma once
// UTF-8 validity, shared by the YAML readers and the server's body check: texts end up in the journal's JSON,
// which holds UTF-8 only.
#include <cstddef>
#include <string_view>

namespace allot {

// The offset of the first byte that is not part of well-formed UTF-8, or npos. Overlong forms, surrogates
// (which a YAML escape such as "\ud800" can produce) and values past U+10FFFF are not UTF-8 either.
size_t invalid_utf8(std::string_view s);

}  // namespace allot
