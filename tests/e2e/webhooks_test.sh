#!/usr/bin/env bash
# End to end: a webhook made with the CLI delivers signed events to a receiver on loopback (which checks the
# signature with the secret the CLI printed), survives kill -9 of the server (it is in the SQLite journal), and
# delivers again, with the same secret, from the restarted server; deleted, it delivers nothing more.
# Usage: webhooks_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=webhooks
source "$(dirname "$0")/lib_e2e.sh"
command -v python3 >/dev/null || { say "no python3: skipped"; exit 77; }

python3 "$(dirname "$0")/webhook_receiver.py" "$WORK/rx-port" "$WORK/secret" "$WORK/deliveries" 2>"$WORK/receiver.log" &
PIDS+=("$!")
for _ in $(seq 1 100); do [ -s "$WORK/rx-port" ] && break; sleep 0.1; done
[ -s "$WORK/rx-port" ] || fail "the receiver did not start"
RX="http://127.0.0.1:$(cat "$WORK/rx-port")/hook"
: >"$WORK/deliveries"

start_server
write_teams

# Bad input is refused with exit 2 and a message, and makes nothing.
expect_rc 2 "$ALLOT" webhook create --url "ftp://127.0.0.1/x" --events job.cancelled
grep_q "only http and https" "$WORK/last.err" || fail "no clear error for ftp://: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" webhook create --url "$RX" --events job.exploded
grep_q "job.cancelled" "$WORK/last.err" || fail "the error does not list the kinds: $(cat "$WORK/last.err")"

"$ALLOT" webhook create --url "$RX" --events job.cancelled,job.failed --description e2e >"$WORK/secret.new" 2>"$WORK/create.err" ||
  fail "webhook create failed: $(cat "$WORK/create.err")"
mv "$WORK/secret.new" "$WORK/secret"
[ "$(wc -c <"$WORK/secret")" = 65 ] || fail "create printed no 64-digit secret: $(cat "$WORK/secret")"
id=$(grep -o 'webhook [0-9a-f]\{10\}' "$WORK/create.err" | cut -d' ' -f2)
[ -n "$id" ] || fail "create named no id: $(cat "$WORK/create.err")"
"$ALLOT" webhook list -o json >"$WORK/list.json"
grep_q "\"$id\"" "$WORK/list.json" || fail "list lacks $id"
grep_q "$(cat "$WORK/secret")" "$WORK/list.json" && fail "list shows the secret"

submit_and_cancel() {
  curl -s -o /dev/null -H "Authorization: Bearer $ALLOT_TOKEN" -H 'Content-Type: application/json' -X POST "$ALLOT_SERVER/v1/jobs" \
    -d "{\"name\": \"$1\", \"team\": \"team-a\", \"per_replica\": {\"accelerators\": 1}, \"command\": \"true\"}"
  "$ALLOT" cancel "$1" >/dev/null || fail "cannot cancel $1"
}
delivered() {  # delivered JOB: waits up to 10 s for a verified delivery of JOB's cancellation
  for _ in $(seq 1 100); do
    grep_q "^ok job.cancelled $1 " "$WORK/deliveries" && return 0
    sleep 0.1
  done
  fail "no verified delivery for $1: $(cat "$WORK/deliveries")"
}

submit_and_cancel before-kill
delivered before-kill

kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server
"$ALLOT" webhook list -o json >"$WORK/list.json"
grep_q "\"$id\"" "$WORK/list.json" || fail "the webhook did not survive kill -9: $(cat "$WORK/list.json")"
submit_and_cancel after-kill
delivered after-kill
grep_q "bad-signature" "$WORK/deliveries" && fail "a delivery failed its signature check: $(cat "$WORK/deliveries")"
# The restarted server sent nothing again for the event before the kill.
[ "$(grep -c " before-kill " "$WORK/deliveries")" = 1 ] || fail "before-kill was delivered again: $(cat "$WORK/deliveries")"
"$ALLOT" webhook list | grep_q "$id" || fail "webhook list (table) lacks $id"

"$ALLOT" webhook delete "$id" >/dev/null || fail "cannot delete $id"
submit_and_cancel after-delete
sleep 1
grep_q " after-delete " "$WORK/deliveries" && fail "a deleted webhook got a delivery"
say "ok"
