//! Every workload for every contender of `aqs_benchmark`, through criterion.
//!
//! The workloads are described in `benchmark/src/lib.rs`. Worker threads are
//! spawned once per cell and wait at a barrier between measurements, so no
//! spawn falls inside one. The cells that run a thread pool (`contended`,
//! `io`) also print, per contender, the median pairs/s and process CPU time
//! per pair over criterion's samples, and write them with the per-thread
//! counts to `TARGET/aqs-bench/rust.jsonl` for `bench_report.py` (TARGET is
//! `$CARGO_TARGET_DIR`, by default `target/`).

use std::fmt::Write as _;
use std::fs;
use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aqs_benchmark::{each_contender, Contender, Padded};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};

/// Threads and permits of the contended group.
const CONTENDED: [(usize, usize); 6] = [(2, 1), (4, 1), (16, 1), (2, 4), (4, 4), (16, 4)];
/// The I/O workload: (name, threads, permits, time each permit is held).
const IO: [(&str, usize, usize, Duration); 2] = [
    ("t16_p4_100us", 16, 4, Duration::from_micros(100)),
    ("t64_p8_1ms", 64, 8, Duration::from_millis(1)),
];
/// Samples (one window each) per cell in the groups that run threads.
const SAMPLES: usize = 10;
/// Threads parked in a batch wake.
const BATCH: usize = 8;
/// Rounds of dependent xorshift-multiply in the critical section.
const CS_ROUNDS: u32 = 50;

type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// The contended workload's critical section: loads the protected word, runs
/// [`CS_ROUNDS`] dependent xorshift-multiply rounds on it and stores it back.
/// It touches memory so that it cannot overlap the semaphore's atomics
/// (register-only work leaks out of the permit). `SemaphoreBench.java` runs
/// the same rounds.
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

/// CPU time used so far by all threads of this process.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the whole call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
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

/// Workers looping acquire, work, release over one semaphore; the work is the
/// critical section, or a sleep of `hold` when that is set.
struct Pool<S> {
    sem: Padded<S>,
    hold: Option<Duration>,
    word: Padded<AtomicU64>,
    stop: Padded<AtomicBool>,
    exit: AtomicBool,
    start: Barrier,
    done: Barrier,
    /// Pairs completed by each worker so far; only its owner writes it.
    counts: Vec<Padded<AtomicU64>>,
}

/// One measurement window: wall and process CPU time, and each worker's pairs.
struct Window {
    wall: Duration,
    cpu: Duration,
    counts: Vec<u64>,
}

impl Window {
    fn per_pair(&self, t: Duration) -> f64 {
        t.as_nanos() as f64 / self.counts.iter().sum::<u64>().max(1) as f64
    }
}

impl<S: Contender> Pool<S> {
    fn work(&self, i: usize) {
        loop {
            self.start.wait();
            if self.exit.load(Relaxed) {
                return;
            }
            let mut n = self.counts[i].load(Relaxed);
            while !self.stop.load(Relaxed) {
                let permit = self.sem.acquire();
                match self.hold {
                    None => critical_section(&self.word),
                    Some(d) => thread::sleep(d),
                }
                drop(permit);
                n += 1;
                self.counts[i].store(n, Relaxed);
            }
            self.done.wait();
        }
    }

    fn snapshot(&self) -> Vec<u64> {
        self.counts.iter().map(|c| c.load(Relaxed)).collect()
    }

    /// Releases the workers, lets them run for a ramp (`length / 10`, 1 to
    /// 20 ms: every worker has been scheduled by then), measures the next
    /// `length`, and stops them. This thread sleeps meanwhile, so the
    /// process CPU time is the workers'.
    fn window(&self, length: Duration) -> Window {
        self.stop.store(false, Relaxed);
        self.start.wait();
        thread::sleep((length / 10).clamp(Duration::from_millis(1), Duration::from_millis(20)));
        let (before, t0, cpu0) = (self.snapshot(), Instant::now(), process_cpu_time());
        thread::sleep(length);
        let (after, wall, cpu) = (self.snapshot(), t0.elapsed(), process_cpu_time() - cpu0);
        self.stop.store(true, Relaxed);
        self.done.wait();
        let counts = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        Window { wall, cpu, counts }
    }
}

