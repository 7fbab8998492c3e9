//! aqs-zookeeper against Curator 5 on one ZooKeeper, in one run.
//!
//! Per workload and side: throughput, latency (an uncontended acquire + release, a mutex's
//! hand-off as the next holder sees it, or the wait in a contended acquire), client CPU time and
//! server CPU time per acquisition, and the server's own counts of requests and watch
//! notifications per acquisition (`mntr`'s `zk_packets_received` and `zk_sum_node_*_watch_count`).
//! The Curator side is `java/CuratorBench.java`, compiled here with `javac` and run as a child
//! process; both sides run the same loop with one session per client. The sides alternate within
//! every pass, and every number reported is a median over passes.
//!
//! `cargo bench -p aqs-zookeeper --bench curator` prints Markdown tables on stdout (progress on
//! stderr); `docs/bench-zookeeper.md` is such a run. `AQS_ZK_BENCH_QUICK=1` runs every workload
//! once, briefly, to prove the benchmark runs; `AQS_ZK_BENCH_PASSES=n` sets the passes, and
//! `AQS_ZK_BENCH_ONLY=text` runs only the workloads whose names contain `text`.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqs_test_servers::zookeeper::{TestServer, DEFAULT_CLASSPATH};
use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Mutex, MutexGuard, Permit, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recipe {
    Mutex,
    Semaphore,
}

/// The latency a workload reports as its headline.
#[derive(Debug, Clone, Copy)]
enum Latency {
    /// One client's acquire + release, nobody else present.
    Cycle,
    /// A mutex changing hands: from the holder starting its release to the next holder's acquire
    /// returning, as that next holder sees it.
    Handoff,
    /// The whole wait inside a contended acquire.
    Acquire,
}

impl Latency {
    fn name(self) -> &'static str {
        match self {
            Latency::Cycle => "acquire + release",
            Latency::Handoff => "hand-off",
            Latency::Acquire => "acquire (wait)",
        }
    }
}

struct Workload {
    name: &'static str,
    recipe: Recipe,
    clients: usize,
    /// The semaphore's limit (ignored by the mutex).
    limit: u32,
    /// How long each holder keeps its lock or permit before releasing it.
    hold_ms: u64,
    latency: Latency,
}

const WORKLOADS: [Workload; 6] = [
    Workload {
        name: "mutex, 1 client",
        recipe: Recipe::Mutex,
        clients: 1,
        limit: 1,
        hold_ms: 0,
        latency: Latency::Cycle,
    },
    Workload {
        name: "semaphore of 4, 1 client",
        recipe: Recipe::Semaphore,
        clients: 1,
        limit: 4,
        hold_ms: 0,
        latency: Latency::Cycle,
    },
    Workload {
        name: "mutex, 8 clients",
        recipe: Recipe::Mutex,
        clients: 8,
        limit: 1,
        hold_ms: 0,
        latency: Latency::Handoff,
    },
    // The same recipe with four times the waiters: watch notifications per acquisition must not
    // grow with them.
    Workload {
        name: "mutex, 32 clients",
        recipe: Recipe::Mutex,
        clients: 32,
        limit: 1,
        hold_ms: 0,
        latency: Latency::Handoff,
    },
    Workload {
        name: "semaphore of 4, 32 clients",
        recipe: Recipe::Semaphore,
        clients: 32,
        limit: 4,
        hold_ms: 0,
        latency: Latency::Acquire,
    },
    // With no hold, the gate admits one client at a time and the leases rarely fill; a hold keeps
    // all 4 permits taken, so the gate holder waits for a lease to go (the semaphore's own path).
    Workload {
        name: "semaphore of 4, 32 clients, hold 10 ms",
        recipe: Recipe::Semaphore,
        clients: 32,
        limit: 4,
        hold_ms: 10,
        latency: Latency::Acquire,
    },
];

