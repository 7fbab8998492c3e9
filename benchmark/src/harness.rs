//! What the bench targets measure with: the critical section's work, the
//! process CPU clock, the thread-pool windows, the ping-pong and wake-all
//! rounds, criterion's set-up and the JSON lines for `bench_report.py`.

use std::fmt::Write as _;
use std::fs;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};

/// Samples (one window each) per cell in the groups that run threads.
pub const SAMPLES: usize = 10;
/// Rounds of dependent xorshift-multiply in the semaphore suite's critical
/// section (and the mutex suite's short one).
pub const CS_ROUNDS: u32 = 50;
/// A nonzero start for the protected word (zero is a fixed point).
pub const WORD_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// A criterion group timed by the wall clock.
pub type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// Keeps its content alone on 128-byte-aligned lines (two 64-byte lines, as
/// adjacent-line prefetchers pair them), so neighbours do not share them.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

impl<T> Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The critical sections' work on the protected word: `rounds` dependent
/// xorshift-multiply rounds. Callers load the word first and store the
/// result back, so the work cannot overlap the lock's atomics
/// (register-only work leaks out of the lock). The Java programs run the
/// same rounds.
#[inline]
pub fn mix(mut x: u64, rounds: u32) -> u64 {
    for _ in 0..rounds {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    x
}

/// CPU time used so far by all threads of this process.
pub fn process_cpu_time() -> Duration {
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
// A pool of workers, measured in windows
// ---------------------------------------------------------------------------

/// Workers each looping `op(worker index)`, one operation (a "pair") a call;
/// an operation for which `op` returns true also counts as a read.
struct Pool<F> {
    op: F,
    stop: Padded<AtomicBool>,
    exit: AtomicBool,
    start: Barrier,
    done: Barrier,
    /// Operations completed by each worker so far; only its owner writes it.
    counts: Vec<Padded<AtomicU64>>,
    /// Of those, the reads (operations for which `op` returned true).
    reads: Vec<Padded<AtomicU64>>,
}

/// One measurement window: wall and process CPU time, and each worker's
/// operations, and of those its reads (empty when the cell counts none).
struct Window {
    wall: Duration,
    cpu: Duration,
    counts: Vec<u64>,
    reads: Vec<u64>,
}

impl Window {
    fn per_pair(&self, t: Duration) -> f64 {
        t.as_nanos() as f64 / self.counts.iter().sum::<u64>().max(1) as f64
    }

    /// The most operations any worker completed over the fewest (infinite
    /// when one completed none).
    fn spread(&self) -> f64 {
        let (lo, hi) = (self.counts.iter().min(), self.counts.iter().max());
        *hi.expect("workers") as f64 / *lo.expect("workers") as f64
    }
}

impl<F: Fn(usize) -> bool + Sync> Pool<F> {
    fn work(&self, i: usize) {
        loop {
            self.start.wait();
            if self.exit.load(Relaxed) {
                return;
            }
            let (mut n, mut r) = (self.counts[i].load(Relaxed), self.reads[i].load(Relaxed));
            while !self.stop.load(Relaxed) {
                if (self.op)(i) {
                    // Before the count: a snapshot never sees more reads than operations.
                    r += 1;
                    self.reads[i].store(r, Relaxed);
                }
                n += 1;
                self.counts[i].store(n, Relaxed);
            }
            self.done.wait();
        }
    }

    fn snapshot(&self) -> (Vec<u64>, Vec<u64>) {
        let load = |c: &Vec<Padded<AtomicU64>>| c.iter().map(|c| c.load(Relaxed)).collect();
        (load(&self.reads), load(&self.counts))
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
        let minus = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(a, b)| a - b).collect::<Vec<_>>();
        let (counts, reads) = (minus(&after.1, &before.1), minus(&after.0, &before.0));
        Window {
            wall,
            cpu,
            counts,
            reads,
        }
    }
}

/// A pool cell `group/bench/name`: `threads` workers looping `op`. Every
/// worker must be able to stop after any call of `op` without leaving
/// another blocked for good. Each criterion call is one window about as long
/// as `iters` operations took so far (10 ms to 2 s: shorter windows hold too
/// few operations at 1 ms each); the windows of criterion's samples (its
/// last `SAMPLES` calls) go to `out`.
pub fn pooled(
    g: &mut Group<'_>,
    id: (&str, &str),
    name: &str,
    threads: usize,
    op: impl Fn(usize) + Sync,
    out: &mut Out,
) {
    run_pool(
        g,
        id,
        name,
        threads,
        |i| {
            op(i);
            false
        },
        false,
        out,
    );
}

/// As [`pooled`], for a cell whose operations are reads or writes: `op`
/// returns whether it read, and the JSON line also carries each worker's
/// reads per window (`window_reads`).
pub fn pooled_rw(
    g: &mut Group<'_>,
    id: (&str, &str),
    name: &str,
    threads: usize,
    op: impl Fn(usize) -> bool + Sync,
    out: &mut Out,
) {
    run_pool(g, id, name, threads, op, true, out);
}

/// [`pooled`] and [`pooled_rw`]: `reads` says whether the JSON line carries
/// the reads.
fn run_pool(
    g: &mut Group<'_>,
    (group, bench): (&str, &str),
    name: &str,
    threads: usize,
    op: impl Fn(usize) -> bool + Sync,
    reads: bool,
    out: &mut Out,
) {
    let pool = Pool {
        op,
        stop: Padded(AtomicBool::new(false)),
        exit: AtomicBool::new(false),
        start: Barrier::new(threads + 1),
        done: Barrier::new(threads + 1),
        counts: (0..threads).map(|_| Padded(AtomicU64::new(0))).collect(),
        reads: (0..threads).map(|_| Padded(AtomicU64::new(0))).collect(),
    };
    let mut windows: Vec<Window> = Vec::new();
    thread::scope(|scope| {
        for i in 0..threads {
            let pool = &pool;
            scope.spawn(move || pool.work(i));
        }
        g.bench_function(BenchmarkId::new(bench, name), |b| {
            b.iter_custom(|iters| {
                let (wall, pairs) = windows.iter().fold((Duration::ZERO, 0), |(t, n), w| {
                    (t + w.wall, n + w.counts.iter().sum::<u64>())
                });
                let want = wall.as_nanos() as f64 / pairs.max(1) as f64 * iters as f64;
                let mut w = pool.window(Duration::from_nanos(want.clamp(1e7, 2e9) as u64));
                if !reads {
                    w.reads.clear();
                }
                let per_pair = w.per_pair(w.wall);
                windows.push(w);
                Duration::from_nanos((per_pair * iters as f64).round() as u64)
            })
        });
        pool.exit.store(true, Relaxed);
        pool.start.wait();
    });
    out.record((group, bench), name, &windows);
}

// ---------------------------------------------------------------------------
// Ping-pong and wake-all rounds
// ---------------------------------------------------------------------------

/// Where the two threads of a ping-pong run. A turn that crosses CPUs wakes
/// a CPU that went idle, which on a virtual machine can cost tens of
/// microseconds; a turn on one CPU is a context switch. Left free, the
/// scheduler moves the pair between the two from window to window, so the
/// suites also measure each placement pinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Wherever the scheduler puts them.
    Free,
    /// Both pinned to CPU 0.
    OneCpu,
    /// This thread pinned to CPU 0, the partner to CPU 1.
    TwoCpus,
}

