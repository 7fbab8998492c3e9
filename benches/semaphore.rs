//! `aqs::Semaphore` beside every peer, one body per workload.
//!
//! Every contender (aqs fair and nonfair, tokio, async-lock, futures-intrusive
//! fair and unfair, and a Mutex + Condvar semaphore on std and on parking_lot)
//! implements the small [`Contender`] trait, and each workload is one generic
//! function over it, so every contender runs exactly the same code. The
//! workloads follow `BASELINES.md`:
//!
//! 1. `uncontended`: acquire + release, try_acquire + release,
//!    acquire_many(4) + release on one thread; beside them the physical floor
//!    (a bare `fetch_sub` + `fetch_add` pair) and the critical section alone.
//! 2. `contended`: T in {2, 4, 16} threads over P in {1, 4} permits, each
//!    looping acquire, critical section, release. Persistent workers run for a
//!    time window; criterion gets time per pair (the report shows pairs/s).
//!    Where threads do not outnumber permits (so nobody waits), a bare atomic
//!    counter runs beside them as the contended floor (`SpinFloor`).
//! 3. `handoff`: two threads ping-pong over two 0-permit semaphores; time per
//!    round trip.
//! 4. `batch_wake`: 8 threads parked on a 0-permit semaphore, one
//!    `add_permits(8)`; time until the last of them has returned.
//! 5. fairness (outside criterion): 16 threads, 1 permit, fixed windows; the
//!    spread of per-thread acquisition counts next to throughput, printed and
//!    written to `$CARGO_TARGET_DIR/aqs-bench/fairness.json` (`target/` when
//!    the variable is unset).
//!
//! A machine watch (`semaphore/watch.rs`) times the critical section alone
//! and a spin round trip between two threads at the start, before every cell
//! that uses both CPUs, after each of their samples and at the end. A sample
//! after which the machine looks changed is measured again once it looks as
//! before (within `AQS_BENCH_PATIENCE` seconds of waiting for the run). The
//! looks go to `aqs-bench/rust-run.json`, and the report marks every cell
//! with a look of its own that is off the run's median, so a cell the host
//! disturbed can be told from a quiet one.
//!
//! `AQS_BENCH_QUICK=1` shortens every phase (the suite then takes a couple of
//! minutes). `scripts/bench-report.sh --run` runs this, the JDK anchor and the
//! report in one go, with `CARGO_TARGET_DIR` defaulting to `target/bench`.

use std::fs;
use std::hint::black_box;
use std::io::Write as _;
use std::mem;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};
use futures_executor::block_on;

#[path = "semaphore/watch.rs"]
mod watch;

// ---------------------------------------------------------------------------
// The contenders
// ---------------------------------------------------------------------------

/// What every semaphore under test offers. A permit returns on drop.
trait Contender: Send + Sync + 'static {
    /// The name in benchmark ids, the report and the JSON files.
    const NAME: &'static str;
    /// Whether the semaphore can take several permits in one call (the
    /// `acquire_many` bench is skipped otherwise).
    const MANY: bool = true;

    /// A held permit; dropping it gives the permits back.
    type Permit<'a>
    where
        Self: 'a;

    fn new(permits: usize) -> Self;
    /// Blocks until one permit is available.
    fn acquire(&self) -> Self::Permit<'_>;
    /// One permit if available now.
    fn try_acquire(&self) -> Option<Self::Permit<'_>>;
    /// Blocks until `n` permits are available (only called when `MANY`).
    fn acquire_many(&self, n: u32) -> Self::Permit<'_>;
    /// Adds `n` permits, waking waiters.
    fn add_permits(&self, n: usize);

    /// Acquires one permit and keeps it (the permit is never returned).
    fn take(&self) {
        mem::forget(self.acquire());
    }
}

struct AqsNonfair(aqs::Semaphore);
struct AqsFair(aqs::Semaphore);

macro_rules! aqs_contender {
    ($ty:ident, $name:literal, $ctor:path) => {
        impl Contender for $ty {
            const NAME: &'static str = $name;
            type Permit<'a> = aqs::SemaphorePermit<'a>;

            fn new(permits: usize) -> Self {
                $ty($ctor(permits))
            }
            #[inline]
            fn acquire(&self) -> Self::Permit<'_> {
                self.0.acquire().expect("never closed")
            }
            #[inline]
            fn try_acquire(&self) -> Option<Self::Permit<'_>> {
                self.0.try_acquire().ok()
            }
            #[inline]
            fn acquire_many(&self, n: u32) -> Self::Permit<'_> {
                self.0.acquire_many(n as usize).expect("never closed")
            }
            #[inline]
            fn add_permits(&self, n: usize) {
                self.0.add_permits(n)
            }
        }
    };
}

