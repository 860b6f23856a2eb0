#!/usr/bin/env python3
"""Prints a fault campaign's --json record as the Markdown table RELIABILITY.md keeps."""
import json
import sys

doc = json.load(open(sys.argv[1]))
cols = ["trials", "injected", "overlaps", "duplicates", "lost", "wrong", "fence", "wedged", "breaches"]
print("| scenario | trials | faults | overlap | dup | lost | wrong | fence | wedged | breach | verdict |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for r in doc["rows"] + [doc["total"]]:
    name = r["scenario"]
    bad = sum(r[c] for c in cols[2:])
    verdict = "FAIL" if bad else ("BROKEN" if r["broken"] else "PASS")
    if r["failed"]:
        verdict += f" ({r['failed']}/{r['trials']} trials)"
    cells = " | ".join(f"{r[c]:,}" for c in cols)
    if name == "all":
        print(f"| **all** | {cells} | **{verdict}** |")
    else:
        print(f"| `{name}` | {cells} | {verdict} |")
print()
print(f"{doc['total']['trials']:,} trials, {doc['total']['injected']:,} faults injected, "
      f"{doc['total']['broken']} with an instrument failure; seed {doc['seed']}; {doc['secs'] / 60:.0f} min")
