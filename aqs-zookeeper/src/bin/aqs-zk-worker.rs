//! The fault tests' worker process (not part of the library's API): tasks that take a
//! cluster-wide `Mutex` or `Semaphore` over and over and log every entry and exit, for the
//! checker in `aqs_test_servers::checker`.
//!
//! Usage: `aqs-zk-worker <hosts> <mutex|semaphore> <path> <limit> <tasks> <hold ms> <run secs,
//! 0 = until killed> <log file> <session ms>`.
//!
//! Each task has its own handle (as a separate client would) and loops: acquire, log
//! `enter`, hold, log `exit`, release. Log lines, one `write` each to a file opened with
//! `O_APPEND`, so that the file's order is an order in real time:
//! - `enter <who> <token> <node>` after a grant;
//! - `exit <who> <token> <node>` before the release is sent;
//! - `lost <who> <token> <node>` as soon as the hold reports `lost()`; the task then stops;
//! - `error <who> <message>` when an acquire or release fails; the task stops and the process
//!   exits with status 1.
//!
//! `who` is `<pid>-<task>` and `token` the hold's `fencing_token()`. The process prints `ready`
//! on stdout once connected, and exits with status 0 when every task has stopped without error.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Error, Mutex, MutexGuard, Permit, Semaphore};

/// The shared log file.
struct Log(File);

impl Log {
    fn line(&self, s: &str) {
        // One write per line: with O_APPEND it lands whole, after every earlier line of every
        // process.
        (&self.0)
            .write_all(format!("{s}\n").as_bytes())
            .expect("write the log");
    }
}

/// A task's handle on the recipe under test.
enum Handle {
    Mutex(Mutex),
    Semaphore(Semaphore),
}

/// A grant from a [`Handle`].
enum Held {
    Mutex(MutexGuard),
    Permit(Permit),
}

impl Handle {
    async fn acquire(&self) -> Result<Held, Error> {
        match self {
            Handle::Mutex(m) => m.acquire().await.map(Held::Mutex),
            Handle::Semaphore(s) => s.acquire().await.map(Held::Permit),
        }
    }
}

impl Held {
    /// The hold's fencing token and node, as logged.
    fn id(&self) -> (i64, &str) {
        match self {
            Held::Mutex(g) => (g.fencing_token(), g.node_path()),
            Held::Permit(p) => (p.fencing_token(), p.node_path()),
        }
    }

    async fn lost(&self) {
        match self {
            Held::Mutex(g) => g.lost().await,
            Held::Permit(p) => p.lost().await,
        }
    }

    async fn release(self) -> Result<(), Error> {
        match self {
            Held::Mutex(g) => g.release().await,
            Held::Permit(p) => p.release().await,
        }
    }
}

fn arg<T: std::str::FromStr>(a: &[String], i: usize, what: &str) -> T {
    a[i].parse()
        .unwrap_or_else(|_| panic!("argument {i} ({what}) is not valid: {:?}", a[i]))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a: Vec<String> = std::env::args().collect();
    assert_eq!(a.len(), 10, "usage: see the module docs of aqs-zk-worker");
    let (hosts, recipe, path) = (&a[1], a[2].as_str(), a[3].clone());
    assert!(
        recipe == "mutex" || recipe == "semaphore",
        "unknown recipe {recipe:?}"
    );
    let limit: u32 = arg(&a, 4, "limit");
    let tasks: usize = arg(&a, 5, "tasks");
    let hold = Duration::from_millis(arg(&a, 6, "hold ms"));
    let run: u64 = arg(&a, 7, "run secs");
    let log = Arc::new(Log(OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a[8])
        .expect("open the log")));
    let session = Duration::from_millis(arg(&a, 9, "session ms"));
    let until = (run > 0).then(|| Instant::now() + Duration::from_secs(run));
    // Bounded, so that a worker that cannot connect fails instead of hanging its test.
    let client = tokio::time::timeout(
        Duration::from_secs(30),
        zk::Client::connector()
            .with_session_timeout(session)
            .connect(hosts),
    )
    .await
    .expect("connect within 30 s")
    .expect("connect");
    println!("ready");
    let mut handles = Vec::new();
    for t in 0..tasks {
        let who = format!("{}-{t}", std::process::id());
        let handle = if recipe == "mutex" {
            Handle::Mutex(Mutex::new(client.clone(), &path).expect("mutex"))
        } else {
            Handle::Semaphore(Semaphore::new(client.clone(), &path, limit).expect("semaphore"))
        };
        let log = log.clone();
        handles.push(tokio::spawn(async move {
            while until.is_none_or(|u| Instant::now() < u) {
                let held = match handle.acquire().await {
                    Ok(h) => h,
                    Err(e) => {
                        log.line(&format!("error {who} acquire: {e}"));
                        return false;
                    }
                };
                let (token, node) = held.id();
                let id = format!("{who} {token} {node}");
                log.line(&format!("enter {id}"));
                let lost = tokio::select! {
                    _ = tokio::time::sleep(hold) => false,
                    _ = held.lost() => true,
                };
                if lost {
                    log.line(&format!("lost {id}"));
                    // The hold is over for this task; deleting its node (if the session still
                    // has it) is only tidying, bounded so the process can exit.
                    let _ = tokio::time::timeout(session, held.release()).await;
                    return true;
                }
                log.line(&format!("exit {id}"));
                if let Err(e) = held.release().await {
                    log.line(&format!("error {who} release: {e}"));
                    return false;
                }
            }
            true
        }));
    }
    let mut ok = true;
    for h in handles {
        ok &= h.await.expect("a task panicked");
    }
    std::process::exit(if ok { 0 } else { 1 });
}
