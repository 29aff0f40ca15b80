#!/usr/bin/python3
"""Tests bench/plot.py as scripts/bench.sh runs it: small sample results of every kind in a
temporary directory give every plot; missing inputs are skipped; a malformed file is an error
that names it, and the other plots are still drawn. Run with /usr/bin/python3 (matplotlib)."""

import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

PLOT = pathlib.Path(__file__).resolve().parent / "plot.py"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def gbench(runs):
    """Google Benchmark JSON with two repetitions of each (name, ns) plus a median aggregate."""
    benchmarks = []
    for name, ns in runs:
        for i, scale in enumerate((1.0, 1.1)):
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration", "repetition_index": i,
                               "iterations": 1000, "real_time": ns * scale, "cpu_time": ns * scale,
                               "time_unit": "ns", "items_per_second": 1e9 / (ns * scale)})
        benchmarks.append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                           "aggregate_name": "median", "cpu_time": ns, "time_unit": "ns"})
    return {"context": {"host_name": "test", "num_cpus": 2}, "benchmarks": benchmarks}


SAMPLES = {
    "pipeline_bench.json": gbench([("BM_PipelineEncapCopy/60", 16.6), ("BM_PipelineDecapInPlace/60", 14.8)]),
    "overlay_bench.json": gbench([("BM_EncapCopy/60", 8.2), ("BM_Decap/60", 8.7)]),
    "nat_bench.json": gbench([("BM_NatExistingFlow/1", 19.4), ("BM_NatExistingFlow/1000000", 109),
                              ("BM_NatExistingFlowBurst/1", 19.4), ("BM_NatExistingFlowBurst/1000000", 64)]),
    "xdp.json": {"kind": "xdp_cost", "kernel": "6.1", "floor": {"ns_per_run": 6},
                 "results": [{"case": "overlay_redirect", "verdict": "XDP_REDIRECT", "ns_per_run": 33, "ns_min": 32,
                              "ns_max": 36},
                             {"case": "arp", "verdict": "XDP_PASS", "ns_per_run": 13, "ns_min": 13, "ns_max": 13}]},
    "cache.json": {"kind": "cache_experiment",
                   "caches": [{"level": 1, "type": "Data", "size_bytes": 49152},
                              {"level": 2, "type": "Unified", "size_bytes": 2097152}],
                   "results": [{"workload": w, "order": o, "working_set_bytes": size, "mpps": mpps}
                               for w in ("frames_decap", "flows")
                               for o in ("sequential", "shuffled")
                               for size, mpps in ((4096, 20.0), (1 << 20, 15.0), (1 << 26, 2.0))]},
    "e2e.json": {"generator": {"pps": 5e6},
                 "pps": [{"impl": "andromeda", "frame_bytes": 64, "pps": 1.2e6, "cpu_ns_per_packet": 800},
                         {"impl": "kernel-vxlan", "frame_bytes": 64, "pps": 1.0e6, "cpu_ns_per_packet": 900},
                         {"impl": "andromeda", "frame_bytes": 1500, "pps": 0.9e6, "cpu_ns_per_packet": 950}],
                 "tcp": [{"impl": "andromeda", "streams": 1, "gbps": 3.1},
                         {"impl": "kernel-vxlan", "streams": 4, "gbps": 4.0}],
                 "cpu_at_fixed_rate": [{"impl": "andromeda", "frame_bytes": 64, "rate": 50000, "pps": 5e4,
                                        "cpu_ns_per_packet": 9000}],
                 "latency": [{"impl": "andromeda", "rate": 1000, "sched": "fifo", "p50_us": 30, "p99_us": 60, "p999_us": 90},
                             {"impl": "kernel-vxlan", "rate": 1000, "p50_us": 25, "p99_us": 50, "p999_us": None}]},
}
ALL_PLOTS = ["pipeline", "nat", "xdp", "cache", "e2e-pps", "e2e-cpu", "e2e-tcp", "e2e-latency"]


def run_plot(*args):
    return subprocess.run([sys.executable, str(PLOT), *args], capture_output=True, text=True, timeout=120)


class PlotScript(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, samples):
        for name, doc in samples.items():
            (self.dir / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))

    def assert_png(self, stem):
        path = self.dir / f"{stem}.png"
        self.assertTrue(path.exists(), f"{path} was not written")
        self.assertEqual(path.read_bytes()[:8], PNG_MAGIC, f"{path} is not a PNG")

    def test_every_plot_from_sample_results(self):
        self.write(SAMPLES)
        r = run_plot("--results", str(self.dir))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for stem in ALL_PLOTS:
            self.assert_png(stem)
        self.assertNotIn("skipped", r.stdout)

    def test_svg_too_and_another_output_directory(self):
        self.write({"xdp.json": SAMPLES["xdp.json"]})
        out = self.dir / "plots"
        r = run_plot("--results", str(self.dir), "--out", str(out), "--format", "png,svg")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue((out / "xdp.png").exists())
        self.assertIn("<svg", (out / "xdp.svg").read_text())

    def test_missing_inputs_are_skipped_with_a_message(self):
        r = run_plot("--results", str(self.dir))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("skipped cache: no cache.json", r.stdout)
        self.assertIn("skipped e2e: no e2e.json", r.stdout)
        self.assertEqual(list(self.dir.glob("*.png")), [])

    def test_malformed_json_is_a_clear_error_and_the_rest_is_drawn(self):
        self.write({**SAMPLES, "cache.json": '{"results": [ {"workload": '})
        r = run_plot("--results", str(self.dir))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{self.dir / 'cache.json'}: not valid JSON (line 1", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertFalse((self.dir / "cache.png").exists())
        self.assert_png("xdp")
        self.assert_png("e2e-pps")

    def test_a_result_without_its_fields_is_an_error_naming_the_file(self):
        self.write({"xdp.json": {"results": [{"case": "arp"}]}, "e2e.json": [1, 2]})
        r = run_plot("--results", str(self.dir))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("xdp.json: a result lacks a field", r.stderr)
        self.assertIn("e2e.json: not an object", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_a_missing_results_directory_is_an_error(self):
        r = run_plot("--results", str(self.dir / "nowhere"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no such directory", r.stderr)


if __name__ == "__main__":
    unittest.main()
