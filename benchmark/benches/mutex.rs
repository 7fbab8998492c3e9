//! Every mutex and condvar workload for every contender of `aqs_benchmark`,
//! through criterion.
//!
//! The workloads are described in `benchmark/src/lib.rs`. As in
//! `benches/semaphore.rs`, worker threads are spawned once per cell, and the
//! thread-pool cells (`mutex_contended`, `mutex_unlock_fair`) and the
//! condvar ping-pong print their median operations/s, CPU time per
//! operation and fairness spread, and write them with the per-thread counts
//! of every window to `TARGET/aqs-bench/rust-mutex.jsonl` for
//! `bench_report.py`.

use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};

use aqs_benchmark::harness::{
    self, mix, Group, Out, Padded, Placement, Suite, CS_ROUNDS, WORD_SEED,
};
use aqs_benchmark::{each_condvar, each_mutex, CondvarContender, MutexContender, RawName};
use criterion::BenchmarkId;
use parking_lot::lock_api;

/// Threads of the contended group.
const THREADS: [usize; 3] = [2, 4, 16];
/// Rounds of the contended group's critical sections: the semaphore
/// suite's, and one ten times longer.
const ROUNDS: [u32; 2] = [CS_ROUNDS, 10 * CS_ROUNDS];
/// Threads waiting for one `notify_all`.
const WAITERS: usize = 8;

/// The critical section: `rounds` rounds of [`mix`] on the locked word.
#[inline]
fn critical_section<M: MutexContender>(m: &M, rounds: u32) {
    let mut word = m.lock();
    *word = mix(*word, rounds);
}

// ---------------------------------------------------------------------------
// Uncontended
// ---------------------------------------------------------------------------

fn uncontended<M: MutexContender>(g: &mut Group<'_>) {
    let m = Padded(M::new(WORD_SEED));
    g.bench_function(BenchmarkId::new("lock_unlock", M::NAME), |b| {
        b.iter(|| drop(black_box(m.lock())))
    });
}

/// What no mutex beats uncontended: a compare-and-swap that takes a word and
/// a store that gives it back.
fn floor(g: &mut Group<'_>) {
    let word = Padded(AtomicU32::new(0));
    g.bench_function(BenchmarkId::new("cas_store", "floor"), |b| {
        b.iter(|| {
            let _ = black_box(word.compare_exchange(0, 1, Acquire, Relaxed));
            word.store(0, Release);
        })
    });
}

// ---------------------------------------------------------------------------
// Pools (contended, unlock_fair) and the condvar ping-pong
// ---------------------------------------------------------------------------

fn contended<M: MutexContender>(g: &mut Group<'_>, out: &mut Out) {
    for threads in THREADS {
        for rounds in ROUNDS {
            let m = Padded(M::new(WORD_SEED));
            let bench = format!("t{threads}_cs{rounds}");
            let op = |_| critical_section(&*m, rounds);
            harness::pooled(g, ("mutex_contended", &bench), M::NAME, threads, op, out);
        }
    }
}

/// Two threads over a `lock_api` mutex, every unlock `unlock_fair`: the lock
/// passes to the other thread whenever it waits.
fn unlock_fair<R>(g: &mut Group<'_>, out: &mut Out)
where
    R: lock_api::RawMutexFair + RawName + Send + Sync + 'static,
{
    let m = Padded(lock_api::Mutex::<R, u64>::new(WORD_SEED));
    let op = |_| {
        let mut word = m.lock();
        *word = mix(*word, CS_ROUNDS);
        lock_api::MutexGuard::unlock_fair(word);
    };
    let bench = format!("t2_cs{CS_ROUNDS}");
    harness::pooled(g, ("mutex_unlock_fair", &bench), R::NAME, 2, op, out);
}

/// Two threads pass a turn through one mutex and two condvars: a pass by
/// thread `i` waits on `cvs[i]` until the count's parity is `i`, counts one
/// and notifies the other's. A round is this thread's pass, which waits for
/// the partner's: one round trip. To stop, the partner is woken with `exit`
/// set, which it sees before it would wait again.
fn ping_pong<M: MutexContender, C: CondvarContender<M>>(
    g: &mut Group<'_>,
    out: &mut Out,
    placement: Placement,
) {
    let (turn, cvs) = (Padded(M::new(0)), [Padded(C::new()), Padded(C::new())]);
    let exit = AtomicBool::new(false);
    let pass = |i: usize| {
        let mut count = turn.lock();
        while *count % 2 != i as u64 {
            if exit.load(Relaxed) {
                return false;
            }
            count = C::wait(&cvs[i], count);
        }
        *count += 1;
        C::notify_one(&cvs[1 - i]);
        true
    };
    // Under the lock, so that the partner either sees the store or is
    // waiting for this notify.
    let stop = || {
        exit.store(true, Relaxed);
        let _count = turn.lock();
        C::notify_one(&cvs[1]);
    };
    let round = || {
        pass(0);
    };
    let id = ("mutex_condvar", "ping_pong");
    harness::ping_pong(g, id, M::NAME, placement, || pass(1), round, stop, out);
}

// ---------------------------------------------------------------------------
// notify_all
// ---------------------------------------------------------------------------

/// `WAITERS` threads wait on one condvar for the generation to change; one
/// `notify_all` under the lock releases them: time until the last has
/// returned from `wait` and unlocked.
fn notify_all<M: MutexContender, C: CondvarContender<M>>(g: &mut Group<'_>) {
    let (generation, cv) = (Padded(M::new(0)), Padded(C::new()));
    let park = |ready: &AtomicUsize| {
        let mut now = generation.lock();
        let seen = *now;
        ready.fetch_add(1, SeqCst);
        while *now == seen {
            now = C::wait(&cv, now);
        }
    };
    let wake = || {
        let mut now = generation.lock();
        *now += 1;
        C::notify_all(&cv);
    };
    let id = BenchmarkId::new(format!("notify_all{WAITERS}"), M::NAME);
    harness::wake_all(g, id, WAITERS, park, wake);
}

fn main() {
    let mut suite = Suite::new("rust-mutex.jsonl");

    let mut g = suite.single("mutex_uncontended");
    floor(&mut g);
    each_mutex!(uncontended(&mut g));
    g.finish();

    let (mut g, out) = suite.threaded("mutex_contended");
    each_mutex!(contended(&mut g, out));
    g.finish();

    let (mut g, out) = suite.threaded("mutex_unlock_fair");
    unlock_fair::<aqs::RawMutex>(&mut g, out);
    unlock_fair::<parking_lot::RawMutex>(&mut g, out);
    g.finish();

    let (mut g, out) = suite.threaded("mutex_condvar");
    for placement in [Placement::Free, Placement::OneCpu, Placement::TwoCpus] {
        each_condvar!(ping_pong(&mut g, out, placement));
    }
    each_condvar!(notify_all(&mut g));
    g.finish();

    suite.finish();
}