/// One side's measured phase of one workload. Times in seconds.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    acquisitions: f64,
    elapsed: f64,
    cpu: f64,
    /// The JVM's JIT compilers' and garbage collectors' own time, part of `cpu` (Curator only).
    jit: f64,
    gc: f64,
    server_cpu: f64,
    cycle_p50: f64,
    cycle_p99: f64,
    acquire_p50: f64,
    acquire_p99: f64,
    release_p50: f64,
    hold_p50: f64,
    handoffs: f64,
    handoff_p50: f64,
    handoff_p99: f64,
    requests: f64,
    watches: f64,
    /// The part of `watches` fired by a change in a node's children (the semaphore's leases).
    children_watches: f64,
}

impl Sample {
    fn per_sec(&self) -> f64 {
        self.acquisitions / self.elapsed
    }

    fn latency(&self, l: Latency) -> (f64, f64) {
        match l {
            Latency::Cycle => (self.cycle_p50, self.cycle_p99),
            Latency::Handoff => (self.handoff_p50, self.handoff_p99),
            Latency::Acquire => (self.acquire_p50, self.acquire_p99),
        }
    }

    fn per_acquisition(&self, x: f64) -> f64 {
        x / self.acquisitions
    }
}

/// Durations of one phase, all clients pooled.
#[derive(Default)]
struct Samples {
    cycle: Vec<Duration>,
    acquire: Vec<Duration>,
    release: Vec<Duration>,
    hold: Vec<Duration>,
    handoff: Vec<Duration>,
}

impl Samples {
    fn append(&mut self, mut o: Samples) {
        self.cycle.append(&mut o.cycle);
        self.acquire.append(&mut o.acquire);
        self.release.append(&mut o.release);
        self.hold.append(&mut o.hold);
        self.handoff.append(&mut o.handoff);
    }
}

/// The value below which a fraction `q` of `v` lies, in seconds (the same rule as the Java side).
fn quantile(v: &mut [Duration], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)].as_secs_f64()
}

/// User + system CPU time of process `pid` ("self" for this one), in seconds.
fn process_cpu(pid: &str) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the parenthesized name, utime and stime are the 12th and 13th fields (proc(5)), in
    // clock ticks of 1/100 s on Linux.
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn parent_pid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The ZooKeeper server process: the `java` child of this process that runs
/// `ZooKeeperServerMain` (the Curator children run `CuratorBench`).
fn server_pid() -> Option<u32> {
    let me = std::process::id();
    fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        (String::from_utf8_lossy(&cmdline).contains("ZooKeeperServerMain")
            && parent_pid(pid) == Some(me))
        .then_some(pid)
    })
}

/// The server and what is read from it around every measured phase.
struct Server {
    zk: TestServer,
    pid: Option<String>,
}

/// The server's counters at one moment.
struct Counters {
    packets: f64,
    watches: f64,
    children_watches: f64,
    cpu: f64,
}

impl Server {
    fn counters(&self) -> Counters {
        let m = self.zk.four_letter("mntr").expect("mntr");
        let get = |k: &str| -> f64 {
            m.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('\t')?.trim().parse().ok())
                .unwrap_or_else(|| panic!("mntr reports no {k}"))
        };
        // Each watch that fires is one notification sent to one client.
        let watches = ["created", "deleted", "changed", "children"]
            .iter()
            .map(|w| get(&format!("zk_sum_node_{w}_watch_count")))
            .sum();
        Counters {
            packets: get("zk_packets_received"),
            watches,
            children_watches: get("zk_sum_node_children_watch_count"),
            cpu: self
                .pid
                .as_deref()
                .and_then(process_cpu)
                .unwrap_or(f64::NAN),
        }
    }

    /// Fills `s`'s server-side fields from the counters before and after its phase.
    fn charge(&self, s: &mut Sample, before: &Counters) {
        let after = self.counters();
        // The `mntr` that read `after` counts as one packet received.
        s.requests = after.packets - before.packets - 1.0;
        s.watches = after.watches - before.watches;
        s.children_watches = after.children_watches - before.children_watches;
        s.server_cpu = after.cpu - before.cpu;
    }
}

enum Handle {
    Mutex(Mutex),
    Semaphore(Semaphore),
}

enum Held {
    Mutex(MutexGuard),
    Permit(Permit),
}

impl Handle {
    async fn acquire(&self) -> Held {
        match self {
            Handle::Mutex(m) => Held::Mutex(m.acquire().await.expect("mutex acquire")),
            Handle::Semaphore(s) => Held::Permit(s.acquire().await.expect("semaphore acquire")),
        }
    }
}

