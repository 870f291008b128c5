#!/usr/bin/env bash
# End to end (issue 33): a valid job name whose log directory name, with each '.' spelled %2E, would exceed a
# file name's 255 bytes ("a." 64 times and "a": 129 characters, 321 once encoded). Its log could not be stored,
# the agent retried the upload for ever, and the job stayed Running holding its quota. Now the job finishes, and
# `allot logs` prints what it wrote. When a log cannot be read, `allot logs` says so and fails, rather than
# printing nothing with exit 0.
# Usage: long_job_name_logs_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=long_job_name_logs
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
name="$(printf 'a.%.0s' $(seq 1 64))a"
[ ${#name} = 129 ] || fail "the name is ${#name} characters, not 129"
cat >"$WORK/long.yaml" <<YAML
name: $name
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'echo "output of the long-named job"'
YAML
"$ALLOT" submit "$WORK/long.yaml" >/dev/null
wait_state "$name" Succeeded 30
"$ALLOT" logs "$name" >"$WORK/logs.out" 2>"$WORK/logs.err" || fail "allot logs failed: $(cat "$WORK/logs.err")"
grep_q "output of the long-named job" "$WORK/logs.out" || fail "the log lacks the job's output: $(cat "$WORK/logs.out")"
# The directory name is bounded: the encoding's start, '~' and a SHA-256.
dir=$(ls "$WORK/server/logs" | grep '~' || true)
[ -n "$dir" ] || fail "no hashed log directory under $WORK/server/logs: $(ls "$WORK/server/logs")"
[ ${#dir} -le 255 ] || fail "log directory name of ${#dir} bytes"

# A log that exists but cannot be read (here a directory where the file should be; the server runs as root, so
# permissions would not stop it): `allot logs` fails and says why.
rm "$WORK/server/logs/$dir/0.log"
mkdir "$WORK/server/logs/$dir/0.log"
expect_rc 3 "$ALLOT" logs "$name"
grep_q "cannot read the log of job $name replica 0" "$WORK/last.err" || fail "allot logs did not say why: $(cat "$WORK/last.err")"
say PASS