/// A pool cell: `threads` workers over `permits`. Each criterion call is one
/// window about as long as `iters` pairs took so far (10 ms to 2 s: shorter
/// windows hold too few pairs at 1 ms a permit); the windows of criterion's
/// samples (its last `SAMPLES` calls) go to `out`.
fn pooled<S: Contender>(
    g: &mut Group<'_>,
    id: (&str, String),
    (threads, permits): (usize, usize),
    hold: Option<Duration>,
    out: &mut Out,
) {
    let pool = Pool {
        sem: Padded(S::new(permits)),
        hold,
        word: Padded(AtomicU64::new(WORD_SEED)),
        stop: Padded(AtomicBool::new(false)),
        exit: AtomicBool::new(false),
        start: Barrier::new(threads + 1),
        done: Barrier::new(threads + 1),
        counts: (0..threads).map(|_| Padded(AtomicU64::new(0))).collect(),
    };
    let mut windows: Vec<Window> = Vec::new();
    thread::scope(|scope| {
        for i in 0..threads {
            let pool = &pool;
            scope.spawn(move || pool.work(i));
        }
        g.bench_function(BenchmarkId::new(&id.1, S::NAME), |b| {
            b.iter_custom(|iters| {
                let (wall, pairs) = windows.iter().fold((Duration::ZERO, 0), |(t, n), w| {
                    (t + w.wall, n + w.counts.iter().sum::<u64>())
                });
                let want = wall.as_nanos() as f64 / pairs.max(1) as f64 * iters as f64;
                let w = pool.window(Duration::from_nanos(want.clamp(1e7, 2e9) as u64));
                let per_pair = w.per_pair(w.wall);
                windows.push(w);
                Duration::from_nanos((per_pair * iters as f64).round() as u64)
            })
        });
        pool.exit.store(true, Relaxed);
        pool.start.wait();
    });
    let samples = &windows[windows.len().saturating_sub(SAMPLES)..];
    if !samples.is_empty() {
        out.record(id, S::NAME, samples);
    }
}

fn contended<S: Contender>(g: &mut Group<'_>, out: &mut Out) {
    for tp in CONTENDED {
        pooled::<S>(
            g,
            ("contended", format!("t{}_p{}", tp.0, tp.1)),
            tp,
            None,
            out,
        );
    }
}

fn io<S: Contender>(g: &mut Group<'_>, out: &mut Out) {
    for (name, t, p, hold) in IO {
        pooled::<S>(g, ("io", name.to_string()), (t, p), Some(hold), out);
    }
}

// ---------------------------------------------------------------------------
// Hand-off and batch wake
// ---------------------------------------------------------------------------

/// Two threads ping-pong over two 0-permit semaphores: time per round trip.
fn handoff<S: Contender>(g: &mut Group<'_>) {
    let (ping, pong, exit) = (Padded(S::new(0)), Padded(S::new(0)), AtomicBool::new(false));
    thread::scope(|scope| {
        scope.spawn(|| loop {
            ping.take();
            if exit.load(Relaxed) {
                return;
            }
            pong.add_permits(1);
        });
        g.bench_function(BenchmarkId::new("round_trip", S::NAME), |b| {
            b.iter_custom(|iters| {
                let t0 = Instant::now();
                for _ in 0..iters {
                    ping.add_permits(1);
                    pong.take();
                }
                t0.elapsed()
            })
        });
        exit.store(true, Relaxed);
        ping.add_permits(1);
    });
}

/// `BATCH` threads park on a 0-permit semaphore and one `add_permits(BATCH)`
/// releases them all: time until the last has returned from acquire.
fn batch_wake<S: Contender>(g: &mut Group<'_>) {
    let sem = Padded(S::new(0));
    let (ready, done) = (Padded(AtomicUsize::new(0)), Padded(AtomicUsize::new(0)));
    // Nanoseconds after `base` at which the last waiter returned.
    let (base, last) = (Instant::now(), Padded(AtomicU64::new(0)));
    let (start, exit, measurer) = (
        Barrier::new(BATCH + 1),
        AtomicBool::new(false),
        thread::current(),
    );
    let round = || {
        ready.store(0, SeqCst);
        done.store(0, SeqCst);
        last.store(0, SeqCst);
        start.wait();
        while ready.load(SeqCst) < BATCH {
            thread::sleep(Duration::from_micros(50));
        }
        thread::sleep(Duration::from_millis(1)); // let them park
        let t0 = base.elapsed().as_nanos() as u64;
        sem.add_permits(BATCH);
        // Sleep until the last waiter unparks this thread: polling on a timer
        // would take CPU time the waiters need. `park` may return early.
        while done.load(SeqCst) < BATCH {
            thread::park_timeout(Duration::from_millis(5));
        }
        Duration::from_nanos(last.load(SeqCst).saturating_sub(t0))
    };
    thread::scope(|scope| {
        for _ in 0..BATCH {
            scope.spawn(|| loop {
                start.wait();
                if exit.load(Relaxed) {
                    return;
                }
                ready.fetch_add(1, SeqCst);
                sem.take();
                last.fetch_max(base.elapsed().as_nanos() as u64, SeqCst);
                if done.fetch_add(1, SeqCst) + 1 == BATCH {
                    measurer.unpark();
                }
            });
        }
        g.bench_function(BenchmarkId::new("wake8", S::NAME), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| round()).sum())
        });
        exit.store(true, Relaxed);
        start.wait();
    });
}

