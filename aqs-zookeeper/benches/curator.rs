//! aqs-zookeeper against Curator 5 on one ZooKeeper, in one run: latency and throughput of
//! acquire + release, client CPU per acquisition, and the server's own counts of requests and
//! watch notifications per acquisition. Medians over passes; the sides alternate in each pass.
//!
//! `cargo bench -p aqs-zookeeper --bench curator`; `AQS_ZK_BENCH_QUICK=1` runs every cell once,
//! briefly (CI uses it to prove the benchmark runs). The report is `docs/bench-zookeeper.md`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqs_zookeeper::server::TestServer;
use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Mutex, Semaphore};

struct Cell {
    name: &'static str,
    recipe: &'static str,
    clients: usize,
    permits: u32,
}

const CELLS: [Cell; 4] = [
    Cell {
        name: "mutex, uncontended",
        recipe: "mutex",
        clients: 1,
        permits: 1,
    },
    Cell {
        name: "semaphore, uncontended",
        recipe: "semaphore",
        clients: 1,
        permits: 4,
    },
    Cell {
        name: "mutex, 8 clients",
        recipe: "mutex",
        clients: 8,
        permits: 1,
    },
    Cell {
        name: "semaphore of 4, 32 clients",
        recipe: "semaphore",
        clients: 32,
        permits: 4,
    },
];

/// One side's measured window.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    acquisitions: f64,
    elapsed: f64,
    cpu: f64,
    median_cycle: f64,
    p99_cycle: f64,
    requests: f64,
    watches: f64,
}

impl Sample {
    fn per_sec(&self) -> f64 {
        self.acquisitions / self.elapsed
    }
    fn cpu_us(&self) -> f64 {
        self.cpu / self.acquisitions * 1e6
    }
    fn req(&self) -> f64 {
        self.requests / self.acquisitions
    }
    fn watch(&self) -> f64 {
        self.watches / self.acquisitions
    }
}

/// The server's request and watch-notification counters.
fn counters(s: &TestServer) -> (f64, f64) {
    let m = s.four_letter("mntr").expect("mntr");
    let get = |k: &str| -> f64 {
        m.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0.0)
    };
    let watches = ["created", "deleted", "changed", "children"]
        .iter()
        .map(|w| get(&format!("zk_sum_node_{w}_watch_count\t")))
        .sum();
    (get("zk_packets_received\t"), watches)
}

/// This process's CPU time (user + system), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of stat(5); after the name, 12 and 13 (0-based 11, 12).
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)].as_secs_f64()
}

enum Handle {
    Mutex(Mutex),
    Semaphore(Semaphore),
}

impl Handle {
    async fn cycle(&self) {
        match self {
            Handle::Mutex(m) => m.acquire().await.unwrap().release().await.unwrap(),
            Handle::Semaphore(s) => s.acquire().await.unwrap().release().await.unwrap(),
        }
    }
}

