//! Async waiters, side by side in tokio's own multi-threaded runtime (two
//! worker threads, or `AQS_BENCH_WORKERS`): aqs's `acquire_async`,
//! `lock_async`, `read_async` and `write_async` against tokio's
//! `Semaphore`, `Mutex` and `RwLock`, async-lock's `Semaphore`, `Mutex` and
//! `RwLock`, and futures-intrusive's `Semaphore` (fair).
//!
//! Every cell with tasks runs them for a ramp, then measures `SAMPLES`
//! windows: the operations completed and the process CPU clock at both
//! ends. The one-thread cells (`uncontended`, `cancel`, `round_trip`) time
//! `SAMPLES` windows of a fixed number of operations instead. The bench
//! prints the median operations/s and CPU time per operation, with the
//! ratio to tokio's, and writes the same as JSON lines to
//! `TARGET/aqs-bench/rust-async.jsonl` and as Markdown tables to
//! `TARGET/aqs-bench/async.md`.
//!
//! Workloads:
//! * `uncontended`: one task, acquire + drop (aqs's blocking path beside
//!   it: the target is within 1.2x of it);
//! * `tasks`: T in {2, 4, 16, 64} tasks over P in {1, 4} permits (or a
//!   mutex, P = 1), each looping acquire, the suites' critical section
//!   (50 rounds of `mix`), release; and the same with a `yield_now` inside
//!   the critical section;
//! * `mixed`: 8 waiters over 2 permits, half of them tasks and half blocking
//!   threads (peers without a blocking path block on their future with
//!   `futures_executor::block_on`, on threads outside the runtime);
//! * `cancel`: create a waiting acquire on an empty semaphore, poll it once
//!   (it queues), drop it: time per dropped waiter;
//! * `round_trip`: one thread holds the only permit, polls a new acquire
//!   once (it queues), drops its permit and polls the acquire again (it
//!   takes the permit): time per queued acquisition, with no runtime.
//!
//! `AQS_BENCH_WORKERS=N` runs the runtime with N workers instead of 2.
//!
//! Run: `CARGO_TARGET_DIR=target/bench cargo bench -p aqs-benchmark --bench async`
//! (`AQS_BENCH_QUICK=1` for a short run; an argument such as `round_trip`
//! or `t16_p4_yield` runs only the cells whose name contains it).

use std::fmt::Write as _;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use aqs::{MutexAsync as _, RwLockAsync as _};
use aqs_benchmark::harness::{mix, process_cpu_time, CS_ROUNDS, WORD_SEED};

/// Windows measured per cell.
const SAMPLES: usize = 7;

/// The first argument that is not a flag: only cells whose
/// `group/bench/contender` contains it run.
fn wanted(group: &str, bench: &str, name: &str) -> bool {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    filter.is_none_or(|f| format!("{group}/{bench}/{name}").contains(&f))
}

