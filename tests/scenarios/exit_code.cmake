# Runs CMD ARGS and fails unless it exits with WANT; prints what it printed either way.
execute_process(COMMAND ${CMD} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL WANT)
  message(FATAL_ERROR "exit code ${rc}, wanted ${WANT}")
endif()
