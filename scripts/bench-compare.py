#!/usr/bin/env python3
"""Two builds of baton side by side, in the same hyperfine runs: a run of a
`true` job in each store (`baton run j`, lock file + SQLite, and
PostgreSQL), a tick of 100 jobs with nothing due, and `baton exec -- true`.
For a change that must not make anything slower: give the binary before and
the binary after. Prints each median and the ratio after / before.

Usage: scripts/bench-compare.py BEFORE AFTER [--runs N]
Needs hyperfine and Debian's postgresql; run as root (the server runs as
the postgres user) or as a user who may run initdb.
"""
import argparse, json, os, shutil, socket, subprocess, tempfile

import throwaway_pg

ap = argparse.ArgumentParser()
ap.add_argument("before")
ap.add_argument("after")
ap.add_argument("--runs", type=int, default=50)
a = ap.parse_args()
bins = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}
work = tempfile.mkdtemp(prefix="bench-compare-")
os.chmod(work, 0o755)
cluster = throwaway_pg.Cluster(work).start()
port, url, pgbin = cluster.port, cluster.url, cluster.bin


def config(name, body):
    path = os.path.join(work, f"{name}.toml")
    with open(path, "w") as f:
        f.write(f'[scheduler]\nstate_dir = "{work}/state-{name}"\ntimezone = "UTC"\n{body}')
    return path


try:
    cases = []
    for who, baton in bins.items():
        files = config(f"files-{who}", '[jobs.j]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n')
        store = config(f"pg-{who}", f'[store]\nurl = "{url}"\n'
                       f'[jobs.j{who}]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n')
        many = config(f"tick-{who}", "".join(
            f'[jobs.j{i}]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n' for i in range(100)))
        subprocess.run([baton, "store", "migrate", "--config", store], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([baton, "tick", "--config", many], check=False)
        lock = os.path.join(work, f"exec-{who}.lock")
        cases += [
            (f"run files {who}", f"{baton} run j --config {files}"),
            (f"run postgres {who}", f"{baton} run j{who} --config {store}"),
            (f"tick 100 none due {who}", f"{baton} tick --config {many}"),
            (f"exec {who}", f"{baton} exec --lock {lock} -- true"),
        ]
    out = os.path.join(work, "runs.json")
    cmd = ["hyperfine", "-N", "--warmup", "3", "--runs", str(a.runs), "--export-json", out]
    for n, c in cases:
        cmd += ["-n", n, c]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    r = {x["command"]: x["median"] * 1000 for x in json.load(open(out))["results"]}
    print("| command | before | after | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for what in ["run files", "run postgres", "tick 100 none due", "exec"]:
        b, f = r[f"{what} before"], r[f"{what} after"]
        print(f"| {what} | {b:.2f} ms | {f:.2f} ms | {f / b:.2f}x |")
finally:
    cluster.stop()
    shutil.rmtree(work, ignore_errors=True)
