#!/usr/bin/env python3
"""Tests of bench_report.py on a made-up run: which results it reads, the CPU
ratios of the I/O workload, the mutex part's references and fairness
spread, and the read-write lock part's ratios, split spreads and writer
waits. Standard library only: `python3 benchmark/scripts/test_bench_report.py`."""

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


def pooled(group, bench, contender, ns, cpu_ns, counts=(5, 5), windows=None):
    cell = {"group": group, "bench": bench, "contender": contender, "samples_ns": [ns] * 3,
            "cpu_ns": [cpu_ns] * 3, "counts": list(counts)}
    return cell | ({"window_counts": windows} if windows else {})


class Report(unittest.TestCase):
    def run_report(self, rust, jdk, cells, mutex=None, started=None, more=None):
        """`mutex`: the lines of rust-mutex.jsonl; `more`: other files' lines
        by name (e.g. `rust-rwlock`); `started`: a harness's start (seconds
        ago) by its file's name, by default 60 s ago."""
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp)
            for cell in cells:
                criterion(target, *cell)
            (target / "aqs-bench").mkdir()
            files = {"rust": rust, "jdk": jdk} | ({"rust-mutex": mutex} if mutex is not None else {}) | (more or {})
            for name, lines in files.items():
                ago = (started or {}).get(name, 60)
                meta = {"group": "meta", "quick": True, "started_unix": int(time.time()) - ago,
                        "ended_unix": int(time.time()), "loadavg_start": "0.1 0.1 0.1", "loadavg_end": "0.2 0.1 0.1"}
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
        self.assertIn("No results: run `cargo bench -p aqs-benchmark --bench mutex`.", md)

    def test_mutex_rows_are_against_parking_lot_fair_when_fair_and_spread_is_the_median_window(self):
        g, b = "mutex_contended", "t4_cs50"
        ns = {"aqs": 100.0, "aqs-fair": 400.0, "parking_lot": 200.0, "parking_lot-fair": 800.0, "std": 50.0}
        mutex = [
            pooled(g, b, "aqs", 100.0, 150.0, windows=[[10, 0], [10, 5], [12, 6]]),  # ∞, 2, 2
            pooled(g, b, "aqs-fair", 400.0, 800.0, windows=[[5, 5]] * 3),
            pooled(g, b, "parking_lot", 200.0, 300.0, windows=[[1, 0]] * 3),
        ]
        md = self.run_report([], [], [(g, b, c, t) for c, t in ns.items()], mutex=mutex)
        # 10 M pairs/s, twice parking_lot's Mutex, 0.15 µs CPU; the fair row against its FairMutex
        self.assertIn("| aqs Mutex | n/a | 10.0 (2.00) · 0.15 | n/a |", md)
        self.assertIn("| aqs FairMutex (FIFO) | n/a | 2.50 (2.00) · 0.8 | n/a |", md)
        self.assertIn("| aqs Mutex | n/a | 0.5 | n/a |", md)  # against std
        self.assertIn("| aqs Mutex | n/a | 2.00 | n/a |", md)  # fairness: the median window
        self.assertIn("| parking_lot Mutex | n/a | ∞ | n/a |", md)

    def test_condvar_fair_rows_fall_back_to_parking_lot_mutex_and_suites_go_stale_apart(self):
        g, now = "mutex_condvar", time.time()
        mutex = [pooled(g, "ping_pong", "aqs-fair", 2000.0, 4000.0), pooled(g, "ping_pong", "parking_lot", 1000.0, 1500.0)]
        cells = [
            (g, "ping_pong", "aqs-fair", 2000.0),
            (g, "ping_pong", "parking_lot", 1000.0),
            ("mutex_uncontended", "lock_unlock", "std", 777.0, now - 1800),  # before the mutex suite's run
            ("uncontended", "acquire_release", "tokio", 30.0, now - 1800),  # after the semaphore suite's
        ]
        md = self.run_report([], [], cells, mutex=mutex, started={"rust": 3600, "rust-mutex": 60})
        # parking_lot has no fair condvar: 500 k round trips/s, half its Mutex's, 4 µs CPU
        self.assertIn("| aqs FairMutex + aqs Condvar | 500 (0.5) · 4.00 | n/a |", md)
        self.assertIn("| parking_lot Mutex + Condvar | 1000 (1.00) · 1.50 | n/a |", md)
        self.assertNotIn("777", md)
        self.assertIn("| tokio (FIFO) | 30.0 |", md)

    def test_rwlock_part_ratios_split_spreads_and_writer_waits(self):
        u, g, w, b = "rwlock_uncontended", "rwlock_contended", "rwlock_writer_wait", "t4_r90"
        cells = [(u, "read", "aqs", 10.0), (u, "read", "parking_lot", 15.0), (u, "read", "std", 20.0),
                 (g, b, "aqs", 100.0), (g, b, "parking_lot", 200.0), (g, b, "std", 400.0)]
        # two threads, three windows: reads [9, 3] then [8, 8] then [10, 2]; writes [1, 1], [2, 0], [0, 0]
        aqs = pooled(g, b, "aqs", 100.0, 120.0, windows=[[10, 4], [10, 8], [10, 2]]) | {
            "window_reads": [[9, 3], [8, 8], [10, 2]]}
        wait = {"group": w, "bench": "r3_w1", "median_wait_ns": [100, 200, 300], "writes": [5, 6, 7]}
        rust = [aqs, pooled(g, b, "parking_lot", 200.0, 300.0), pooled(g, b, "std", 400.0, 500.0),
                wait | {"contender": "aqs", "max_wait_ns": [1e6, 3e6, 2e6]},
                wait | {"contender": "parking_lot", "max_wait_ns": [4e6, 4e6, 4e6]}]
        jdk = [pooled(g, b, "jdk-nonfair", 50.0, 60.0), wait | {"contender": "jdk-fair", "max_wait_ns": [8e6] * 3}]
        md = self.run_report([], [], cells, more={"rust-rwlock": rust, "jdk-rwlock": jdk})
        self.assertIn("# Part 3: Read-write lock", md)
        self.assertIn("| aqs RwLock | 10.0 | 1.50 | 2.00 | n/a | n/a | n/a |", md)  # read ns, ×pl, ×std
        # 90% reads at T=4: 10 M ops/s, twice parking_lot, 0.12 µs CPU, 4× std, half the JDK nonfair
        self.assertIn("| n/a | n/a | n/a | 10.0 (2.00) · 0.12 | 4.00 | 0.5 | n/a | n/a | n/a |", md)
        # reads spread per window 3, 1, 5 -> 3; writes 1, ∞ (a thread with none), left out (none) -> ∞
        self.assertRegex(md, r"\| aqs RwLock \|( n/a \|){7} 3\.00 \|")
        self.assertRegex(md, r"\| aqs RwLock \|( n/a \|){4} ∞ \|")
        # the longest wait: median window 2 ms, worst 3 ms, median 0.2 µs, ×pl 2, 6 writes a window
        self.assertIn("| aqs RwLock | 2000 | 3000 | 0.2 | 2.00 | 6 |", md)
        self.assertIn("| JDK ReentrantReadWriteLock fair (FIFO) | 8000 | 8000 | 0.2 | 0.5 | 6 |", md)

    def test_rwlock_split_spread_is_all_windows_without_writes_a_dash(self):
        cell = {"window_counts": [[5, 5], [4, 6]], "window_reads": [[5, 5], [4, 6]]}
        self.assertEqual(br.show_split_spread(cell, True), "1.50")
        self.assertEqual(br.show_split_spread(cell, False), "–")
        self.assertEqual(br.show_split_spread({"window_counts": [[5, 5]]}, True), "n/a")


if __name__ == "__main__":
    unittest.main()