impl Placement {
    /// The suffix of the cell's bench id: none, `_1cpu` or `_2cpu`.
    pub fn suffix(self) -> &'static str {
        match self {
            Placement::Free => "",
            Placement::OneCpu => "_1cpu",
            Placement::TwoCpus => "_2cpu",
        }
    }

    /// The CPUs of this thread and of the partner, if pinned.
    fn cpus(self) -> Option<[usize; 2]> {
        match self {
            Placement::Free => None,
            Placement::OneCpu => Some([0, 0]),
            Placement::TwoCpus => Some([0, 1]),
        }
    }
}

/// Pins the calling thread to `cpu` and returns the CPU set it had.
///
/// # Panics
///
/// If the kernel refuses (a machine with one CPU has no CPU 1).
fn pin_to(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is the empty set.
    let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: thread 0 is the calling thread; the pointer and size are of
    // one live `cpu_set_t`.
    let got = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&old), &mut old) };
    assert_eq!(got, 0, "sched_getaffinity failed");
    // SAFETY: as above.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below the set's size (`CPU_SETSIZE`), or `CPU_SET` panics.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(&set);
    old
}

/// Restricts the calling thread to `set`.
fn set_affinity(set: &libc::cpu_set_t) {
    // SAFETY: thread 0 is the calling thread; the pointer and size are of
    // one live `cpu_set_t`.
    let got = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) };
    assert_eq!(got, 0, "sched_setaffinity failed (is there a CPU 1?)");
}