aqs_contender!(AqsNonfair, "aqs-nonfair", aqs::Semaphore::new);
aqs_contender!(AqsFair, "aqs-fair", aqs::Semaphore::new_fair);

/// tokio's semaphore (FIFO only), blocked on the way a sync caller would.
struct Tokio(tokio::sync::Semaphore);

impl Contender for Tokio {
    const NAME: &'static str = "tokio";
    type Permit<'a> = tokio::sync::SemaphorePermit<'a>;

    fn new(permits: usize) -> Self {
        Tokio(tokio::sync::Semaphore::new(permits))
    }
    #[inline]
    fn acquire(&self) -> Self::Permit<'_> {
        block_on(self.0.acquire()).expect("never closed")
    }
    #[inline]
    fn try_acquire(&self) -> Option<Self::Permit<'_>> {
        self.0.try_acquire().ok()
    }
    #[inline]
    fn acquire_many(&self, n: u32) -> Self::Permit<'_> {
        block_on(self.0.acquire_many(n)).expect("never closed")
    }
    #[inline]
    fn add_permits(&self, n: usize) {
        self.0.add_permits(n)
    }
}

/// async-lock's semaphore (not FIFO), through its own blocking acquire. It
/// has no multi-permit acquire.
struct AsyncLock(async_lock::Semaphore);

impl Contender for AsyncLock {
    const NAME: &'static str = "async-lock";
    const MANY: bool = false;
    type Permit<'a> = async_lock::SemaphoreGuard<'a>;

    fn new(permits: usize) -> Self {
        AsyncLock(async_lock::Semaphore::new(permits))
    }
    #[inline]
    fn acquire(&self) -> Self::Permit<'_> {
        self.0.acquire_blocking()
    }
    #[inline]
    fn try_acquire(&self) -> Option<Self::Permit<'_>> {
        self.0.try_acquire()
    }
    fn acquire_many(&self, _: u32) -> Self::Permit<'_> {
        unreachable!("async-lock has no acquire_many; MANY is false")
    }
    #[inline]
    fn add_permits(&self, n: usize) {
        self.0.add_permits(n)
    }
}

struct FiFair(futures_intrusive::sync::Semaphore);
struct FiUnfair(futures_intrusive::sync::Semaphore);

macro_rules! fi_contender {
    ($ty:ident, $name:literal, $fair:literal) => {
        impl Contender for $ty {
            const NAME: &'static str = $name;
            type Permit<'a> = futures_intrusive::sync::SemaphoreReleaser<'a>;

            fn new(permits: usize) -> Self {
                $ty(futures_intrusive::sync::Semaphore::new($fair, permits))
            }
            #[inline]
            fn acquire(&self) -> Self::Permit<'_> {
                block_on(self.0.acquire(1))
            }
            #[inline]
            fn try_acquire(&self) -> Option<Self::Permit<'_>> {
                self.0.try_acquire(1)
            }
            #[inline]
            fn acquire_many(&self, n: u32) -> Self::Permit<'_> {
                block_on(self.0.acquire(n as usize))
            }
            #[inline]
            fn add_permits(&self, n: usize) {
                self.0.release(n)
            }
        }
    };
}

fi_contender!(FiFair, "futures-intrusive-fair", true);
fi_contender!(FiUnfair, "futures-intrusive-unfair", false);

/// The contended floor: a bare counter (a load and a CAS to take a permit, a
/// `fetch_add` to return it), with no queue and no parking. Where no thread
/// ever waits, it does the least that any semaphore must do per pair (move
/// the counter's cache line to the acquirer and back), so beside the others
/// it shows how much of a contended pair is the semaphore and how much the
/// hardware. It is no floor where threads wait: it spins on a held permit
/// without backing off, and its loads take the line from the holder (at 2
/// threads over 1 permit, in run 22, 97.9 ns a pair against aqs nonfair's
/// 74.4). So the contended group runs it only where threads do not
/// outnumber permits (`floor_applies`). Never a peer: the report keeps it
/// out of the ratios.
struct SpinFloor(AtomicUsize);

/// A permit of [`SpinFloor`].
struct SpinFloorPermit<'a> {
    sem: &'a SpinFloor,
    n: usize,
}