impl Held {
    /// Releases and waits until the server confirms, as Curator's `release()` and
    /// `returnLease()` do.
    async fn release(self) {
        match self {
            Held::Mutex(g) => g.release().await.expect("mutex release"),
            Held::Permit(p) => p.release().await.expect("permit release"),
        }
    }
}

/// Every client loops acquire, hold, release until `dur` has passed: the loop of
/// `CuratorBench.phase`.
async fn phase(handles: &[Arc<Handle>], w: &Workload, dur: Duration) -> Samples {
    let handoff = w.recipe == Recipe::Mutex && w.clients > 1;
    let hold = Duration::from_millis(w.hold_ms);
    let base = Instant::now();
    let deadline = base + dur;
    // When the last holder started its release, in ns after `base` plus one; 0 once read.
    let last_release = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = handles
        .iter()
        .map(|h| {
            let (h, last_release) = (h.clone(), last_release.clone());
            tokio::spawn(async move {
                let mut s = Samples::default();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    let held = h.acquire().await;
                    let t1 = Instant::now();
                    if handoff {
                        // The mutex orders this after the store of the release it waited for.
                        let last = last_release.swap(0, Ordering::SeqCst);
                        if last != 0 {
                            s.handoff.push(t1 - (base + Duration::from_nanos(last - 1)));
                        }
                    }
                    if !hold.is_zero() {
                        // The holder's critical section must last as long as Java's
                        // `Thread.sleep`; tokio's timer rounds up to its millisecond wheel,
                        // which would lengthen aqs's holds.
                        tokio::task::spawn_blocking(move || std::thread::sleep(hold))
                            .await
                            .expect("hold");
                    }
                    let t2 = Instant::now();
                    if handoff {
                        let at = (t2 - base).as_nanos() as u64 + 1;
                        last_release.store(at, Ordering::SeqCst);
                    }
                    held.release().await;
                    let t3 = Instant::now();
                    s.cycle.push(t3 - t0);
                    s.acquire.push(t1 - t0);
                    s.hold.push(t2 - t1);
                    s.release.push(t3 - t2);
                }
                s
            })
        })
        .collect();
    let mut all = Samples::default();
    for t in tasks {
        all.append(t.await.expect("a client task panicked"));
    }
    all
}

async fn run_aqs(
    server: &Server,
    w: &Workload,
    path: &str,
    warm: Duration,
    run: Duration,
) -> Sample {
    let mut handles = Vec::new();
    for _ in 0..w.clients {
        let c = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&server.zk.addr().to_string())
            .await
            .expect("connect");
        handles.push(Arc::new(match w.recipe {
            Recipe::Mutex => Handle::Mutex(Mutex::new(c, path).unwrap()),
            Recipe::Semaphore => Handle::Semaphore(Semaphore::new(c, path, w.limit).unwrap()),
        }));
    }
    phase(&handles, w, warm).await;
    let before = server.counters();
    let cpu0 = process_cpu("self").expect("/proc/self/stat");
    let t0 = Instant::now();
    let mut d = phase(&handles, w, run).await;
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu = process_cpu("self").expect("/proc/self/stat") - cpu0;
    let mut s = Sample {
        acquisitions: d.cycle.len() as f64,
        elapsed,
        cpu,
        cycle_p50: quantile(&mut d.cycle, 0.5),
        cycle_p99: quantile(&mut d.cycle, 0.99),
        acquire_p50: quantile(&mut d.acquire, 0.5),
        acquire_p99: quantile(&mut d.acquire, 0.99),
        release_p50: quantile(&mut d.release, 0.5),
        hold_p50: quantile(&mut d.hold, 0.5),
        handoffs: d.handoff.len() as f64,
        handoff_p50: quantile(&mut d.handoff, 0.5),
        handoff_p99: quantile(&mut d.handoff, 0.99),
        ..Sample::default()
    };
    server.charge(&mut s, &before);
    s
}

