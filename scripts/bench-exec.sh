#!/usr/bin/env bash
# Whole-command comparison: `baton exec --name x -- true` against
# `flock -n LOCK true`, measured by hyperfine in the same run.
# Usage: scripts/bench-exec.sh [RUNS]   (needs hyperfine and flock)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2000}"
cargo build --release -q -p baton
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export BATON_STATE_DIR="$dir/state"
baton="$PWD/target/release/baton"
"$baton" exec --name x -- true   # create the state directory and the lock file
touch "$dir/flock.lock"
hyperfine -N --warmup 200 --runs "$runs" --export-json "$dir/exec.json" \
  -n "baton exec" "$baton exec --name x -- true" \
  -n "flock -n" "flock -n $dir/flock.lock true"
python3 - "$dir/exec.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, f = r["baton exec"], r["flock -n"]
print(f"\nmedian: baton exec {b['median']*1e3:.3f} ms, flock -n {f['median']*1e3:.3f} ms, "
      f"ratio {b['median']/f['median']:.2f}x (mean ratio {b['mean']/f['mean']:.2f}x)")
PY