impl Drop for SpinFloorPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.sem.0.fetch_add(self.n, Release);
    }
}

impl SpinFloor {
    #[inline]
    fn try_take(&self, n: usize) -> bool {
        let mut v = self.0.load(Relaxed);
        while v >= n {
            match self.0.compare_exchange_weak(v, v - n, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(actual) => v = actual,
            }
        }
        false
    }

    #[inline]
    fn spin_for(&self, n: usize) -> SpinFloorPermit<'_> {
        while !self.try_take(n) {
            std::hint::spin_loop();
        }
        SpinFloorPermit { sem: self, n }
    }
}

impl Contender for SpinFloor {
    const NAME: &'static str = "spin-floor";
    type Permit<'a> = SpinFloorPermit<'a>;

    fn new(permits: usize) -> Self {
        SpinFloor(AtomicUsize::new(permits))
    }
    #[inline]
    fn acquire(&self) -> Self::Permit<'_> {
        self.spin_for(1)
    }
    #[inline]
    fn try_acquire(&self) -> Option<Self::Permit<'_>> {
        self.try_take(1)
            .then_some(SpinFloorPermit { sem: self, n: 1 })
    }
    #[inline]
    fn acquire_many(&self, n: u32) -> Self::Permit<'_> {
        self.spin_for(n as usize)
    }
    #[inline]
    fn add_permits(&self, n: usize) {
        self.0.fetch_add(n, Release);
    }
}

/// The textbook blocking semaphore: a count under a mutex and a condition
/// variable. It counts waiters so that a release nobody waits for makes no
/// notify call. Not FIFO. (A release of one permit wakes one waiter; the
/// benches never mix request sizes among waiters, so that cannot strand a
/// waiter here.)
macro_rules! condvar_contender {
    (
        $ty:ident, $permit:ident, $name:literal, $mutex:ty, $condvar:ty,
        lock: |$m:ident| $lock:expr,
        wait: |$c:ident, $g:ident| $wait:expr $(,)?
    ) => {
        struct $ty {
            state: $mutex,
            cond: $condvar,
        }

        struct $permit<'a> {
            sem: &'a $ty,
            n: usize,
        }

        impl Drop for $permit<'_> {
            #[inline]
            fn drop(&mut self) {
                self.sem.add_permits(self.n);
            }
        }

        impl $ty {
            #[inline]
            fn lock(&self) -> impl std::ops::DerefMut<Target = (usize, usize)> + '_ {
                let $m = &self.state;
                $lock
            }

            #[inline]
            fn acquire_n(&self, n: usize) -> $permit<'_> {
                let $m = &self.state;
                let mut state = $lock;
                while state.0 < n {
                    state.1 += 1;
                    state = {
                        let ($c, $g) = (&self.cond, state);
                        $wait
                    };
                    state.1 -= 1;
                }
                state.0 -= n;
                $permit { sem: self, n }
            }
        }

        impl Contender for $ty {
            const NAME: &'static str = $name;
            type Permit<'a> = $permit<'a>;

            fn new(permits: usize) -> Self {
                $ty {
                    state: <$mutex>::new((permits, 0)),
                    cond: <$condvar>::new(),
                }
            }
            #[inline]
            fn acquire(&self) -> Self::Permit<'_> {
                self.acquire_n(1)
            }
            #[inline]
            fn try_acquire(&self) -> Option<Self::Permit<'_>> {
                let mut state = self.lock();
                if state.0 == 0 {
                    return None;
                }
                state.0 -= 1;
                Some($permit { sem: self, n: 1 })
            }
            #[inline]
            fn acquire_many(&self, n: u32) -> Self::Permit<'_> {
                self.acquire_n(n as usize)
            }
            #[inline]
            fn add_permits(&self, n: usize) {
                let mut state = self.lock();
                state.0 += n;
                let waiters = state.1;
                drop(state);
                if waiters > 0 {
                    if n == 1 {
                        self.cond.notify_one();
                    } else {
                        self.cond.notify_all();
                    }
                }
            }
        }
    };
}

condvar_contender!(
    StdCondvar,
    StdCondvarPermit,
    "std-condvar",
    std::sync::Mutex<(usize, usize)>,
    std::sync::Condvar,
    lock: |m| m.lock().unwrap_or_else(|e| e.into_inner()),
    wait: |c, g| c.wait(g).unwrap_or_else(|e| e.into_inner()),
);