fn run_curator(
    server: &Server,
    classes: &Path,
    w: &Workload,
    path: &str,
    warm: Duration,
    run: Duration,
) -> Sample {
    let err = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("curator-bench-stderr-{}.txt", std::process::id()));
    let mut child = Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{DEFAULT_CLASSPATH}", classes.display()))
        .arg("CuratorBench")
        .arg(server.zk.addr().to_string())
        .arg(match w.recipe {
            Recipe::Mutex => "mutex",
            Recipe::Semaphore => "semaphore",
        })
        .arg(path)
        .arg(w.clients.to_string())
        .arg(w.limit.to_string())
        .arg(w.hold_ms.to_string())
        .arg(warm.as_millis().to_string())
        .arg(run.as_millis().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("java");
    let failed = |what: &str| -> ! {
        panic!(
            "CuratorBench: {what}; its stderr:\n{}",
            fs::read_to_string(&err).unwrap_or_default()
        )
    };
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    if out.next().and_then(Result::ok).as_deref() != Some("warm") {
        failed("no \"warm\" line");
    }
    let before = server.counters();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let Some(Ok(line)) = out.next() else {
        failed("no result line")
    };
    let mut s = parse_result(&line).unwrap_or_else(|| failed(&format!("bad result {line:?}")));
    server.charge(&mut s, &before);
    drop(stdin); // Now it may close its sessions.
    child.wait().unwrap();
    let _ = fs::remove_file(&err);
    s
}

/// Reads `CuratorBench`'s `result key=value ...` line (times in ns).
fn parse_result(line: &str) -> Option<Sample> {
    let kv: HashMap<&str, f64> = line
        .strip_prefix("result ")?
        .split(' ')
        .map(|p| {
            let (k, v) = p.split_once('=')?;
            Some((k, v.parse().ok()?))
        })
        .collect::<Option<_>>()?;
    let ns = |k: &str| kv.get(k).map(|v| v / 1e9);
    Some(Sample {
        acquisitions: *kv.get("acquisitions")?,
        elapsed: ns("elapsed")?,
        cpu: ns("cpu")?,
        jit: ns("jit")?,
        gc: ns("gc")?,
        cycle_p50: ns("cycle_p50")?,
        cycle_p99: ns("cycle_p99")?,
        acquire_p50: ns("acquire_p50")?,
        acquire_p99: ns("acquire_p99")?,
        release_p50: ns("release_p50")?,
        hold_p50: ns("hold_p50")?,
        handoffs: *kv.get("handoff_n")?,
        handoff_p50: ns("handoff_p50")?,
        handoff_p99: ns("handoff_p99")?,
        ..Sample::default()
    })
}

fn compile_java() -> PathBuf {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/java/CuratorBench.java");
    aqs_test_servers::java::compile(
        src.as_ref(),
        DEFAULT_CLASSPATH,
        env!("CARGO_TARGET_TMPDIR").as_ref(),
    )
    .unwrap_or_else(|e| panic!("the Curator benchmark must compile: {e}"))
}

/// The median, and whether the values spread by more than a quarter of it (marked `~`).
fn median(mut v: Vec<f64>) -> (f64, bool) {
    v.sort_by(f64::total_cmp);
    let m = v[v.len() / 2];
    (m, v[v.len() - 1] - v[0] > 0.25 * m.abs())
}

/// Three significant digits.
fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let digits = if x == 0.0 {
        0
    } else {
        (2 - x.abs().log10().floor() as i32).max(0) as usize
    };
    format!("{x:.digits$}")
}

fn cell(v: &[Sample], f: &dyn Fn(&Sample) -> f64) -> (f64, String) {
    let (m, noisy) = median(v.iter().map(f).collect());
    (m, format!("{}{}", sig(m), if noisy { "~" } else { "" }))
}

/// Speed relative to Curator, above 1 when aqs is better: `higher` says which way is better.
fn ratio(aqs: f64, curator: f64, higher: bool) -> String {
    let r = if higher { aqs / curator } else { curator / aqs };
    if r.is_finite() {
        sig(r)
    } else {
        "n/a".into()
    }
}

