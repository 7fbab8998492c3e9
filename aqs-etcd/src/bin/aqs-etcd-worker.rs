//! The fault tests' worker process (not part of the library's API). Two modes:
//!
//! - `aqs-etcd-worker hold <endpoint> <name> <ttl secs>`: takes a `Mutex` and holds it until
//!   killed; prints `held <key> <token>` once it holds, and exits with an error when it learns
//!   the hold is lost.
//! - `aqs-etcd-worker loop <endpoint> <mutex|semaphore> <name> <limit> <tasks> <hold ms> <run
//!   secs, 0 = until killed> <log file> <ttl secs>`: tasks that take a `Mutex` or a `Semaphore`
//!   over and over and log every entry and exit for the checker in `aqs_test_servers::checker`.
//!
//! In the loop mode each task has its own session (a lease: one session holds at most one key
//! per name) on the process's one client, and loops: acquire, log `enter`, hold, log `exit`,
//! release. Log lines, one `write` each to a file opened with `O_APPEND`, so that the file's
//! order is an order in real time:
//! - `enter <who> <token> <key>` after a grant;
//! - `exit <who> <token> <key>` before the release is sent;
//! - `lost <who> <token> <key>` as soon as the hold reports `lost()`; the task then stops;
//! - `error <who> <message>` when an acquire or release fails; the task stops and the process
//!   exits with status 1.
//!
//! `who` is `<pid>-<task>` and `token` the hold's `token()`. The process prints `ready` on
//! stdout once every session is open, and exits with status 0 when every task has stopped
//! without error.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqs_etcd::etcd_client::Client;
use aqs_etcd::{Error, Mutex, MutexGuard, Permit, Semaphore, Session};

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
            Handle::Mutex(m) => m.lock().await.map(Held::Mutex),
            Handle::Semaphore(s) => s.acquire().await.map(Held::Permit),
        }
    }
}

impl Held {
    /// The hold's token and key, as logged.
    fn id(&self) -> (i64, &str) {
        match self {
            Held::Mutex(g) => (g.token(), g.key()),
            Held::Permit(p) => (p.token(), p.key()),
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

/// Connects within 30 s, so that a worker that cannot connect fails instead of hanging its test.
async fn connect(endpoint: &str) -> Client {
    tokio::time::timeout(Duration::from_secs(30), Client::connect([endpoint], None))
        .await
        .expect("connect within 30 s")
        .expect("connect")
}

async fn session(client: &Client, ttl: Duration) -> Session {
    tokio::time::timeout(Duration::from_secs(30), Session::new(client.clone(), ttl))
        .await
        .expect("a session within 30 s")
        .expect("a session")
}

/// `hold` mode: one `Mutex`, held until the process dies or learns of loss.
async fn hold(a: &[String]) {
    let [endpoint, name, _] = a else {
        panic!("usage: aqs-etcd-worker hold <endpoint> <name> <ttl secs>");
    };
    let client = connect(endpoint).await;
    let s = session(&client, Duration::from_secs(arg(a, 2, "ttl secs"))).await;
    let guard = Mutex::new(&s, name)
        .expect("a mutex")
        .lock()
        .await
        .expect("lock");
    println!("held {} {}", guard.key(), guard.token());
    guard.lost().await;
    eprintln!("lost");
    std::process::exit(1);
}

/// `loop` mode: see the module docs.
async fn contend(a: &[String]) {
    assert_eq!(a.len(), 9, "usage: see the module docs of aqs-etcd-worker");
    let (endpoint, recipe, name) = (&a[0], a[1].as_str(), a[2].clone());
    assert!(
        recipe == "mutex" || recipe == "semaphore",
        "unknown recipe {recipe:?}"
    );
    let limit: u32 = arg(a, 3, "limit");
    let tasks: usize = arg(a, 4, "tasks");
    let hold = Duration::from_millis(arg(a, 5, "hold ms"));
    let run: u64 = arg(a, 6, "run secs");
    let log = Arc::new(Log(OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a[7])
        .expect("open the log")));
    let ttl = Duration::from_secs(arg(a, 8, "ttl secs"));
    let client = connect(endpoint).await;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let s = session(&client, ttl).await;
        let handle = if recipe == "mutex" {
            Handle::Mutex(Mutex::new(&s, &name).expect("a mutex"))
        } else {
            Handle::Semaphore(Semaphore::new(&s, &name, limit).expect("a semaphore"))
        };
        handles.push((format!("{}-{t}", std::process::id()), s, handle));
    }
    println!("ready");
    let until = (run > 0).then(|| Instant::now() + Duration::from_secs(run));
    let mut tasks = Vec::new();
    for (who, session, handle) in handles {
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            while until.is_none_or(|u| Instant::now() < u) {
                let held = match handle.acquire().await {
                    Ok(h) => h,
                    Err(e) => {
                        log.line(&format!("error {who} acquire: {e}"));
                        return false;
                    }
                };
                let (token, key) = held.id();
                let id = format!("{who} {token} {key}");
                log.line(&format!("enter {id}"));
                let lost = tokio::select! {
                    _ = tokio::time::sleep(hold) => false,
                    _ = held.lost() => true,
                };
                if lost {
                    log.line(&format!("lost {id}"));
                    // The hold is over for this task; the lease is gone or going, so there is
                    // nothing to release.
                    return true;
                }
                log.line(&format!("exit {id}"));
                if let Err(e) = held.release().await {
                    log.line(&format!("error {who} release: {e}"));
                    return false;
                }
            }
            // Revokes the lease: nothing of this task outlives the process.
            let _ = session.close().await;
            true
        }));
    }
    let mut ok = true;
    for t in tasks {
        ok &= t.await.expect("a task panicked");
    }
    std::process::exit(if ok { 0 } else { 1 });
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    match a.first().map(String::as_str) {
        Some("hold") => hold(&a[1..]).await,
        Some("loop") => contend(&a[1..]).await,
        _ => panic!("usage: aqs-etcd-worker hold ... | loop ... (see the module docs)"),
    }
}
