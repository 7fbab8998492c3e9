#!/usr/bin/env python3
"""Tests of scripts/bench_report.py's judgement: which cells a machine
sentinel marks, and how the marks reach the goals table. Standard library
only; run with `python3 scripts/test_bench_report.py` (CI's "bench tools"
step does)."""

import json
import re
import tempfile
import unittest
from pathlib import Path

import bench_report as br


def look(at, rt=75.0, cs=80.0, after=None):
    x = {"at": at, "cs_ns": cs, "round_trip_ns": rt}
    if after is not None:
        x["after_sample"] = after
    return x


def watched_cell(at, n=3, off_at=None, rt_off=450.0):
    """A cell as the watch records it: its opening, then one look after each
    of `n` samples; the look after sample `off_at` reads `rt_off`."""
    xs = [look(at, after=False)]
    xs += [look(at, rt=rt_off if i == off_at else 75.0, after=True) for i in range(n)]
    return xs


A = "contended/t4_p4/aqs-fair"
B = "contended/t4_p4/tokio"
C = "contended/t16_p4/aqs-fair"


def cell(at):
    return tuple(at.split("/"))


class Judgement(unittest.TestCase):
    def test_too_few_sentinels_judge_nothing(self):
        self.assertIsNone(br.sentinels({"sentinels": [look("start"), look("end")]}))

    def test_a_quiet_run_marks_nothing(self):
        xs = [look("start", after=False)] + watched_cell(A) + watched_cell(B) + [look("end", after=False)]
        s = br.sentinels({"sentinels": xs})
        self.assertEqual(s.off, [])
        self.assertEqual(s.cells, set())
        self.assertEqual(s.taken, len(xs))

    def test_an_off_look_after_a_sample_marks_its_own_cell_only(self):
        xs = [look("start", after=False)] + watched_cell(A) + watched_cell(B, off_at=1) + watched_cell(C)
        s = br.sentinels({"sentinels": xs})
        self.assertEqual(len(s.off), 1)
        self.assertEqual(s.cells, {cell(B)})

    def test_an_off_opening_marks_its_cell_but_not_the_watched_cell_before(self):
        xs = [look("start", after=False)] + watched_cell(A) + [look(B, rt=450.0, after=False)]
        xs += [look(B, after=True) for _ in range(3)] + watched_cell(C)
        s = br.sentinels({"sentinels": xs})
        self.assertEqual(s.cells, {cell(B)})

    def test_an_unwatched_opening_answers_for_the_time_until_the_next_look(self):
        # Runs from before the watch took one look per cell, before it.
        xs = [look("start"), look(A), look(B, rt=450.0), look(C), look("end")]
        s = br.sentinels({"sentinels": xs})
        self.assertEqual(s.cells, {cell(A), cell(B)})

    def test_either_measure_can_be_off_either_way(self):
        for kw in ({"rt": 30.0}, {"cs": 200.0}, {"cs": 40.0}):
            xs = [look("start", after=False)] + watched_cell(A) + [look(B, after=False), look(B, after=True, **kw)]
            xs += watched_cell(C)
            s = br.sentinels({"sentinels": xs})
            self.assertEqual(s.cells, {cell(B)}, kw)

    def test_jdk_looks_are_judged_with_the_rust_ones(self):
        jdk = watched_cell("contended/t4_p4/jdk-fair", off_at=0)
        s = br.sentinels({"sentinels": watched_cell(A) + watched_cell(B)}, jdk)
        self.assertEqual(s.cells, {("contended", "t4_p4", "jdk-fair")})
        self.assertIn("Rust", s.summary)
        self.assertIn("JDK", s.summary)

    def test_the_watch_summary_names_both_suites_and_the_pin(self):
        w = {"redone": 3, "waits": 2, "waited_s": 12.4, "gave_up": 1, "patience_s": 900, "wait_max_s": 150}
        s = br.sentinels(
            {"sentinels": watched_cell(A) + watched_cell(B), "watch": dict(w, round_trip_pinned_ns=75.0)},
            (),
            dict(w, round_trip_pinned_ns=None),
        )
        self.assertIn("Rust: 3 sample(s) measured again, 2 wait(s) for 12 s (1 ran out", s.watch)
        self.assertIn("judged against 75.0 ns", s.watch)
        self.assertEqual(s.watch.count("judged against"), 1)


def rec(ns):
    return {"ns": ns, "min": ns, "max": ns}


