#!/usr/bin/env python3
"""Benchmark report for aqs: docs/bench-results.md, docs/bench.svg and the
README section between <!-- bench:start --> and <!-- bench:end -->.

Reads, under the target directory (scripts/bench-report.sh passes
${CARGO_TARGET_DIR:-target/bench}):

  criterion/**/new/{benchmark,estimates,sample}.json   cargo bench --bench semaphore
  aqs-bench/rust-run.json                               run metadata of that bench
  aqs-bench/fairness.json                               its fairness pass
  aqs-bench/jdk.jsonl                                   scripts/bench-jdk.sh
  aqs-bench/run-steps.tsv, run-command.txt              scripts/bench-report.sh --run

Standard library only. Every number shown is a median; ratios are speeds
relative to a reference (reference time / time, which for throughput equals
throughput / reference throughput): above 1 means faster.
"""

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

# (id, label) in table order.
CONTENDERS = [
    ("aqs-nonfair", "aqs nonfair"),
    ("aqs-fair", "aqs fair"),
    ("tokio", "tokio (FIFO)"),
    ("async-lock", "async-lock (not FIFO)"),
    ("futures-intrusive-fair", "futures-intrusive fair"),
    ("futures-intrusive-unfair", "futures-intrusive unfair"),
    ("std-condvar", "std Mutex+Condvar"),
    ("parking_lot-condvar", "parking_lot Mutex+Condvar"),
    ("jdk-fair", "JDK Semaphore fair"),
    ("jdk-nonfair", "JDK Semaphore nonfair"),
]
LABEL = dict(CONTENDERS)
RUST_PEERS = [
    "tokio",
    "async-lock",
    "futures-intrusive-fair",
    "futures-intrusive-unfair",
    "std-condvar",
    "parking_lot-condvar",
]
REF = "tokio"
JDK_REF = "jdk-nonfair"
NOISY = 0.25  # `~` when (max - min) / median of the samples exceeds this
# A sentinel (benches/semaphore.rs, benches/jdk/SemaphoreBench.java) found the
# machine unlike the rest of the run (both suites, one median) when either of
# its measures is off the run's median by more than this factor, either way.
# On this VM the spin round trip between the two vCPUs reads about 30, 70 to
# 90, or 410 to 490 ns depending on where the host places them, and 4-permit
# throughput follows it; within one placement it varies by about 1.3x.
SENTINEL_OFF = 1.5

UNCONTENDED = [
    ("acquire_release", "acquire+release"),
    ("try_acquire_release", "try_acquire+release"),
    ("acquire_many4_release", "acquire_many(4)+release"),
]
CONTENDED = [(2, 1), (4, 1), (16, 1), (2, 4), (4, 4), (16, 4)]
# The contended floor (`SpinFloor` in benches/semaphore.rs): a bare atomic
# counter, a floor only where threads do not outnumber permits (nobody
# waits), and shown only there. Beside the contenders, never a peer.
SPIN_FLOOR = "spin-floor"


def floor_applies(t, p):
    return t <= p


def cbench(t, p):
    return f"t{t}_p{p}"


# ----------------------------------------------------------------- loading


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_criterion(target, not_before, warnings):
    """{(group, bench, contender): {ns, min, max}} from criterion's new/ dirs."""
    out = {}
    root = target / "criterion"
    if not root.is_dir():
        return out
    stale = []
    for bj in sorted(root.glob("**/new/benchmark.json")):
        meta = load_json(bj)
        est = load_json(bj.parent / "estimates.json")
        if not meta or not est:
            continue
        group = meta.get("group_id")
        bench = meta.get("function_id")
        contender = meta.get("value_str")
        if not (group and bench and contender):
            continue
        if not_before and (bj.parent / "estimates.json").stat().st_mtime < not_before:
            stale.append(f"{group}/{bench}/{contender}")
            continue
        ns = est["median"]["point_estimate"]
        rec = {"ns": ns, "min": ns, "max": ns}
        sample = load_json(bj.parent / "sample.json")
        if sample and sample.get("iters"):
            per = [t / i for t, i in zip(sample["times"], sample["iters"]) if i]
            if per:
                rec["min"], rec["max"] = min(per), max(per)
        out[(group, bench, contender)] = rec
    if stale:
        warnings.append(
            f"{len(stale)} criterion result(s) older than the last bench run were left out "
            f"(e.g. {', '.join(stale[:3])}): rerun without a filter to refresh them."
        )
    return out


def load_jdk(path):
    results, fairness, meta, sentinel_list, watch = {}, [], None, [], None
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return results, fairness, meta, sentinel_list, watch
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        g = rec.get("group")
        if g == "meta":
            meta = rec
        elif g == "fairness":
            fairness.append(rec)
        elif g == "sentinel":
            sentinel_list.append(rec)
        elif g == "watch":
            watch = rec
        elif g:
            ns = rec["ns"]
            results[(g, rec["bench"], rec["contender"])] = {
                "ns": ns,
                "min": rec.get("min_ns", ns),
                "max": rec.get("max_ns", ns),
                "samples": rec.get("samples_ns"),
            }
    return results, fairness, meta, sentinel_list, watch


