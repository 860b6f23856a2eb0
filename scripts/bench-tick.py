#!/usr/bin/env python3
"""`baton tick` over 100, 1,000 and 10,000 jobs, none due and all due with
`true`, against `baton exec -- true` and `flock -n LOCK true` in the same
run (hyperfine). Prints a table and the per-job ratios.

Usage: scripts/bench-tick.py [--sizes 100 1000 10000] [--runs N]
Needs hyperfine and flock; builds the release binary first.
"""
import argparse, json, os, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
ap.add_argument("--runs", type=int, default=10)
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "-q", "-p", "baton"], cwd=root, check=True)
baton = os.path.join(root, "target/release/baton")
work = tempfile.mkdtemp(prefix="bench-tick-")


def config(name, n, schedule):
    state = os.path.join(work, f"state-{name}")
    path = os.path.join(work, f"{name}.toml")
    with open(path, "w") as f:
        f.write(f'[scheduler]\nstate_dir = "{state}"\ntimezone = "UTC"\nmax_parallel = 64\n')
        for i in range(n):
            f.write(f'[jobs.j{i}]\n{schedule}\nrun = ["true"]\n')
    # First tick: creates the state directory, the ledger, the lock files.
    subprocess.run([baton, "tick", "--config", path], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def hyperfine(name, cmds, runs, prepare=None, ignore=False):
    out = os.path.join(work, f"{name}.json")
    # A warm-up run would skip the preparation: none where one is needed.
    warmup = "0" if prepare else "1"
    args = ["hyperfine", "-N", "--warmup", warmup, "--runs", str(runs), "--export-json", out]
    if prepare:
        args += ["--prepare", prepare]
    if ignore:
        # A tick that raised an alert (exit 1) still did its work.
        args += ["-i"]
    for label, cmd in cmds:
        args += ["-n", label, cmd]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return {r["command"]: r for r in json.load(open(out))["results"]}


os.environ["BATON_STATE_DIR"] = os.path.join(work, "exec-state")
subprocess.run([baton, "exec", "--name", "x", "--", "true"], check=True)
open(os.path.join(work, "flock.lock"), "w").close()
ref = hyperfine("ref", [("baton exec -- true", f"{baton} exec --name x -- true"),
                        ("flock -n true", f"flock -n {work}/flock.lock true")], 500)
exec_s = ref["baton exec -- true"]["median"]
flock_s = ref["flock -n true"]["median"]

rows = []
for n in a.sizes:
    none = config(f"none-{n}", n, 'schedule = "0 0 1 1 *"')
    due = config(f"due-{n}", n, 'every = "1s"')
    r1 = hyperfine(f"none-{n}", [("none", f"{baton} tick --config {none}")], a.runs)
    # A new second before every tick, and the ledger removed (the lock files
    # stay): every job has exactly one occurrence due, and nothing older is
    # missed (a fresh ledger sees the jobs first now).
    state = os.path.join(work, f"state-due-{n}")
    r2 = hyperfine(f"due-{n}", [("due", f"{baton} tick --config {due}")],
                   max(3, a.runs // 3),
                   prepare=f"sh -c 'sleep 1.05; rm -f {state}/baton.db {state}/baton.db-wal {state}/baton.db-shm'",
                   ignore=True)
    rows.append((n, r1["none"]["median"], r2["due"]["median"]))

print(f"\nmachine: {os.cpu_count()} cores; work dir {work}")
print(f"baton exec -- true: {exec_s*1e3:.3f} ms median; flock -n true: {flock_s*1e3:.3f} ms; "
      f"ratio {exec_s/flock_s:.2f}x\n")
print("| jobs | none due: tick | per job | all due: tick | per job | per job / exec |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for n, none_s, due_s in rows:
    print(f"| {n:,} | {none_s*1e3:.1f} ms | {none_s/n*1e6:.2f} µs | {due_s*1e3:.0f} ms | "
          f"{due_s/n*1e3:.3f} ms | {due_s/n/exec_s:.2f}x |")
