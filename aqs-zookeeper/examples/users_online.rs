//! At most N users online across a cluster: several worker processes, one limit.
//!
//! Each worker process (this program run with `worker`) serves simulated users; a user may be
//! online only while it holds a permit of one cluster-wide `Semaphore`. The coordinator starts
//! the workers, samples the lease nodes in ZooKeeper while they run, and checks that the
//! cluster never had more than the limit online.
//!
//! ```sh
//! /usr/share/zookeeper/bin/zkServer.sh start-foreground   # Debian's zookeeper package, port 2181
//! cargo run -p aqs-zookeeper --example users_online -- 127.0.0.1:2181
//! ```
//! With no address it starts a throwaway ZooKeeper from the same package itself.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use aqs_test_servers::zookeeper::TestServer;
use aqs_zookeeper::blocking::{Semaphore, Session};

const PATH: &str = "/example/users-online";
const LIMIT: u32 = 5;
const WORKERS: usize = 3;
const USERS_PER_WORKER: usize = 6;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("worker") {
        return worker(&args[2], &args[3]);
    }
    let local;
    let hosts = match args.get(1) {
        Some(h) => h.clone(),
        None => {
            local = TestServer::start(Duration::from_secs(60))?;
            local.addr().to_string()
        }
    };
    let workers: Vec<Child> = (0..WORKERS)
        .map(|i| {
            Command::new(std::env::current_exe()?)
                .args(["worker", &hosts, &i.to_string()])
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let peak = watch_leases(&hosts, workers)?;
    // The lease nodes are the users online plus, at most, the one first in line: it creates its
    // node before it may count it, as in Curator.
    println!("peak lease nodes across {WORKERS} processes: {peak} (limit {LIMIT}, plus 1 in line)");
    assert!(
        peak <= LIMIT as usize + 1,
        "the cluster-wide limit was exceeded"
    );
    Ok(())
}

/// Samples the number of lease nodes until every worker exited; returns the largest seen.
fn watch_leases(hosts: &str, mut workers: Vec<Child>) -> Result<usize, Box<dyn std::error::Error>> {
    let session = Session::connect_with_timeout(hosts, Duration::from_secs(10))?;
    let leases = format!("{PATH}/leases");
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !workers.is_empty() {
        let client = session.client().clone();
        let leases = leases.clone();
        let n = session.block_on(async move {
            client
                .list_children(&leases)
                .await
                .map(|c| c.len())
                .unwrap_or(0)
        });
        peak = peak.max(n);
        let mut still = Vec::new();
        for mut w in workers {
            match w.try_wait()? {
                Some(status) if status.success() => {}
                Some(status) => return Err(format!("a worker failed: {status}").into()),
                None => still.push(w),
            }
        }
        workers = still;
        if Instant::now() > deadline {
            for mut w in workers {
                let _ = w.kill();
            }
            return Err("the workers did not finish in time".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(peak)
}

/// One process: its users come online one after another, each holding a permit while online.
fn worker(hosts: &str, id: &str) -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::connect_with_timeout(hosts, Duration::from_secs(10))?;
    let online = Semaphore::new(&session, PATH, LIMIT)?;
    let users: Vec<_> = (0..USERS_PER_WORKER)
        .map(|u| {
            let online = online.clone();
            let user = format!("worker{id}/user{u}");
            std::thread::spawn(move || -> Result<(), aqs_zookeeper::Error> {
                match online.try_acquire_for(Duration::from_secs(30))? {
                    Some(permit) => {
                        println!("{user} online (fencing token {})", permit.fencing_token());
                        std::thread::sleep(Duration::from_millis(200));
                        drop(permit); // offline: deletes the lease node
                        println!("{user} offline");
                    }
                    None => println!("{user} turned away: the cluster is full"),
                }
                Ok(())
            })
        })
        .collect();
    for u in users {
        u.join().expect("user thread panicked")?;
    }
    Ok(())
}