condvar_contender!(
    PlCondvar,
    PlCondvarPermit,
    "parking_lot-condvar",
    parking_lot::Mutex<(usize, usize)>,
    parking_lot::Condvar,
    lock: |m| m.lock(),
    wait: |c, g| {
        let mut g = g;
        c.wait(&mut g);
        g
    },
);

/// Calls `$f::<Contender>($args)` for every contender, in a fixed order.
macro_rules! each_contender {
    ($f:ident($($arg:expr),*)) => {{
        $f::<AqsNonfair>($($arg),*);
        $f::<AqsFair>($($arg),*);
        $f::<Tokio>($($arg),*);
        $f::<AsyncLock>($($arg),*);
        $f::<FiFair>($($arg),*);
        $f::<FiUnfair>($($arg),*);
        $f::<StdCondvar>($($arg),*);
        $f::<PlCondvar>($($arg),*);
    }};
}

/// Keeps its content alone on 128-byte-aligned lines (two 64-byte lines, as
/// the adjacent-line prefetcher pairs them).
#[repr(align(128))]
struct Padded<T>(T);

impl<T> Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

/// Rounds of dependent xorshift-multiply in the critical section.
const CS_ROUNDS: u32 = 50;
/// Threads and permits of the contended group.
const CONTENDED: [(usize, usize); 6] = [(2, 1), (4, 1), (16, 1), (2, 4), (4, 4), (16, 4)];
/// Threads parked in the batch-wake group.
const BATCH: usize = 8;
/// Threads in the fairness pass (over 1 permit).
const FAIRNESS_THREADS: usize = 16;

#[derive(Clone, Copy)]
struct Mode {
    quick: bool,
    warm_up: Duration,
    measurement: Duration,
    /// Samples in the groups whose samples are long (contended, hand-off,
    /// batch wake): each is one window of `measurement / slow_samples`.
    slow_samples: usize,
    fairness_window: Duration,
    fairness_windows: usize,
    /// How long the machine watch may wait, over the whole run, for a
    /// changed machine to come back (`AQS_BENCH_PATIENCE` overrides it).
    patience: Duration,
}

