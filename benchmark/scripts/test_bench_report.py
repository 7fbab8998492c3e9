#!/usr/bin/env python3
"""Tests of bench_report.py on a made-up run: which results it reads, and the
CPU ratios of the I/O workload. Standard library only:
`python3 benchmark/scripts/test_bench_report.py`."""

import json
import os
import tempfile
import time
import unittest
from pathlib import Path

import bench_report as br


def criterion(target, group, bench, contender, ns, mtime=None):
    d = target / "criterion" / group / bench / contender / "new"
    d.mkdir(parents=True)
    (d / "benchmark.json").write_text(
        json.dumps({"group_id": group, "function_id": bench, "value_str": contender})
    )
    (d / "estimates.json").write_text(json.dumps({"median": {"point_estimate": ns}}))
    (d / "sample.json").write_text(json.dumps({"iters": [1.0, 1.0], "times": [ns * 0.9, ns * 1.1]}))
    if mtime:
        os.utime(d / "estimates.json", (mtime, mtime))


def pooled(group, bench, contender, ns, cpu_ns, counts=(5, 5)):
    return {"group": group, "bench": bench, "contender": contender, "samples_ns": [ns] * 3,
            "cpu_ns": [cpu_ns] * 3, "counts": list(counts)}


class Report(unittest.TestCase):
    def run_report(self, rust, jdk, cells):
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp)
            for cell in cells:
                criterion(target, *cell)
            (target / "aqs-bench").mkdir()
            meta = {"group": "meta", "quick": True, "started_unix": int(time.time()) - 60,
                    "ended_unix": int(time.time()), "loadavg_start": "0.1 0.1 0.1", "loadavg_end": "0.2 0.1 0.1"}
            for name, lines in (("rust", rust), ("jdk", jdk)):
                text = "\n".join(json.dumps(x) for x in [meta] + lines)
                (target / "aqs-bench" / f"{name}.jsonl").write_text(text + "\n")
            md, svg = target / "out.md", target / "out.svg"
            br.main(["--target", str(target), "--md", str(md), "--svg", str(svg)])
            self.assertTrue(svg.read_text().startswith("<svg"))
            return md.read_text()

    def test_io_cpu_ratios_pick_the_cheapest_fifo_peer_and_the_cheapest_peer(self):
        io = "t16_p4_100us"
        rust = [
            pooled("io", io, "aqs-fair", 50e3, 30e3),
            pooled("io", io, "aqs-nonfair", 50e3, 6e3),
            pooled("io", io, "tokio", 50e3, 10e3),
            pooled("io", io, "std-condvar", 50e3, 4e3),  # cheapest, but not FIFO
        ]
        jdk = [pooled("io", io, "jdk-fair", 50e3, 12e3)]
        cells = [("uncontended", "acquire_release", "tokio", 30.0)]
        md = self.run_report(rust, jdk, cells)
        self.assertIn("aqs fair 30.0 µs = **3.00×** the cheapest FIFO peer (tokio (FIFO), 10.0 µs)", md)
        self.assertIn("aqs nonfair 6.00 µs = **1.50×** the cheapest peer (std Mutex+Condvar, 4.00 µs)", md)

    def test_contended_cells_show_cpu_beside_throughput_and_stale_results_are_left_out(self):
        rust = [pooled("contended", "t4_p1", "aqs-fair", 100.0, 250.0), pooled("contended", "t4_p1", "tokio", 200.0, 400.0)]
        cells = [
            ("contended", "t4_p1", "aqs-fair", 100.0),
            ("contended", "t4_p1", "tokio", 200.0),
            ("contended", "t16_p1", "tokio", 999.0, time.time() - 3600),  # from an older run
        ]
        md = self.run_report(rust, [], cells)
        self.assertIn("10.0 (2.00) · 0.25", md)  # 10 M pairs/s, twice tokio, 0.25 µs CPU
        self.assertIn("5.00 (1.00) · 0.4", md)
        self.assertIn("1 criterion result(s) older than the last `cargo bench` were left out", md)
        self.assertNotIn("999", md)


if __name__ == "__main__":
    unittest.main()