class Marks(unittest.TestCase):
    def results(self):
        return {
            ("contended", "t4_p4", "aqs-fair"): rec(50.0),
            ("contended", "t4_p4", "tokio"): rec(100.0),
            ("contended", "t4_p4", "jdk-fair"): rec(60.0),
        }

    def test_a_ratio_carries_the_mark_of_either_cell(self):
        for disturbed, jdk in (("aqs-fair", "1.20‡× jdk-fair"), ("tokio", "1.20× jdk-fair")):
            sent = br.Sentinels("", [], {("contended", "t4_p4", disturbed)}, 10, "")
            table = br.targets(br.Data(self.results(), sent))
            self.assertIn("2.00‡× tokio", table, disturbed)
            self.assertIn(jdk, table, disturbed)

    def test_a_quiet_ratio_has_no_mark(self):
        sent = br.Sentinels("", [], set(), 10, "")
        table = br.targets(br.Data(self.results(), sent))
        self.assertIn("2.00× tokio", table)
        self.assertNotIn("‡", table)

    def test_a_cell_shows_its_marks(self):
        results = self.results()
        results[("contended", "t4_p4", "tokio")] = {"ns": 100.0, "min": 50.0, "max": 150.0}
        sent = br.Sentinels("", [], {("contended", "t4_p4", "tokio")}, 10, "")
        d = br.Data(results, sent)
        self.assertEqual(d.cell("contended", "t4_p4", "tokio", lambda ns: 1e3 / ns), "10.0~‡")
        self.assertEqual(d.cell("contended", "t4_p4", "aqs-fair", lambda ns: 1e3 / ns), "20.0")


