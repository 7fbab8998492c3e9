#!/usr/bin/env python3
"""Benchmark report for aqs: docs/bench-results.md and docs/bench.svg.

Reads, under the target directory (bench-report.sh passes
${CARGO_TARGET_DIR:-target/bench}):

  criterion/**/new/{benchmark,estimates,sample}.json   cargo bench -p aqs-benchmark
  aqs-bench/rust.jsonl        the semaphore suite's start, load, and the CPU
                              time and per-thread counts of its thread-pool
                              and ping-pong cells
  aqs-bench/rust-mutex.jsonl  the same for the mutex suite (groups mutex_*)
  aqs-bench/rust-rwlock.jsonl the same for the read-write lock suite (groups
                              rwlock_*), and its writer waits
  aqs-bench/jdk.jsonl, jdk-mutex.jsonl, jdk-rwlock.jsonl
                              benchmark/scripts/bench-jdk.sh

Standard library only. Every number shown is a median over samples. Speed
ratios are reference time / time (throughput / reference throughput): above 1
means faster. CPU ratios are CPU time per pair / the reference's: above 1
means more CPU.
"""

import argparse
import datetime
import json
import math
import subprocess
import sys
from pathlib import Path

# (id, label) in table order.
CONTENDERS = [
    ("aqs-nonfair", "aqs nonfair"),
    ("aqs-fair", "aqs fair"),
    ("tokio", "tokio (FIFO)"),
    ("async-lock", "async-lock"),
    ("futures-intrusive-fair", "futures-intrusive fair (FIFO)"),
    ("futures-intrusive-unfair", "futures-intrusive unfair"),
    ("std-condvar", "std Mutex+Condvar"),
    ("parking_lot-condvar", "parking_lot Mutex+Condvar"),
    ("jdk-fair", "JDK Semaphore fair (FIFO)"),
    ("jdk-nonfair", "JDK Semaphore nonfair"),
]
LABEL = dict(CONTENDERS)
RUST_PEERS = [c for c, _ in CONTENDERS[2:8]]
PEERS = RUST_PEERS + ["jdk-fair", "jdk-nonfair"]
FIFO_PEERS = ["tokio", "futures-intrusive-fair", "jdk-fair"]
REF, JDK_REF = "tokio", "jdk-nonfair"
NOISY = 0.25  # `~` when (max - min) / median of the samples exceeds this

UNCONTENDED = [
    ("acquire_release", "acquire+release"),
    ("try_acquire_release", "try_acquire+release"),
]
CONTENDED = [f"t{t}_p{p}" for t, p in [(2, 1), (4, 1), (16, 1), (2, 4), (4, 4), (16, 4)]]
IO = [("t16_p4_100us", "16 threads, 4 permits, 100 µs:"), ("t64_p8_1ms", "64 threads, 8 permits, 1 ms:")]

# The mutex part: (id, label) in table order; CONDVARS labels the same ids in the condvar tables.
MUTEXES = [
    ("aqs", "aqs Mutex"),
    ("aqs-fair", "aqs FairMutex (FIFO)"),
    ("parking_lot", "parking_lot Mutex"),
    ("parking_lot-fair", "parking_lot FairMutex"),
    ("std", "std Mutex"),
    ("jdk-nonfair", "JDK ReentrantLock nonfair"),
    ("jdk-fair", "JDK ReentrantLock fair (FIFO)"),
    ("jdk-synchronized", "JDK synchronized"),
]
CONDVARS = [
    ("aqs", "aqs Mutex + aqs Condvar"),
    ("aqs-fair", "aqs FairMutex + aqs Condvar"),
    ("parking_lot", "parking_lot Mutex + Condvar"),
    ("std", "std Mutex + Condvar"),
    ("jdk-nonfair", "JDK ReentrantLock nonfair + Condition"),
    ("jdk-fair", "JDK ReentrantLock fair + Condition"),
    ("jdk-synchronized", "JDK synchronized + wait/notifyAll"),
]
FAIR_MUTEXES = {"aqs-fair", "parking_lot-fair", "jdk-fair"}
PL, PL_FAIR, STD = "parking_lot", "parking_lot-fair", "std"
MUTEX_CONTENDED = [(f"t{t}_cs{r}", f"T={t} {r} rounds") for r in (50, 500) for t in (2, 4, 16)]

