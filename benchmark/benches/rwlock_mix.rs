//! The read-write lock workloads of the independent harness (issue 35), as
//! a user would write them, side by side in one run: aqs's `RwLock` and
//! `FairRwLock`, parking_lot's `RwLock` and std's.
//!
//! ```text
//! cargo bench -p aqs-benchmark --bench rwlock_mix            # 3 s a cell
//! AQS_BENCH_QUICK=1 cargo bench -p aqs-benchmark --bench rwlock_mix
//! ```
//!
//! * **mix**: T threads (4 and 16) each loop one operation, a write with
//!   probability 10 % (or 1 %), else a read, each around the section:
//!   M ops/s, process CPU time per operation, and the process's voluntary
//!   context switches (threads going to sleep) per thousand operations.
//! * **writer wait**: 4 threads loop read-lock, section, unlock with no
//!   pause; one writer sleeps 100 µs, then write-locks, runs the section,
//!   unlocks, and records how long the write-lock call took: the median,
//!   99th percentile and longest of every wait in the window, then the
//!   75th percentile and the share of waits under 2 µs (writes that took
//!   the lock without sleeping).
//! * **long reads**: as writer wait, but each read holds the lock for
//!   3,000 sections (about 200 µs), so the writer finds readers inside that
//!   outlast any spin and sleeps: its wait, and how many times the writer
//!   thread went to sleep inside one write-lock call (a wake-up that finds
//!   readers still inside, and so a second sleep, shows as more than one).
//!
//! The section is 20 dependent xorshift-multiply rounds on a word of the
//! worker's own (its own cache line), about 68 ns on the harness's host;
//! every lock sits on its own cache line. Unlike `benches/rwlock.rs` this
//! is not criterion: each cell is one window, and the cells run one after
//! another in one process.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use aqs_benchmark::harness::Padded;

/// One operation's work, on the worker's own word.
#[inline(never)]
fn section(x: &mut u64) {
    for _ in 0..20 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
}

/// A read-write lock under test: a read or a write around the section.
trait Contender: Sync {
    const NAME: &'static str;
    fn new() -> Self;
    fn read(&self, x: &mut u64);
    fn write(&self, x: &mut u64);
    /// A read around 3,000 sections.
    fn read_long(&self, x: &mut u64);
}

macro_rules! contender {
    ($ty:ty, $name:expr, $read:ident, $write:ident $(, $unwrap:ident)?) => {
        impl Contender for $ty {
            const NAME: &'static str = $name;
            fn new() -> Self {
                <$ty>::new(0)
            }
            fn read(&self, x: &mut u64) {
                let _g = self.$read()$(.$unwrap())?;
                section(x);
            }
            fn write(&self, x: &mut u64) {
                let _g = self.$write()$(.$unwrap())?;
                section(x);
            }
            fn read_long(&self, x: &mut u64) {
                let _g = self.$read()$(.$unwrap())?;
                for _ in 0..3000 {
                    section(x);
                }
            }
        }
    };
}
contender!(aqs::RwLock<u64>, "aqs RwLock", read, write);
contender!(aqs::FairRwLock<u64>, "aqs FairRwLock", read, write);
contender!(parking_lot::RwLock<u64>, "parking_lot RwLock", read, write);
contender!(std::sync::RwLock<u64>, "std RwLock", read, write, unwrap);

/// The process's voluntary context switches so far, all threads: each is a
/// thread going to sleep (a park, a sleep, a blocking system call).
fn sleeps() -> u64 {
    // SAFETY: an all-zero `rusage` is valid, and `getrusage` only writes it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage to write to.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_nvcsw as u64
}

/// The process's CPU time so far, all threads.
fn cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn mix<L: Contender>(threads: usize, write_percent: u64, window: Duration) {
    let lock = Padded(L::new());
    let stop = Padded(AtomicBool::new(false));
    let (ops, cpu) = thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let (lock, stop) = (&lock, &stop);
                s.spawn(move || {
                    let mut rng = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    let mut own = Padded(rng);
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        if rng % 100 < write_percent {
                            lock.write(&mut own.0);
                        } else {
                            lock.read(&mut own.0);
                        }
                        n += 1;
                    }
                    black_box(own.0);
                    n
                })
            })
            .collect();
        let (cpu0, slept0) = (cpu_time(), sleeps());
        thread::sleep(window);
        stop.store(true, Relaxed);
        let (cpu, slept) = (cpu_time() - cpu0, sleeps() - slept0);
        (
            workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>(),
            (cpu, slept),
        )
    });
    let (cpu, slept) = cpu;
    println!(
        "mix/t{threads}_w{write_percent}/{:<20} {:7.2} M ops/s   CPU {:.3} us/op   sleeps/1k ops {:.2}",
        L::NAME,
        ops as f64 / window.as_secs_f64() / 1e6,
        cpu.as_secs_f64() * 1e6 / ops as f64,
        slept as f64 * 1e3 / ops as f64,
    );
}

