//! Every semaphore workload for every contender of `aqs_benchmark`, through
//! criterion.
//!
//! The workloads are described in `benchmark/src/lib.rs`. Worker threads are
//! spawned once per cell and wait at a barrier between measurements, so no
//! spawn falls inside one. The thread-pool cells (`contended`, `io`) and the
//! hand-off also print, per contender, the median pairs (or round trips)/s
//! and process CPU time per pair over criterion's samples, and write them
//! with the per-thread counts to `TARGET/aqs-bench/rust.jsonl` for
//! `bench_report.py` (TARGET is `$CARGO_TARGET_DIR`, by default `target/`).

use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::thread;
use std::time::Duration;

use aqs_benchmark::harness::{
    self, mix, Group, Out, Padded, Placement, Suite, CS_ROUNDS, WORD_SEED,
};
use aqs_benchmark::{each_contender, Contender};
use criterion::BenchmarkId;

/// Threads and permits of the contended group.
const CONTENDED: [(usize, usize); 6] = [(2, 1), (4, 1), (16, 1), (2, 4), (4, 4), (16, 4)];
/// The I/O workload: (name, threads, permits, time each permit is held).
const IO: [(&str, usize, usize, Duration); 2] = [
    ("t16_p4_100us", 16, 4, Duration::from_micros(100)),
    ("t64_p8_1ms", 64, 8, Duration::from_millis(1)),
];
/// Threads parked in a batch wake.
const BATCH: usize = 8;

/// The contended workload's critical section: loads the protected word, runs
/// [`CS_ROUNDS`] rounds of [`mix`] on it and stores it back. The word lies
/// outside the semaphore, which protects nothing itself.
#[inline]
fn critical_section(word: &AtomicU64) {
    word.store(mix(word.load(Relaxed), CS_ROUNDS), Relaxed);
}

// ---------------------------------------------------------------------------
// Uncontended
// ---------------------------------------------------------------------------

fn uncontended<S: Contender>(g: &mut Group<'_>) {
    let one = Padded(S::new(1));
    g.bench_function(BenchmarkId::new("acquire_release", S::NAME), |b| {
        b.iter(|| drop(black_box(one.acquire())))
    });
    g.bench_function(BenchmarkId::new("try_acquire_release", S::NAME), |b| {
        b.iter(|| drop(black_box(one.try_acquire().expect("a free permit"))))
    });
}

/// What no semaphore beats uncontended (an atomic pair on one word), and the
/// contended workload's critical section alone.
fn floors(g: &mut Group<'_>) {
    let word = Padded(AtomicUsize::new(1));
    g.bench_function(BenchmarkId::new("atomic_pair", "floor"), |b| {
        b.iter(|| {
            black_box(word.fetch_sub(1, Acquire));
            word.fetch_add(1, Release);
        })
    });
    let cs = Padded(AtomicU64::new(WORD_SEED));
    g.bench_function(BenchmarkId::new("critical_section", "alone"), |b| {
        b.iter(|| critical_section(black_box(&cs)))
    });
}

// ---------------------------------------------------------------------------
// Contended and I/O: a pool of workers
// ---------------------------------------------------------------------------

/// A pool cell: `threads` workers looping acquire, work, release over
/// `permits`; the work is the critical section, or a sleep of `hold` when
/// that is set.
fn pooled<S: Contender>(
    g: &mut Group<'_>,
    id: (&str, &str),
    (threads, permits): (usize, usize),
    hold: Option<Duration>,
    out: &mut Out,
) {
    let (sem, word) = (Padded(S::new(permits)), Padded(AtomicU64::new(WORD_SEED)));
    let op = |_| {
        let permit = sem.acquire();
        match hold {
            None => critical_section(&word),
            Some(d) => thread::sleep(d),
        }
        drop(permit);
    };
    harness::pooled(g, id, S::NAME, threads, op, out);
}

fn contended<S: Contender>(g: &mut Group<'_>, out: &mut Out) {
    for tp in CONTENDED {
        let bench = format!("t{}_p{}", tp.0, tp.1);
        pooled::<S>(g, ("contended", &bench), tp, None, out);
    }
}

fn io<S: Contender>(g: &mut Group<'_>, out: &mut Out) {
    for (name, t, p, hold) in IO {
        pooled::<S>(g, ("io", name), (t, p), Some(hold), out);
    }
}

// ---------------------------------------------------------------------------
// Hand-off and batch wake
// ---------------------------------------------------------------------------

/// Two threads ping-pong over two 0-permit semaphores: time per round trip.
fn handoff<S: Contender>(g: &mut Group<'_>, out: &mut Out) {
    let (ping, pong, exit) = (Padded(S::new(0)), Padded(S::new(0)), AtomicBool::new(false));
    let turn = || {
        ping.take();
        if exit.load(Relaxed) {
            return false;
        }
        pong.add_permits(1);
        true
    };
    let round = || {
        ping.add_permits(1);
        pong.take();
    };
    // The permit orders the store before the partner's look.
    let stop = || {
        exit.store(true, Relaxed);
        ping.add_permits(1);
    };
    let id = ("handoff", "round_trip");
    harness::ping_pong(g, id, S::NAME, Placement::Free, turn, round, stop, out);
}

/// `BATCH` threads park on a 0-permit semaphore and one `add_permits(BATCH)`
/// releases them all: time until the last has returned from acquire.
fn batch_wake<S: Contender>(g: &mut Group<'_>) {
    let sem = Padded(S::new(0));
    let park = |ready: &AtomicUsize| {
        ready.fetch_add(1, SeqCst);
        sem.take();
    };
    let id = BenchmarkId::new("wake8", S::NAME);
    harness::wake_all(g, id, BATCH, park, || sem.add_permits(BATCH));
}

fn main() {
    let mut suite = Suite::new("rust.jsonl");

    let mut g = suite.single("uncontended");
    floors(&mut g);
    each_contender!(uncontended(&mut g));
    g.finish();

    let (mut g, out) = suite.threaded("contended");
    each_contender!(contended(&mut g, out));
    g.finish();

    let (mut g, out) = suite.threaded("handoff");
    each_contender!(handoff(&mut g, out));
    g.finish();

    let (mut g, _) = suite.threaded("batch_wake");
    each_contender!(batch_wake(&mut g));
    g.finish();

    // Longer windows in quick mode: at 1 ms a permit, 50 ms holds few pairs.
    let measurement = suite.measurement.max(Duration::from_secs(2));
    let (mut g, out) = suite.threaded("io");
    g.measurement_time(measurement);
    each_contender!(io(&mut g, out));
    g.finish();

    suite.finish();
}