# The most time between a JDK pass and the Rust run it brackets (the Rust
# suite may have to be built in between).
BRACKET_GAP_S = 900


def brackets(before_meta, rust_run, after_meta):
    """Whether a JDK pass ended just before the Rust run started and the
    other started just after it ended (`bench-report.sh --run`), both in its
    mode; a pass left from another run must not be pooled with this one."""
    if not (before_meta and rust_run and after_meta):
        return False
    gap_before = rust_run["started_unix"] - before_meta["ended_unix"]
    gap_after = after_meta["started_unix"] - rust_run["ended_unix"]
    return (
        -5 <= gap_before <= BRACKET_GAP_S
        and -5 <= gap_after <= BRACKET_GAP_S
        and before_meta.get("quick") == after_meta.get("quick") == rust_run.get("quick")
    )


def pool(before, after):
    """Each JDK cell over both passes: the median, min and max of the two
    passes' samples together (a cell without samples keeps the pass after)."""
    out = dict(before)
    for key, rec in after.items():
        b = before.get(key)
        if b and b.get("samples") and rec.get("samples"):
            xs = sorted(b["samples"] + rec["samples"])
            rec = {"ns": xs[len(xs) // 2], "min": xs[0], "max": xs[-1], "samples": xs}
        out[key] = rec
    return out


# ------------------------------------------------------------- formatting


def sig(x):
    """Three significant digits, no exponent."""
    if x is None or not math.isfinite(x):
        return "n/a"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


class Sentinels(NamedTuple):
    """What the run's machine sentinels say (benches/semaphore/watch.rs, then
    the watch in benches/jdk/SemaphoreBench.java)."""

    summary: str  # one line for the report
    off: list  # the sentinels off the run's median by more than SENTINEL_OFF, either way
    cells: set  # (group, bench, contender) of the cells those mark (see `sentinels`)
    taken: int
    watch: str  # what the watches did (samples measured again, waiting), or ""


def sentinels(rust_run, jdk_sentinels=(), jdk_watch=None, before=((), None)):
    """The run's sentinels in the order they were taken (the JDK's pass
    before the Rust suite, if any, then the Rust suite, then the JDK's pass
    after it; one machine and one median for all), or None when fewer than
    three were taken. `before` is that first pass's (sentinels, watch)."""
    rust = (rust_run or {}).get("sentinels") or []
    xs = list(before[0]) + rust + list(jdk_sentinels)
    if len(xs) < 3:
        return None
    # The round trip is null on a one-CPU machine.
    keys = [
        (key, name)
        for key, name in (("cs_ns", "critical section alone"), ("round_trip_ns", "spin round trip"))
        if all(x.get(key) is not None for x in xs)
    ]
    typical = {key: sorted(x[key] for x in xs)[len(xs) // 2] for key, _ in keys}

    def off(x):
        return any(not typical[k] / SENTINEL_OFF <= x[k] <= typical[k] * SENTINEL_OFF for k in typical)

    def cell(x):
        return tuple(x["at"].split("/")) if x["at"].count("/") == 2 else None

    bad = [x for x in xs if off(x)]
    # A cell is marked when one of its own sentinels is off. A sentinel taken
    # before a cell (older runs took no other) also answers for the time until
    # the next one, so the cell is marked when that one is off too; one taken
    # right after a sample closes the sample, and the watch looked again before
    # any later sample.
    cells = {
        cell(x)
        for i, x in enumerate(xs)
        if cell(x)
        and (off(x) or (not x.get("after_sample") and i + 1 < len(xs) and off(xs[i + 1])))
    }
    parts = [
        f"{name} median {sig(typical[key])} ns (range {sig(min(x[key] for x in xs))} to "
        f"{sig(max(x[key] for x in xs))})"
        for key, name in keys
    ]
    suites = f" ({len(rust)} Rust, {len(xs) - len(rust)} JDK)" if len(rust) < len(xs) else ""
    text = f"{len(xs)} taken{suites}; " + "; ".join(parts) + f"; {len(bad)} off the median by more than {SENTINEL_OFF}x"
    passes = (
        ("JDK before", before[1]),
        ("Rust", (rust_run or {}).get("watch")),
        ("JDK after" if before[1] else "JDK", jdk_watch),
    )
    watches = [(name, w) for name, w in passes if w]
    watch = "; ".join(
        f"{name}: {w['redone']} sample(s) measured again, {w['waits']} wait(s) for {w['waited_s']:.0f} s"
        f" ({w['gave_up']} ran out; patience {w['patience_s']} s, one wait at most {w['wait_max_s']} s"
        + (f", round trip judged against {sig(w['round_trip_pinned_ns'])} ns" if w.get("round_trip_pinned_ns") else "")
        + ")"
        for name, w in watches
    )
    return Sentinels(text, bad, cells, len(xs), watch)


def noisy(rec):
    return rec["ns"] > 0 and (rec["max"] - rec["min"]) / rec["ns"] > NOISY


class Data:
    def __init__(self, results, sent=None):
        self.r = results
        self.disturbed = sent.cells if sent else set()

    def get(self, group, bench, contender):
        return self.r.get((group, bench, contender))

    def ns(self, group, bench, contender):
        rec = self.get(group, bench, contender)
        return rec["ns"] if rec else None

    def ratio(self, group, bench, contender, ref):
        """Speed of `contender` relative to `ref`: ref time / time."""
        a, b = self.ns(group, bench, contender), self.ns(group, bench, ref)
        if a is None or b is None or a <= 0:
            return None
        return b / a

    def cell(self, group, bench, contender, scale):
        """The shown value (ns scaled by `scale`) with `~` when noisy and `‡`
        when a sentinel next to it (before or after) found the machine changed."""
        rec = self.get(group, bench, contender)
        if not rec:
            return "n/a"
        mark = ("~" if noisy(rec) else "") + ("‡" if (group, bench, contender) in self.disturbed else "")
        return sig(scale(rec["ns"])) + mark

    def mark(self, group, bench, *contenders):
        """`‡` when any of the contenders' cells is marked disturbed."""
        return "‡" if any((group, bench, c) in self.disturbed for c in contenders) else ""

    def best_peer(self, group, bench, peers=RUST_PEERS):
        """The fastest of `peers` (least time) that has a result, or None."""
        best = None
        for p in peers:
            ns = self.ns(group, bench, p)
            if ns is not None and (best is None or ns < best[1]):
                best = (p, ns)
        return best[0] if best else None


def floor_ns(data, group, bench):
    """The floor beside a category, where there is one: the bare atomic pair
    for the uncontended ones, the bare counter where no contended thread
    waits."""
    if group == "uncontended":
        return data.ns("uncontended", "atomic_pair", "floor")
    if group == "contended":
        t, p = (int(x) for x in re.fullmatch(r"t(\d+)_p(\d+)", bench).groups())
        return data.ns("contended", bench, SPIN_FLOOR) if floor_applies(t, p) else None
    return None


def ratio_cell(x):
    return sig(x) if x is not None else "n/a"


def present(data, contenders, keys):
    return [c for c in contenders if any(data.get(g, b, c) for g, b in keys)]


# ----------------------------------------------------------------- tables


def table_uncontended(data):
    keys = [("uncontended", b) for b, _ in UNCONTENDED]
    rows = present(data, [c for c, _ in CONTENDERS], keys)
    head = ["contender"]
    for _, label in UNCONTENDED:
        head += [f"{label} (ns)", "×tokio", "×JDK nf"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for c in rows:
        cells = [LABEL[c]]
        for b, _ in UNCONTENDED:
            cells += [
                data.cell("uncontended", b, c, lambda ns: ns),
                ratio_cell(data.ratio("uncontended", b, c, REF)),
                ratio_cell(data.ratio("uncontended", b, c, JDK_REF)),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    for bench, contender, label in [
        ("atomic_pair", "floor", "floor: bare `fetch_sub` + `fetch_add` pair"),
        ("critical_section", "alone", "critical section alone (Rust)"),
        ("critical_section", "jdk-alone", "critical section alone (JDK)"),
    ]:
        if data.get("uncontended", bench, contender):
            cells = [label, data.cell("uncontended", bench, contender, lambda ns: ns), "", ""]
            cells += [""] * (len(head) - len(cells))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_contended(data):
    """Pairs/s (×tokio) and ×JDK nonfair per contender, then the floor's row
    where it has one (blank elsewhere)."""
    keys = [("contended", cbench(t, p)) for t, p in CONTENDED]
    head = ["contender"] + [f"T={t} P={p}" for t, p in CONTENDED]
    sep = "|---" + "|---:" * len(CONTENDED) + "|"
    a = ["| " + " | ".join(head) + " |", sep]
    j = ["| " + " | ".join(head) + " |", sep]

    def row(label, c, shown):
        cells, jcells = [label], [label]
        for t, p in CONTENDED:
            b = cbench(t, p)
            if not shown(b):
                cells.append("")
                jcells.append("")
                continue
            r = data.ratio("contended", b, c, REF)
            cells.append(f"{data.cell('contended', b, c, lambda ns: 1e3 / ns)} ({ratio_cell(r)})")
            jcells.append(ratio_cell(data.ratio("contended", b, c, JDK_REF)))
        a.append("| " + " | ".join(cells) + " |")
        j.append("| " + " | ".join(jcells) + " |")

    for c in present(data, [c for c, _ in CONTENDERS], keys):
        row(LABEL[c], c, lambda b: True)

    def has_floor(b):
        return floor_ns(data, "contended", b) is not None

    if any(has_floor(b) for _, b in keys):
        row("floor: bare atomic counter", SPIN_FLOOR, has_floor)
    return "\n".join(a), "\n".join(j)


def table_jdk_passes(before, after):
    """The JDK's contended medians in each pass (M pairs/s), to show how far
    the host moved between them."""
    head = ["JDK pass"] + [f"T={t} P={p}" for t, p in CONTENDED]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * len(CONTENDED) + "|"]
    for c in ("jdk-nonfair", "jdk-fair"):
        for name, res in (("before", before), ("after", after)):
            cells = [f"{LABEL[c]}, {name}"]
            for t, p in CONTENDED:
                rec = res.get(("contended", cbench(t, p), c))
                cells.append(sig(1e3 / rec["ns"]) if rec else "n/a")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_single(data, group, bench, unit, scale):
    rows = present(data, [c for c, _ in CONTENDERS], [(group, bench)])
    lines = [f"| contender | {unit} | ×tokio | ×JDK nf |", "|---|---:|---:|---:|"]
    for c in rows:
        lines.append(
            f"| {LABEL[c]} | {data.cell(group, bench, c, scale)} | "
            f"{ratio_cell(data.ratio(group, bench, c, REF))} | {ratio_cell(data.ratio(group, bench, c, JDK_REF))} |"
        )
    return "\n".join(lines)


def table_fairness(rust, jdk):
    by = {r["contender"]: r for r in rust + jdk}
    lines = [
        "| contender | M pairs/s | per-thread min | per-thread max | max/min | cv |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c, label in CONTENDERS:
        r = by.get(c)
        if not r:
            continue
        mom = r.get("max_over_min")
        lines.append(
            f"| {label} | {sig(r['pairs_per_sec'] / 1e6)} | {r['min']} | {r['max']} | "
            f"{sig(mom) if mom is not None else '∞'} | {sig(r['cv'])} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- targets


def targets(data):
    """The performance goals, each with the numbers that decide it."""
    out = []

    def verdict(ok):
        return "**met**" if ok else "**missed**" if ok is not None else "n/a"

    floor = data.ns("uncontended", "atomic_pair", "floor")
    jdk = data.ns("uncontended", "acquire_release", "jdk-nonfair")
    for c in ("aqs-nonfair", "aqs-fair"):
        ns = data.ns("uncontended", "acquire_release", c)
        if ns is None:
            continue
        f = ns / floor if floor else None
        ok = None if f is None else f <= 1.2 and (jdk is None or ns <= jdk)
        out.append(
            (
                f"uncontended acquire+release, {c}: within 1.2× the atomic pair and ≤ JDK nonfair",
                f"{sig(ns)} ns = {sig(f)}× the floor ({sig(floor)} ns); JDK nonfair {sig(jdk)} ns",
                verdict(ok),
            )
        )

    def contended_goal(c, refs, factor, title):
        details, oks = [], []
        for t, p in CONTENDED:
            b = cbench(t, p)
            parts = []
            for ref in refs:
                if ref == "best-rust":
                    ref_c = data.best_peer("contended", b)
                    name = f"best Rust peer ({ref_c})"
                else:
                    ref_c, name = ref, ref
                r = data.ratio("contended", b, c, ref_c) if ref_c else None
                need = factor if ref == "best-rust" else 1.0
                if r is not None:
                    oks.append(r >= need)
                    mark = data.mark("contended", b, c, ref_c)
                    parts.append(f"{sig(r)}{mark}× {name}" + ("" if r >= need else " ✗"))
                    # Where the floor ran, say how far it got against the same
                    # reference: a factor it does not reach is out of reach.
                    f = floor_ns(data, "contended", b) if ref == "best-rust" else None
                    if f is not None:
                        fr = data.ns("contended", b, ref_c) / f
                        parts.append(f"floor {sig(fr)}{data.mark('contended', b, SPIN_FLOOR, ref_c)}× {name}")
            if parts:
                details.append(f"T={t} P={p}: " + ", ".join(parts))
        ok = all(oks) if oks else None
        out.append((title, "; ".join(details) if details else "no data", verdict(ok)))

    contended_goal(
        "aqs-nonfair",
        ["jdk-nonfair", "best-rust"],
        1.5,
        "contended, aqs-nonfair: ≥ JDK nonfair and ≥ 1.5× the best Rust peer at every point",
    )
    contended_goal("aqs-fair", ["tokio", "jdk-fair"], 1.0, "contended, aqs-fair: ≥ tokio and ≥ JDK fair at every point")

    peers_all = RUST_PEERS + ["jdk-fair", "jdk-nonfair"]
    best = data.best_peer("handoff", "round_trip", peers_all)
    for c in ("aqs-nonfair", "aqs-fair"):
        r = data.ratio("handoff", "round_trip", c, best) if best else None
        ns = data.ns("handoff", "round_trip", c)
        if ns is None:
            continue
        out.append(
            (
                f"hand-off, {c}: ≥ the best peer",
                f"{sig(1e6 / ns)} k round trips/s = {sig(r)}{data.mark('handoff', 'round_trip', c, best)}× {best}",
                verdict(None if r is None else r >= 1.0),
            )
        )
    best = data.best_peer("batch_wake", "wake8")
    for c in ("aqs-nonfair", "aqs-fair"):
        ns = data.ns("batch_wake", "wake8", c)
        bns = data.ns("batch_wake", "wake8", best) if best else None
        if ns is None:
            continue
        out.append(
            (
                f"batch wake of 8, {c}: ≤ the best Rust peer's time",
                f"{sig(ns / 1e3)} µs vs {sig(bns / 1e3 if bns else None)} µs ({best})"
                + data.mark("batch_wake", "wake8", c, best),
                verdict(None if bns is None else ns <= bns),
            )
        )
    lines = ["| goal | measured | status |", "|---|---|---|"]
    lines += [f"| {g} | {m} | {v} |" for g, m, v in out]
    return "\n".join(lines)


# -------------------------------------------------------------------- SVG


CATEGORIES = (
    [("uncontended", b, f"uncontended: {label}") for b, label in UNCONTENDED]
    + [("contended", cbench(t, p), f"contended: T={t} P={p}") for t, p in CONTENDED]
    + [("handoff", "round_trip", "hand-off round trip"), ("batch_wake", "wake8", "batch wake of 8")]
)
SERIES = [
    ("aqs-nonfair", "aqs nonfair", "#1f5fa8"),
    ("aqs-fair", "aqs fair", "#7fb2e5"),
    ("best-rust", "best Rust peer (named)", "#8c8c8c"),
    ("jdk-nonfair", "JDK nonfair", "#c0392b"),
    ("jdk-fair", "JDK fair", "#f0a39a"),
    ("floor", "floor (bare atomics)", "#2e8b57"),
]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def svg_chart(data, subtitle):
    rows = []  # (category label, [(series, value, note)])
    for group, bench, label in CATEGORIES:
        if data.ns(group, bench, REF) is None:
            continue
        bars = []
        for sid, _, _ in SERIES:
            if sid == "best-rust":
                peer = data.best_peer(group, bench)
                r = data.ratio(group, bench, peer, REF) if peer else None
                bars.append((sid, r, peer))
            elif sid == "floor":
                f = floor_ns(data, group, bench)
                bars.append((sid, data.ns(group, bench, REF) / f if f else None, None))
            else:
                bars.append((sid, data.ratio(group, bench, sid, REF), None))
        rows.append((label, bars))
    values = [v for _, bars in rows for _, v, _ in bars if v]
    lo = min(values + [1.0]) / 1.6
    hi = max(values + [1.0]) * 1.6

    # Label width from its length (about 7 px a character at 12 px Helvetica).
    left = 24 + 7 * max([len(label) for label, _ in rows] + [10])
    plot_w, right = 560, 175
    bar_h, bar_gap, row_gap = 9, 2, 12
    top = 92
    row_h = len(SERIES) * (bar_h + bar_gap) + row_gap
    height = top + len(rows) * row_h + 50
    width = left + plot_w + right

    def x(v):
        return left + plot_w * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    colors = {sid: col for sid, _, col in SERIES}
    o = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        '<text x="12" y="22" font-size="15" font-weight="bold">aqs::Semaphore and peers: speed relative to '
        "tokio::sync::Semaphore (= 1; log scale; &gt; 1 is faster)</text>",
        f'<text x="12" y="40" font-size="11" fill="#555">{esc(subtitle)}</text>',
    ]
    # legend
    lx = 12
    for sid, name, col in SERIES:
        o.append(f'<rect x="{lx}" y="52" width="12" height="12" fill="{col}"/>')
        o.append(f'<text x="{lx + 16}" y="62">{esc(name)}</text>')
        lx += 22 + 7 * len(name)
    # grid and ticks
    grid_bottom = top + len(rows) * row_h - row_gap / 2
    ticks = [m * 10**e for e in range(-3, 4) for m in (1, 2, 5)]
    for t in ticks:
        if lo <= t <= hi:
            xt = x(t)
            strong = t == 1
            o.append(
                f'<line x1="{xt:.1f}" y1="{top - 8}" x2="{xt:.1f}" y2="{grid_bottom:.1f}" '
                f'stroke="{"#333" if strong else "#ddd"}" stroke-width="{1.5 if strong else 1}"/>'
            )
            o.append(
                f'<text x="{xt:.1f}" y="{grid_bottom + 16:.1f}" text-anchor="middle" fill="#333">{t:g}</text>'
            )
    o.append(
        f'<text x="{x(1):.1f}" y="{top - 12}" text-anchor="middle" font-size="11" fill="#333">tokio = 1</text>'
    )
    o.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{grid_bottom + 34:.1f}" text-anchor="middle" fill="#333">'
        "speed relative to tokio (throughput ratio, or tokio's time / time)</text>"
    )
    y = top
    for label, bars in rows:
        mid = y + len(SERIES) * (bar_h + bar_gap) / 2
        o.append(f'<text x="{left - 10}" y="{mid + 4:.1f}" text-anchor="end">{esc(label)}</text>')
        for i, (sid, v, note) in enumerate(bars):
            by = y + i * (bar_h + bar_gap)
            if not v:
                continue
            x0, x1 = sorted((x(1), x(v)))
            o.append(
                f'<rect x="{x0:.1f}" y="{by:.1f}" width="{max(x1 - x0, 1):.1f}" height="{bar_h}" '
                f'fill="{colors[sid]}"><title>{esc(sid if not note else note)}: {sig(v)}</title></rect>'
            )
            text = sig(v) + (f" {note}" if note else "")
            if v >= 1:
                o.append(f'<text x="{x1 + 3:.1f}" y="{by + bar_h - 1:.1f}" font-size="10">{esc(text)}</text>')
            else:
                o.append(
                    f'<text x="{x0 - 3:.1f}" y="{by + bar_h - 1:.1f}" font-size="10" '
                    f'text-anchor="end">{esc(text)}</text>'
                )
        y += row_h
    o.append("</svg>")
    return "\n".join(o) + "\n"


# ------------------------------------------------------------ environment


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (p.stdout + p.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not available"


def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, AttributeError):
        pass
    return {
        "nproc": run(["nproc"]),
        "cpu": cpu,
        "mem": mem,
        "kernel": run(["uname", "-sr"]),
        "rustc": run(["rustc", "-V"]),
        "java": run(["java", "-version"]),
    }


def when(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# ------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default=os.environ.get("CARGO_TARGET_DIR", "target/bench"))
    ap.add_argument("--jdk", help="JSON lines of SemaphoreBench.java (default: TARGET/aqs-bench/jdk.jsonl)")
    ap.add_argument(
        "--jdk-before",
        help="its pass before the Rust suite, pooled with --jdk when the two bracket the Rust run "
        "(default: TARGET/aqs-bench/jdk-before.jsonl)",
    )
    ap.add_argument("--md", default="docs/bench-results.md")
    ap.add_argument("--svg", default="docs/bench.svg")
    ap.add_argument("--readme", default="README.md")
    args = ap.parse_args()

    target = Path(args.target)
    aqs_dir = target / "aqs-bench"
    warnings = []
    rust_run = load_json(aqs_dir / "rust-run.json")
    not_before = rust_run["started_unix"] - 5 if rust_run else None
    results = load_criterion(target, not_before, warnings)
    jdk_results, jdk_fair, jdk_meta, jdk_sentinels, jdk_watch = load_jdk(Path(args.jdk) if args.jdk else aqs_dir / "jdk.jsonl")
    if not results:
        sys.exit(f"no criterion results under {target}/criterion: run `cargo bench --bench semaphore` first")
    if not jdk_results:
        warnings.append("no JDK results (scripts/bench-jdk.sh not run, or java not installed): JDK columns are n/a.")
    before_path = Path(args.jdk_before) if args.jdk_before else aqs_dir / "jdk-before.jsonl"
    b_results, _, b_meta, b_sentinels, b_watch = load_jdk(before_path)
    pooled = bool(b_results) and brackets(b_meta, rust_run, jdk_meta)
    passes = table_jdk_passes(b_results, jdk_results) if pooled else None
    if pooled:
        jdk_results = pool(b_results, jdk_results)
    elif b_results:
        warnings.append(f"{before_path} is not this run's pass before the Rust suite: left out.")
    results.update(jdk_results)
    sent = sentinels(rust_run, jdk_sentinels, jdk_watch, (b_sentinels, b_watch) if pooled else ((), None))
    data = Data(results, sent)
    fairness = load_json(aqs_dir / "fairness.json")
    rust_fair = fairness["results"] if fairness else []
    if not fairness:
        warnings.append("no fairness.json: the fairness pass runs only in an unfiltered `cargo bench` (or filter `fairness`).")
    if rust_run and jdk_meta and rust_run.get("quick") != jdk_meta.get("quick"):
        warnings.append("the Rust and JDK results come from different modes (quick vs full).")

    if sent and sent.off:
        warnings.append(
            f"{len(sent.off)} machine sentinel(s) found the machine unlike the rest of the run (first "
            f"before `{sent.off[0]['at']}`); the cells measured next to them are marked `‡`, and "
            "the comparison is not fair there."
        )
    if rust_run and not sent:
        warnings.append("this run recorded no machine sentinels (an older or filtered run).")

    m = machine()
    quick = rust_run.get("quick") if rust_run else None
    mode = "quick (`AQS_BENCH_QUICK=1`)" if quick else "full" if quick is not None else "unknown"
    date = when(rust_run["started_unix"]) if rust_run else when(datetime.datetime.now().timestamp())

    # commands
    env_prefix = ("AQS_BENCH_QUICK=1 " if quick else "") + f"CARGO_TARGET_DIR={target}"
    cmd_file = aqs_dir / "run-command.txt"
    steps_file = aqs_dir / "run-steps.tsv"
    commands = []
    # run-command.txt and run-steps.tsv belong to this run if written before it
    # started and appended after it ended (scripts/bench-report.sh --run).
    from_script = (
        rust_run is not None
        and cmd_file.exists()
        and steps_file.exists()
        and cmd_file.stat().st_mtime <= rust_run["started_unix"] + 5
        and steps_file.stat().st_mtime >= rust_run["ended_unix"] - 5
    )
    if from_script:
        commands.append(cmd_file.read_text().strip())
    else:
        bench_args = [a for a in (rust_run or {}).get("args", []) if a != "--bench"]
        commands.append(
            f"{env_prefix} cargo bench --bench semaphore" + (" -- " + " ".join(bench_args) if bench_args else "")
        )
        if jdk_results:
            commands.append(f"{env_prefix} scripts/bench-jdk.sh")
        commands.append(f"CARGO_TARGET_DIR={target} scripts/bench-report.sh")
    steps = []
    if from_script:
        for line in steps_file.read_text().splitlines():
            f = line.split("\t")
            if len(f) == 4:
                steps.append(f)

    loads = []
    if rust_run:
        loads.append(f"Rust suite: {rust_run['loadavg_start']} at start, {rust_run['loadavg_end']} at end")
    if pooled:
        loads.insert(0, f"JDK before: {b_meta['loadavg_start']} at start, {b_meta['loadavg_end']} at end")
    if jdk_meta:
        name = "JDK after" if pooled else "JDK"
        loads.append(f"{name}: {jdk_meta['loadavg_start']} at start, {jdk_meta['loadavg_end']} at end")
    subtitle = (
        f"{date}; {mode.replace('`', '')} mode; {m['nproc']} CPUs ({m['cpu']}); {m['rustc']}; "
        + (f"load {rust_run['loadavg_start']} → {rust_run['loadavg_end']}" if rust_run else "")
    )

    unc = table_uncontended(data)
    cont, cont_jdk = table_contended(data)
    hand = table_single(data, "handoff", "round_trip", "k round trips/s", lambda ns: 1e6 / ns)
    batch = table_single(data, "batch_wake", "wake8", "µs until all 8 returned", lambda ns: ns / 1e3)
    fair_t = table_fairness(rust_fair, jdk_fair)

    md = [
        "# Benchmark results",
        "",
        "Generated by `scripts/bench-report.sh` from `benches/semaphore.rs` (criterion) and",
        "`benches/jdk/SemaphoreBench.java`; do not edit by hand. Workloads and method follow",
        "the crate's baselines: see the doc comment at the top of `benches/semaphore.rs`.",
        "",
        f"- Date: {date}; mode: {mode}",
        f"- Machine: {m['nproc']} CPUs, {m['cpu']}, {m['mem']}, {m['kernel']}",
        f"- Toolchains: {m['rustc']}; {m['java']}",
        "- Load average (1/5/15 min): " + ("; ".join(loads) if loads else "not recorded"),
        "- Machine sentinels (in each suite: at the start, before every cell that uses both CPUs, after each of"
        " its samples, at the end): " + (sent.summary if sent else "not recorded"),
        *(
            [
                "- Machine watch (a sample followed by an off sentinel is measured again once the machine is back"
                " in line): " + sent.watch
            ]
            if sent and sent.watch
            else []
        ),
        "- Commands:",
        "",
        "```sh",
        *commands,
        "```",
        "",
    ]
    if steps:
        md += ["| step | seconds | load before | load after |", "|---|---:|---|---|"]
        md += [f"| {s[0]} | {s[1]} | {s[2]} | {s[3]} |" for s in steps]
        md.append("")
    md += [
        "Every number is a median over samples. Ratios are speeds relative to a reference (reference",
        "time / time; for throughput, throughput / reference): **above 1 means faster**. `×tokio` is",
        "relative to `tokio::sync::Semaphore`, `×JDK nf` to `java.util.concurrent.Semaphore` nonfair.",
        f"`~` marks a noisy cell: max − min of the samples > {NOISY:.0%} of the median. `‡` marks a cell",
        "with a machine sentinel of its own (before it, or after one of its samples) that was off the run's",
        f"median by more than {SENTINEL_OFF}x (see above). FIFO semaphores",
        "(tokio, futures-intrusive fair, aqs fair, JDK fair) hand each permit to a parked thread when",
        "threads outnumber permits, so compare fair with fair and nonfair with nonfair.",
        *(
            [
                "The JDK's suite ran twice, before and after the Rust suite: each JDK cell is the median of",
                "both passes' samples together, so that the host's drift over the run falls on both sides",
                "(its fairness rows are from the pass after).",
            ]
            if pooled
            else []
        ),
        "",
    ]
    if warnings:
        md += ["> **Note:** " + w for w in warnings] + [""]
    md += [
        "![speed relative to tokio](bench.svg)",
        "",
        "## Status against the performance goals",
        "",
        targets(data),
        "",
        "## 1. Uncontended (one thread; ns per operation)",
        "",
        unc,
        "",
        "## 2. Contended throughput (million acquire/release pairs per second)",
        "",
        "T threads over P permits; each loop acquires, runs the critical section (load a word, 50",
        "dependent xorshift-multiply rounds, store it back) and releases. The floor is a bare atomic",
        "counter (a load and a CAS to take, a `fetch_add` to return; no queue): where threads do not",
        "outnumber permits nobody waits, and it is the least a semaphore can do per pair. Median (×tokio):",
        "",
        cont,
        "",
        "Speed relative to JDK nonfair:",
        "",
        cont_jdk,
        "",
        *(
            [
                "The JDK's two passes, each on its own (M pairs/s; the tables above pool their samples):",
                "",
                passes,
                "",
            ]
            if passes
            else []
        ),
        "## 3. Hand-off (two threads ping-pong over two 0-permit semaphores)",
        "",
        hand,
        "",
        "## 4. Batch wake (8 parked threads, one release of 8 permits)",
        "",
        batch,
        "",
        "## 5. Fairness under oversubscription (16 threads, 1 permit)",
        "",
        "Per-thread acquisition counts summed over "
        + (
            f"{fairness['windows']} windows of {fairness['window_ms']} ms"
            if fairness
            else "the fairness windows"
        )
        + "; `cv` is their coefficient of variation, `max/min` their spread (∞: a thread got none).",
        "",
        fair_t,
        "",
    ]
    Path(args.md).parent.mkdir(parents=True, exist_ok=True)
    Path(args.md).write_text("\n".join(md))
    print(f"wrote {args.md}")
    Path(args.svg).write_text(svg_chart(data, subtitle))
    print(f"wrote {args.svg}")

    readme = Path(args.readme)
    if readme.exists():
        text = readme.read_text()
        start, end = "<!-- bench:start -->", "<!-- bench:end -->"
        if start in text and end in text and text.index(start) < text.index(end):
            section = readme_section(data, date, mode, m, rust_run, sent)
            a = text.index(start) + len(start)
            b = text.index(end)
            readme.write_text(text[:a] + "\n" + section + "\n" + text[b:])
            print(f"updated {args.readme} between the bench markers")
        else:
            print(f"{args.readme} has no bench markers: left alone")
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def readme_section(data, date, mode, m, rust_run, sent):
    rows = [
        ("uncontended acquire+release (ns)", "uncontended", "acquire_release", lambda ns: ns),
        ("contended T=4 P=1 (M pairs/s)", "contended", "t4_p1", lambda ns: 1e3 / ns),
        ("contended T=16 P=4 (M pairs/s)", "contended", "t16_p4", lambda ns: 1e3 / ns),
        ("hand-off (k round trips/s)", "handoff", "round_trip", lambda ns: 1e6 / ns),
        ("batch wake of 8 (µs)", "batch_wake", "wake8", lambda ns: ns / 1e3),
    ]
    cols = ["aqs-nonfair", "aqs-fair", "tokio", "jdk-nonfair", "jdk-fair"]
    out = [
        "![speed relative to tokio](docs/bench.svg)",
        "",
        f"Medians, {date}, {mode} mode, {m['nproc']} CPUs ({m['cpu']})"
        + (f", load average {rust_run['loadavg_start']} at start" if rust_run else "")
        + (
            (
                f", **{len(sent.off)} of {sent.taken} machine sentinels found the machine changed** (cells next to them: `‡`)"
                if sent.off
                else f", all {sent.taken} machine sentinels alike"
            )
            if sent
            else ""
        )
        + ". All tables, peers and the method: [docs/bench-results.md](docs/bench-results.md).",
        "",
        "| workload | " + " | ".join(LABEL[c] for c in cols) + " | best other Rust peer |",
        "|---" + "|---:" * (len(cols) + 1) + "|",
    ]
    for label, g, b, scale in rows:
        cells = [data.cell(g, b, c, scale) for c in cols]
        peer = data.best_peer(g, b, [p for p in RUST_PEERS if p != "tokio"])
        cells.append(f"{data.cell(g, b, peer, scale)} ({peer})" if peer else "n/a")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