# The read-write lock part: (id, label) in table order.
RWLOCKS = [
    ("aqs", "aqs RwLock"),
    ("aqs-fair", "aqs FairRwLock (FIFO)"),
    ("parking_lot", "parking_lot RwLock"),
    ("std", "std RwLock"),
    ("jdk-nonfair", "JDK ReentrantReadWriteLock nonfair"),
    ("jdk-fair", "JDK ReentrantReadWriteLock fair (FIFO)"),
    ("jdk-stamped", "JDK StampedLock"),
]
READ_PERCENT = (100, 99, 90, 50)
RW_THREADS = (2, 4, 16)
RWLOCK_CONTENDED = [(f"t{t}_r{r}", f"T={t} {r}% reads") for r in READ_PERCENT for t in RW_THREADS]
RW_WRITING = [(b, t) for b, t in RWLOCK_CONTENDED if not b.endswith("_r100")]  # cells with writes
RW_READERS = "r3_w1"  # the writer-wait cell: 3 readers, 1 writer

# (file under aqs-bench/, harness name, the suite it holds)
HARNESSES = [
    ("rust.jsonl", "Rust semaphore suite", "semaphore"),
    ("rust-mutex.jsonl", "Rust mutex suite", "mutex"),
    ("rust-rwlock.jsonl", "Rust read-write lock suite", "rwlock"),
    ("jdk.jsonl", "JDK SemaphoreBench", "semaphore"),
    ("jdk-mutex.jsonl", "JDK MutexBench", "mutex"),
    ("jdk-rwlock.jsonl", "JDK RwLockBench", "rwlock"),
]
RUST_FILE = {suite: file for file, _, suite in HARNESSES if file.startswith("rust")}


def is_mutex_group(group):
    return group.startswith("mutex_")


def suite_of(group):
    """The suite a group belongs to: `mutex_*` mutex, `rwlock_*` rwlock, else semaphore."""
    return "mutex" if is_mutex_group(group) else "rwlock" if group.startswith("rwlock_") else "semaphore"


def head(bench):
    """`t16_p4` -> `T=16 P=4`."""
    t, p = bench.split("_")[:2]
    return f"T={t[1:]} P={p[1:]}"


# ----------------------------------------------------------------- loading


