//! Every read-write lock workload for every contender of `aqs_benchmark`,
//! through criterion.
//!
//! The workloads are described in `benchmark/src/lib.rs`. As in
//! `benches/mutex.rs`, worker threads are spawned once per cell; the
//! contended cells print their median operations/s, CPU time per operation
//! and spread (and record each worker's reads per window besides its
//! operations, for the report's reader and writer spreads), and the
//! writer-wait cells their longest and median waits,
//! and all of them go to `TARGET/aqs-bench/rust-rwlock.jsonl` for
//! `bench_report.py`.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::thread;
use std::time::{Duration, Instant};

use aqs_benchmark::harness::{self, mix, Group, Out, Padded, Suite, CS_ROUNDS, WORD_SEED};
use aqs_benchmark::{each_rwlock, is_read, xorshift, xorshift_seed, RwLockContender};
use criterion::BenchmarkId;

/// Threads of the contended group.
const THREADS: [usize; 3] = [2, 4, 16];
/// Percentages of reads in the contended group.
const READ_PERCENT: [u32; 4] = [100, 99, 90, 50];
/// Readers looping while one writer measures its waits.
const READERS: usize = 3;

/// A read: load the word under the read lock, mix it into a local value
/// that goes to `black_box` (the mutex suite's short section, nothing
/// stored).
#[inline]
fn read_section<L: RwLockContender>(l: &L) {
    let word = l.read();
    black_box(mix(*word, CS_ROUNDS));
}

/// A write: the mutex suite's short section, stored back.
#[inline]
fn write_section<L: RwLockContender>(l: &L) {
    let mut word = l.write();
    *word = mix(*word, CS_ROUNDS);
}

// ---------------------------------------------------------------------------
// Uncontended
// ---------------------------------------------------------------------------

fn uncontended<L: RwLockContender>(g: &mut Group<'_>) {
    let l = Padded(L::new(WORD_SEED));
    g.bench_function(BenchmarkId::new("read", L::NAME), |b| {
        b.iter(|| drop(black_box(l.read())))
    });
    g.bench_function(BenchmarkId::new("write", L::NAME), |b| {
        b.iter(|| drop(black_box(l.write())))
    });
}

// ---------------------------------------------------------------------------
// Contended
// ---------------------------------------------------------------------------

/// `threads` workers each looping one operation, a read with probability
/// `read_percent`% as the worker's own xorshift draws it.
fn contended<L: RwLockContender>(g: &mut Group<'_>, out: &mut Out) {
    for threads in THREADS {
        for read_percent in READ_PERCENT {
            let l = Padded(L::new(WORD_SEED));
            let rng: Vec<Padded<AtomicU64>> = (0..threads)
                .map(|i| Padded(AtomicU64::new(xorshift_seed(i))))
                .collect();
            let op = |i: usize| {
                // Only worker `i` touches its state: relaxed is enough.
                let x = xorshift(rng[i].load(Relaxed));
                rng[i].store(x, Relaxed);
                let read = is_read(x, read_percent);
                if read {
                    read_section(&*l);
                } else {
                    write_section(&*l);
                }
                read
            };
            let bench = format!("t{threads}_r{read_percent}");
            harness::pooled_rw(g, ("rwlock_contended", &bench), L::NAME, threads, op, out);
        }
    }
}

// ---------------------------------------------------------------------------
// Writer wait under continuous readers
// ---------------------------------------------------------------------------

/// [`READERS`] threads loop read sections without pause while this thread,
/// the writer, loops: note the time, write-lock, record the wait, the write
/// section, unlock, then the section's work again outside the lock. Each of
/// `windows` windows of `length` gives its longest and median wait. A
/// watchdog stops the readers if the writer is still waiting long after the
/// last window should have ended, so a starved writer cannot hang the run
/// (its window then shows the wait it had).
fn writer_wait<L: RwLockContender>(out: &mut Out, windows: usize, length: Duration) {
    let l = Padded(L::new(WORD_SEED));
    let (stop, done) = (Padded(AtomicBool::new(false)), AtomicBool::new(false));
    let deadline = Instant::now() + length * (windows as u32) * 3 + Duration::from_secs(10);
    let (mut max_ns, mut median_ns, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    thread::scope(|scope| {
        for _ in 0..READERS {
            scope.spawn(|| {
                while !stop.load(Relaxed) {
                    read_section(&*l);
                }
            });
        }
        scope.spawn(|| {
            while !done.load(Relaxed) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Relaxed);
        });
        thread::sleep(Duration::from_millis(20)); // the readers are running
        for _ in 0..windows {
            let mut waits: Vec<u64> = Vec::new();
            let t0 = Instant::now();
            while t0.elapsed() < length {
                let asked = Instant::now();
                let mut word = l.write();
                waits.push(asked.elapsed().as_nanos() as u64);
                *word = mix(*word, CS_ROUNDS);
                drop(word);
                black_box(mix(WORD_SEED, CS_ROUNDS));
            }
            waits.sort_unstable();
            max_ns.push(waits[waits.len() - 1]);
            median_ns.push(waits[waits.len() / 2]);
            writes.push(waits.len());
        }
        done.store(true, Relaxed);
        stop.store(true, Relaxed);
    });
    let mut sorted = max_ns.clone();
    sorted.sort_unstable();
    let mut med = median_ns.clone();
    med.sort_unstable();
    let mut per_window = writes.clone();
    per_window.sort_unstable();
    println!(
        "rwlock_writer_wait/r{READERS}_w1/{:<25} longest wait us (median of windows) {:.1} \
         (worst {:.1})   median wait us {:.2}   writes/window {}",
        L::NAME,
        sorted[sorted.len() / 2] as f64 / 1e3,
        sorted[sorted.len() - 1] as f64 / 1e3,
        med[med.len() / 2] as f64 / 1e3,
        per_window[per_window.len() / 2],
    );
    out.line(&format!(
        "{{\"group\": \"rwlock_writer_wait\", \"bench\": \"r{READERS}_w1\", \
         \"contender\": \"{}\", \"max_wait_ns\": {max_ns:?}, \
         \"median_wait_ns\": {median_ns:?}, \"writes\": {writes:?}}}",
        L::NAME,
    ));
}

fn main() {
    let mut suite = Suite::new("rust-rwlock.jsonl");
    // The writer-wait cells: SAMPLES windows over criterion's measurement
    // time (300 ms each, 50 ms quick), as in RwLockBench.java.
    let (windows, length) = (
        harness::SAMPLES,
        suite.measurement / harness::SAMPLES as u32,
    );

    let mut g = suite.single("rwlock_uncontended");
    each_rwlock!(uncontended(&mut g));
    g.finish();

    let (mut g, out) = suite.threaded("rwlock_contended");
    each_rwlock!(contended(&mut g, out));
    g.finish();

    let (g, out) = suite.threaded("rwlock_writer_wait");
    // Criterion's filter does not reach these cells; an id filter argument
    // that names another group skips them.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_none_or(|f| "rwlock_writer_wait".contains(&f) || f.contains("writer")) {
        each_rwlock!(writer_wait(out, windows, length));
    }
    g.finish();

    suite.finish();
}
