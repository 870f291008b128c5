# How a cold build (no ccache: a fresh machine, CI, the README's test command) compiles the most code with the
# least CPU. Both parts are off by default when ccache is the compiler launcher: ccache caches no file compiled
# with a precompiled header, and a unity batch is compiled again whole when any one of its files changes, so
# under ccache they would cost more than they save. Figures: bench/RESULTS.md, "Test suite time".
#
# - Unity builds (ALLOT_UNITY): each library's files, and the unit tests', compiled in batches of
#   ALLOT_UNITY_BATCH files, one translation unit per batch, so that the big headers (nlohmann/json, cpp-httplib,
#   spdlog, yaml-cpp, GoogleTest) are parsed, and their templates instantiated and optimised, once per batch
#   instead of once per file: half the CPU, per batch, of compiling its files one by one.
# - Precompiled headers (ALLOT_PCH) of those big headers, for the targets whose files all parse them.
#
# A unity batch is one translation unit: two files of one target that define the same name in an anonymous
# namespace (or as static) cannot share a batch. No file is left out of the batches (each one left out shifts the
# batches after it and costs its own parse of the big headers): a library's files give their helpers names of their
# own (a shared rule goes in a header, as core/model/ascii_text.h), and each unit-test file keeps its code in a namespace
# named for the file (tests/unit/CMakeLists.txt checks it). A clash shows as a redefinition or an ambiguous call in
# a build with -DALLOT_UNITY=ON (every cold build; `bash scripts/unity_check.sh` parses the batches alone), not
# under ccache.
# The fuzz build (scripts/fuzz.sh, clang with the sanitizers) follows the same rule: in CI, cold, its libraries
# compile in 381 s instead of 699 (bench/RESULTS.md, "Test suite time").
set(ALLOT_COLD_DEFAULT ON)
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
  set(ALLOT_COLD_DEFAULT OFF)
endif()
option(ALLOT_UNITY "compile each library's and the unit tests' files in unity batches" ${ALLOT_COLD_DEFAULT})
set(ALLOT_UNITY_BATCH 8 CACHE STRING "files per unity batch (ALLOT_UNITY)")
option(ALLOT_PCH "precompile the big third-party headers of allot_server and allot_unit_tests" ${ALLOT_COLD_DEFAULT})
# - Line tables only (ALLOT_LINE_TABLES): `-g1` instead of RelWithDebInfo's `-g`. Backtraces, perf and
#   addr2line still get function names, files and lines; a debugger no longer sees local variables and types.
#   Writing full DWARF for the template-heavy headers is about 30% of a batch's compile (allot_client unity_0:
#   32.9 s at -O2 -g, 23.3 s at -O2 -g1, 23.2 s at -O2 -g0) and most of what the linker reads. A developer who
#   wants a debugger builds with ccache (off there) or configures with -DALLOT_LINE_TABLES=OFF.
option(ALLOT_LINE_TABLES "compile with line tables only (-g1) instead of full debug information" ${ALLOT_COLD_DEFAULT})
if(ALLOT_LINE_TABLES)
  string(REGEX REPLACE "(^| )-g( |$)" "\\1-g1\\2" CMAKE_CXX_FLAGS_RELWITHDEBINFO "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
  string(REGEX REPLACE "(^| )-g( |$)" "\\1-g1\\2" CMAKE_CXX_FLAGS_DEBUG "${CMAKE_CXX_FLAGS_DEBUG}")
endif()

# Called once every target exists (the end of the top-level CMakeLists.txt).
function(allot_cold_build)
  if(ALLOT_UNITY)
    set_target_properties(allot_core allot_auth allot_config allot_view allot_client allot_agent allot_store
                          allot_dashboard allot_server allot_interop allot_sim allot_cli allot_unit_tests
                          PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${ALLOT_UNITY_BATCH})
    # The unit tests' files, unoptimised and each in a namespace of its own, in batches twice as large: two batches
    # compiled as one cost 11% less CPU than apart (the templates they share are instantiated once).
    math(EXPR unit_batch "2 * ${ALLOT_UNITY_BATCH}")
    set_target_properties(allot_unit_tests PROPERTIES UNITY_BUILD_BATCH_SIZE ${unit_batch})
  endif()

  if(ALLOT_PCH)
    target_precompile_headers(allot_server PRIVATE <httplib.h> <nlohmann/json.hpp> <spdlog/spdlog.h>)
    target_precompile_headers(allot_unit_tests PRIVATE <gtest/gtest.h> <httplib.h> <nlohmann/json.hpp>)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL allot_cold_build)