/// Two threads taking turns, as cell `group/bench{placement}/name`, placed
/// as `placement` says: a partner thread
/// loops `turn` while it returns true, and this thread loops `round`, which
/// must wait for one partner turn. Each criterion call times `iters` rounds
/// on the wall and the process CPU clocks; the samples (criterion's last
/// `SAMPLES` calls) go to `out`, one operation a round. Then `stop` runs,
/// which must not wait for the partner: it raises a flag and wakes the
/// partner's turn, which looks at the flag between being woken and
/// answering (a partner that looked after answering could leave while a
/// round waits for it) and returns false.
#[allow(clippy::too_many_arguments)]
pub fn ping_pong(
    g: &mut Group<'_>,
    (group, bench): (&str, &str),
    name: &str,
    placement: Placement,
    turn: impl Fn() -> bool + Sync,
    mut round: impl FnMut(),
    stop: impl FnOnce(),
    out: &mut Out,
) {
    let bench = format!("{bench}{}", placement.suffix());
    let cpus = placement.cpus();
    let restore = cpus.map(|[mine, _]| pin_to(mine));
    let mut windows: Vec<Window> = Vec::new();
    thread::scope(|scope| {
        scope.spawn(|| {
            if let Some([_, partner]) = cpus {
                pin_to(partner);
            }
            while turn() {}
        });
        g.bench_function(BenchmarkId::new(&bench, name), |b| {
            b.iter_custom(|iters| {
                // The wall clock inside the CPU clock: the latter is a system call.
                let (cpu0, t0) = (process_cpu_time(), Instant::now());
                for _ in 0..iters {
                    round();
                }
                let wall = t0.elapsed();
                let cpu = process_cpu_time() - cpu0;
                windows.push(Window {
                    wall,
                    cpu,
                    counts: vec![iters],
                    reads: Vec::new(),
                });
                wall
            })
        });
        stop();
    });
    if let Some(old) = restore {
        set_affinity(&old);
    }
    out.record((group, &bench), name, &windows);
}

/// `waiters` threads each call `park(ready)`, which must count the thread in
/// `ready` before it blocks and return once woken; then one `wake()` releases
/// them all. Each sample is the time from the wake until the last `park` has
/// returned.
pub fn wake_all(
    g: &mut Group<'_>,
    id: BenchmarkId,
    waiters: usize,
    park: impl Fn(&AtomicUsize) + Sync,
    wake: impl Fn(),
) {
    let (ready, done) = (Padded(AtomicUsize::new(0)), Padded(AtomicUsize::new(0)));
    // Nanoseconds after `base` at which the last waiter returned.
    let (base, last) = (Instant::now(), Padded(AtomicU64::new(0)));
    let (start, exit, measurer) = (
        Barrier::new(waiters + 1),
        AtomicBool::new(false),
        thread::current(),
    );
    let round = || {
        ready.store(0, SeqCst);
        done.store(0, SeqCst);
        last.store(0, SeqCst);
        start.wait();
        while ready.load(SeqCst) < waiters {
            thread::sleep(Duration::from_micros(50));
        }
        thread::sleep(Duration::from_millis(1)); // let them park
        let t0 = base.elapsed().as_nanos() as u64;
        wake();
        // Sleep until the last waiter unparks this thread: polling on a timer
        // would take CPU time the waiters need. `park` may return early.
        while done.load(SeqCst) < waiters {
            thread::park_timeout(Duration::from_millis(5));
        }
        Duration::from_nanos(last.load(SeqCst).saturating_sub(t0))
    };
    thread::scope(|scope| {
        for _ in 0..waiters {
            scope.spawn(|| loop {
                start.wait();
                if exit.load(Relaxed) {
                    return;
                }
                park(&ready);
                last.fetch_max(base.elapsed().as_nanos() as u64, SeqCst);
                if done.fetch_add(1, SeqCst) + 1 == waiters {
                    measurer.unpark();
                }
            });
        }
        g.bench_function(id, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| round()).sum())
        });
        exit.store(true, Relaxed);
        start.wait();
    });
}

// ---------------------------------------------------------------------------
// Criterion set-up and output
// ---------------------------------------------------------------------------

/// The JSON lines of the pool and ping-pong cells.
#[derive(Debug, Default)]
pub struct Out(String);

impl Out {
    /// Keeps one JSON line written by a bench target's own measurement (one
    /// that is not a pool or ping-pong cell, such as the read-write lock
    /// suite's writer waits); `json` is one object without the newline.
    pub fn line(&mut self, json: &str) {
        self.0.push_str(json);
        self.0.push('\n');
    }

