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
        if not isinstance(doc, dict) or "benchmarks" not in doc:
            continue  # not Google Benchmark output (xdp.json, cache.json, e2e.json)
        context = context or doc.get("context")
        for b in doc.get("benchmarks", []):
            if b.get("run_type") != "iteration":
                continue
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            items = b.get("items_per_second")
            per_item_ns = 1e9 / items if items else b["cpu_time"] * scale
            runs.setdefault(b["run_name"], []).append(per_item_ns)
    return runs, context


def load_kind(name):
    """The JSON of bench/results/<name>, None when absent."""
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def load_avg(doc):
    value = doc.get("load_avg")
    return f"{value:.2f}" if isinstance(value, (int, float)) else "?"


def xdp_section():
    """The XDP program's cost per verdict (xdp.json from bench/xdp_cost)."""
    doc = load_kind("xdp.json")
    if not doc:
        return []
    floor = doc.get("floor", {}).get("ns_per_run", "?")
    out = ["", "## XDP program cost per verdict (ns per run: median, min-max)", "",
           f"bpf_prog_test_run_opts, repeat {doc.get('repeat', '?')}, {doc.get('runs', '?')} runs, kernel "
           f"{doc.get('kernel', '?')}, load average {load_avg(doc)}; floor (a program returning "
           f"XDP_PASS): {floor} ns", "",
           "| case | verdict | frame bytes | median | min | max |", "|---|---|---|---|---|---|"]
    for r in doc.get("results", []):
        verdict = r.get("verdict", "?") + ("" if r.get("ok", True) else f" (expected {r.get('expected_verdict')})")
        out.append(f"| {r.get('case')} | {verdict} | {r.get('frame_bytes')} | {r.get('ns_per_run')} | "
                   f"{r.get('ns_min')} | {r.get('ns_max')} |")
    return out


def size_label(n):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}iB"
    return f"{n} B"


def cache_section():
    """Mpps against working-set size (cache.json from bench/cache_bench)."""
    doc = load_kind("cache.json")
    if not doc:
        return []
    rows = doc.get("results", [])
    columns = list(dict.fromkeys((r["workload"], r["order"]) for r in rows))
    sizes = sorted({r["working_set_bytes"] for r in rows})
    mpps = {(r["workload"], r["order"], r["working_set_bytes"]): r["mpps"] for r in rows}
    caches = ", ".join(f"L{c['level']} {c['type']} {size_label(c['size_bytes'])}" for c in doc.get("caches", [])
                       if c.get("type") != "Instruction")
    out = ["", "## Cache experiment (Mpps on one core, median)", "",
           f"{doc.get('cpu', '?')} ({caches}); load average {load_avg(doc)}, "
           f"{doc.get('runs', '?')} runs of {doc.get('min_time_s', '?')} s per point", "",
           "| working set | " + " | ".join(f"{w} {o[:3]}" for w, o in columns) + " |",
           "|---|" + "---|" * len(columns)]
    for size in sizes:
        cells = [f"{mpps[(w, o, size)]:.1f}" if (w, o, size) in mpps else "-" for w, o in columns]
        out.append(f"| {size_label(size)} | " + " | ".join(cells) + " |")
    return out


def main():
    runs, context = load_runs()
    extra = xdp_section() + cache_section()
    if not runs and not extra:
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
    out += extra
    (RESULTS / "summary.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
