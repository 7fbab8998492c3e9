//! The fault tests' worker process (not part of the library's API): tasks that take a
//! cluster-wide `Mutex` or `Semaphore` over and over and log every entry and exit.
//!
//! Usage: `aqs-zk-worker <hosts> <mutex|semaphore> <path> <limit> <tasks> <hold ms> <run secs,
//! 0 = until killed> <log file> <session ms>`.
//!
//! Log lines, one `write` each to a file opened for appending, so that the file's order is an
//! order in real time: `enter <who> <token> <node>` after a grant, `exit <who> <token> <node>`
//! before the release is sent, `lost <who> <token> <node>` when a hold is known lost, and
//! `error <who> <message>` when an acquire fails. `who` is `<pid>-<task>`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Mutex, Semaphore};

struct Log(File);

impl Log {
    fn line(&self, s: String) {
        // One write per line: O_APPEND makes it land whole, after every earlier line.
        (&self.0)
            .write_all(format!("{s}\n").as_bytes())
            .expect("log write");
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a: Vec<String> = std::env::args().collect();
    assert_eq!(a.len(), 10, "usage: see the module docs");
    let (hosts, recipe, path) = (a[1].clone(), a[2].clone(), a[3].clone());
    let limit: u32 = a[4].parse().unwrap();
    let tasks: usize = a[5].parse().unwrap();
    let hold = Duration::from_millis(a[6].parse().unwrap());
    let run: u64 = a[7].parse().unwrap();
    let log = Arc::new(Log(OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a[8])
        .expect("open the log")));
    let session = Duration::from_millis(a[9].parse().unwrap());
    let until = (run > 0).then(|| Instant::now() + Duration::from_secs(run));
    let client = zk::Client::connector()
        .with_session_timeout(session)
        .connect(&hosts)
        .await
        .expect("connect");
    println!("ready");
    let mut handles = Vec::new();
    for t in 0..tasks {
        let who = format!("{}-{t}", std::process::id());
        let (client, recipe, path, log) =
            (client.clone(), recipe.clone(), path.clone(), log.clone());
        handles.push(tokio::spawn(async move {
            let mutex = Mutex::new(client.clone(), &path).unwrap();
            let semaphore = Semaphore::new(client, &path, limit).unwrap();
            while until.is_none_or(|u| Instant::now() < u) {
                let held = if recipe == "mutex" {
                    mutex.acquire().await.map(Held::Mutex)
                } else {
                    semaphore.acquire().await.map(Held::Permit)
                };
                let held = match held {
                    Ok(h) => h,
                    Err(e) => {
                        log.line(format!("error {who} {e}"));
                        return;
                    }
                };
                let (token, node) = held.id();
                log.line(format!("enter {who} {token} {node}"));
                let lost = tokio::select! {
                    _ = tokio::time::sleep(hold) => false,
                    _ = held.lost() => true,
                };
                if lost {
                    log.line(format!("lost {who} {token} {node}"));
                    return;
                }
                log.line(format!("exit {who} {token} {node}"));
                if let Err(e) = held.release().await {
                    log.line(format!("error {who} release: {e}"));
                    return;
                }
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
}

enum Held {
    Mutex(aqs_zookeeper::MutexGuard),
    Permit(aqs_zookeeper::Permit),
}

impl Held {
    fn id(&self) -> (i64, String) {
        match self {
            Held::Mutex(g) => (g.fencing_token(), g.node_path().to_owned()),
            Held::Permit(p) => (p.fencing_token(), p.node_path().to_owned()),
        }
    }

    async fn release(self) -> Result<(), aqs_zookeeper::Error> {
        match self {
            Held::Mutex(g) => g.release().await,
            Held::Permit(p) => p.release().await,
        }
    }

    async fn lost(&self) {
        match self {
            Held::Mutex(g) => g.lost().await,
            Held::Permit(p) => p.lost().await,
        }
    }
}
