//! `Mutex` side by side with the server's own lock service (`v3lock` `Lock`/`Unlock`, called
//! through the same Rust client) on one private etcd: acquire + release per second, uncontended
//! and with clients handing off, medians over passes, and KV requests and watch events per
//! acquisition from the server's own counters. `cargo bench -p aqs-etcd --bench v3lock`;
//! `AQS_ETCD_BENCH_QUICK=1` runs one short pass (proves it runs). Results: `docs/etcd.md`.

use std::time::{Duration, Instant};

use aqs_etcd::etcd_client::{Client, LockOptions};
use aqs_etcd::{Mutex, Session};
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

/// One pass: `clients` tasks, each doing `per_client` acquire + release; returns acquisitions
/// per second and the per-acquisition counters.
async fn pass(
    server: &TestServer,
    ours: bool,
    clients: usize,
    per_client: usize,
    name: &str,
) -> (f64, f64, f64) {
    let mut handles = Vec::new();
    let mut sessions = Vec::new();
    for _ in 0..clients {
        let c = Client::connect([server.endpoint()], None).await.unwrap();
        let s = Session::new(c.clone(), Duration::from_secs(10))
            .await
            .unwrap();
        sessions.push((c, s));
    }
    let before = counters(server);
    let t0 = Instant::now();
    for (c, s) in &sessions {
        let (c, s, name) = (c.clone(), s.clone(), name.to_owned());
        handles.push(tokio::spawn(async move {
            if ours {
                let m = Mutex::new(&s, &name).unwrap();
                for _ in 0..per_client {
                    m.lock().await.unwrap().release().await.unwrap();
                }
            } else {
                let mut locks = c.lock_client();
                let opts = LockOptions::new().with_lease(s.lease_id());
                for _ in 0..per_client {
                    let held = locks.lock(name.as_str(), Some(opts.clone())).await.unwrap();
                    locks.unlock(held.key().to_vec()).await.unwrap();
                }
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let dt = t0.elapsed().as_secs_f64();
    let after = counters(server);
    let n = (clients * per_client) as f64;
    let reqs = (after.kv - before.kv + after.lock_rpcs - before.lock_rpcs) / n;
    (n / dt, reqs, (after.events - before.events) / n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::var_os("AQS_ETCD_BENCH_QUICK").is_some();
    let (passes, per) = if quick { (1, 5) } else { (3, 200) };
    let server = TestServer::start(Duration::from_secs(30)).expect("etcd must start");
    println!("| acquire + release | clients | aqs-etcd Mutex | v3lock service | requests/acq (ours, v3lock) | watch events/acq (ours, v3lock) |");
    println!("|---|---|---|---|---|---|");
    for clients in [1usize, 8, 32] {
        let per_client = (per / clients).max(2);
        let mut rows = [Vec::new(), Vec::new()];
        let mut reqs = [0.0; 2];
        let mut events = [0.0; 2];
        for p in 0..passes {
            for (i, ours) in [true, false].into_iter().enumerate() {
                let name = format!("/bench/{clients}/{p}/{i}");
                let (rate, r, e) = pass(&server, ours, clients, per_client, &name).await;
                rows[i].push(rate);
                reqs[i] = r;
                events[i] = e;
            }
        }
        println!(
            "| {} | {clients} | {:.0}/s | {:.0}/s | {:.2}, {:.2} | {:.2}, {:.2} |",
            if clients == 1 {
                "uncontended"
            } else {
                "handing off"
            },
            median(rows[0].clone()),
            median(rows[1].clone()),
            reqs[0],
            reqs[1],
            events[0],
            events[1]
        );
    }
}