class SpinFloor(unittest.TestCase):
    def data(self):
        return br.Data(
            {
                ("contended", "t2_p4", "aqs-nonfair"): rec(75.0),
                ("contended", "t2_p4", "std-condvar"): rec(90.0),
                ("contended", "t2_p4", "tokio"): rec(100.0),
                ("contended", "t2_p4", "spin-floor"): rec(50.0),
                ("contended", "t16_p4", "aqs-nonfair"): rec(70.0),
                ("contended", "t16_p4", "tokio"): rec(140.0),
                # measured by an older rule, where it is no floor: never shown
                ("contended", "t2_p1", "aqs-nonfair"): rec(75.0),
                ("contended", "t2_p1", "parking_lot-condvar"): rec(110.0),
                ("contended", "t2_p1", "spin-floor"): rec(98.0),
                ("contended", "t2_p1", "tokio"): rec(1000.0),
            },
            br.Sentinels("", [], set(), 10, ""),
        )

    def test_the_floor_is_never_the_best_peer(self):
        self.assertEqual(self.data().best_peer("contended", "t2_p4"), "std-condvar")

    def test_the_goal_shows_the_floor_against_the_same_peer_where_it_ran(self):
        table = br.targets(self.data())
        self.assertIn("T=2 P=4: 1.20× best Rust peer (std-condvar) ✗, floor 1.80× best Rust peer (std-condvar)", table)
        self.assertIn("T=16 P=4: 2.00× best Rust peer (tokio) |", table)
        self.assertEqual(table.count("floor"), 1)

    def test_the_floor_has_its_own_row_blank_where_it_did_not_run(self):
        tokio, _ = br.table_contended(self.data())
        row = next(line for line in tokio.splitlines() if line.startswith("| floor"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        self.assertEqual(cells[0], "floor: bare atomic counter")
        self.assertEqual(cells[1 + br.CONTENDED.index((2, 4))], "20.0 (2.00)")
        self.assertEqual(cells[1 + br.CONTENDED.index((16, 4))], "")
        self.assertEqual(cells[1 + br.CONTENDED.index((2, 1))], "")
        self.assertFalse(any(line.startswith("| spin-floor") for line in tokio.splitlines()))

    def test_the_chart_has_a_floor_bar_only_where_the_floor_applies(self):
        svg = br.svg_chart(self.data(), "")
        bars = re.findall(r"<title>floor: ([^<]*)</title>", svg)
        self.assertEqual(bars, ["2.00"])  # T=2 P=4 only: T=2 P=1 had one, but it is no floor there


class LoadJdk(unittest.TestCase):
    def test_results_sentinels_and_watch_lines(self):
        lines = [
            {"group": "sentinel", "at": "jdk-start", "cs_ns": 80.0, "round_trip_ns": 75.0, "after_sample": False},
            {"group": "contended", "bench": "t4_p4", "contender": "jdk-fair", "ns": 60.0, "min_ns": 55.0,
             "max_ns": 70.0, "samples": 10},
            {"group": "watch", "off": 1.5, "round_trip_pinned_ns": None, "patience_s": 900, "wait_max_s": 150,
             "redone": 0, "waits": 0, "waited_s": 0.0, "gave_up": 0},
            {"group": "meta", "quick": False},
        ]
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "jdk.jsonl"
            p.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
            results, fairness, meta, sentinel_list, watch = br.load_jdk(p)
        self.assertEqual(
            results[("contended", "t4_p4", "jdk-fair")], {"ns": 60.0, "min": 55.0, "max": 70.0, "samples": None}
        )
        self.assertEqual([x["at"] for x in sentinel_list], ["jdk-start"])
        self.assertEqual(watch["patience_s"], 900)
        self.assertEqual(meta, {"group": "meta", "quick": False})
        self.assertEqual(fairness, [])

    def test_a_missing_file_loads_nothing(self):
        self.assertEqual(br.load_jdk(Path("/nonexistent/jdk.jsonl")), ({}, [], None, [], None))


class TwoJdkPasses(unittest.TestCase):
    RUST = {"started_unix": 1000, "ended_unix": 2000, "quick": False}

    def test_only_passes_around_this_run_are_pooled(self):
        before, after = {"ended_unix": 990, "quick": False}, {"started_unix": 2003, "quick": False}
        self.assertTrue(br.brackets(before, self.RUST, after))
        self.assertFalse(br.brackets({"ended_unix": 1500, "quick": False}, self.RUST, after))  # an older run's
        self.assertFalse(br.brackets(before, self.RUST, {"started_unix": 1500, "quick": False}))
        self.assertFalse(br.brackets({"ended_unix": 990, "quick": True}, self.RUST, after))  # another mode
        self.assertFalse(br.brackets(None, self.RUST, after))
        # a pass before left from a run hours earlier, next to a new pass after
        self.assertFalse(br.brackets({"ended_unix": 1000 - 3600, "quick": False}, self.RUST, after))
        self.assertFalse(br.brackets(before, self.RUST, {"started_unix": 2000 + 3600, "quick": False}))

    def test_cells_pool_both_passes_samples(self):
        key, other = ("contended", "t4_p4", "jdk-fair"), ("handoff", "round_trip", "jdk-fair")
        before = {key: {"ns": 50.0, "min": 40.0, "max": 60.0, "samples": [40.0, 50.0, 60.0]}}
        after = {
            key: {"ns": 80.0, "min": 70.0, "max": 90.0, "samples": [70.0, 80.0, 90.0]},
            other: {"ns": 5.0, "min": 5.0, "max": 5.0, "samples": None},
        }
        pooled = br.pool(before, after)
        self.assertEqual(pooled[key]["ns"], 70.0)  # element len/2 of the six, as for every median here
        self.assertEqual((pooled[key]["min"], pooled[key]["max"]), (40.0, 90.0))
        self.assertEqual(pooled[other]["ns"], 5.0)

    def test_each_pass_has_its_row(self):
        key = ("contended", "t2_p4", "jdk-nonfair")
        table = br.table_jdk_passes({key: {"ns": 50.0}}, {key: {"ns": 80.0}})
        rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
        at = 2 + br.CONTENDED.index((2, 4))
        self.assertEqual(rows["JDK Semaphore nonfair, before"].split("|")[at].strip(), "20.0")
        self.assertEqual(rows["JDK Semaphore nonfair, after"].split("|")[at].strip(), "12.5")
        self.assertEqual(rows["JDK Semaphore fair, after"].split("|")[at].strip(), "n/a")

    def test_sentinels_run_in_the_order_taken_and_each_watch_is_named(self):
        def look(at, rt):
            return {"at": at, "cs_ns": 80.0, "round_trip_ns": rt, "after_sample": False}

        watch = {"redone": 1, "waits": 0, "waited_s": 0.0, "gave_up": 0, "patience_s": 900, "wait_max_s": 150}
        rust = {"sentinels": [look("start", 75.0), look("contended/t2_p4/aqs-fair", 75.0)], "watch": watch}
        # The pass before ends with a look at its last cell; the first Rust look, off, answers for it.
        before = [look("jdk-start", 75.0), look("contended/t2_p4/jdk-fair", 75.0)]
        rust["sentinels"][0]["round_trip_ns"] = 450.0
        s = br.sentinels(rust, [look("jdk-start", 75.0)], watch, (before, watch))
        self.assertEqual(s.taken, 5)
        self.assertEqual(s.cells, {("contended", "t2_p4", "jdk-fair")})
        self.assertIn("JDK before: 1 sample(s)", s.watch)
        self.assertIn("JDK after: 1 sample(s)", s.watch)
        self.assertLess(s.watch.index("JDK before"), s.watch.index("Rust"))


if __name__ == "__main__":
    unittest.main()
