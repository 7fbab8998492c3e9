//! `Mutex` side by side with the server's own lock service (`v3lock` `Lock`/`Unlock`, called
//! through the same Rust client) and with etcd's Go recipe (`clientv3/concurrency.Mutex`, what
//! `etcdctl lock` runs, in the Go program `benches/go/etcdmutex`) on one private etcd, and
//! `Semaphore` of 4 with 32 clients with and without holds. Per row: acquisitions per second,
//! hand-off latency (from a holder's release call to the next holder's grant, p50 and p99), the
//! client process's CPU time per acquisition, and KV requests and watch events per acquisition
//! from the server's own counters; medians over passes, the mutex sides rotating which goes
//! first.
//!
//! `cargo bench -p aqs-etcd --bench v3lock`; `AQS_ETCD_BENCH_PASSES=n` sets the passes (3);
//! `AQS_ETCD_BENCH_QUICK=1` runs one short pass (proves it runs). The Go side needs `go` and
//! the etcd 3.4 client's sources in GOPATH mode (Debian: `golang-go`, `golang-etcd-server-dev`;
//! `AQS_GOPATH` overrides `/usr/share/gocode`); without them its columns say `NaN` and the
//! reason is printed. Results: `docs/etcd.md`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use aqs_etcd::etcd_client::{Client, LockOptions};
use aqs_etcd::{Mutex, Semaphore, Session};
use aqs_test_servers::etcd::TestServer;

struct Counters {
    kv: f64,
    lock_rpcs: f64,
    events: f64,
}

fn counters(server: &TestServer) -> Counters {
    let sum = |name: &str, labels: &[&str]| server.metric_sum(name, labels).unwrap();
    Counters {
        kv: sum(
            "grpc_server_handled_total",
            &["grpc_service=\"etcdserverpb.KV\""],
        ),
        lock_rpcs: sum(
            "grpc_server_handled_total",
            &["grpc_service=\"v3lockpb.Lock\""],
        ),
        events: sum("etcd_debugging_mvcc_events_total", &[]),
    }
}

/// This process's user + system CPU time, from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with the last ')'): utime is the 12th, stime the
    // 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// `aqs_etcd::Mutex`.
    Mutex,
    /// The server's `Lock`/`Unlock`.
    V3lock,
    /// etcd's Go `concurrency.Mutex`, in a process of its own.
    Go,
    /// `aqs_etcd::Semaphore` of 4, holding each permit this long.
    Semaphore(Duration),
}

/// What one pass measured.
struct Pass {
    rate: f64,
    requests: f64,
    events: f64,
    cpu_us: f64,
    /// Hand-off latencies in µs: release call to the next grant, when someone was waiting.
    handoffs: Vec<f64>,
}