fn sh(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| {
            let text = [o.stdout, o.stderr].concat();
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let quick = std::env::var("AQS_ZK_BENCH_QUICK").is_ok_and(|v| v != "0");
    let passes: usize = std::env::var("AQS_ZK_BENCH_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1 } else { 5 });
    let only = std::env::var("AQS_ZK_BENCH_ONLY").ok();
    let (warm, run) = if quick {
        (Duration::from_millis(200), Duration::from_millis(500))
    } else {
        (Duration::from_secs(2), Duration::from_secs(5))
    };
    let started = (sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]), loadavg());
    let zk = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let server = Server {
        pid: server_pid().map(|p| p.to_string()),
        zk,
    };
    let classes = compile_java();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut results: Vec<[Vec<Sample>; 2]> = WORKLOADS.iter().map(|_| [vec![], vec![]]).collect();
    if !quick {
        // The server is a JVM too: warm its JIT on the requests of every recipe first, so that
        // the first side measured does not pay for it.
        eprintln!("warming the server up");
        for (i, w) in WORKLOADS.iter().enumerate().skip(2).take(3) {
            let path = format!("/bench/warm/w{i}");
            rt.block_on(run_aqs(&server, w, &path, warm, warm));
        }
    }
    for pass in 0..passes {
        for (i, w) in WORKLOADS.iter().enumerate() {
            if !only.as_ref().is_none_or(|o| w.name.contains(o.as_str())) {
                continue;
            }
            // Alternate which side goes first, so neither always follows the same neighbour.
            let first = (pass + i) % 2;
            for side in [first, 1 - first] {
                let path = format!("/bench/p{pass}/w{i}/{}", ["aqs", "curator"][side]);
                let s = if side == 0 {
                    rt.block_on(run_aqs(&server, w, &path, warm, run))
                } else {
                    run_curator(&server, &classes, w, &path, warm, run)
                };
                let (lat, lat99) = s.latency(w.latency);
                eprintln!(
                    "pass {pass} {:<40} {:<7} {:>6.0}/s  {} p50 {:>6.0} µs p99 {:>6.0} µs  \
                     acquire {:>6.0} release {:>6.0} hold {:>6.0} µs  cpu {:>5.0} µs  \
                     (jit {:>4.0} gc {:>4.0}) server {:>5.0} µs  req {:.2}  watch {:.2}",
                    w.name,
                    ["aqs", "curator"][side],
                    s.per_sec(),
                    w.latency.name(),
                    lat * 1e6,
                    lat99 * 1e6,
                    s.acquire_p50 * 1e6,
                    s.release_p50 * 1e6,
                    s.hold_p50 * 1e6,
                    s.per_acquisition(s.cpu) * 1e6,
                    s.per_acquisition(s.jit) * 1e6,
                    s.per_acquisition(s.gc) * 1e6,
                    s.per_acquisition(s.server_cpu) * 1e6,
                    s.per_acquisition(s.requests),
                    s.per_acquisition(s.watches),
                );
                results[i][side].push(s);
            }
        }
    }
    report(&server, &results, passes, warm, run, started);
}