// ---------------------------------------------------------------------------
// Output and main
// ---------------------------------------------------------------------------

/// The JSON lines of the pool cells.
struct Out(String);

impl Out {
    /// Prints a pool cell's medians and ranges, and keeps its JSON line: wall
    /// and CPU ns per pair of each window, and each thread's pairs over all.
    fn record(&mut self, (group, bench): (&str, String), name: &str, windows: &[Window]) {
        let wall: Vec<f64> = windows.iter().map(|w| w.per_pair(w.wall)).collect();
        let cpu: Vec<f64> = windows.iter().map(|w| w.per_pair(w.cpu)).collect();
        let counts: Vec<u64> = (0..windows[0].counts.len())
            .map(|i| windows.iter().map(|w| w.counts[i]).sum())
            .collect();
        let show = |xs: &[f64], f: fn(f64) -> f64| {
            let mut s: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
            s.sort_by(f64::total_cmp);
            format!("{:.4} ({:.4}..{:.4})", s[s.len() / 2], s[0], s[s.len() - 1])
        };
        println!(
            "{group}/{bench}/{name:<25} k pairs/s {}   CPU us/pair {}   per-thread pairs {}..{}",
            show(&wall, |ns| 1e6 / ns),
            show(&cpu, |ns| ns / 1e3),
            counts.iter().min().expect("threads"),
            counts.iter().max().expect("threads"),
        );
        let _ = writeln!(
            self.0,
            "{{\"group\": \"{group}\", \"bench\": \"{bench}\", \"contender\": \"{name}\", \
             \"samples_ns\": {wall:?}, \"cpu_ns\": {cpu:?}, \"counts\": {counts:?}}}",
        );
    }
}

/// A group whose samples are long and run threads: one window per sample.
fn threaded<'a>(c: &'a mut Criterion, name: &str) -> Group<'a> {
    let mut g = c.benchmark_group(name);
    g.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES);
    g
}

fn loadavg() -> String {
    let text = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn main() {
    let quick = std::env::var("AQS_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let (started, load_start) = (unix_now(), loadavg());
    println!("aqs benches: quick {quick}, load average {load_start}");
    let (warm_up, measurement) = if quick { (200, 500) } else { (1000, 3000) };
    // This binary is TARGET/release/deps/semaphore-*. Cargo runs it in
    // `benchmark/`, where a relative CARGO_TARGET_DIR would point elsewhere.
    let exe = std::env::current_exe().expect("the bench's own path");
    let target = exe.ancestors().nth(3).expect("TARGET/release/deps");
    let mut c = Criterion::default()
        .output_directory(&target.join("criterion"))
        .warm_up_time(Duration::from_millis(warm_up))
        .measurement_time(Duration::from_millis(measurement))
        .nresamples(20_000)
        .configure_from_args();
    let mut out = Out(String::new());

    let mut g = c.benchmark_group("uncontended");
    g.sample_size(if quick { 30 } else { 100 });
    floors(&mut g);
    each_contender!(uncontended(&mut g));
    g.finish();

    let mut g = threaded(&mut c, "contended");
    each_contender!(contended(&mut g, &mut out));
    g.finish();

    let mut g = threaded(&mut c, "handoff");
    each_contender!(handoff(&mut g));
    g.finish();

    let mut g = threaded(&mut c, "batch_wake");
    each_contender!(batch_wake(&mut g));
    g.finish();

    // Longer windows in quick mode: at 1 ms a permit, 50 ms holds few pairs.
    let mut g = threaded(&mut c, "io");
    g.measurement_time(Duration::from_millis(measurement.max(2000)));
    each_contender!(io(&mut g, &mut out));
    g.finish();

    c.final_summary();
    // Only a measuring run (criterion gets `--bench` from `cargo bench`)
    // writes results; `--list`, `--test` and `cargo test --benches` do not.
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--list" || a == "--test") {
        let path = target.join("aqs-bench/rust.jsonl");
        let meta = format!(
            "{{\"group\": \"meta\", \"quick\": {quick}, \"started_unix\": {started}, \
             \"ended_unix\": {}, \"loadavg_start\": \"{load_start}\", \"loadavg_end\": \"{}\"}}\n",
            unix_now(),
            loadavg(),
        );
        let written = fs::create_dir_all(target.join("aqs-bench"))
            .and_then(|()| fs::write(&path, meta + &out.0));
        match written {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("could not write {}: {e}", path.display()),
        }
    }
}