/// Every client loops acquire + release until `dur` has passed; each cycle's duration.
async fn phase(handles: &[Arc<Handle>], dur: Duration) -> Vec<Duration> {
    let deadline = Instant::now() + dur;
    let tasks: Vec<_> = handles
        .iter()
        .map(|h| {
            let h = h.clone();
            tokio::spawn(async move {
                let mut d = Vec::new();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    h.cycle().await;
                    d.push(t0.elapsed());
                }
                d
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

async fn run_aqs(s: &TestServer, cell: &Cell, path: &str, warm: Duration, run: Duration) -> Sample {
    let mut handles = Vec::new();
    for _ in 0..cell.clients {
        let c = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&s.addr().to_string())
            .await
            .unwrap();
        handles.push(Arc::new(match cell.recipe {
            "mutex" => Handle::Mutex(Mutex::new(c, path).unwrap()),
            _ => Handle::Semaphore(Semaphore::new(c, path, cell.permits).unwrap()),
        }));
    }
    phase(&handles, warm).await;
    let (req0, w0) = counters(s);
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let mut d = phase(&handles, run).await;
    let (elapsed, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let (req1, w1) = counters(s);
    d.sort();
    Sample {
        acquisitions: d.len() as f64,
        elapsed,
        cpu,
        median_cycle: quantile(&d, 0.5),
        p99_cycle: quantile(&d, 0.99),
        requests: req1 - req0,
        watches: w1 - w0,
    }
}

fn run_curator(
    s: &TestServer,
    classes: &Path,
    cell: &Cell,
    path: &str,
    warm: Duration,
    run: Duration,
) -> Sample {
    let cp = format!(
        "{}:{}",
        classes.display(),
        aqs_zookeeper::server::DEFAULT_CLASSPATH
    );
    let mut child = Command::new("java")
        .args([
            "-cp",
            &cp,
            "CuratorBench",
            &s.addr().to_string(),
            cell.recipe,
            path,
        ])
        .arg(cell.clients.to_string())
        .arg(cell.permits.to_string())
        .arg(warm.as_millis().to_string())
        .arg(run.as_millis().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("java");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(out.next().unwrap().unwrap(), "warm");
    let (req0, w0) = counters(s);
    writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    let line = out.next().expect("a result line").unwrap();
    let (req1, w1) = counters(s);
    child.wait().unwrap();
    let f: Vec<f64> = line
        .strip_prefix("result ")
        .expect("result")
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    Sample {
        acquisitions: f[0],
        elapsed: f[1] / 1e9,
        cpu: f[2] / 1e9,
        median_cycle: f[3] / 1e9,
        p99_cycle: f[4] / 1e9,
        requests: req1 - req0,
        watches: w1 - w0,
    }
}

fn compile_java() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aqs-zk-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new("javac")
        .args([
            "-Xlint:all,-path",
            "-Werror",
            "-cp",
            aqs_zookeeper::server::DEFAULT_CLASSPATH,
            "-d",
        ])
        .arg(&dir)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/java/CuratorBench.java"
        ))
        .status()
        .expect("javac");
    assert!(status.success(), "javac failed");
    dir
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::var("AQS_ZK_BENCH_QUICK").is_ok_and(|v| v != "0");
    let (passes, warm, run) = if quick {
        (1, Duration::from_millis(300), Duration::from_millis(700))
    } else {
        (3, Duration::from_secs(2), Duration::from_secs(5))
    };
    let server = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let classes = compile_java();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut results: Vec<(Vec<Sample>, Vec<Sample>)> =
        CELLS.iter().map(|_| (vec![], vec![])).collect();
    for pass in 0..passes {
        for (i, cell) in CELLS.iter().enumerate() {
            // Alternate which side goes first, so neither always runs on a warmer server.
            let sides: [bool; 2] = if pass % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for aqs in sides {
                let path = format!(
                    "/bench/p{pass}/c{i}/{}",
                    if aqs { "aqs" } else { "curator" }
                );
                let s = if aqs {
                    rt.block_on(run_aqs(&server, cell, &path, warm, run))
                } else {
                    run_curator(&server, &classes, cell, &path, warm, run)
                };
                eprintln!(
                    "pass {pass} {:<28} {:<7} {:>8.0}/s  median {:>7.0} µs  cpu {:>6.0} µs  req {:.2}  watch {:.2}",
                    cell.name,
                    if aqs { "aqs" } else { "curator" },
                    s.per_sec(),
                    s.median_cycle * 1e6,
                    s.cpu_us(),
                    s.req(),
                    s.watch()
                );
                if aqs {
                    results[i].0.push(s)
                } else {
                    results[i].1.push(s)
                }
            }
        }
    }
    println!("| cell | side | acquire+release /s | median cycle µs | p99 cycle µs | client CPU µs/acq | requests/acq | watch notifications/acq |");
    println!("|---|---|---|---|---|---|---|---|");
    for (cell, (a, c)) in CELLS.iter().zip(&results) {
        let row = |side: &str, v: &[Sample]| {
            println!(
                "| {} | {side} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} |",
                cell.name,
                median(v.iter().map(Sample::per_sec).collect()),
                median(v.iter().map(|s| s.median_cycle * 1e6).collect()),
                median(v.iter().map(|s| s.p99_cycle * 1e6).collect()),
                median(v.iter().map(Sample::cpu_us).collect()),
                median(v.iter().map(Sample::req).collect()),
                median(v.iter().map(Sample::watch).collect()),
            )
        };
        row("aqs-zookeeper", a);
        row("Curator 5.4", c);
        // Every ratio reads "how many times better aqs is": aqs ÷ Curator for throughput,
        // Curator ÷ aqs for times, CPU and counts. "=" marks two zeros.
        let better = |f: &dyn Fn(&Sample) -> f64, higher_is_better: bool| {
            let (x, y) = (
                median(a.iter().map(f).collect()),
                median(c.iter().map(f).collect()),
            );
            let (num, den) = if higher_is_better { (x, y) } else { (y, x) };
            if num == 0.0 && den == 0.0 {
                "=".to_owned()
            } else if den == 0.0 {
                "none for aqs".to_owned()
            } else {
                format!("{:.2}x", num / den)
            }
        };
        println!(
            "| {} | **aqs's advantage** | **{}** | {} | {} | {} | {} | {} |",
            cell.name,
            better(&Sample::per_sec, true),
            better(&|s| s.median_cycle, false),
            better(&|s| s.p99_cycle, false),
            better(&Sample::cpu_us, false),
            better(&Sample::req, false),
            better(&Sample::watch, false),
        );
    }
}