/// One pass: `clients` tasks, each doing `per_client` acquire, hold, release.
async fn pass(
    server: &TestServer,
    side: Side,
    clients: usize,
    per_client: usize,
    name: &str,
) -> Pass {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        let c = Client::connect([server.endpoint()], None).await.unwrap();
        let s = Session::new(c.clone(), Duration::from_secs(10))
            .await
            .unwrap();
        sessions.push((c, s));
    }
    // The instant of the latest release call, and how many are waiting or holding: a grant
    // that follows a release while others wait is a hand-off.
    let last_release: Arc<StdMutex<Option<Instant>>> = Arc::default();
    let handoffs: Arc<StdMutex<Vec<f64>>> = Arc::default();
    let before = counters(server);
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for (c, s) in &sessions {
        let (c, s, name) = (c.clone(), s.clone(), name.to_owned());
        let (last_release, handoffs) = (last_release.clone(), handoffs.clone());
        handles.push(tokio::spawn(async move {
            let granted = |limit_one: bool| {
                if limit_one && clients > 1 {
                    if let Some(r) = *last_release.lock().unwrap() {
                        handoffs
                            .lock()
                            .unwrap()
                            .push(r.elapsed().as_secs_f64() * 1e6);
                    }
                }
            };
            let released = || *last_release.lock().unwrap() = Some(Instant::now());
            match side {
                Side::Mutex => {
                    let m = Mutex::new(&s, &name).unwrap();
                    for _ in 0..per_client {
                        let g = m.lock().await.unwrap();
                        granted(true);
                        released();
                        g.release().await.unwrap();
                    }
                }
                Side::V3lock => {
                    let mut locks = c.lock_client();
                    let opts = LockOptions::new().with_lease(s.lease_id());
                    for _ in 0..per_client {
                        let held = locks.lock(name.as_str(), Some(opts.clone())).await.unwrap();
                        granted(true);
                        released();
                        locks.unlock(held.key().to_vec()).await.unwrap();
                    }
                }
                Side::Go => unreachable!("the Go side runs in go_pass"),
                Side::Semaphore(hold) => {
                    let sem = Semaphore::new(&s, &name, 4).unwrap();
                    for _ in 0..per_client {
                        let p = sem.acquire().await.unwrap();
                        if !hold.is_zero() {
                            tokio::time::sleep(hold).await;
                        }
                        p.release().await.unwrap();
                    }
                }
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let dt = t0.elapsed().as_secs_f64();
    let cpu = cpu_time().saturating_sub(cpu0);
    let after = counters(server);
    for (_, s) in &sessions {
        let _ = s.close().await;
    }
    let n = (clients * per_client) as f64;
    let handoffs = std::mem::take(&mut *handoffs.lock().unwrap());
    Pass {
        rate: n / dt,
        requests: (after.kv - before.kv + after.lock_rpcs - before.lock_rpcs) / n,
        events: (after.events - before.events) / n,
        cpu_us: cpu.as_secs_f64() * 1e6 / n,
        handoffs,
    }
}

/// One pass of the Go side: the program opens its clients and sessions, reports `ready`, and
/// runs only when told, so the server's counters cover the lock work alone.
fn go_pass(server: &TestServer, bin: &Path, clients: usize, per_client: usize, name: &str) -> Pass {
    let mut child = Command::new(bin)
        .arg(server.endpoint())
        .arg(name)
        .arg(clients.to_string())
        .arg(per_client.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the Go side");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().expect("the Go side's output").unwrap();
    assert_eq!(next(), "ready");
    let before = counters(server);
    writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    let line = next();
    let after = counters(server);
    assert!(child.wait().unwrap().success(), "the Go side failed");
    let f: Vec<f64> = line
        .strip_prefix("result ")
        .unwrap_or_else(|| panic!("the Go side said {line:?}"))
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    let n = (clients * per_client) as f64;
    Pass {
        rate: f[0],
        requests: (after.kv - before.kv) / n,
        events: (after.events - before.events) / n,
        cpu_us: f[1],
        handoffs: f[2..].to_vec(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn p99(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

/// Medians over passes of one side's row cells.
struct Row {
    rate: f64,
    p50: f64,
    p99: f64,
    cpu_us: f64,
    requests: f64,
    events: f64,
    rates: Vec<f64>,
}

fn row(passes: Vec<Pass>) -> Row {
    let rates: Vec<f64> = passes.iter().map(|p| p.rate).collect();
    Row {
        rate: median(rates.clone()),
        p50: median(passes.iter().map(|p| median(p.handoffs.clone())).collect()),
        p99: median(passes.iter().map(|p| p99(p.handoffs.clone())).collect()),
        cpu_us: median(passes.iter().map(|p| p.cpu_us).collect()),
        requests: median(passes.iter().map(|p| p.requests).collect()),
        events: median(passes.iter().map(|p| p.events).collect()),
        rates,
    }
}

fn fmt_rates(v: &[f64]) -> String {
    v.iter()
        .map(|r| format!("{r:.0}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::var_os("AQS_ETCD_BENCH_QUICK").is_some();
    let passes: usize = std::env::var("AQS_ETCD_BENCH_PASSES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3);
    let (passes, per) = if quick { (1, 8) } else { (passes.max(1), 200) };
    let server = TestServer::start(Duration::from_secs(30)).expect("etcd must start");
    let go = aqs_test_servers::golang::build(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/go/etcdmutex"),
        "etcdmutex",
        Path::new(env!("CARGO_TARGET_TMPDIR")),
    );
    if let Err(why) = &go {
        println!("The Go side is left out: {why}\n");
    }
    println!(
        "Mutex against the server's v3lock service and etcd's Go recipe (hand-off: release call \
         to next grant, µs):\n"
    );
    println!("| clients | acq/s aqs | v3lock | Go | aqs/v3lock | aqs/Go | hand-off p50 aqs | v3lock | Go | hand-off p99 aqs | v3lock | Go | client CPU µs/acq aqs | v3lock | Go | requests/acq aqs | v3lock RPCs | Go | watch events/acq aqs | v3lock | Go | acq/s per pass aqs; v3lock; Go |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for clients in [1usize, 8, 32] {
        let per_client = (per / clients).max(2);
        let mut sides = [Vec::new(), Vec::new(), Vec::new()];
        for p in 0..passes {
            // Rotate which side goes first.
            for k in 0..3 {
                let i = (p + k) % 3;
                let name = format!("/bench/{clients}/{p}/{i}");
                let pass = match ([Side::Mutex, Side::V3lock, Side::Go][i], &go) {
                    (Side::Go, Ok(bin)) => go_pass(&server, bin, clients, per_client, &name),
                    (Side::Go, Err(_)) => continue,
                    (side, _) => pass(&server, side, clients, per_client, &name).await,
                };
                sides[i].push(pass);
            }
        }
        let [a, b, g] = sides.map(row);
        println!(
            "| {clients} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {}; {}; {} |",
            a.rate, b.rate, g.rate, a.rate / b.rate, a.rate / g.rate, a.p50, b.p50, g.p50,
            a.p99, b.p99, g.p99, a.cpu_us, b.cpu_us, g.cpu_us, a.requests, b.requests,
            g.requests, a.events, b.events, g.events, fmt_rates(&a.rates), fmt_rates(&b.rates),
            fmt_rates(&g.rates)
        );
    }
    println!("\nSemaphore of 4, 32 clients (no peer on etcd):\n");
    println!(
        "| hold | acq/s | client CPU µs/acq | requests/acq | watch events/acq | acq/s per pass |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    for hold in [Duration::ZERO, Duration::from_millis(10)] {
        let clients = 32;
        let per_client = (per / clients).max(2);
        let mut runs = Vec::new();
        for p in 0..passes {
            let name = format!("/bench/sem/{}/{p}", hold.as_millis());
            runs.push(pass(&server, Side::Semaphore(hold), clients, per_client, &name).await);
        }
        let r = row(runs);
        println!(
            "| {} ms | {:.0} | {:.0} | {:.2} | {:.2} | {} |",
            hold.as_millis(),
            r.rate,
            r.cpu_us,
            r.requests,
            r.events,
            fmt_rates(&r.rates)
        );
    }
}