/// 4 readers loop (short or long reads) while one writer sleeps 100 µs,
/// then write-locks: every write-lock call's wait, sorted, and (long reads
/// only) how many times the writer's thread went to sleep inside them.
fn writer_behind_readers<L: Contender>(window: Duration, long: bool) -> (Vec<Duration>, u64) {
    let lock = Padded(L::new());
    let stop = Padded(AtomicBool::new(false));
    let mut waits: Vec<Duration> = Vec::new();
    let mut slept = 0u64;
    thread::scope(|s| {
        for i in 0..4u64 {
            let (lock, stop) = (&lock, &stop);
            s.spawn(move || {
                let mut own = Padded(i + 1);
                while !stop.load(Relaxed) {
                    if long {
                        lock.read_long(&mut own.0);
                    } else {
                        lock.read(&mut own.0);
                    }
                }
                black_box(own.0);
            });
        }
        let mut own = Padded(7u64);
        let t0 = Instant::now();
        while t0.elapsed() < window {
            thread::sleep(Duration::from_micros(100));
            // The system calls that count sleeps stay outside the timing,
            // and out of the short-read cell, which is the harness's.
            let sleeps = || if long { thread_sleeps() } else { 0 };
            let before = sleeps();
            let asked = Instant::now();
            lock.write(&mut own.0);
            waits.push(asked.elapsed());
            slept += sleeps() - before;
        }
        stop.store(true, Relaxed);
    });
    waits.sort_unstable();
    (waits, slept)
}

/// The `q` quantile of sorted `waits`, in µs.
fn quantile_us(waits: &[Duration], q: f64) -> f64 {
    waits[((waits.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6
}

/// Waits under this long are the fast kind: the writer took the lock
/// without sleeping. A process's median lands in the fast or the slow kind
/// by their share, so the line prints the share beside the q75.
const FAST_WAIT: Duration = Duration::from_micros(2);

fn writer_wait<L: Contender>(window: Duration) {
    let (waits, _) = writer_behind_readers::<L>(window, false);
    let fast = waits.partition_point(|&wait| wait < FAST_WAIT);
    println!(
        "writer_wait/r4/{:<20} median {:9.2} us   p99 {:9.1} us   longest {:9.1} us   writes {}   q75 {:.2} us   under {} us {:.0} %",
        L::NAME,
        quantile_us(&waits, 0.5),
        quantile_us(&waits, 0.99),
        quantile_us(&waits, 1.0),
        waits.len(),
        quantile_us(&waits, 0.75),
        FAST_WAIT.as_micros(),
        100.0 * fast as f64 / waits.len() as f64,
    );
}

fn long_reads<L: Contender>(window: Duration) {
    let (waits, slept) = writer_behind_readers::<L>(window, true);
    println!(
        "long_reads/r4/{:<20} median {:9.2} us   p99 {:9.1} us   writer sleeps/write {:.2}   writes {}",
        L::NAME,
        quantile_us(&waits, 0.5),
        quantile_us(&waits, 0.99),
        slept as f64 / waits.len() as f64,
        waits.len(),
    );
}

/// The calling thread's voluntary context switches so far.
fn thread_sleeps() -> u64 {
    // SAFETY: an all-zero `rusage` is valid, and `getrusage` only writes it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage to write to.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    u.ru_nvcsw as u64
}

fn main() {
    let quick = std::env::var_os("AQS_BENCH_QUICK").is_some();
    let window = Duration::from_millis(if quick { 500 } else { 3000 });
    // `cargo bench` passes `--bench`; a plain word filters the cells.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |cell: &str| filter.as_deref().is_none_or(|f| cell.contains(f));
    macro_rules! each {
        ($f:ident($($arg:expr),*)) => {
            $f::<aqs::RwLock<u64>>($($arg),*);
            $f::<aqs::FairRwLock<u64>>($($arg),*);
            $f::<parking_lot::RwLock<u64>>($($arg),*);
            $f::<std::sync::RwLock<u64>>($($arg),*);
        };
    }
    for threads in [4, 16] {
        for write_percent in [10, 1] {
            if wanted(&format!("mix/t{threads}_w{write_percent}")) {
                each!(mix(threads, write_percent, window));
            }
        }
    }
    if wanted("writer_wait") {
        each!(writer_wait(window));
    }
    if wanted("long_reads") {
        each!(long_reads(window));
    }
}
