#!/usr/bin/env python3
"""`baton exec -- true` against `flock -n LOCK true`, interleaved: rounds of
hyperfine (-N, 50 runs each) alternate the commands, so both see the same
machine; the ratio is the median of the per-round ratios of medians. The
same rounds time the start of each program alone (`baton --version`
against `flock --version`), and the binaries' sizes are printed beside.

Usage: scripts/bench-exec.py [--rounds 20] [--runs 50] [--also NAME=CMD ...]
Needs hyperfine and flock; builds the release binary first.
"""
import argparse, json, os, statistics, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=20)
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--also", action="append", default=[],
                help="another command to measure in the same rounds, as NAME=CMD")
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "-q", "-p", "baton"], cwd=root, check=True)
baton = os.path.join(root, "target/release/baton")
work = tempfile.mkdtemp(prefix="bench-exec-")
os.environ["BATON_STATE_DIR"] = os.path.join(work, "state")
subprocess.run([baton, "exec", "--name", "x", "--", "true"], check=True)
open(os.path.join(work, "flock.lock"), "w").close()
cmds = [("baton exec", f"{baton} exec --name x -- true"),
        ("flock -n", f"flock -n {work}/flock.lock true"),
        ("baton --version", f"{baton} --version"),
        ("flock --version", "flock --version")]
cmds += [tuple(x.split("=", 1)) for x in a.also]
medians = {n: [] for n, _ in cmds}
for r in range(a.rounds):
    order = cmds[r % len(cmds):] + cmds[:r % len(cmds)]
    out = os.path.join(work, f"r{r}.json")
    args = ["hyperfine", "-N", "--warmup", "5", "--runs", str(a.runs), "--export-json", out]
    for n, c in order:
        args += ["-n", n, c]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    for res in json.load(open(out))["results"]:
        medians[res["command"]].append(res["median"])
ratios = [b / f for b, f in zip(medians["baton exec"], medians["flock -n"])]
print(f"{a.rounds} interleaved rounds of {a.runs} runs each, {os.cpu_count()} cores")
for n, _ in cmds:
    m = medians[n]
    print(f"  {n:<12} median of medians {statistics.median(m)*1e3:.3f} ms "
          f"(rounds {min(m)*1e3:.3f}..{max(m)*1e3:.3f})")
q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
print(f"  baton exec / flock -n: median {statistics.median(ratios):.2f}x "
      f"(quartiles {q[0]:.2f}x..{q[2]:.2f}x)")
starts = [b / f for b, f in zip(medians["baton --version"], medians["flock --version"])]
print(f"  baton --version / flock --version: median {statistics.median(starts):.2f}x")
for n, _ in cmds[4:]:
    rs = [x / f for x, f in zip(medians[n], medians["flock -n"])]
    print(f"  {n} / flock -n: median {statistics.median(rs):.2f}x")
stripped = os.path.join(work, "baton.stripped")
subprocess.run(["strip", "-o", stripped, baton], check=True)
flock = subprocess.run(["sh", "-c", "command -v flock"], capture_output=True, text=True).stdout.strip()
mb = lambda p: os.path.getsize(p) / 1e6
print(f"  sizes: baton {mb(baton):.1f} MB ({mb(stripped):.1f} MB stripped), "
      f"flock {mb(flock):.3f} MB")
