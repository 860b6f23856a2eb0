#!/usr/bin/env bash
# Rebuilds the fixtures the upgrade tests start from, each written by the
# baton that wrote that format, built from its own commit:
#
#   crates/baton-ledger/tests/fixtures/ledger-v1.db   SQLite schema 1 (last written by 1038e6c)
#   crates/baton-ledger/tests/fixtures/ledger-v2.db   SQLite schema 2 (last written by 2d5bfff)
#   crates/baton-pg/tests/fixtures/store-v2.sql       PostgreSQL schema 2 (last written by 01d4ed0)
#   crates/baton/tests/fixtures/locks/*.lock          lock records as 2d5bfff wrote them, and
#                                                     Scheduler Lock v2's, as its guide specifies
#
#   scripts/upgrade-fixtures.sh
#
# Each old commit is exported with `git archive` (no worktree, nothing in
# .git changes) and built in a temporary target directory, then drives a
# scenario that fills every table of its schema: steps and checks, a
# failing job with a retry, a watermark, a queue that coalesces, busy and
# superseded ranges, a pause, a manual run, alerts. The ledgers are copied
# with VACUUM INTO (one file, no write-ahead log); the store is dumped with
# pg_dump as INSERTs (psql's \restrict lines removed, so the tests load it
# through the driver). Needs cargo, git, python3, and for the store the
# `postgresql` package (initdb, pg_ctl, pg_dump); as root, the server runs
# as the `postgres` user. The times inside the fixtures are when this ran:
# the tests compare what the old schema held with what the new code reads,
# never fixed values.
set -euo pipefail
shopt -s inherit_errexit

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d /tmp/baton-upgrade-fixtures.XXXXXX)
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
pg_root=""
pg_data=""

cleanup() {
  if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
    as_pg "$pg_bin/pg_ctl" -D "$pg_data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work" ${pg_root:+"$pg_root"}
}
trap cleanup EXIT

SQLITE_V1=1038e6c0db7cccb692e8aeca5826ab8a34bf6b99
SQLITE_V2=2d5bfffec648c359523c978c389f5b56598e02d1
PG_V2=01d4ed013780955482268ada9e4a8b5b673559c8