impl Mode {
    fn from_env() -> Mode {
        let quick = std::env::var("AQS_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        if quick {
            Mode {
                quick,
                warm_up: Duration::from_millis(200),
                measurement: Duration::from_millis(500),
                slow_samples: 10,
                fairness_window: Duration::from_millis(100),
                fairness_windows: 3,
                patience: Duration::from_secs(120),
            }
        } else {
            Mode {
                quick,
                warm_up: Duration::from_secs(1),
                measurement: Duration::from_secs(3),
                slow_samples: 10,
                fairness_window: Duration::from_millis(300),
                fairness_windows: 4,
                patience: Duration::from_secs(900),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The critical section
// ---------------------------------------------------------------------------

/// Loads the protected word, runs `CS_ROUNDS` dependent xorshift-multiply
/// rounds on it and stores it back, so the section touches memory and cannot
/// overlap with the semaphore's atomics (register-only work leaked out of the
/// permit in earlier trials). The same rounds run in `SemaphoreBench.java`.
#[inline]
fn critical_section(word: &AtomicU64) {
    let mut x = word.load(Relaxed);
    for _ in 0..CS_ROUNDS {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    word.store(x, Relaxed);
}

/// A nonzero start for the protected word (zero is a fixed point).
const WORD_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

// ---------------------------------------------------------------------------
// 1. Uncontended
// ---------------------------------------------------------------------------

fn uncontended<S: Contender>(g: &mut BenchmarkGroup<'_, WallTime>) {
    let one = Padded(S::new(1));
    g.bench_function(BenchmarkId::new("acquire_release", S::NAME), |b| {
        b.iter(|| drop(black_box(one.acquire())))
    });
    g.bench_function(BenchmarkId::new("try_acquire_release", S::NAME), |b| {
        b.iter(|| drop(black_box(one.try_acquire().expect("a free permit"))))
    });
    if S::MANY {
        let four = Padded(S::new(4));
        g.bench_function(BenchmarkId::new("acquire_many4_release", S::NAME), |b| {
            b.iter(|| drop(black_box(four.acquire_many(4))))
        });
    }
}

fn floor(g: &mut BenchmarkGroup<'_, WallTime>) {
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
// 2. Contended throughput (and 5. fairness): persistent workers
// ---------------------------------------------------------------------------

struct PoolShared<S> {
    sem: Padded<S>,
    word: Padded<AtomicU64>,
    stop: Padded<AtomicBool>,
    exit: AtomicBool,
    start: Barrier,
    done: Barrier,
    /// Pairs completed by each worker so far (only its owner writes it).
    counts: Vec<Padded<AtomicU64>>,
}

/// `threads` workers looping acquire, critical section, release. Spawned once
/// per benchmark and paused at a barrier between windows, so no thread spawn
/// or wake-up falls inside a measurement: each window lets the workers run
/// for a ramp first, then counts the pairs completed between two snapshots of
/// the per-thread counters.
struct Pool<S: Contender> {
    shared: Arc<PoolShared<S>>,
    workers: Vec<JoinHandle<()>>,
    /// Running estimate of the time per pair, to size windows.
    ns_per_pair: Option<f64>,
}

struct Window {
    elapsed: Duration,
    counts: Vec<u64>,
}

impl Window {
    fn pairs(&self) -> u64 {
        self.counts.iter().sum()
    }
}

impl<S: Contender> Pool<S> {
    fn new(threads: usize, permits: usize) -> Self {
        let shared = Arc::new(PoolShared {
            sem: Padded(S::new(permits)),
            word: Padded(AtomicU64::new(WORD_SEED)),
            stop: Padded(AtomicBool::new(false)),
            exit: AtomicBool::new(false),
            start: Barrier::new(threads + 1),
            done: Barrier::new(threads + 1),
            counts: (0..threads).map(|_| Padded(AtomicU64::new(0))).collect(),
        });
        let workers = (0..threads)
            .map(|i| {
                let shared = Arc::clone(&shared);
                thread::spawn(move || loop {
                    shared.start.wait();
                    if shared.exit.load(Relaxed) {
                        return;
                    }
                    let count = &shared.counts[i];
                    let mut n = count.load(Relaxed);
                    while !shared.stop.load(Relaxed) {
                        let permit = shared.sem.acquire();
                        critical_section(&shared.word);
                        drop(permit);
                        n += 1;
                        count.store(n, Relaxed);
                    }
                    shared.done.wait();
                })
            })
            .collect();
        Pool {
            shared,
            workers,
            ns_per_pair: None,
        }
    }

    fn snapshot(&self) -> Vec<u64> {
        self.shared.counts.iter().map(|c| c.load(Relaxed)).collect()
    }

    /// Releases the workers, lets them run for a ramp (`length / 10`, 0.1 to
    /// 20 ms: every worker has been woken and scheduled by then), and counts
    /// the pairs of the next `length`.
    fn window(&mut self, length: Duration) -> Window {
        let shared = &*self.shared;
        shared.stop.store(false, Relaxed);
        shared.start.wait();
        thread::sleep((length / 10).clamp(Duration::from_micros(100), Duration::from_millis(20)));
        let before = self.snapshot();
        let t0 = Instant::now();
        thread::sleep(length);
        let after = self.snapshot();
        let elapsed = t0.elapsed();
        shared.stop.store(true, Relaxed);
        shared.done.wait();
        let counts: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        let window = Window { elapsed, counts };
        self.ns_per_pair = Some(elapsed.as_nanos() as f64 / window.pairs().max(1) as f64);
        window
    }

    /// criterion's `iter_custom`: one window about as long as `iters` pairs
    /// should take (at least 1 ms, at most 2 s), then the measured time per
    /// pair times `iters`.
    fn measure(&mut self, iters: u64) -> Duration {
        let want = self.ns_per_pair.map_or(0.0, |ns| ns * iters as f64);
        let length = Duration::from_nanos(want.clamp(1e6, 2e9) as u64);
        let w = self.window(length);
        let per_pair = w.elapsed.as_nanos() as f64 / w.pairs().max(1) as f64;
        Duration::from_nanos((per_pair * iters as f64).round() as u64)
    }
}

impl<S: Contender> Drop for Pool<S> {
    fn drop(&mut self) {
        self.shared.exit.store(true, Relaxed);
        self.shared.start.wait();
        for w in self.workers.drain(..) {
            w.join().expect("worker panicked");
        }
    }
}

/// Whether [`SpinFloor`] is a floor at this point: every thread can hold a
/// permit at once, so nobody ever waits.
fn floor_applies(threads: usize, permits: usize) -> bool {
    threads <= permits
}

fn contended<S: Contender>(g: &mut BenchmarkGroup<'_, WallTime>, threads: usize, permits: usize) {
    let mut pool: Option<Pool<S>> = None;
    let at = format!("contended/t{threads}_p{permits}/{}", S::NAME);
    g.bench_function(
        BenchmarkId::new(format!("t{threads}_p{permits}"), S::NAME),
        |b| {
            let pool = pool.get_or_insert_with(|| {
                watch::open(&at);
                Pool::new(threads, permits)
            });
            b.iter_custom(|iters| watch::checked(&at, || pool.measure(iters)))
        },
    );
}

// ---------------------------------------------------------------------------
// 3. Hand-off latency
// ---------------------------------------------------------------------------

/// A partner thread answering every ping with a pong; the bench thread times
/// round trips.
struct Partner<S: Contender> {
    ping: Arc<Padded<S>>,
    pong: Arc<Padded<S>>,
    exit: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Contender> Partner<S> {
    fn new() -> Self {
        let ping = Arc::new(Padded(S::new(0)));
        let pong = Arc::new(Padded(S::new(0)));
        let exit = Arc::new(AtomicBool::new(false));
        let thread = {
            let (ping, pong, exit) = (Arc::clone(&ping), Arc::clone(&pong), Arc::clone(&exit));
            thread::spawn(move || loop {
                ping.take();
                if exit.load(Relaxed) {
                    return;
                }
                pong.add_permits(1);
            })
        };
        Partner {
            ping,
            pong,
            exit,
            thread: Some(thread),
        }
    }

    fn round_trips(&self, iters: u64) -> Duration {
        let t0 = Instant::now();
        for _ in 0..iters {
            self.ping.add_permits(1);
            self.pong.take();
        }
        t0.elapsed()
    }
}

impl<S: Contender> Drop for Partner<S> {
    fn drop(&mut self) {
        self.exit.store(true, Relaxed);
        self.ping.add_permits(1);
        if let Some(t) = self.thread.take() {
            t.join().expect("partner panicked");
        }
    }
}

fn handoff<S: Contender>(g: &mut BenchmarkGroup<'_, WallTime>) {
    let mut partner: Option<Partner<S>> = None;
    let at = format!("handoff/round_trip/{}", S::NAME);
    g.bench_function(BenchmarkId::new("round_trip", S::NAME), |b| {
        let partner = partner.get_or_insert_with(|| {
            watch::open(&at);
            Partner::new()
        });
        b.iter_custom(|iters| watch::checked(&at, || partner.round_trips(iters)))
    });
}

// ---------------------------------------------------------------------------
// 4. Batch wake
// ---------------------------------------------------------------------------

struct BatchShared<S> {
    sem: Padded<S>,
    base: Instant,
    ready: Padded<AtomicUsize>,
    done: Padded<AtomicUsize>,
    /// Nanoseconds after `base` at which the last waiter returned.
    last: Padded<AtomicU64>,
    exit: AtomicBool,
    start: Barrier,
    /// The measuring thread, unparked by the last waiter to return.
    measurer: Thread,
}

/// `BATCH` persistent waiters; each round they park on the empty semaphore
/// and one `add_permits(BATCH)` releases them all.
struct Batch<S: Contender> {
    shared: Arc<BatchShared<S>>,
    workers: Vec<JoinHandle<()>>,
}

/// How long the waiters get to park after all have announced themselves.
const SETTLE: Duration = Duration::from_millis(1);

impl<S: Contender> Batch<S> {
    fn new() -> Self {
        let shared = Arc::new(BatchShared {
            sem: Padded(S::new(0)),
            base: Instant::now(),
            ready: Padded(AtomicUsize::new(0)),
            done: Padded(AtomicUsize::new(0)),
            last: Padded(AtomicU64::new(0)),
            exit: AtomicBool::new(false),
            start: Barrier::new(BATCH + 1),
            measurer: thread::current(),
        });
        let workers = (0..BATCH)
            .map(|_| {
                let shared = Arc::clone(&shared);
                thread::spawn(move || loop {
                    shared.start.wait();
                    if shared.exit.load(Relaxed) {
                        return;
                    }
                    shared.ready.fetch_add(1, SeqCst);
                    shared.sem.take();
                    let now = shared.base.elapsed().as_nanos() as u64;
                    shared.last.fetch_max(now, SeqCst);
                    if shared.done.fetch_add(1, SeqCst) + 1 == BATCH {
                        shared.measurer.unpark();
                    }
                })
            })
            .collect();
        Batch { shared, workers }
    }

    /// One round: the time from the release until the last waiter returned.
    fn round(&self) -> Duration {
        let s = &*self.shared;
        s.ready.store(0, SeqCst);
        s.done.store(0, SeqCst);
        s.last.store(0, SeqCst);
        s.start.wait();
        while s.ready.load(SeqCst) < BATCH {
            thread::sleep(Duration::from_micros(50));
        }
        thread::sleep(SETTLE);
        let t0 = s.base.elapsed().as_nanos() as u64;
        s.sem.add_permits(BATCH);
        // Sleep until the last waiter unparks us (bounded, and re-checked:
        // `park` may return early). Polling on a timer instead woke this
        // thread every 20 µs on one of the two CPUs the waiters need, which
        // added 4 to 9 µs to every contender's time.
        while s.done.load(SeqCst) < BATCH {
            thread::park_timeout(Duration::from_millis(5));
        }
        Duration::from_nanos(s.last.load(SeqCst).saturating_sub(t0))
    }
}

impl<S: Contender> Drop for Batch<S> {
    fn drop(&mut self) {
        self.shared.exit.store(true, Relaxed);
        self.shared.start.wait();
        for w in self.workers.drain(..) {
            w.join().expect("waiter panicked");
        }
    }
}

fn batch_wake<S: Contender>(g: &mut BenchmarkGroup<'_, WallTime>) {
    let mut batch: Option<Batch<S>> = None;
    let at = format!("batch_wake/wake8/{}", S::NAME);
    g.bench_function(BenchmarkId::new("wake8", S::NAME), |b| {
        let batch = batch.get_or_insert_with(|| {
            watch::open(&at);
            Batch::new()
        });
        b.iter_custom(|iters| watch::checked(&at, || (0..iters).map(|_| batch.round()).sum()))
    });
}

// ---------------------------------------------------------------------------
// 5. Fairness under oversubscription
// ---------------------------------------------------------------------------

struct Fairness {
    name: &'static str,
    pairs_per_sec: f64,
    min: u64,
    max: u64,
    mean: f64,
    /// Coefficient of variation of the per-thread counts.
    cv: f64,
}

fn fairness<S: Contender>(mode: Mode, out: &mut Vec<Fairness>) {
    let mut pool = Pool::<S>::new(FAIRNESS_THREADS, 1);
    pool.window(mode.fairness_window / 2); // warm-up
    let mut totals = [0u64; FAIRNESS_THREADS];
    let mut elapsed = Duration::ZERO;
    for _ in 0..mode.fairness_windows {
        let w = pool.window(mode.fairness_window);
        elapsed += w.elapsed;
        for (t, c) in totals.iter_mut().zip(&w.counts) {
            *t += c;
        }
    }
    drop(pool);
    let sum: u64 = totals.iter().sum();
    let mean = sum as f64 / totals.len() as f64;
    let var = totals
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / totals.len() as f64;
    let r = Fairness {
        name: S::NAME,
        pairs_per_sec: sum as f64 / elapsed.as_secs_f64(),
        min: *totals.iter().min().expect("threads"),
        max: *totals.iter().max().expect("threads"),
        mean,
        cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
    };
    let spread = if r.min > 0 {
        format!("{:.2}", r.max as f64 / r.min as f64)
    } else {
        "inf".to_string()
    };
    println!(
        "fairness/t{FAIRNESS_THREADS}_p1/{:<26} {:>8.3} M pairs/s   per-thread min {:>8} max {:>8}   max/min {:>6}   cv {:.2}",
        r.name,
        r.pairs_per_sec / 1e6,
        r.min,
        r.max,
        spread,
        r.cv
    );
    out.push(r);
}

// ---------------------------------------------------------------------------
// Run metadata and JSON output
// ---------------------------------------------------------------------------

fn out_dir() -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target.join("aqs-bench")
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".to_string()
    }
}

fn write_file(name: &str, text: &str) {
    let dir = out_dir();
    let path = dir.join(name);
    let result =
        fs::create_dir_all(&dir).and_then(|()| fs::File::create(&path)?.write_all(text.as_bytes()));
    match result {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

fn write_fairness(mode: Mode, results: &[Fairness]) {
    let rows: Vec<String> = results
        .iter()
        .map(|r| {
            let spread = if r.min > 0 { r.max as f64 / r.min as f64 } else { f64::INFINITY };
            format!(
                "    {{\"contender\": {}, \"threads\": {FAIRNESS_THREADS}, \"permits\": 1, \"pairs_per_sec\": {}, \
                 \"min\": {}, \"max\": {}, \"mean\": {}, \"max_over_min\": {}, \"cv\": {}}}",
                json_str(r.name),
                json_num(r.pairs_per_sec),
                r.min,
                r.max,
                json_num(r.mean),
                json_num(spread),
                json_num(r.cv)
            )
        })
        .collect();
    let text = format!(
        "{{\n  \"quick\": {},\n  \"window_ms\": {},\n  \"windows\": {},\n  \"results\": [\n{}\n  ]\n}}\n",
        mode.quick,
        mode.fairness_window.as_millis(),
        mode.fairness_windows,
        rows.join(",\n")
    );
    write_file("fairness.json", &text);
}

fn write_run_info(mode: Mode, started: u64, load_start: &str) {
    let (sentinels, watch) = watch::json();
    let ended = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let args: Vec<String> = std::env::args().skip(1).map(|a| json_str(&a)).collect();
    let text = format!(
        "{{\n  \"quick\": {},\n  \"started_unix\": {started},\n  \"ended_unix\": {ended},\n  \"loadavg_start\": {},\n  \
         \"loadavg_end\": {},\n  \"args\": [{}],\n  \"cs_rounds\": {CS_ROUNDS},\n  \"watch\": {watch},\n  \
         \"sentinels\": {sentinels}\n}}\n",
        mode.quick,
        json_str(load_start),
        json_str(&loadavg()),
        args.join(", "),
    );
    write_file("rust-run.json", &text);
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

/// Whether this run measures: under `cargo bench` (criterion gets
/// `--bench`), not `--list`, `--test` or `cargo test --benches`.
fn measuring() -> bool {
    let mut args = std::env::args().skip(1);
    let (mut bench, mut other) = (false, false);
    for a in &mut args {
        bench |= a == "--bench";
        other |= a == "--list" || a == "--test" || a == "--profile-time";
    }
    bench && !other
}

/// Whether the fairness pass should run: only when [`measuring`], and only if
/// a name filter, when given, is part of "fairness" or names it.
fn fairness_wanted() -> bool {
    if !measuring() {
        return false;
    }
    // Criterion options that take a value; their values are not filters.
    const WITH_VALUE: [&str; 14] = [
        "--save-baseline",
        "--baseline",
        "--baseline-lenient",
        "--load-baseline",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--color",
        "--format",
        "--output-format",
    ];
    let mut filters = Vec::new();
    let mut skip = false;
    for a in std::env::args().skip(1) {
        if skip {
            skip = false;
        } else if WITH_VALUE.contains(&a.as_str()) {
            skip = true;
        } else if !a.starts_with('-') {
            filters.push(a);
        }
    }
    filters.is_empty()
        || filters
            .iter()
            .any(|f| "fairness".contains(f.as_str()) || f.contains("fairness"))
}

fn main() {
    let mode = Mode::from_env();
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let load_start = loadavg();
    println!(
        "aqs benches: {} mode, load average {load_start}, output {}",
        if mode.quick {
            "quick (AQS_BENCH_QUICK)"
        } else {
            "full"
        },
        out_dir().display()
    );

    let mut c = Criterion::default()
        .warm_up_time(mode.warm_up)
        .measurement_time(mode.measurement)
        .nresamples(20_000)
        .configure_from_args();

    watch::configure(mode.patience);
    watch::open("start");
    {
        let mut g = c.benchmark_group("uncontended");
        if mode.quick {
            g.sample_size(30);
        }
        floor(&mut g);
        each_contender!(uncontended(&mut g));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("contended");
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(mode.slow_samples);
        for (threads, permits) in CONTENDED {
            each_contender!(contended(&mut g, threads, permits));
            if floor_applies(threads, permits) {
                contended::<SpinFloor>(&mut g, threads, permits);
            }
        }
        g.finish();
    }
    {
        let mut g = c.benchmark_group("handoff");
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(mode.slow_samples);
        each_contender!(handoff(&mut g));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("batch_wake");
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(mode.slow_samples);
        each_contender!(batch_wake(&mut g));
        g.finish();
    }

    if fairness_wanted() {
        let mut results = Vec::new();
        each_contender!(fairness(mode, &mut results));
        write_fairness(mode, &results);
    }
    watch::note("end");
    c.final_summary();
    if measuring() {
        write_run_info(mode, started, &load_start);
    }
}