/// The runtime's worker threads: 2, or `AQS_BENCH_WORKERS` (1 puts every
/// task on one thread, so that no queue word moves between cores).
fn workers() -> usize {
    std::env::var("AQS_BENCH_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2)
}

fn quick() -> bool {
    std::env::var("AQS_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn window() -> Duration {
    if quick() {
        Duration::from_millis(40)
    } else {
        Duration::from_millis(200)
    }
}

/// What each contender offers: an async acquire of one unit, whose guard
/// releases on drop.
trait AsyncContender: Send + Sync + 'static {
    const NAME: &'static str;
    fn new(permits: usize) -> Self;
    fn acquire(&self) -> impl Future<Output = impl Send> + Send;
}

macro_rules! contender {
    ($ty:ident, $name:literal, $inner:ty, |$p:ident| $new:expr, |$s:ident| $acq:expr) => {
        struct $ty($inner);
        impl AsyncContender for $ty {
            const NAME: &'static str = $name;
            fn new($p: usize) -> Self {
                $ty($new)
            }
            #[allow(clippy::manual_async_fn)]
            fn acquire(&self) -> impl Future<Output = impl Send> + Send {
                let $s = &self.0;
                async move { $acq }
            }
        }
    };
}

contender!(
    AqsFair,
    "aqs-fair",
    aqs::Semaphore,
    |p| aqs::Semaphore::new_fair(p),
    |s| s.acquire_async().await.unwrap()
);
contender!(
    AqsNonfair,
    "aqs-nonfair",
    aqs::Semaphore,
    |p| aqs::Semaphore::new(p),
    |s| s.acquire_async().await.unwrap()
);
contender!(
    Tokio,
    "tokio",
    tokio::sync::Semaphore,
    |p| tokio::sync::Semaphore::new(p),
    |s| s.acquire().await.unwrap()
);
contender!(
    AsyncLock,
    "async-lock",
    async_lock::Semaphore,
    |p| async_lock::Semaphore::new(p),
    |s| s.acquire().await
);
contender!(
    FiFair,
    "futures-intrusive-fair",
    futures_intrusive::sync::Semaphore,
    |p| futures_intrusive::sync::Semaphore::new(true, p),
    |s| s.acquire(1).await
);

// The locks, as one-permit contenders (the critical section runs while the
// guard lives).
contender!(
    AqsMutex,
    "aqs Mutex",
    aqs::Mutex<()>,
    |_p| aqs::Mutex::new(()),
    |m| m.lock_async().await
);
contender!(
    AqsFairMutex,
    "aqs FairMutex",
    aqs::FairMutex<()>,
    |_p| aqs::FairMutex::new(()),
    |m| m.lock_async().await
);
contender!(
    TokioMutex,
    "tokio Mutex",
    tokio::sync::Mutex<()>,
    |_p| tokio::sync::Mutex::new(()),
    |m| m.lock().await
);
contender!(
    AsyncLockMutex,
    "async-lock Mutex",
    async_lock::Mutex<()>,
    |_p| async_lock::Mutex::new(()),
    |m| m.lock().await
);
contender!(
    AqsRwWrite,
    "aqs RwLock write",
    aqs::RwLock<()>,
    |_p| aqs::RwLock::new(()),
    |m| m.write_async().await
);
contender!(
    TokioRwWrite,
    "tokio RwLock write",
    tokio::sync::RwLock<()>,
    |_p| tokio::sync::RwLock::new(()),
    |m| m.write().await
);
contender!(
    AsyncLockRwWrite,
    "async-lock RwLock write",
    async_lock::RwLock<()>,
    |_p| async_lock::RwLock::new(()),
    |m| m.write().await
);

/// One cell's result: medians over the windows.
struct Cell {
    group: &'static str,
    bench: String,
    name: &'static str,
    ops_per_sec: f64,
    cpu_ns_per_op: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Runs `tasks` tasks on `rt` and `threads` blocking threads, each looping
/// `op` until stopped; measures `SAMPLES` windows after a ramp.
fn measure<F, Fut, B>(
    rt: &tokio::runtime::Runtime,
    tasks: usize,
    threads: usize,
    op: F,
    blocking: B,
) -> (f64, f64)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
    B: Fn() + Send + Sync + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let op = Arc::new(op);
    let blocking = Arc::new(blocking);
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (stop, count, op) = (stop.clone(), count.clone(), op.clone());
            rt.spawn(async move {
                while !stop.load(Relaxed) {
                    op().await;
                    count.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (stop, count, blocking) = (stop.clone(), count.clone(), blocking.clone());
            thread::spawn(move || {
                while !stop.load(Relaxed) {
                    blocking();
                    count.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    thread::sleep(window() / 2); // ramp
    let (mut rates, mut cpus) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let (c0, t0, n0) = (process_cpu_time(), Instant::now(), count.load(Relaxed));
        thread::sleep(window());
        let (c1, t1, n1) = (process_cpu_time(), Instant::now(), count.load(Relaxed));
        let ops = (n1 - n0).max(1) as f64;
        rates.push(ops / (t1 - t0).as_secs_f64());
        cpus.push((c1 - c0).as_nanos() as f64 / ops);
    }
    stop.store(true, Relaxed);
    rt.block_on(async {
        for h in handles {
            tokio::time::timeout(Duration::from_secs(30), h)
                .await
                .expect("a task hung")
                .unwrap();
        }
    });
    for w in workers {
        w.join().unwrap();
    }
    (median(rates), median(cpus))
}

/// The critical section, on a word only the holder touches.
fn critical_section(word: &AtomicU64) {
    word.store(mix(word.load(Relaxed), CS_ROUNDS), Relaxed);
}

fn tasks_cell<C: AsyncContender>(
    rt: &tokio::runtime::Runtime,
    out: &mut Vec<Cell>,
    group: &'static str,
    tasks: usize,
    permits: usize,
    yield_inside: bool,
) {
    let bench = format!(
        "t{tasks}_p{permits}{}",
        if yield_inside { "_yield" } else { "" }
    );
    if !wanted(group, &bench, C::NAME) {
        return;
    }
    let sem = Arc::new(C::new(permits));
    let word = Arc::new(AtomicU64::new(WORD_SEED));
    let op = move || {
        let (sem, word) = (sem.clone(), word.clone());
        async move {
            let guard = sem.acquire().await;
            critical_section(&word);
            if yield_inside {
                tokio::task::yield_now().await;
            }
            drop(guard);
        }
    };
    let (rate, cpu) = measure(rt, tasks, 0, op, || {});
    let bench = format!(
        "t{tasks}_p{permits}{}",
        if yield_inside { "_yield" } else { "" }
    );
    report(out, group, bench, C::NAME, rate, cpu);
}

fn mixed_cell<C: AsyncContender>(rt: &tokio::runtime::Runtime, out: &mut Vec<Cell>) {
    if !wanted("mixed", "t4_tasks_t4_threads_p2", C::NAME) {
        return;
    }
    let sem = Arc::new(C::new(2));
    let word = Arc::new(AtomicU64::new(WORD_SEED));
    let (s2, w2) = (sem.clone(), word.clone());
    let op = move || {
        let (sem, word) = (sem.clone(), word.clone());
        async move {
            let guard = sem.acquire().await;
            critical_section(&word);
            drop(guard);
        }
    };
    let blocking = move || {
        let guard = futures_executor::block_on(s2.acquire());
        critical_section(&w2);
        drop(guard);
    };
    let (rate, cpu) = measure(rt, 4, 4, op, blocking);
    report(
        out,
        "mixed",
        "t4_tasks_t4_threads_p2".into(),
        C::NAME,
        rate,
        cpu,
    );
}

fn report(
    out: &mut Vec<Cell>,
    group: &'static str,
    bench: String,
    name: &'static str,
    rate: f64,
    cpu: f64,
) {
    println!(
        "{group}/{bench}/{name:<26} k ops/s {:>10.1}   CPU ns/op {:>9.0}",
        rate / 1e3,
        cpu
    );
    out.push(Cell {
        group,
        bench,
        name,
        ops_per_sec: rate,
        cpu_ns_per_op: cpu,
    });
}

/// Times `SAMPLES` windows of `iters` rounds each (`rounds(iters)` runs
/// them) on this thread, and reports the median rate and CPU time per
/// round.
fn sampled(
    out: &mut Vec<Cell>,
    (group, bench, name): (&'static str, &str, &'static str),
    iters: u32,
    mut rounds: impl FnMut(u32),
) {
    let (mut rates, mut cpus) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let (c0, t0) = (process_cpu_time(), Instant::now());
        rounds(iters);
        let (c1, t1) = (process_cpu_time(), Instant::now());
        rates.push(f64::from(iters) / (t1 - t0).as_secs_f64());
        cpus.push((c1 - c0).as_nanos() as f64 / f64::from(iters));
    }
    report(out, group, bench.into(), name, median(rates), median(cpus));
}

/// One task (the runtime's), acquire + drop in a loop; and aqs's blocking
/// path on a plain thread.
fn uncontended<C: AsyncContender>(rt: &tokio::runtime::Runtime, out: &mut Vec<Cell>) {
    if !wanted("uncontended", "acquire_drop", C::NAME) {
        return;
    }
    let sem = C::new(1);
    let iters = if quick() { 200_000 } else { 2_000_000 };
    sampled(out, ("uncontended", "acquire_drop", C::NAME), iters, |n| {
        rt.block_on(async {
            for _ in 0..n {
                black_box(sem.acquire().await);
            }
        });
    });
}

fn uncontended_blocking(out: &mut Vec<Cell>) {
    if !wanted("uncontended", "acquire_drop", "aqs blocking") {
        return;
    }
    let sem = aqs::Semaphore::new(1);
    let iters = if quick() { 200_000 } else { 2_000_000 };
    sampled(
        out,
        ("uncontended", "acquire_drop", "aqs blocking"),
        iters,
        |n| {
            for _ in 0..n {
                drop(black_box(sem.acquire().unwrap()));
            }
        },
    );
}

/// Polls `f` once with a waker that does nothing.
fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

/// Create a waiting acquire on an empty semaphore, queue it (one poll) and
/// drop it (it leaves as the tail): time per dropped waiter.
fn cancel<C: AsyncContender>(out: &mut Vec<Cell>) {
    if !wanted("cancel", "poll_once_drop", C::NAME) {
        return;
    }
    let sem = C::new(0);
    let iters = if quick() { 50_000 } else { 500_000 };
    sampled(out, ("cancel", "poll_once_drop", C::NAME), iters, |n| {
        for _ in 0..n {
            let mut fut = std::pin::pin!(sem.acquire());
            assert!(poll_once(fut.as_mut()).is_pending());
        }
    });
}

/// Hold the only permit, queue an acquire (one poll), drop the permit (the
/// release wakes the waiter) and poll the acquire again, which must take
/// the permit: one queued acquisition's whole path, on one thread with no
/// runtime and a no-op waker, so that nothing but the semaphore's own code
/// is timed.
fn round_trip<C: AsyncContender>(out: &mut Vec<Cell>) {
    if !wanted("round_trip", "queued_acquire", C::NAME) {
        return;
    }
    let sem = C::new(1);
    let iters = if quick() { 50_000 } else { 500_000 };
    let mut held = match poll_once(std::pin::pin!(sem.acquire())) {
        Poll::Ready(permit) => Some(permit),
        Poll::Pending => panic!("{}: a free permit was not taken", C::NAME),
    };
    sampled(out, ("round_trip", "queued_acquire", C::NAME), iters, |n| {
        for _ in 0..n {
            let mut fut = std::pin::pin!(sem.acquire());
            assert!(poll_once(fut.as_mut()).is_pending());
            drop(held.take());
            match poll_once(fut.as_mut()) {
                Poll::Ready(permit) => held = Some(black_box(permit)),
                Poll::Pending => panic!("{}: the release did not wake its waiter", C::NAME),
            }
        }
    });
}

macro_rules! each_semaphore {
    ($f:ident($($arg:expr),*)) => {{
        $f::<AqsFair>($($arg),*);
        $f::<AqsNonfair>($($arg),*);
        $f::<Tokio>($($arg),*);
        $f::<AsyncLock>($($arg),*);
        $f::<FiFair>($($arg),*);
    }};
}

macro_rules! each_lock {
    ($f:ident($($arg:expr),*)) => {{
        $f::<AqsMutex>($($arg),*);
        $f::<AqsFairMutex>($($arg),*);
        $f::<TokioMutex>($($arg),*);
        $f::<AsyncLockMutex>($($arg),*);
        $f::<AqsRwWrite>($($arg),*);
        $f::<TokioRwWrite>($($arg),*);
        $f::<AsyncLockRwWrite>($($arg),*);
    }};
}

/// The cells of one group as a Markdown table: rows are benches, columns
/// contenders, each "k ops/s (×ref) · CPU ns/op".
fn table(cells: &[Cell], group: &str, reference: &str) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut benches: Vec<&str> = Vec::new();
    for c in cells.iter().filter(|c| c.group == group) {
        if !names.contains(&c.name) {
            names.push(c.name);
        }
        if !benches.contains(&c.bench.as_str()) {
            benches.push(&c.bench);
        }
    }
    let mut md = format!(
        "| {group} | {} |\n|---|{}\n",
        names.join(" | "),
        "---:|".repeat(names.len())
    );
    for b in benches {
        let reference = cells
            .iter()
            .find(|c| c.group == group && c.bench == b && c.name == reference)
            .map(|c| c.ops_per_sec);
        let _ = write!(md, "| {b} |");
        for n in &names {
            match cells
                .iter()
                .find(|c| c.group == group && c.bench == b && c.name == *n)
            {
                Some(c) => {
                    let ratio = reference
                        .map_or(String::new(), |r| format!(" ({:.2}×)", c.ops_per_sec / r));
                    let _ = write!(
                        md,
                        " {:.1}{ratio} · {:.0} |",
                        c.ops_per_sec / 1e3,
                        c.cpu_ns_per_op
                    );
                }
                None => md.push_str(" – |"),
            }
        }
        md.push('\n');
    }
    md
}

fn main() {
    // `cargo bench` passes `--bench`; a plain argument filters the cells.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers())
        .enable_time()
        .build()
        .expect("a runtime");
    let started = Instant::now();
    let mut cells = Vec::new();
    uncontended_blocking(&mut cells);
    each_semaphore!(uncontended(&rt, &mut cells));
    for tasks in [2, 4, 16, 64] {
        for permits in [1, 4] {
            for y in [false, true] {
                each_semaphore!(tasks_cell(&rt, &mut cells, "tasks", tasks, permits, y));
            }
        }
    }
    for tasks in [2, 4, 16, 64] {
        for y in [false, true] {
            each_lock!(tasks_cell(&rt, &mut cells, "locks", tasks, 1, y));
        }
    }
    each_semaphore!(mixed_cell(&rt, &mut cells));
    each_semaphore!(cancel(&mut cells));
    each_semaphore!(round_trip(&mut cells));

    // TARGET/release/deps/async-…: the target directory, as the other suites find it.
    let exe = std::env::current_exe().expect("the bench's own path");
    let dir = exe
        .ancestors()
        .nth(3)
        .expect("TARGET/release/deps")
        .join("aqs-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let mut json = String::new();
    for c in &cells {
        let _ = writeln!(
            json,
            "{{\"group\":\"{}\",\"bench\":\"{}\",\"contender\":\"{}\",\"ops_per_sec\":{:.1},\"cpu_ns_per_op\":{:.1}}}",
            c.group, c.bench, c.name, c.ops_per_sec, c.cpu_ns_per_op
        );
    }
    if std::env::args().skip(1).any(|a| !a.starts_with('-')) {
        return; // a filtered run does not overwrite the results
    }
    std::fs::write(dir.join("rust-async.jsonl"), json).unwrap();
    let mut md = format!(
        "Medians of {SAMPLES} windows ({:?} each for the cells with tasks; a fixed count of operations for `uncontended`, `cancel` and `round_trip`), {} mode, tokio multi-threaded runtime with {} workers. Each cell: k ops/s (× tokio's) · CPU ns per op.\n\n",
        window(),
        if quick() { "quick" } else { "full" },
        workers()
    );
    for (group, reference) in [
        ("uncontended", "tokio"),
        ("tasks", "tokio"),
        ("locks", "tokio Mutex"),
        ("mixed", "tokio"),
        ("cancel", "tokio"),
        ("round_trip", "tokio"),
    ] {
        md.push_str(&table(&cells, group, reference));
        md.push('\n');
    }
    std::fs::write(dir.join("async.md"), &md).unwrap();
    println!(
        "\n{md}\nwrote {} in {:?}",
        dir.join("async.md").display(),
        started.elapsed()
    );
}
