#!/usr/bin/env python3
"""Summarises Google Benchmark JSON results under bench/results/ into bench/results/summary.md:
every benchmark's median (and spread over repetitions), and for the encap/decap paths the ratio
against the reference figures in bench/reference.json (ratio < 1: we take less time).

Standard library only, so any python3 runs it."""

import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent
RESULTS = ROOT / "results"


def load_runs():
    """name -> list of per-repetition real times in ns, from every *.json result file."""
    runs, context = {}, None
    for path in sorted(RESULTS.glob("*.json")):
        doc = json.loads(path.read_text())
        context = context or doc.get("context")
        for b in doc.get("benchmarks", []):
            if b.get("run_type") != "iteration":
                continue
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            items = b.get("items_per_second")
            per_item_ns = 1e9 / items if items else b["cpu_time"] * scale
            runs.setdefault(b["run_name"], []).append(per_item_ns)
    return runs, context


def main():
    runs, context = load_runs()
    if not runs:
        sys.exit("summarize.py: no results in bench/results/ (run scripts/bench.sh first)")
    ref = json.loads((ROOT / "reference.json").read_text())
    out = ["# Micro-benchmark summary", ""]
    if context:
        out.append(f"{context.get('host_name', '?')}: {context.get('num_cpus', '?')} CPUs at "
                   f"{context.get('mhz_per_cpu', '?')} MHz, {context.get('date', '')}; "
                   f"load average {context.get('load_avg', '?')}")
        out.append("")
    out += ["## Against the reference (ns per packet, median; ratio = ours / reference)", "",
            "| path | reference | ours (pipeline) | ratio | ours (codec only) | ratio |", "|---|---|---|---|---|---|"]
    for key, reference in ref["figures"].items():
        cells = [key, f"{reference:.1f}"]
        for name in ref["ours"][key]:
            times = runs.get(name)
            if times:
                median = statistics.median(times)
                cells += [f"{median:.1f}", f"{median / reference:.2f}"]
            else:
                cells += ["-", "-"]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Every benchmark (ns per item: median, min-max over repetitions)", "",
            "| benchmark | median | min | max | runs |", "|---|---|---|---|---|"]
    for name in sorted(runs):
        t = runs[name]
        out.append(f"| {name} | {statistics.median(t):.1f} | {min(t):.1f} | {max(t):.1f} | {len(t)} |")
    (RESULTS / "summary.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
