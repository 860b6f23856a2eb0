#!/usr/bin/env python3
"""Merges baton-stress --json reports (one campaign split into batches) into
the markdown tables BENCHMARKS.md shows: races per implementation and
scenario, contention throughput at the largest size, latency against the floor.

Usage: scripts/stress-summary.py REPORT.json [REPORT.json ...]
"""
import json
import sys
from collections import defaultdict

SCEN = ["free", "stale", "churn", "stale-churn", "threads", "slow-holder", "kill9-churn", "sigstop"]
NAMES = {
    "free": "free lock", "stale": "stale recovery", "churn": "sustained churn",
    "stale-churn": "stale + churn", "threads": "threads (one process)",
    "slow-holder": "slow live holder", "kill9-churn": "kill -9 churn", "sigstop": "SIGSTOPped holder",
}

docs = [json.load(open(p)) for p in sys.argv[1:]]
impls = docs[0]["config"]["impls"]
cell = defaultdict(lambda: [0, 0, 0, 0])  # trials, raced, duplicates, overlaps
errors = defaultdict(int)
thr = defaultdict(lambda: [0, 0.0])
biggest = max(docs[0]["config"]["sizes"])
for d in docs:
    for t in d["trials"]:
        c = cell[(t["impl"], t["scenario"])]
        c[0] += 1
        raced = t["duplicates"] > 0 or t["overlaps"] > 0 or (t["impl"] == "baton" and t["displaced"] > 0)
        c[1] += raced
        c[2] += t["duplicates"]
        c[3] += t["overlaps"]
        errors[t["impl"]] += t["child_errors"] + t["never_finished"] + t["gave_up"]
    for r in d.get("throughput") or []:
        if r["procs"] == biggest:
            thr[r["impl"]][0] += r["acquisitions"]
            thr[r["impl"]][1] += r["secs"]

print(f"Trials that raced / trials (duplicate acquisitions, overlaps), {len(docs)} report(s):\n")
print("| scenario | " + " | ".join(impls) + " |")
print("| --- |" + " --- |" * len(impls))
tot = defaultdict(lambda: [0, 0])
for s in SCEN:
    row = []
    for i in impls:
        n, r, dup, ov = cell[(i, s)]
        tot[i][0] += n
        tot[i][1] += r
        row.append(f"{r}/{n}" + (f" ({dup:,} dup, {ov:,} ov)" if r else ""))
    print(f"| {NAMES[s]} | " + " | ".join(row) + " |")
print("| **all** | " + " | ".join(f"**{tot[i][1]}/{tot[i][0]}**" for i in impls) + " |")
print("\nInstrument errors (child errors, never finished, gave up): "
      + ", ".join(f"{i} {errors[i]}" for i in impls))

if thr:
    print(f"\nContention at {biggest} processes, churn rows summed over all reports:\n")
    print("| impl | acquisitions | secs | acq/s | vs v2 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    v2 = thr["v2"][0] / thr["v2"][1] if thr.get("v2") and thr["v2"][1] else None
    for i in impls:
        a, secs = thr[i]
        if secs:
            rate = a / secs
            print(f"| {i} | {a:,} | {secs:.2f} | {rate:,.0f} | " + (f"{rate / v2:.2f}×" if v2 else "") + " |")

lat = next((d["latency"] for d in docs if d.get("latency")), None)
if lat:
    print("\nUncontended acquire + release (µs):\n")
    print("| impl | median | mean | p99 | × floor |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in lat:
        print(f"| {r['name']} | {r['median_us']:.1f} | {r['mean_us']:.1f} | {r['p99_us']:.1f} | {r['vs_floor']:.2f}× |")
