//! Safety under faults, with real processes on a real ZooKeeper: a holder killed with SIGKILL,
//! the server stopped and restarted mid-wait, the server frozen past the session timeout, and
//! 32 worker processes contending for a minute. Workers log every entry and exit; the
//! independent checker (`common/checker.rs`) replays the logs. Every wait is bounded.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aqs_zookeeper::server::TestServer;
use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Error, Mutex};
use common::checker::{check, Report};
use common::{bounded, server, BOUND};

/// Worker processes, killed if the test ends early.
struct Workers {
    children: Vec<Child>,
    log: PathBuf,
}

impl Workers {
    fn new(name: &str) -> Workers {
        let log = std::env::temp_dir().join(format!("aqs-zk-{name}-{}.log", std::process::id()));
        let _ = fs::remove_file(&log);
        Workers {
            children: Vec::new(),
            log,
        }
    }

    /// Starts a worker and waits until it is connected.
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        &mut self,
        s: &TestServer,
        recipe: &str,
        path: &str,
        limit: u32,
        tasks: usize,
        hold_ms: u64,
        run_secs: u64,
        session_ms: u64,
    ) -> u32 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aqs-zk-worker"))
            .args([
                &s.addr().to_string(),
                recipe,
                path,
                &limit.to_string(),
                &tasks.to_string(),
                &hold_ms.to_string(),
                &run_secs.to_string(),
            ])
            .arg(&self.log)
            .arg(session_ms.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the worker");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready", "worker failed to connect");
        let pid = child.id();
        self.children.push(child);
        pid
    }

    /// SIGKILLs the worker `pid` and records it in the log.
    fn kill(&mut self, pid: u32) {
        let i = self.children.iter().position(|c| c.id() == pid).unwrap();
        let mut c = self.children.remove(i);
        c.kill().unwrap();
        c.wait().unwrap();
        self.note(&format!("killed {pid}"));
    }

    fn note(&self, line: &str) {
        let mut f = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log)
            .unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log has a line for which `pred` holds.
    fn wait_line(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(l) = self.log().lines().find(|l| pred(l)) {
                return l.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "never logged: {what}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for every worker to exit, each successfully.
    fn join(&mut self, bound: Duration) {
        let deadline = Instant::now() + bound;
        for mut c in self.children.drain(..) {
            loop {
                if let Some(status) = c.try_wait().unwrap() {
                    assert!(status.success(), "a worker failed: {status}");
                    break;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    panic!("a worker did not finish within {bound:?}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = fs::remove_file(&self.log);
    }
}

async fn connect(s: &TestServer, session: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(session)
        .connect(&s.addr().to_string())
        .await
        .expect("connect")
}

/// Polls until no lock or lease node is left under `path`.
async fn wait_clean(c: &zk::Client, path: &str) {
    bounded("clean-up", async {
        loop {
            let mut left = Vec::new();
            let mut todo = vec![path.to_owned()];
            while let Some(p) = todo.pop() {
                for child in c.list_children(&p).await.unwrap_or_default() {
                    if child.starts_with("_c_") {
                        left.push(child);
                    } else {
                        todo.push(format!("{p}/{child}"));
                    }
                }
            }
            if left.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[test]
fn checker_accepts_a_correct_log_and_refuses_broken_ones() {
    let ok = "enter 1-0 10 n\nexit 1-0 10 n\nenter 2-0 12 n\nexit 2-0 12 n\n";
    assert_eq!(
        check(ok, 1),
        Ok(Report {
            enters: 2,
            exits: 2,
            lost: 0,
            peak: 1
        })
    );
    // Two inside a mutex.
    assert!(check("enter 1-0 10 n\nenter 2-0 12 n\n", 1).is_err());
    // Three inside a semaphore of two; two are fine.
    assert!(check("enter 1-0 1 n\nenter 2-0 2 n\n", 2).is_ok());
    assert!(check("enter 1-0 1 n\nenter 2-0 2 n\nenter 3-0 3 n\n", 2).is_err());
    // Tokens must grow for a mutex.
    assert!(check("enter 1-0 10 n\nexit 1-0 10 n\nenter 2-0 9 n\n", 1).is_err());
    // Leaving without entering, entering twice.
    assert!(check("exit 1-0 10 n\n", 1).is_err());
    assert!(check("enter 1-0 10 n\nenter 1-0 11 n\n", 2).is_err());
    // An overlap with a holder that later learns it lost its hold is forgiven, if the
    // newcomer's token fences it off; with a holder that never learns, it is not.
    assert!(check("enter 1-0 10 n\nenter 2-0 12 n\nlost 1-0 10 n\n", 1).is_ok());
    assert!(check("enter 1-0 10 n\nenter 2-0 9 n\nlost 1-0 10 n\n", 1).is_err());
    assert!(check("enter 1-0 10 n\nenter 2-0 12 n\nexit 1-0 10 n\n", 1).is_err());
    // A killed process's holds end with it.
    assert!(check("enter 7-0 10 n\nkilled 7\nenter 2-0 12 n\n", 1).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_process_loses_its_hold_after_the_session_timeout() {
    let s = server();
    let c = connect(&s, Duration::from_secs(4)).await;
    let mut w = Workers::new("sigkill");
    // The holder would hold for ten minutes; its session times out after two seconds.
    let holder = w.spawn(&s, "mutex", "/faults/kill", 1, 1, 600_000, 0, 2_000);
    w.wait_line("the holder entering", |l| l.starts_with("enter "));
    let waiter = w.spawn(&s, "mutex", "/faults/kill", 1, 1, 50, 3, 2_000);
    w.kill(holder);
    w.wait_line("the waiter entering", |l| {
        l.starts_with(&format!("enter {waiter}-"))
    });
    w.join(BOUND);
    let r = check(&w.log(), 1).unwrap_or_else(|e| panic!("{e}\n{}", w.log()));
    assert!(r.enters >= 2, "{r:?}");
    wait_clean(&c, "/faults/kill").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_within_the_session_timeout_loses_nothing() {
    let mut s = server();
    let session = Duration::from_secs(20);
    let (a, b) = (connect(&s, session).await, connect(&s, session).await);
    let ma = Mutex::new(a.clone(), "/faults/restart").unwrap();
    let held = bounded("holder", ma.acquire()).await.unwrap();
    let mb = Mutex::new(b.clone(), "/faults/restart").unwrap();
    let mut waiter = tokio::spawn(async move { mb.acquire().await.map(|g| (g, mb)) });
    common::wait_children(&b, "/faults/restart", 2).await;
    tokio::task::block_in_place(|| {
        s.stop();
        s.restart(Duration::from_secs(60)).expect("restart");
    });
    // The sessions survived (the server persists them): the holder still holds, the waiter
    // still waits, and the release hands over.
    bounded("reconnect", a.sync("/")).await.unwrap();
    assert!(!held.is_lost());
    assert!(common::still_waiting(&mut waiter, Duration::from_millis(500)).await);
    held.release().await.unwrap();
    let (g, _mb) = bounded("waiter after restart", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(!g.is_lost());
    g.release().await.unwrap();
    wait_clean(&b, "/faults/restart").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_down_past_the_session_timeout_fails_waiters_and_leaves_nothing() {
    let mut s = server();
    let session = Duration::from_secs(2);
    let (a, b) = (connect(&s, session).await, connect(&s, session).await);
    let ma = Mutex::new(a.clone(), "/faults/down").unwrap();
    let held = bounded("holder", ma.acquire()).await.unwrap();
    let mb = Mutex::new(b.clone(), "/faults/down").unwrap();
    let waiter = tokio::spawn(async move { mb.acquire().await.map(|_| ()) });
    common::wait_children(&b, "/faults/down", 2).await;
    tokio::task::block_in_place(|| s.stop());
    // Down for longer than the session timeout: the waiter gets an error, never a grant, and
    // the holder is told it may have lost its hold.
    let r = bounded("the waiter failing", waiter).await.unwrap();
    assert!(matches!(r, Err(Error::SessionLost)), "{r:?}");
    bounded("the holder learning", held.lost()).await;
    tokio::task::block_in_place(|| s.restart(Duration::from_secs(60)).expect("restart"));
    drop(held);
    // Whatever the restarted server did with the old sessions, nothing stays behind.
    let c = connect(&s, Duration::from_secs(4)).await;
    wait_clean(&c, "/faults/down").await;
    let m = Mutex::new(c, "/faults/down").unwrap();
    assert!(bounded("a new client", m.try_acquire_for(BOUND))
        .await
        .unwrap()
        .is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_frozen_past_the_session_timeout_tells_holders_they_lost() {
    let mut s = server();
    let mut w = Workers::new("sigstop");
    let holder = w.spawn(&s, "mutex", "/faults/freeze", 1, 1, 600_000, 0, 2_000);
    w.wait_line("the holder entering", |l| l.starts_with("enter "));
    s.freeze().unwrap();
    // The holder learns within a bound, even while the server is still frozen.
    w.wait_line("the holder learning it lost", |l| {
        l.starts_with(&format!("lost {holder}-"))
    });
    s.thaw();
    let c = connect(&s, Duration::from_secs(4)).await;
    let m = Mutex::new(c.clone(), "/faults/freeze").unwrap();
    let g = bounded("a new holder", m.acquire()).await.unwrap();
    w.note(&format!(
        "enter test-0 {} {}",
        g.fencing_token(),
        g.node_path()
    ));
    w.note(&format!(
        "exit test-0 {} {}",
        g.fencing_token(),
        g.node_path()
    ));
    g.release().await.unwrap();
    w.join(BOUND);
    let r = check(&w.log(), 1).unwrap_or_else(|e| panic!("{e}\n{}", w.log()));
    assert_eq!(r.lost, 1, "{r:?}");
    wait_clean(&c, "/faults/freeze").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_processes_contend_for_a_minute() {
    let secs: u64 = std::env::var("AQS_ZK_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let s = server();
    let (limit, procs, tasks) = (5, 32, 4);
    let mut sem = Workers::new("soak-semaphore");
    let mut mutex = Workers::new("soak-mutex");
    for i in 0..procs {
        if i % 2 == 0 {
            sem.spawn(
                &s,
                "semaphore",
                "/faults/soak/s",
                limit,
                tasks,
                5,
                secs,
                10_000,
            );
        } else {
            mutex.spawn(&s, "mutex", "/faults/soak/m", 1, tasks, 2, secs, 10_000);
        }
    }
    let bound = Duration::from_secs(secs) + BOUND * 3;
    tokio::task::block_in_place(|| {
        sem.join(bound);
        mutex.join(bound);
    });
    let rs = check(&sem.log(), limit as usize).unwrap_or_else(|e| panic!("semaphore: {e}"));
    let rm = check(&mutex.log(), 1).unwrap_or_else(|e| panic!("mutex: {e}"));
    assert!(!sem.log().contains("error") && !mutex.log().contains("error"));
    assert_eq!((rs.lost, rm.lost), (0, 0));
    assert_eq!(rs.enters, rs.exits);
    assert_eq!(rm.enters, rm.exits);
    assert!(rs.enters > 0 && rm.enters > 0);
    println!("semaphore: {rs:?}\nmutex: {rm:?}");
    let c = connect(&s, Duration::from_secs(4)).await;
    wait_clean(&c, "/faults/soak").await;
}
