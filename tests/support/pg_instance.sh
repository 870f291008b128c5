#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests: the one place that starts and stops it, used by the store
# conformance suite (tests/unit/pg_test_instance.h) and the e2e tests (start_postgres in tests/e2e/lib_e2e.sh).
#
#   pg_instance.sh start DIR   initdb + pg_ctl start in DIR (created, must not hold a cluster yet) on a free
#                              loopback port; prints the URL postgresql://allot@127.0.0.1:PORT/allot
#   pg_instance.sh halt DIR    stops that server as a crash would (pg_ctl stop -m immediate) and keeps DIR
#   pg_instance.sh resume DIR  starts a halted server again on the same port
#   pg_instance.sh stop DIR    stops that server (immediately: a test's server holds nothing worth a checkpoint)
#                              and removes DIR
#
# It installs Debian's `postgresql` package through scripts/deps.sh when no server binaries are found, and exits
# 77 (the tests' "skipped") with a message on stderr only when that is impossible. PostgreSQL refuses to run as
# root, so under root (CI) the cluster belongs to the `postgres` user the package creates (or `nobody`) and every
# server command runs as that user. The server listens on 127.0.0.1 only, with trust authentication for local
# connections: fine for a test, not a deployment (docs/deployment.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|halt|resume|stop DIR" >&2; exit 2; }

find_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  return 1
}

# Runs a server command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" -ne 0 ]; then "$@"; return; fi
  if command -v runuser >/dev/null; then runuser -u "$owner" -- "$@"; else setpriv --reuid "$owner" --regid "$owner" --init-groups -- "$@"; fi
}

owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  if id postgres >/dev/null 2>&1; then owner=postgres; else owner=nobody; fi
fi

case "$cmd" in
  start)
    bin=$(find_bin || true)
    if [ -z "$bin" ]; then
      bash "$here/../../scripts/deps.sh" postgresql >&2 || true
      bin=$(find_bin || true)
    fi
    if [ -z "$bin" ]; then
      echo "PostgreSQL is not installed and could not be installed (apt-get install postgresql failed or is not allowed); skipping" >&2
      exit 77
    fi
    mkdir -p "$dir"
    [ -e "$dir/data" ] && { echo "$dir already holds a cluster" >&2; exit 2; }
    chmod 0755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown "$owner" "$dir"
    as_owner test -w "$dir" || {
      echo "$owner cannot write to $dir: every directory above it must be open to $owner (mktemp -d makes 0700 ones)" >&2; exit 2; }
    # initdb is the slow step (seconds on a loaded machine), so it runs once per PostgreSQL version and user into a
    # template under /tmp that every start copies. --no-sync: a test cluster need not survive a power cut (the
    # server itself still fsyncs every commit).
    template="/tmp/allot-pg-template-$(id -u)-$(basename "$(dirname "$bin")")"
    (
      flock 9
      if [ ! -f "$template/PG_VERSION" ]; then
        rm -rf "$template.tmp"
        mkdir -p "$template.tmp"
        [ "$(id -u)" -eq 0 ] && chown "$owner" "$template.tmp"
        as_owner "$bin/initdb" -D "$template.tmp" -A trust -U allot -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 || {
          echo "initdb failed:" >&2; cat "$dir/initdb.log" >&2; rm -rf "$template.tmp"; exit 1; }
        mv "$template.tmp" "$template"
      fi
    ) 9>"$template.lock"
    cp -a "$template" "$dir/data"
    # A free port: try a few at random in the dynamic range; pg_ctl fails to start when the port is taken.
    for _ in $(seq 1 20); do
      port=$((20000 + RANDOM % 30000))
      if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
          -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=50 -c fsync=on" start >/dev/null 2>&1; then
        as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U allot allot >&2
        echo "$bin" >"$dir/bin"
        echo "$port" >"$dir/port"
        echo "postgresql://allot@127.0.0.1:$port/allot"
        exit 0
      fi
    done
    echo "cannot start PostgreSQL in $dir:" >&2
    tail -n 20 "$dir/server.log" >&2 || true
    exit 1
    ;;
  halt)
    as_owner "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null
    ;;
  resume)
    as_owner "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $(cat "$dir/port") -k $dir -c max_connections=50 -c fsync=on" start >/dev/null
    ;;
  stop)
    if [ -f "$dir/bin" ] && [ -d "$dir/data" ]; then
      as_owner "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|halt|resume|stop DIR" >&2; exit 2 ;;
esac