    /// Prints a cell's medians and ranges over the windows of criterion's
    /// samples (the last `SAMPLES`; none when criterion skipped the cell),
    /// and keeps its JSON line: wall and CPU ns per operation of each window,
    /// each worker's operations over all windows, and per window.
    fn record(&mut self, (group, bench): (&str, &str), name: &str, windows: &[Window]) {
        let windows = &windows[windows.len().saturating_sub(SAMPLES)..];
        if windows.is_empty() {
            return;
        }
        let wall: Vec<f64> = windows.iter().map(|w| w.per_pair(w.wall)).collect();
        let cpu: Vec<f64> = windows.iter().map(|w| w.per_pair(w.cpu)).collect();
        let spread: Vec<f64> = windows.iter().map(Window::spread).collect();
        let per_window: Vec<&Vec<u64>> = windows.iter().map(|w| &w.counts).collect();
        let reads: Vec<&Vec<u64>> = windows.iter().map(|w| &w.reads).collect();
        let counts: Vec<u64> = (0..windows[0].counts.len())
            .map(|i| windows.iter().map(|w| w.counts[i]).sum())
            .collect();
        let show = |xs: &[f64], f: fn(f64) -> f64| {
            let mut s: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
            s.sort_by(f64::total_cmp);
            format!("{:.4} ({:.4}..{:.4})", s[s.len() / 2], s[0], s[s.len() - 1])
        };
        println!(
            "{group}/{bench}/{name:<25} k pairs/s {}   CPU us/pair {}   max/min per window {}",
            show(&wall, |ns| 1e6 / ns),
            show(&cpu, |ns| ns / 1e3),
            show(&spread, |x| x),
        );
        let _ = write!(
            self.0,
            "{{\"group\": \"{group}\", \"bench\": \"{bench}\", \"contender\": \"{name}\", \
             \"samples_ns\": {wall:?}, \"cpu_ns\": {cpu:?}, \"counts\": {counts:?}, \
             \"window_counts\": {per_window:?}",
        );
        if !windows[0].reads.is_empty() {
            let _ = write!(self.0, ", \"window_reads\": {reads:?}");
        }
        self.0.push_str("}\n");
    }
}

/// One bench target's run: criterion set up for this machine and mode
/// (`AQS_BENCH_QUICK`), and the JSON lines of its pool cells, written to
/// `TARGET/aqs-bench/<file>` by [`Suite::finish`] (TARGET is
/// `$CARGO_TARGET_DIR`, by default `target/`).
pub struct Suite {
    c: Criterion,
    out: Out,
    /// Whether this is the short run.
    pub quick: bool,
    /// Criterion's measurement time per cell.
    pub measurement: Duration,
    file: &'static str,
    target: PathBuf,
    started: u64,
    load_start: String,
}

impl Suite {
    /// Sets criterion up; `file` names the JSON lines under `aqs-bench/`.
    pub fn new(file: &'static str) -> Suite {
        let quick = std::env::var("AQS_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        let (started, load_start) = (unix_now(), loadavg());
        println!("aqs benches ({file}): quick {quick}, load average {load_start}");
        let (warm_up, measurement) = if quick { (200, 500) } else { (1000, 3000) };
        let measurement = Duration::from_millis(measurement);
        // This binary is TARGET/release/deps/<bench>-*. Cargo runs it in
        // `benchmark/`, where a relative CARGO_TARGET_DIR would point
        // elsewhere.
        let exe = std::env::current_exe().expect("the bench's own path");
        let target = exe.ancestors().nth(3).expect("TARGET/release/deps");
        let c = Criterion::default()
            .output_directory(&target.join("criterion"))
            .warm_up_time(Duration::from_millis(warm_up))
            .measurement_time(measurement)
            .nresamples(20_000)
            .configure_from_args();
        Suite {
            c,
            out: Out::default(),
            quick,
            measurement,
            file,
            target: target.to_path_buf(),
            started,
            load_start,
        }
    }

    /// A group of short single-thread samples.
    pub fn single(&mut self, name: &str) -> Group<'_> {
        let mut g = self.c.benchmark_group(name);
        g.sample_size(if self.quick { 30 } else { 100 });
        g
    }

    /// A group whose samples are long and run threads (one window per
    /// sample), and the JSON lines its pool and ping-pong cells go to.
    pub fn threaded(&mut self, name: &str) -> (Group<'_>, &mut Out) {
        let mut g = self.c.benchmark_group(name);
        g.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES);
        (g, &mut self.out)
    }

    /// Criterion's summary; then, for a measuring run only (criterion gets
    /// `--bench` from `cargo bench`; `--list`, `--test` and
    /// `cargo test --benches` write nothing), the JSON lines: a meta line
    /// (mode, start, end, load) and the pool cells'.
    pub fn finish(self) {
        self.c.final_summary();
        let args: Vec<String> = std::env::args().collect();
        if !args.iter().any(|a| a == "--bench")
            || args.iter().any(|a| a == "--list" || a == "--test")
        {
            return;
        }
        let path = self.target.join("aqs-bench").join(self.file);
        let meta = format!(
            "{{\"group\": \"meta\", \"quick\": {}, \"started_unix\": {}, \
             \"ended_unix\": {}, \"loadavg_start\": \"{}\", \"loadavg_end\": \"{}\"}}\n",
            self.quick,
            self.started,
            unix_now(),
            self.load_start,
            loadavg(),
        );
        let written = fs::create_dir_all(self.target.join("aqs-bench"))
            .and_then(|()| fs::write(&path, meta + &self.out.0));
        match written {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("could not write {}: {e}", path.display()),
        }
    }
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
