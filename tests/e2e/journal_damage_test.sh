#!/usr/bin/env bash
# End to end: a SQLite journal changed behind the server's back with the sqlite3 CLI (docs/deployment.md, "Journal
# checksums"). The issue's case: a submission renamed and its accelerators changed from 1 to 7, valid JSON either
# way: the server refuses to start (exit 3), naming the record, its kind and job, and saying what to do. A batch
# removed whole is found by the chain. The untouched journal starts; following the advice (deleting the damaged
# batch and everything after it) starts too, without the records given up.
# Usage: journal_damage_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=journal_damage
source "$(dirname "$0")/lib_e2e.sh"
command -v sqlite3 >/dev/null || { say "SKIP: no sqlite3 CLI (Debian package sqlite3)"; exit 77; }

DB="$WORK/server/allot.db"
submit() {
  code=$(curl -s -o "$WORK/submit-answer" -w '%{http_code}' -H "Authorization: Bearer $ALLOT_TOKEN" -H 'Content-Type: application/json' \
    -X POST "$ALLOT_SERVER/v1/jobs" -d "{\"name\": \"$1\", \"team\": \"team-a\", \"per_replica\": {\"accelerators\": 1}, \"command\": \"true\"}")
  [ "$code" = 201 ] || fail "cannot submit $1: $code $(cat "$WORK/submit-answer")"
}
stop_server() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
}
# start_refused: the server must exit 3 within 20 s; its stderr is in $WORK/refused.log.
start_refused() {
  "$ALLOT" server --listen 127.0.0.1:0 --data "$WORK/server" >"$WORK/refused.out" 2>"$WORK/refused.log" &
  local pid=$! rc=0
  PIDS+=("$pid")
  for _ in $(seq 1 200); do gone "$pid" && break; sleep 0.1; done
  gone "$pid" || fail "the server started on a damaged journal: $(cat "$WORK/refused.out")"
  wait "$pid" || rc=$?
  [ "$rc" = 3 ] || fail "a damaged journal should stop the start with exit 3, not $rc: $(cat "$WORK/refused.log")"
}

start_server
write_teams
submit train-a
submit train-c
submit train-d
"$ALLOT" jobs >/dev/null || fail "allot jobs failed"
stop_server
cp "$DB" "$WORK/good.db"
seq_a=$(sqlite3 "$DB" "SELECT seq FROM journal WHERE kind = 'submit' AND body LIKE '%\"train-a\"%'")
[ -n "$seq_a" ] || fail "no submission of train-a in the journal"
say "train-a was submitted in record $seq_a"

say "the issue's case: train-a renamed train-b, its accelerators 1 -> 7"
sqlite3 "$DB" "UPDATE journal SET body = replace(replace(body, '\"train-a\"', '\"train-b\"'), '\"accelerators\":1}', '\"accelerators\":7}') WHERE seq = $seq_a"
[ "$(sqlite3 "$DB" "SELECT count(*) FROM journal WHERE seq = $seq_a AND body LIKE '%\"accelerators\":7}%' AND body LIKE '%\"train-b\"%'")" = 1 ] ||
  fail "the record was not changed as the test meant"
start_refused
grep_q "journal record $seq_a (submit, job train-b) in the batch from record [0-9]* does not match its checksum" "$WORK/refused.log" ||
  fail "the refusal should name the record: $(cat "$WORK/refused.log")"
grep_q "Restore the database from a backup" "$WORK/refused.log" || fail "the refusal should say what to do: $(cat "$WORK/refused.log")"
say "refused: $(head -c 300 "$WORK/refused.log")"

say "a batch removed whole"
cp "$WORK/good.db" "$DB"
rm -f "$DB-wal" "$DB-shm"
# The batch that holds train-a's submission: from the record after the previous batch's end to its own end.
first=$(sqlite3 "$DB" "SELECT COALESCE(MAX(seq), 0) + 1 FROM journal WHERE chain IS NOT NULL AND seq < $seq_a")
last=$(sqlite3 "$DB" "SELECT MIN(seq) FROM journal WHERE chain IS NOT NULL AND seq >= $seq_a")
[ "$(sqlite3 "$DB" "SELECT count(*) FROM journal WHERE seq > $last")" -gt 0 ] || fail "no batch after train-a's: the chain has nothing to break"
sqlite3 "$DB" "DELETE FROM journal WHERE seq BETWEEN $first AND $last"
start_refused
grep_q "ends a batch whose chained checksum does not match" "$WORK/refused.log" ||
  fail "the removed batch should break the chain: $(cat "$WORK/refused.log")"
say "refused: $(head -c 300 "$WORK/refused.log")"

say "the advice: give up the damaged batch and every record after it"
damaged_from=$(grep -o 'in the batch from record [0-9]*' "$WORK/refused.log" | grep -o '[0-9]*$')
sqlite3 "$DB" "DELETE FROM journal WHERE seq >= $damaged_from"
start_server
"$ALLOT" jobs -o json >"$WORK/jobs.json" || fail "allot jobs failed after the damaged records were given up"
grep_q '"train-a"' "$WORK/jobs.json" && fail "train-a was given up with its batch"
stop_server

say "the untouched journal starts"
cp "$WORK/good.db" "$DB"
rm -f "$DB-wal" "$DB-shm"
start_server
"$ALLOT" jobs -o json >"$WORK/jobs.json" || fail "allot jobs failed"
for j in train-a train-c train-d; do grep_q "\"$j\"" "$WORK/jobs.json" || fail "$j is missing after a restart"; done
say "ok"