def load_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def spread(xs):
    """Median (the upper one, as in the harnesses), min and max."""
    s = sorted(xs)
    return {"ns": s[len(s) // 2], "min": s[0], "max": s[-1]}


def load_criterion(target, not_before, warnings):
    """{(group, bench, contender): {ns, min, max}} from criterion's new/ dirs;
    `not_before(group)` is the start of the group's last run, or None."""
    out, stale = {}, []
    for bj in sorted((target / "criterion").glob("**/new/benchmark.json")):
        meta, est = load_json(bj), load_json(bj.parent / "estimates.json")
        if not meta or not est or not meta.get("value_str"):
            continue
        key = (meta["group_id"], meta["function_id"], meta["value_str"])
        since = not_before(key[0])
        if since and (bj.parent / "estimates.json").stat().st_mtime < since:
            stale.append("/".join(key))
            continue
        rec = {"ns": est["median"]["point_estimate"]}
        sample = load_json(bj.parent / "sample.json") or {}
        per = [t / i for t, i in zip(sample.get("times", []), sample.get("iters", [])) if i]
        rec["min"], rec["max"] = (min(per), max(per)) if per else (rec["ns"], rec["ns"])
        out[key] = rec
    if stale:
        warnings.append(
            f"{len(stale)} criterion result(s) older than the last `cargo bench` were left out "
            f"(e.g. {', '.join(stale[:3])})."
        )
    return out


def load_jsonl(path):
    """(meta line or None, {(group, bench, contender): record}) of one harness."""
    meta, cells = None, {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return meta, cells
    for line in lines:
        rec = json.loads(line) if line.strip() else {}
        if rec.get("group") == "meta":
            meta = rec
        elif rec.get("group") and "max_wait_ns" in rec:  # a writer-wait cell: ns is the longest wait
            cell = spread(rec["max_wait_ns"]) | {"median_wait": spread(rec["median_wait_ns"]),
                                                 "writes": spread(rec.get("writes") or [0])}
            cells[(rec["group"], rec["bench"], rec["contender"])] = cell
        elif rec.get("group"):
            cell = spread(rec["samples_ns"])
            if rec.get("cpu_ns"):
                cell["cpu"] = spread(rec["cpu_ns"])
            for k in ("counts", "window_counts", "window_reads"):
                if rec.get(k):
                    cell[k] = rec[k]
            cells[(rec["group"], rec["bench"], rec["contender"])] = cell
    return meta, cells


# ------------------------------------------------------------- formatting


def sig(x):
    """Three significant digits, no exponent."""
    if x is None or not math.isfinite(x):
        return "n/a"
    a = abs(x)
    return f"{x:.0f}" if a >= 100 else f"{x:.1f}" if a >= 10 else f"{x:.2f}" if a >= 1 else f"{x:.3g}"


def noisy(rec):
    return rec["ns"] > 0 and (rec["max"] - rec["min"]) / rec["ns"] > NOISY


class Data:
    def __init__(self, results):
        self.r = results

    def get(self, group, bench, c):
        return self.r.get((group, bench, c))

    def ns(self, group, bench, c):
        rec = self.get(group, bench, c)
        return rec["ns"] if rec else None

    def cpu(self, group, bench, c):
        rec = self.get(group, bench, c)
        return rec["cpu"]["ns"] if rec and "cpu" in rec else None

    def ratio(self, group, bench, c, ref):
        """Speed of `c` relative to `ref`: ref time / time."""
        a, b = self.ns(group, bench, c), self.ns(group, bench, ref)
        return b / a if a and b else None

    def cell(self, group, bench, c, scale, key=None):
        """A median scaled for display, `~` when noisy; `key="cpu"` for CPU time."""
        rec = self.get(group, bench, c)
        rec = rec and (rec.get(key) if key else rec)
        return sig(scale(rec["ns"])) + ("~" if noisy(rec) else "") if rec else "n/a"

    def best(self, group, bench, peers, key=ns):
        """The peer with the least time (or CPU time, with key=Data.cpu), or None."""
        have = [(key(self, group, bench, p), p) for p in peers if key(self, group, bench, p) is not None]
        return min(have)[1] if have else None


def table(data, group, benches, columns, contenders=CONTENDERS):
    """One row per contender with results in `group`: for each (bench, bench
    title), one cell per column (title, value(bench, contender)); the bench
    title heads its first column."""
    head = ["contender"] + [f"{t} {title}".strip() if i == 0 else title
                            for _, t in benches for i, (title, _) in enumerate(columns)]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for c, label in contenders:
        if any(data.get(group, b, c) for b, _ in benches):
            lines.append("| " + " | ".join([label] + [f(b, c) for b, _ in benches for _, f in columns]) + " |")
    return "\n".join(lines)


def value(data, group, scale, key=None):
    return lambda b, c: data.cell(group, b, c, scale, key)


def speed(data, group, ref):
    """Speed relative to `ref`: a contender, or a function of (bench, contender)."""
    pick = ref if callable(ref) else lambda b, c: ref
    return lambda b, c: sig(data.ratio(group, b, c, pick(b, c)))


def throughput(data, group, ref, scale):
    """`throughput (×ref) · CPU µs per operation`; `scale` turns ns per
    operation into the throughput shown."""
    return lambda b, c: (f"{data.cell(group, b, c, scale)} ({speed(data, group, ref)(b, c)}) · "
                         f"{data.cell(group, b, c, lambda ns: ns / 1e3, 'cpu')}" if data.get(group, b, c) else "n/a")


def ratios(data, group):
    return [("×tokio", speed(data, group, REF)), ("×JDK nf", speed(data, group, JDK_REF))]


def io_notes(data):
    """aqs fair's CPU per pair against the cheapest FIFO peer's, and aqs
    nonfair's against the cheapest peer's."""
    notes = []
    for b, label in IO:
        parts = []
        for c, peers, kind in [("aqs-fair", FIFO_PEERS, "FIFO peer"), ("aqs-nonfair", PEERS, "peer")]:
            peer, cpu = data.best("io", b, peers, Data.cpu), data.cpu("io", b, c)
            if peer and cpu:
                parts.append(
                    f"{LABEL[c]} {sig(cpu / 1e3)} µs = **{sig(cpu / data.cpu('io', b, peer))}×** the cheapest "
                    f"{kind} ({LABEL[peer]}, {sig(data.cpu('io', b, peer) / 1e3)} µs)"
                )
        if parts:
            notes.append(f"- {label} CPU per pair of " + "; ".join(parts) + ".")
    return "\n".join(notes)


def fairness(data, bench="t16_p1"):
    """Pairs per thread over the measured windows of one contended cell."""
    lines = ["| contender | per-thread min | per-thread max | max/min |", "|---|---:|---:|---:|"]
    for c, label in CONTENDERS:
        counts = (data.get("contended", bench, c) or {}).get("counts")
        if counts:
            lo, hi = min(counts), max(counts)
            lines.append(f"| {label} | {lo} | {hi} | {sig(hi / lo) if lo else '∞'} |")
    return "\n".join(lines)


def show_spread(cell):
    """The median over windows of a thread's most operations over the fewest
    (∞ when one had none)."""
    spreads = sorted(max(w) / min(w) if min(w) else math.inf for w in (cell or {}).get("window_counts", []) if w)
    x = spreads[len(spreads) // 2] if spreads else None
    return "∞" if x == math.inf else sig(x)


def show_split_spread(cell, reads):
    """As show_spread, over each thread's reads (`reads`) or writes (its
    operations less its reads) per window, leaving out windows with none of
    that kind; `–` when no window had any (no writes at 100% reads), n/a
    without the reads."""
    cell = cell or {}
    if "window_reads" not in cell:
        return "n/a"
    windows = [r if reads else [n - k for n, k in zip(w, r)]
               for w, r in zip(cell.get("window_counts", []), cell["window_reads"])]
    windows = [w for w in windows if any(w)]
    return show_spread({"window_counts": windows}) if windows else "–"


def mutex_part(data):
    """Part 2 of the report: the mutexes and their condition variables."""
    if not any(is_mutex_group(group) for group, _, _ in data.r):
        return ["# Part 2: Mutex", "", "No results: run `cargo bench -p aqs-benchmark --bench mutex`.", ""]
    G, C, F = "mutex_contended", "mutex_condvar", "mutex_unlock_fair"

    def pl(group):  # parking_lot's FairMutex for the fair rows where it has the cell, else its Mutex
        return lambda b, c: PL_FAIR if c in FAIR_MUTEXES and data.get(group, b, PL_FAIR) else PL

    def refs(group):
        return [("×pl", speed(data, group, pl(group))), ("×std", speed(data, group, STD))]

    floors = "; ".join(f"{label} {data.cell('mutex_uncontended', 'cas_store', c, lambda ns: ns)} ns"
                       for c, label in [("floor", "a bare compare-and-swap + store"), ("jdk-floor", "the same in Java")])

    def per_second(ns):  # ns per pair -> M pairs/s
        return 1e3 / ns

    return [
        "# Part 2: Mutex",
        "",
        "Each mutex guards one `u64`. `×pl` is relative to parking_lot: its `FairMutex` (its `Mutex` with",
        "`unlock_fair` on every unlock) for the fair rows (aqs `FairMutex`, parking_lot `FairMutex`, JDK",
        "fair), its `Mutex` for the others and wherever it has no fair cell (the condition variables);",
        "`×std` is relative to `std::sync::Mutex`. A barging mutex lets the thread that unlocks take the",
        "lock again at once, so on few CPUs one thread may do nearly all the work (section 8).",
        "",
        "## 6. Uncontended lock + unlock (one thread; ns)",
        "",
        table(data, "mutex_uncontended", [("lock_unlock", "lock+unlock")],
              [("(ns)", value(data, "mutex_uncontended", lambda ns: ns))] + refs("mutex_uncontended"), MUTEXES),
        "",
        f"For reference: {floors}.",
        "",
        "## 7. Contended: M pairs/s (×pl) · CPU µs per pair",
        "",
        "T threads each loop lock, critical section, unlock. The critical section is the semaphore",
        "suite's (load the locked word, 50 dependent xorshift-multiply rounds, store it back) or one of",
        "500 rounds.",
        "",
        table(data, G, MUTEX_CONTENDED, [("", throughput(data, G, pl(G), per_second))], MUTEXES),
        "",
        "Speed relative to std:",
        "",
        table(data, G, MUTEX_CONTENDED, [("", speed(data, G, STD))], MUTEXES),
        "",
        "## 8. Fairness: a thread's most acquisitions over the fewest in a window",
        "",
        "Median over the measured windows of the contended cells; ∞ when some thread got none.",
        "",
        table(data, G, MUTEX_CONTENDED, [("", lambda b, c: show_spread(data.get(G, b, c)))], MUTEXES),
        "",
        "## 9. `unlock_fair` ping-pong: M pairs/s (×pl) · CPU µs per pair",
        "",
        "Two threads each loop lock, 50 rounds, `unlock_fair`, which hands the lock to the other thread",
        "whenever it waits; beside it the same cell with a plain unlock (section 7, T=2).",
        "",
        table(data, F, [("t2_cs50", "unlock_fair")],
              [("", throughput(data, F, PL, per_second)),
               ("max/min per window", lambda b, c: show_spread(data.get(F, b, c))),
               ("plain unlock", throughput(data, G, PL, per_second))], MUTEXES),
        "",
        "## 10. Condition variable ping-pong: k round trips/s (×pl) · CPU µs per round trip",
        "",
        "Two threads pass a turn through one mutex and two condition variables: each waits on its own",
        "until the turn is its, takes it and notifies the other's. Each mutex runs with its own crate's",
        "condition variable; `synchronized` has one wait set, so both threads wait on the monitor and",
        "`notifyAll` wakes the other.",
        "",
        "A turn that crosses CPUs wakes an idle CPU, which on this virtual machine costs tens of",
        "microseconds; a turn on one CPU is a context switch. Left free, the scheduler moves the pair",
        "between the two placements from window to window, so the Rust cells are also run pinned: both",
        "threads on CPU 0, and one on each CPU.",
        "",
        table(data, C, [("ping_pong", "free"), ("ping_pong_1cpu", "one CPU"), ("ping_pong_2cpu", "two CPUs")],
              [("", throughput(data, C, pl(C), lambda ns: 1e6 / ns)), ("×std", speed(data, C, STD))], CONDVARS),
        "",
        "## 11. `notify_all` to 8 waiters (µs until all 8 have returned from `wait` and unlocked)",
        "",
        table(data, C, [("notify_all8", "µs")], [("", value(data, C, lambda ns: ns / 1e3))] + refs(C), CONDVARS),
        "",
    ]


def writer_wait(data, c):
    """The writer-wait cell's columns: longest wait (median over windows, and
    the worst window) and median wait in µs, ×pl (parking_lot's longest wait
    / this one: above 1 is a shorter longest wait), writes per window."""
    rec = data.get("rwlock_writer_wait", RW_READERS, c)
    if not rec:
        return ["n/a"] * 5
    pl = data.ns("rwlock_writer_wait", RW_READERS, PL)
    return [sig(rec["ns"] / 1e3), sig(rec["max"] / 1e3), sig(rec["median_wait"]["ns"] / 1e3),
            sig(pl / rec["ns"]) if pl and rec["ns"] else "n/a", f"{rec['writes']['ns']:.0f}"]


def rwlock_part(data):
    """Part 3 of the report: the read-write locks."""
    if not any(suite_of(group) == "rwlock" for group, _, _ in data.r):
        return ["# Part 3: Read-write lock", "", "No results: run `cargo bench -p aqs-benchmark --bench rwlock`.", ""]
    U, G = "rwlock_uncontended", "rwlock_contended"

    def per_second(ns):  # ns per operation -> M operations/s
        return 1e3 / ns

    refs = [("×pl", speed(data, U, PL)), ("×std", speed(data, U, STD))]
    contended = []
    for r in READ_PERCENT:
        benches = [(f"t{t}_r{r}", f"T={t}") for t in RW_THREADS]
        contended += [
            f"### {r}% reads",
            "",
            table(data, G, benches, [("", throughput(data, G, PL, per_second)), ("×std", speed(data, G, STD)),
                                     ("×JDK nf", speed(data, G, JDK_REF))], RWLOCKS),
            "",
        ]
    wait_head = ["contender", "longest wait µs (median window)", "worst window µs", "median wait µs",
                 "×pl", "writes per window"]
    waits = ["| " + " | ".join(wait_head) + " |", "|---" + "|---:" * (len(wait_head) - 1) + "|"]
    waits += [f"| {label} | " + " | ".join(writer_wait(data, c)) + " |"
              for c, label in RWLOCKS if data.get("rwlock_writer_wait", RW_READERS, c)]
    return [
        "# Part 3: Read-write lock",
        "",
        "Each lock guards one `u64`. `×pl` is relative to `parking_lot::RwLock`, `×std` to",
        "`std::sync::RwLock`, `×JDK nf` to `ReentrantReadWriteLock` nonfair. aqs `RwLock` lets writers",
        "barge while arriving readers defer to a writer first in the queue; aqs `FairRwLock` and the",
        "JDK's fair lock are strict FIFO. `StampedLock` (its `readLock`/`unlockRead` and",
        "`writeLock`/`unlockWrite`, no optimistic reads) is an extra reference.",
        "",
        "## 12. Uncontended read lock + unlock and write lock + unlock (one thread; ns)",
        "",
        table(data, U, [("read", "read"), ("write", "write")],
              [("(ns)", value(data, U, lambda ns: ns))] + refs, RWLOCKS),
        "",
        "## 13. Contended: M operations/s (×pl) · CPU µs per operation",
        "",
        "T threads each loop one operation, a read or a write as a per-thread xorshift64 draws it (the",
        "same sequence in Rust and Java). A read loads the word under the read lock and runs the mutex",
        "suite's short section (50 dependent xorshift-multiply rounds) into a local; a write runs it and",
        "stores the word back under the write lock.",
        "",
        *contended,
        "## 14. Spread: a thread's most reads (writes) over the fewest in a window",
        "",
        "Every thread both reads and writes, in the workload's proportion, and counts each; the tables",
        "split its operations into reads and writes. Median over the measured windows of the contended",
        "cells; ∞ when some thread did none (at T=16 on two CPUs a short window can end before every",
        "thread has run, and at 99% reads a thread may draw no write in a window); windows with no",
        "reads (writes) at all are left out, and – marks a cell that had none.",
        "",
        "Reads:",
        "",
        table(data, G, RWLOCK_CONTENDED, [("", lambda b, c: show_split_spread(data.get(G, b, c), True))], RWLOCKS),
        "",
        "Writes:",
        "",
        table(data, G, RW_WRITING,
              [("", lambda b, c: show_split_spread(data.get(G, b, c), False))], RWLOCKS),
        "",
        "## 15. Longest writer wait under continuous readers",
        "",
        "Three threads loop read lock, short section, unlock without pause; one writer loops: lock call,",
        "acquired (the wait), short section stored back, unlock, the section's work again outside the",
        "lock. Each window gives its longest and median wait; shown are the median over windows of the",
        "longest, the worst window's longest, and the median over windows of the median. `×pl` is",
        "parking_lot's longest wait / this one: **above 1 means a shorter longest wait**.",
        "",
        "\n".join(waits),
        "",
    ]


# -------------------------------------------------------------------- SVG


CATEGORIES = (
    [("uncontended", b, f"uncontended: {label}") for b, label in UNCONTENDED]
    + [("contended", b, f"contended: {head(b)}") for b in CONTENDED]
    + [("handoff", "round_trip", "hand-off round trip"), ("batch_wake", "wake8", "batch wake of 8")]
)
SERIES = [
    ("aqs-nonfair", "aqs nonfair", "#1f5fa8"),
    ("aqs-fair", "aqs fair", "#7fb2e5"),
    ("best-rust", "best Rust peer (named)", "#8c8c8c"),
    ("jdk-nonfair", "JDK nonfair", "#c0392b"),
    ("jdk-fair", "JDK fair", "#f0a39a"),
]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def svg_chart(data, subtitle):
    """Speed relative to tokio per category, one bar per series, log scale."""
    rows = []
    for group, bench, label in CATEGORIES:
        if data.ns(group, bench, REF) is None:
            continue
        bars = []
        for sid, _, _ in SERIES:
            c = data.best(group, bench, RUST_PEERS) if sid == "best-rust" else sid
            bars.append((sid, data.ratio(group, bench, c, REF) if c else None, c if sid == "best-rust" else None))
        rows.append((label, bars))
    values = [v for _, bars in rows for _, v, _ in bars if v] + [1.0]
    lo, hi = min(values) / 1.6, max(values) * 1.6
    left = 24 + 7 * max([len(label) for label, _ in rows] + [10])
    plot_w, bar_h, top = 560, 9, 92
    row_h = len(SERIES) * (bar_h + 2) + 12
    width, height = left + plot_w + 175, top + len(rows) * row_h + 50

    def x(v):
        return left + plot_w * math.log(v / lo) / math.log(hi / lo)

    o = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        '<text x="12" y="22" font-size="15" font-weight="bold">aqs::Semaphore and peers: speed relative to '
        "tokio::sync::Semaphore (= 1; log scale; &gt; 1 is faster)</text>",
        f'<text x="12" y="40" font-size="11" fill="#555">{esc(subtitle)}</text>',
    ]
    lx = 12
    for _, name, col in SERIES:
        o.append(f'<rect x="{lx}" y="52" width="12" height="12" fill="{col}"/><text x="{lx + 16}" y="62">{esc(name)}</text>')
        lx += 22 + 7 * len(name)
    bottom = top + len(rows) * row_h - 6
    for t in [m * 10**e for e in range(-3, 4) for m in (1, 2, 5)]:
        if lo <= t <= hi:
            col, w = ("#333", 1.5) if t == 1 else ("#ddd", 1)
            o.append(f'<line x1="{x(t):.1f}" y1="{top - 8}" x2="{x(t):.1f}" y2="{bottom:.1f}" stroke="{col}" stroke-width="{w}"/>')
            o.append(f'<text x="{x(t):.1f}" y="{bottom + 16:.1f}" text-anchor="middle" fill="#333">{t:g}</text>')
    y = top
    for label, bars in rows:
        o.append(f'<text x="{left - 10}" y="{y + len(SERIES) * (bar_h + 2) / 2 + 4:.1f}" text-anchor="end">{esc(label)}</text>')
        for i, (sid, v, note) in enumerate(bars):
            if not v:
                continue
            by = y + i * (bar_h + 2)
            x0, x1 = sorted((x(1), x(v)))
            text = esc(sig(v) + (f" {note}" if note else ""))
            o.append(f'<rect x="{x0:.1f}" y="{by:.1f}" width="{max(x1 - x0, 1):.1f}" height="{bar_h}" fill="{dict((s, c) for s, _, c in SERIES)[sid]}"/>')
            tx, anchor = (x1 + 3, "start") if v >= 1 else (x0 - 3, "end")
            o.append(f'<text x="{tx:.1f}" y="{by + bar_h - 1:.1f}" font-size="10" text-anchor="{anchor}">{text}</text>')
        y += row_h
    return "\n".join(o + ["</svg>"]) + "\n"


# ------------------------------------------------------------------- main


def first_line(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (p.stdout + p.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not available"


def when(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="target/bench")
    ap.add_argument("--md", default="docs/bench-results.md")
    ap.add_argument("--svg", default="docs/bench.svg")
    args = ap.parse_args(argv)

    target, warnings = Path(args.target), []
    metas, cells = {}, {}
    for file, _, _ in HARNESSES:
        metas[file], cells[file] = load_jsonl(target / "aqs-bench" / file)
    def started(group):  # a suite's criterion results older than its last run are stale
        meta = metas[RUST_FILE[suite_of(group)]]
        return meta and meta["started_unix"] - 5

    results = load_criterion(target, started, warnings)
    if not results:
        sys.exit(f"no criterion results under {target}/criterion: run `cargo bench -p aqs-benchmark` first")
    for file, name, suite in HARNESSES:
        if file.startswith("rust"):  # criterion times the cell; the JSON adds CPU time and counts
            for key, cell in cells[file].items():
                keep = ("cpu", "counts", "window_counts", "window_reads")
                results.setdefault(key, cell).update({k: cell[k] for k in keep if k in cell})
        elif not cells[file] and metas[RUST_FILE[suite]]:
            warnings.append(f"no {name} results (bench-jdk.sh not run, or java not installed): its JDK cells are n/a.")
        results.update(cells[file])
    if len({m["quick"] for m in metas.values() if m}) > 1:
        warnings.append("the results come from different modes (quick and full).")
    data = Data(results)

    quick = next((m["quick"] for m in metas.values() if m), None)
    mode = "unknown" if quick is None else "quick (`AQS_BENCH_QUICK=1`)" if quick else "full"
    runs = [
        f"{name} {when(m['started_unix'])}, load average {m['loadavg_start']} at start, {m['loadavg_end']} at end"
        for name, m in ((name, metas[file]) for file, name, _ in HARNESSES)
        if m
    ]
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "unknown") if Path("/proc/cpuinfo").exists() else "unknown"
    machine = f"{first_line(['nproc'])} CPUs ({cpu}), {first_line(['uname', '-sr'])}"
    tools = f"{first_line(['rustc', '-V'])}; {first_line(['java', '-version'])}"
    subtitle = f"{runs[0] if runs else ''}; {mode.replace('`', '')} mode; {machine}"
    floors = "; ".join(
        f"{label} {data.cell('uncontended', b, c, lambda ns: ns)} ns"
        for b, c, label in [("atomic_pair", "floor", "a bare `fetch_sub` + `fetch_add` pair"),
                            ("critical_section", "alone", "the critical section alone"),
                            ("critical_section", "jdk-alone", "the same in Java")]
    )
    cont = [(b, head(b)) for b in CONTENDED]


    md = [
        "# Benchmark results",
        "",
        "Generated by `benchmark/scripts/bench-report.sh` from `benchmark/benches/semaphore.rs`,",
        "`mutex.rs` and `rwlock.rs` (criterion) and `benchmark/jdk/SemaphoreBench.java`, `MutexBench.java`",
        "and `RwLockBench.java`; do not edit by hand. The workloads are described in",
        "`benchmark/src/lib.rs`.",
        "",
        f"- Mode: {mode}; machine: {machine}; {tools}",
        *[f"- {r}" for r in runs],
        f"- Command: `{'AQS_BENCH_QUICK=1 ' if quick else ''}benchmark/scripts/bench-report.sh --run`",
        "",
        "Every number is a median over samples. Ratios in brackets and `×` columns are speeds relative to",
        "a reference (reference time / time): **above 1 means faster**. CPU time is the process CPU clock",
        "over a measurement window (or a sample's round trips) divided by the operations completed in it.",
        f"`~` marks a noisy cell: max − min of the samples > {NOISY:.0%} of the median.",
        "",
        *[f"> **Note:** {w}" for w in warnings],
        "",
        "# Part 1: Semaphore",
        "",
        "`×tokio` is relative to `tokio::sync::Semaphore`, `×JDK nf` to `java.util.concurrent.Semaphore`",
        "nonfair. FIFO semaphores (tokio, futures-intrusive fair, aqs fair, JDK fair) hand each permit to",
        "a parked thread when threads outnumber permits, so compare fair with fair and nonfair with",
        "nonfair.",
        "",
        "![speed relative to tokio](bench.svg)",
        "",
        "## 1. Uncontended (one thread; ns per operation)",
        "",
        table(data, "uncontended", UNCONTENDED, [("(ns)", value(data, "uncontended", lambda ns: ns))]
              + ratios(data, "uncontended")),
        "",
        f"For reference: {floors}.",
        "",
        "## 2. Contended: M pairs/s (×tokio) · CPU µs per pair",
        "",
        "T threads over P permits; each loop acquires, runs the critical section (load a word, 50",
        "dependent xorshift-multiply rounds, store it back) and releases.",
        "",
        table(data, "contended", cont, [("", throughput(data, "contended", REF, lambda ns: 1e3 / ns))]),
        "",
        "Speed relative to JDK nonfair:",
        "",
        table(data, "contended", cont, [("", speed(data, "contended", JDK_REF))]),
        "",
        "How evenly the threads were served at T=16 P=1 (pairs per thread over the measured windows):",
        "",
        fairness(data),
        "",
        "## 3. A semaphore bounding I/O: each permit held across a sleep",
        "",
        "Throughput is bounded by the sleeps; what differs is the CPU time each pair costs, the sleep's",
        "own included. CPU ratios are CPU per pair / the peer's: **above 1 means aqs uses more CPU**.",
        "",
        table(data, "io", IO, [("k pairs/s", value(data, "io", lambda ns: 1e6 / ns)),
                               ("CPU µs/pair", value(data, "io", lambda ns: ns / 1e3, "cpu"))]),
        "",
        io_notes(data),
        "",
        "## 4. Hand-off (two threads ping-pong over two 0-permit semaphores)",
        "",
        table(data, "handoff", [("round_trip", "k round trips/s")], [("", value(data, "handoff", lambda ns: 1e6 / ns))]
              + ratios(data, "handoff") + [("CPU µs/round trip", value(data, "handoff", lambda ns: ns / 1e3, "cpu"))]),
        "",
        "## 5. Batch wake (8 parked threads, one release of 8 permits)",
        "",
        table(data, "batch_wake", [("wake8", "µs until all 8 returned")],
              [("", value(data, "batch_wake", lambda ns: ns / 1e3))] + ratios(data, "batch_wake")),
        "",
        *mutex_part(data),
        *rwlock_part(data),
    ]
    Path(args.md).parent.mkdir(parents=True, exist_ok=True)
    Path(args.md).write_text("\n".join(md))
    Path(args.svg).write_text(svg_chart(data, subtitle))
    print(f"wrote {args.md} and {args.svg}")
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


if __name__ == "__main__":
    main()
