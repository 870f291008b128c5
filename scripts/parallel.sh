# Sourced by the scripts that run independent parts one per core at a time (fuzz.sh: the fuzz targets; tsan.sh:
# the TSan test processes).
#
#   run_parallel N FUNC ARG...   runs `FUNC ARG K` in the background for each ARG (K: its index from 0), at most N
#                                at once, starting the next as soon as any one ends (bash's wait -n); returns once
#                                all have ended, with each one's exit status in PARALLEL_EXIT[K].
run_parallel() {
  local n=$1 fn=$2
  shift 2
  local args=("$@") k
  local -A index_of=()  # running part's pid -> its K
  PARALLEL_EXIT=()
  for ((k = 0; k < ${#args[@]}; k++)); do
    while [ "${#index_of[@]}" -ge "$n" ]; do _parallel_reap; done
    "$fn" "${args[$k]}" "$k" &
    index_of[$!]=$k
  done
  while [ "${#index_of[@]}" -gt 0 ]; do _parallel_reap; done
}

# Waits for whichever running part ends first; notes its status (index_of is run_parallel's, by bash's dynamic scope).
_parallel_reap() {
  local rc=0 done_pid=
  wait -n -p done_pid "${!index_of[@]}" || rc=$?
  PARALLEL_EXIT[${index_of[$done_pid]}]=$rc
  unset "index_of[$done_pid]"
}
