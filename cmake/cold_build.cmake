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
# namespace (or as static) cannot share a batch. Such files are listed below and compiled on their own. A new
# file that clashes shows as a redefinition or an ambiguous call in a build with -DALLOT_UNITY=ON (every cold
# build), not under ccache; add it to its target's list then, or rename its helper.
set(ALLOT_COLD_DEFAULT ON)
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" OR ALLOT_FUZZ)
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

# allot_unity_alone(DIR FILE...): FILEs of the folder DIR compile on their own, outside the unity batches.
function(allot_unity_alone dir)
  list(TRANSFORM ARGN PREPEND ${PROJECT_SOURCE_DIR}/${dir}/)
  set_source_files_properties(${ARGN} DIRECTORY ${PROJECT_SOURCE_DIR}/${dir} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# Called once every target exists (the end of the top-level CMakeLists.txt).
function(allot_cold_build)
  if(ALLOT_UNITY)
    set_target_properties(allot_core allot_auth allot_config allot_view allot_client allot_agent allot_store
                          allot_dashboard allot_server allot_interop allot_sim allot_cli allot_unit_tests
                          PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${ALLOT_UNITY_BATCH})
    # Files whose own helpers share a name with another file's of the same target (see above), and the names.
    allot_unity_alone(src/store sqlite_store.cpp)  # kMigrations
    allot_unity_alone(src/server api_jobs.cpp api_nodes.cpp api_plans.cpp  # kBody, job_render, read_routes
                      plan_steps.cpp request_framing.cpp)  # AsServer, labels_text; lower
    allot_unity_alone(src/sim scenario_expect.cpp)  # lower, join
    allot_unity_alone(src/cli client_cmds_plans.cpp kueue_cmd.cpp topology_cmd.cpp)  # run_delete, run_describe; fail
    allot_unity_alone(tests/unit
      client_apply_plan_test.cpp container_spec_test.cpp elastic_admission_test.cpp fair_share_reason_test.cpp fair_share_zero_weight_test.cpp
      interop_mermaid_test.cpp locality_wait_test.cpp placement_test.cpp plans_test.cpp preemption_record_test.cpp
      running_index_test.cpp scheduler_pass_test.cpp scheduler_test.cpp server_resize_goodput_test.cpp
      server_smuggling_test.cpp server_tls_limits_test.cpp snapshot_test.cpp store_conformance_test.cpp
      topology_tree_test.cpp view_times_test.cpp)  # kType, team, node, cluster, has, plan, run, count, cancels, ...
  endif()

  if(ALLOT_PCH)
    target_precompile_headers(allot_server PRIVATE <httplib.h> <nlohmann/json.hpp> <spdlog/spdlog.h>)
    target_precompile_headers(allot_unit_tests PRIVATE <gtest/gtest.h> <httplib.h> <nlohmann/json.hpp>)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL allot_cold_build)
