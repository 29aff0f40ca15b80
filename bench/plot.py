#!/usr/bin/python3
"""Draws the benchmark plots from the JSON under bench/results/ (Debian's python3-matplotlib,
Agg backend; run it with /usr/bin/python3):

  pipeline.png     encap/decap ns per packet: the pipeline, the codec alone, the reference
                   (Google Benchmark JSON of pipeline_bench and overlay_bench, bench/reference.json)
  nat.png          NAT ns per packet against live flows (nat_bench)
  xdp.png          the XDP program's cost per verdict (xdp.json from xdp_cost)
  cache.png        Mpps against working-set size, sequential and shuffled (cache.json from cache_bench)
  e2e-pps.png, e2e-cpu.png, e2e-tcp.png, e2e-latency.png   end to end, Andromeda against the
                   kernel's VXLAN (e2e.json from scripts/bench-e2e.sh)

A missing input skips its plot with a message. A file that is not valid JSON, or lacks what its
plot needs, is an error naming the file (exit status 1) after the other plots are drawn.

  /usr/bin/python3 bench/plot.py [--results DIR] [--out DIR] [--format png[,svg]]
"""

import argparse
import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent


class InputError(Exception):
    """A result file that cannot be plotted: the message names the file and what is wrong."""


def load(path):
    """The parsed JSON of `path`, None when the file does not exist."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror})") from None


def need(doc, key, path, kind=None):
    if not isinstance(doc, dict) or key not in doc:
        raise InputError(f"{path}: no '{key}' (is it {kind or 'the expected file'}?)")
    return doc[key]


class Plotter:
    def __init__(self, results, out, formats):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        self.plt = plt
        self.results = results
        self.out = out
        self.formats = formats
        self.written = []

    def save(self, fig, stem):
        fig.tight_layout()
        for fmt in self.formats:
            path = self.out / f"{stem}.{fmt}"
            fig.savefig(path, dpi=90)
            self.written.append(path)
            print(f"plot.py: wrote {path}")
        self.plt.close(fig)

    # --- Google Benchmark -------------------------------------------------------------------

    def gbench_medians(self, stem):
        """run name -> median ns per item over repetitions, from <stem>.json; None if absent."""
        path = self.results / f"{stem}.json"
        doc = load(path)
        if doc is None:
            return None
        runs = {}
        for b in need(doc, "benchmarks", path, "Google Benchmark JSON"):
            if not isinstance(b, dict):
                raise InputError(f"{path}: a benchmark entry is not an object")
            if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                continue
            try:
                scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
                items = b.get("items_per_second")
                ns = 1e9 / items if items else b["cpu_time"] * scale
                runs.setdefault(b.get("run_name", b["name"]), []).append(ns)
            except (KeyError, TypeError, ZeroDivisionError) as e:
                raise InputError(f"{path}: benchmark {b.get('name', '?')}: missing or bad field ({e})") from None
        return {name: statistics.median(t) for name, t in runs.items()}

    def pipeline(self):
        pipeline = self.gbench_medians("pipeline_bench")
        codec = self.gbench_medians("overlay_bench")
        if pipeline is None and codec is None:
            return "no pipeline_bench.json or overlay_bench.json"
        ref_path = ROOT / "reference.json"
        ref = load(ref_path) or {}
        figures = ref.get("figures", {})
        ours = ref.get("ours", {})
        keys = list(figures)
        if not keys:
            return f"no reference figures in {ref_path}"
        series = [("reference", [figures[k] for k in keys], "#999999"),
                  ("pipeline", [(pipeline or {}).get(ours.get(k, [None])[0], 0) for k in keys], "#1f77b4"),
                  ("codec only", [(codec or {}).get((ours.get(k, [None, None]) + [None])[1], 0) for k in keys],
                   "#2ca02c")]
        fig, ax = self.plt.subplots(figsize=(9, 4.5))
        width = 0.27
        for i, (label, values, color) in enumerate(series):
            xs = [j + (i - 1) * width for j in range(len(keys))]
            ax.bar(xs, values, width, label=label, color=color)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(keys, rotation=20, ha="right")
        ax.set_ylabel("ns per packet (median; lower is better)")
        ax.set_title("Encapsulation and decapsulation, one core")
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
        self.save(fig, "pipeline")

    def nat(self):
        nat = self.gbench_medians("nat_bench")
        if nat is None:
            return "no nat_bench.json"
        fig, ax = self.plt.subplots(figsize=(7, 4))
        drew = False
        for family, label in (("BM_NatExistingFlow/", "one packet at a time"),
                              ("BM_NatExistingFlowBurst/", "bursts of 32 (prefetching)")):
            points = sorted((int(name[len(family):].split("/")[0]), ns) for name, ns in nat.items()
                            if name.startswith(family) and name[len(family):].split("/")[0].isdigit())
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
                drew = True
        if not drew:
            self.plt.close(fig)
            return "nat_bench.json has no BM_NatExistingFlow runs"
        ax.set_xscale("log")
        ax.set_xlabel("live flows")
        ax.set_ylabel("ns per packet (median)")
        ax.set_title("NAT translation of an existing flow")
        ax.legend()
        ax.grid(alpha=0.3)
        self.save(fig, "nat")

    # --- xdp_cost ---------------------------------------------------------------------------

    def xdp(self):
        path = self.results / "xdp.json"
        doc = load(path)
        if doc is None:
            return "no xdp.json (scripts/bench.sh runs xdp_cost as root)"
        rows = need(doc, "results", path, "xdp_cost output")
        try:
            names = [f"{r['case']} ({r['verdict'].replace('XDP_', '')})" for r in rows]
            ns = [float(r["ns_per_run"]) for r in rows]
            spread = [(float(r["ns_per_run"]) - float(r["ns_min"]), float(r["ns_max"]) - float(r["ns_per_run"]))
                      for r in rows]
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise InputError(f"{path}: a result lacks a field or has a bad one ({e})") from None
        fig, ax = self.plt.subplots(figsize=(8, 0.35 * len(rows) + 1.5))
        ax.barh(range(len(rows)), ns, xerr=list(zip(*spread)) if spread else None, color="#1f77b4")
        floor = doc.get("floor", {}).get("ns_per_run") if isinstance(doc.get("floor"), dict) else None
        if floor is not None:
            ax.axvline(float(floor), color="#d62728", linestyle="--", label=f"floor: return XDP_PASS ({floor:g} ns)")
            ax.legend(loc="lower right")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(names)
        ax.invert_yaxis()
        ax.set_xlabel("ns per run (bpf_prog_test_run_opts, median)")
        ax.set_title(f"XDP prefilter cost per verdict (kernel {doc.get('kernel', '?')})")
        ax.grid(axis="x", alpha=0.3)
        self.save(fig, "xdp")

    # --- cache_bench ------------------------------------------------------------------------

    def cache(self):
        path = self.results / "cache.json"
        doc = load(path)
        if doc is None:
            return "no cache.json (scripts/bench.sh runs cache_bench)"
        rows = need(doc, "results", path, "cache_bench output")
        series = {}
        try:
            for r in rows:
                series.setdefault((r["workload"], r["order"]), []).append(
                    (int(r["working_set_bytes"]), float(r["mpps"])))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path}: a result lacks a field or has a bad one ({e})") from None
        if not series:
            return f"{path} has no results"
        panels = [("frames", "frames: decap/encap in place"), ("flows", "NAT flow table lookups")]
        fig, axes = self.plt.subplots(1, 2, figsize=(12, 4.5))
        colors = {}
        palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
        for ax, (prefix, title) in zip(axes, panels):
            for (workload, order), points in sorted(series.items()):
                if not workload.startswith(prefix):
                    continue
                points.sort()
                color = colors.setdefault(workload, palette[len(colors) % len(palette)])
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, color=color,
                        linestyle="-" if order == "sequential" else "--", label=f"{workload}, {order}")
            for cache in doc.get("caches", []):
                if not isinstance(cache, dict) or cache.get("type") == "Instruction":
                    continue
                size = cache.get("size_bytes")
                if isinstance(size, (int, float)) and size > 0:
                    ax.axvline(size, color="#777777", linewidth=0.8, linestyle=":")
                    ax.text(size, 0.98, f" L{cache.get('level', '?')}", transform=ax.get_xaxis_transform(),
                            va="top", fontsize=8, color="#555555")
            ax.axhline(80, color="#d62728", linewidth=0.8, linestyle="-.", label="reference report: ~80 Mpps sequential")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("working set (bytes)")
            ax.set_ylabel("Mpps, one core")
            ax.set_title(title)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7)
        self.save(fig, "cache")

    # --- e2e --------------------------------------------------------------------------------

    def e2e(self):
        path = self.results / "e2e.json"
        doc = load(path)
        if doc is None:
            return "no e2e.json (scripts/bench-e2e.sh writes it, as root)"
        if not isinstance(doc, dict):
            raise InputError(f"{path}: not an object with pps, tcp and latency")
        skipped = []
        try:
            pps = doc.get("pps")
            if pps:
                self.grouped_bars([(r["impl"], f"{r['frame_bytes']} B", float(r["pps"]) / 1e6) for r in pps],
                                  "Mpps", f"Packets per second (generator: {self.generator(doc)})", "e2e-pps")
                cpu = [r for r in pps + list(doc.get("cpu_at_fixed_rate") or []) if r.get("cpu_ns_per_packet")]
                if cpu:
                    self.grouped_bars(
                        [(r["impl"], f"{r['frame_bytes']} B" + (f" @ {float(r['rate']):g}/s" if r.get("rate") else ""),
                          float(r["cpu_ns_per_packet"])) for r in cpu],
                        "ns of CPU per packet", "Datapath CPU time per packet", "e2e-cpu")
            else:
                skipped.append("pps")
            tcp = doc.get("tcp")
            if tcp:
                self.grouped_bars([(r["impl"], f"{r['streams']} stream(s)", float(r["gbps"])) for r in tcp],
                                  "Gbit/s", "TCP throughput (iperf3)", "e2e-tcp")
            else:
                skipped.append("tcp")
            latency = doc.get("latency")
            if latency:
                rows = []
                for r in latency:
                    name = f"{r['impl']} @ {float(r.get('rate', 0)):g}/s"
                    if r.get("sched"):
                        name += f" ({r['sched']})"
                    for key, label in (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")):
                        if r.get(key) is not None:
                            rows.append((name, label, float(r[key])))
                self.grouped_bars(rows, "µs", "Request/response latency", "e2e-latency")
            else:
                skipped.append("latency")
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path}: an entry lacks a field or has a bad one ({e})") from None
        if skipped:
            return f"e2e.json has no {', '.join(skipped)}"
        return None

    @staticmethod
    def generator(doc):
        g = doc.get("generator")
        if isinstance(g, dict):
            if "pps" in g:
                return f"{float(g['pps']) / 1e6:.2f} Mpps alone"
            return ", ".join(f"{k}={v}" for k, v in g.items() if not isinstance(v, (dict, list)))
        return str(g) if g is not None else "?"

    def grouped_bars(self, rows, unit, title, stem):
        """rows: (series, group, value): bars of every series side by side within each group."""
        groups = list(dict.fromkeys(g for _, g, _ in rows))
        names = list(dict.fromkeys(s for s, _, _ in rows))
        values = {(s, g): v for s, g, v in rows}
        fig, ax = self.plt.subplots(figsize=(max(6, 1.6 * len(groups) * max(1, len(names)) / 2), 4))
        width = 0.8 / max(1, len(names))
        for i, name in enumerate(names):
            xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(groups))]
            ax.bar(xs, [values.get((name, g), 0) for g in groups], width, label=name)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups)
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        self.save(fig, stem)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Draws the benchmark plots from bench/results/*.json.")
    parser.add_argument("--results", type=pathlib.Path, default=ROOT / "results", help="where the JSON is")
    parser.add_argument("--out", type=pathlib.Path, help="where the plots go (default: --results)")
    parser.add_argument("--format", default="png", help="comma-separated: png, svg (default png)")
    args = parser.parse_args(argv)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    if not formats or any(f not in ("png", "svg") for f in formats):
        parser.error("--format takes png and/or svg")
    if not args.results.is_dir():
        print(f"plot.py: {args.results}: no such directory (run scripts/bench.sh first)", file=sys.stderr)
        return 1
    out = args.out or args.results
    out.mkdir(parents=True, exist_ok=True)
    try:
        plotter = Plotter(args.results, out, formats)
    except ImportError as e:
        print(f"plot.py: matplotlib is missing ({e}): apt-get install python3-matplotlib, "
              f"and run it with /usr/bin/python3", file=sys.stderr)
        return 1
    errors = []
    for plot in (plotter.pipeline, plotter.nat, plotter.xdp, plotter.cache, plotter.e2e):
        try:
            skipped = plot()
        except InputError as e:
            errors.append(str(e))
            continue
        if skipped:
            print(f"plot.py: skipped {plot.__name__}: {skipped}")
    for e in errors:
        print(f"plot.py: error: {e}", file=sys.stderr)
    if not plotter.written and not errors:
        print("plot.py: nothing to plot (no results yet: run scripts/bench.sh)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