# build COMMIT: prints the path of that commit's baton binary.
build() {
  local commit=$1 src="$work/src-$1"
  mkdir -p "$src" "$work/bin"
  # -m: the files get today's times, so cargo rebuilds what the previous
  # commit's build left in the shared target directory.
  git -C "$root" archive "$commit" | tar -x -m -C "$src"
  (cd "$src" && CARGO_PROFILE_DEV_DEBUG=0 CARGO_TARGET_DIR="$work/target" \
    cargo build -q -p baton --locked >&2)
  cp "$work/target/debug/baton" "$work/bin/baton-$commit"
  echo "$work/bin/baton-$commit"
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# config DIR BATON FEATURES [STORE_URL]: writes DIR/baton.toml. FEATURES is
# "v1" (steps, retries, busy) or "v2" (and the queue, watermarks, pauses).
config() {
  local dir=$1 bin=$2 features=$3 url=${4:-}
  {
    echo '[scheduler]'
    echo "state_dir = \"$dir/state\""
    echo 'timezone = "UTC"'
    echo 'alert_command = "cat >/dev/null"'
    if [ -n "$url" ]; then
      printf '\n[store]\nurl = "%s"\n' "$url"
    fi
    cat <<'EOF'

[jobs.steps]
schedule = "*/2 * * * * *"
[[jobs.steps.steps]]
name = "fetch"
run = "echo fetched"
[[jobs.steps.steps]]
name = "load"
run = ["echo", "loaded"]
[[jobs.steps.checks]]
name = "health"
run = "true"

[jobs.flaky]
schedule = "*/2 * * * * *"
run = "echo failing; exit 3"
retries = 1
backoff = "1s"

[jobs.busy]
schedule = "*/2 * * * * *"
run = "sleep 5"
EOF
    if [ "$features" = v2 ]; then
      cat <<EOF

[jobs.water]
schedule = "*/2 * * * * *"
run = "$bin watermark settle water \"\$BATON_OCCURRENCE\""

[jobs.queued]
schedule = "*/2 * * * * *"
run = "sleep 5"
overlap = "queue"

[jobs.held]
schedule = "*/2 * * * * *"
run = "true"
EOF
    fi
  } >"$dir/baton.toml"
}

# scenario DIR BATON FEATURES: a dozen overlapping ticks, a pause, a manual
# run; waits for every run to end.
scenario() {
  local dir=$1 bin=$2 features=$3
  export BATON_CONFIG="$dir/baton.toml"
  mkdir -p "$dir/state"
  chmod 700 "$dir/state"
  if [ "$features" = v2 ]; then
    "$bin" pause held --reason "upgrade fixture" >/dev/null
  fi
  local pids=()
  for _ in $(seq 1 12); do
    "$bin" tick >>"$dir/tick.log" 2>&1 &
    pids+=($!)
    sleep 1
  done
  if [ "$features" = v2 ]; then
    "$bin" resume held >/dev/null
  fi
  "$bin" run steps >>"$dir/tick.log" 2>&1 || true
  for p in "${pids[@]}"; do wait "$p" || true; done
  unset BATON_CONFIG
}

# copy_ledger DB OUT TABLES...: VACUUM INTO OUT, failing unless every table
# named holds a row.
copy_ledger() {
  local db=$1 out=$2
  shift 2
  rm -f "$out"
  python3 - "$db" "$out" "$@" <<'EOF'
import sqlite3, sys
db, out, tables = sys.argv[1], sys.argv[2], sys.argv[3:]
c = sqlite3.connect(db)
for t in tables:
    n = c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
    if n == 0:
        sys.exit(f"{db}: table {t} is empty: the scenario did not exercise it")
c.execute("VACUUM INTO ?", (out,))
c.close()
v = sqlite3.connect(out).execute("PRAGMA user_version").fetchone()[0]
print(f"{out}: schema version {v}")
EOF
}

ledger_fixtures="$root/crates/baton-ledger/tests/fixtures"
lock_fixtures="$root/crates/baton/tests/fixtures/locks"
pg_fixtures="$root/crates/baton-pg/tests/fixtures"
mkdir -p "$ledger_fixtures" "$lock_fixtures" "$pg_fixtures"

# SQLite, schema 1.
bin=$(build "$SQLITE_V1")
mkdir -p "$work/v1"
config "$work/v1" "$bin" v1
scenario "$work/v1" "$bin" v1
copy_ledger "$work/v1/state/baton.db" "$ledger_fixtures/ledger-v1.db" \
  jobs occurrences runs attempts steps alerts

# SQLite, schema 2, and the lock files that build wrote.
bin=$(build "$SQLITE_V2")
mkdir -p "$work/v2"
config "$work/v2" "$bin" v2
scenario "$work/v2" "$bin" v2
copy_ledger "$work/v2/state/baton.db" "$ledger_fixtures/ledger-v2.db" \
  jobs occurrences runs attempts steps alerts missed pauses watermarks
# A released lock: the free marker, with the claim of the job's last start.
cp "$work/v2/state/locks/steps.lock" "$lock_fixtures/v3-2d5bfff-free.lock"
# A held lock whose holder and job were killed (kill -9): what a host that
# crashed, or a supervisor killed mid-run, leaves.
mkdir -p "$work/exec"
chmod 700 "$work/exec"
BATON_STATE_DIR="$work/exec" "$bin" exec --name crashed --ttl 30s -- sleep 300 &
holder=$!
for _ in $(seq 1 100); do
  grep -q 'state=held' "$work/exec/locks/crashed.lock" 2>/dev/null && break
  sleep 0.1
done
pgid=$(sed -n 's/.* pgid=\([0-9]*\).*/\1/p' "$work/exec/locks/crashed.lock")
kill -9 "$holder"
[ -n "$pgid" ] && kill -9 -- "-$pgid" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
cp "$work/exec/locks/crashed.lock" "$lock_fixtures/v3-2d5bfff-held.lock"
# Scheduler Lock v2 (seed 003 §5), which no baton writes: its held lease
# as its guide specifies it, taken at a fixed time long past.
printf 'version=2 pid=48213 at=2026-08-05T19:00:00.000000+05:30 token=9f3c1ab27de40518\n' \
  >"$lock_fixtures/v2-held.lock"
printf 'version=2 state=free\n' >"$lock_fixtures/v2-free.lock"

# PostgreSQL, schema 2.
if [ -z "$pg_bin" ]; then
  echo "PostgreSQL is not installed (the postgresql package): the store fixture is not rebuilt" >&2
  exit 1
fi
bin=$(build "$PG_V2")
# The server's directory is its own (the postgres user's, as root): the
# state directories stay in a tree only this user can change, as baton
# requires.
pg_root=$(mktemp -d /tmp/baton-upgrade-pg.XXXXXX)
pg_data="$pg_root/data"
mkdir -p "$pg_data"
chmod 700 "$pg_data"
if [ "$(id -u)" = 0 ]; then chown -R postgres: "$pg_root"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$pg_bin/initdb" -D "$pg_data" -U baton --auth=trust >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_root/log" -w \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$pg_root -c fsync=off" \
  start >/dev/null
"$pg_bin/psql" -h 127.0.0.1 -p "$port" -U baton -d postgres -q -c 'CREATE DATABASE baton'
url="postgres://baton@127.0.0.1:$port/baton"
mkdir -p "$work/pg-v2"
config "$work/pg-v2" "$bin" v2 "$url"
BATON_CONFIG="$work/pg-v2/baton.toml" "$bin" store migrate
scenario "$work/pg-v2" "$bin" v2
for t in leases claims jobs occurrences runs attempts steps alerts missed pauses watermarks tallies durations; do
  n=$("$pg_bin/psql" -h 127.0.0.1 -p "$port" -U baton -d baton -tAc "SELECT count(*) FROM baton.$t")
  if [ "$n" = 0 ]; then
    echo "baton.$t is empty: the scenario did not exercise it" >&2
    exit 1
  fi
done
"$pg_bin/pg_dump" -h 127.0.0.1 -p "$port" -U baton -d baton --schema=baton --inserts \
  --no-owner --no-privileges --no-comments |
  grep -v -e '^\\restrict' -e '^\\unrestrict' >"$pg_fixtures/store-v2.sql"
echo "$pg_fixtures/store-v2.sql: schema version $("$pg_bin/psql" -h 127.0.0.1 -p "$port" -U baton -d baton -tAc 'SELECT max(version) FROM baton.migrations')"