fn report(
    server: &Server,
    results: &[[Vec<Sample>; 2]],
    passes: usize,
    warm: Duration,
    run: Duration,
    (date, load0): (String, String),
) {
    // Workloads left out by AQS_ZK_BENCH_ONLY have no samples.
    let rows: Vec<(&Workload, &[Vec<Sample>; 2])> = WORKLOADS
        .iter()
        .zip(results)
        .filter(|(_, r)| !r[0].is_empty())
        .collect();
    let srvr = server.zk.four_letter("srvr").unwrap_or_default();
    println!("- Run: {date}; {passes} pass(es), each side {warm:?} warm-up then {run:?} measured per workload");
    println!(
        "- Host: {} CPUs ({}), Linux {}; load average {load0} at start, {} at end",
        sh("nproc", &[]),
        fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| c.lines().find_map(|l| l
                .strip_prefix("model name")?
                .split_once(':')
                .map(|x| x.1.trim().to_owned())))
            .unwrap_or_default(),
        sh("uname", &["-r"]),
        loadavg(),
    );
    println!(
        "- {}; {}; {}",
        srvr.lines().next().unwrap_or("ZooKeeper version unknown"),
        sh("java", &["-version"]),
        sh("rustc", &["--version"]),
    );
    println!();
    println!("Ratios are aqs relative to Curator, above 1 when aqs is better (throughput ÷, or");
    println!(
        "Curator's time or cost ÷ aqs's). `~`: the passes spread by more than 25 % of the median."
    );
    println!();
    println!("Speed:");
    println!();
    println!("| workload | latency | p50 µs aqs | Curator | × | p99 µs aqs | Curator | × | acquisitions/s aqs | Curator | × |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (w, [a, c]) in rows.iter().copied() {
        let l = w.latency;
        let row = [
            (&|s: &Sample| s.latency(l).0 * 1e6) as &dyn Fn(&Sample) -> f64,
            &|s: &Sample| s.latency(l).1 * 1e6,
            &Sample::per_sec,
        ];
        let mut line = format!("| {} | {} |", w.name, l.name());
        for (k, f) in row.iter().enumerate() {
            let ((x, xs), (y, ys)) = (cell(a, f), cell(c, f));
            line += &format!(" {xs} | {ys} | {} |", ratio(x, y, k == 2));
        }
        println!("{line}");
    }
    println!();
    println!(
        "Cost per acquisition (CPU: user + system time of the client process, and of the server):"
    );
    println!();
    println!("| workload | client CPU µs aqs | Curator | × | server CPU µs aqs | Curator | × | requests aqs | Curator | watch notifications aqs | Curator |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (w, [a, c]) in rows.iter().copied() {
        let cost = [
            (&|s: &Sample| s.per_acquisition(s.cpu) * 1e6) as &dyn Fn(&Sample) -> f64,
            &|s: &Sample| s.per_acquisition(s.server_cpu) * 1e6,
        ];
        let mut line = format!("| {} |", w.name);
        for f in cost {
            let ((x, xs), (y, ys)) = (cell(a, f), cell(c, f));
            line += &format!(" {xs} | {ys} | {} |", ratio(x, y, false));
        }
        let counts = [
            (&|s: &Sample| s.per_acquisition(s.requests)) as &dyn Fn(&Sample) -> f64,
            &|s: &Sample| s.per_acquisition(s.watches),
        ];
        for f in counts {
            let (x, y) = (cell(a, f).0, cell(c, f).0);
            line += &format!(" {x:.2} | {y:.2} |");
        }
        println!("{line}");
    }
    println!();
    println!("Where the time goes (µs, medians; a cycle is acquire, hold, release):");
    println!();
    println!("| workload | side | acquisitions | acquire p50 | hold p50 | release p50 | cycle p50 | hand-offs seen | JIT + GC µs/acq | children-watch notifications/acq |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (w, sides) in rows.iter().copied() {
        for (side, v) in ["aqs", "Curator"].iter().zip(sides) {
            let m = |f: &dyn Fn(&Sample) -> f64| sig(median(v.iter().map(f).collect()).0);
            println!(
                "| {} | {side} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                w.name,
                m(&|s| s.acquisitions),
                m(&|s| s.acquire_p50 * 1e6),
                m(&|s| s.hold_p50 * 1e6),
                m(&|s| s.release_p50 * 1e6),
                m(&|s| s.cycle_p50 * 1e6),
                m(&|s| s.handoffs),
                m(&|s| s.per_acquisition(s.jit + s.gc) * 1e6),
                median(
                    v.iter()
                        .map(|s| s.per_acquisition(s.children_watches))
                        .collect()
                )
                .0,
            );
        }
    }
    println!();
    println!("Ratios per pass (pass order), aqs relative to Curator, above 1 when aqs is better:");
    println!();
    println!("| workload | throughput | latency p50 | latency p99 |");
    println!("|---|---|---|---|");
    for (w, [a, c]) in rows.iter().copied() {
        let per_pass = |f: &dyn Fn(&Sample) -> f64, higher: bool| {
            a.iter()
                .zip(c)
                .map(|(x, y)| ratio(f(x), f(y), higher))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let l = w.latency;
        println!(
            "| {} | {} | {} | {} |",
            w.name,
            per_pass(&Sample::per_sec, true),
            per_pass(&|s| s.latency(l).0, false),
            per_pass(&|s| s.latency(l).1, false),
        );
    }
}
