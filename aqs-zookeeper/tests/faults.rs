//! Safety under faults, with real processes on a real ZooKeeper: holder processes killed with
//! SIGKILL, the server stopped and restarted mid-wait, the server frozen with SIGSTOP past the
//! session timeout, a holder process paused past it, and 32 worker processes × 4 tasks
//! contending. Workers (`src/bin/aqs-zk-worker.rs`, started through `aqs_test_servers::workers`)
//! log every entry and exit; the independent checker (`aqs_test_servers::checker`) replays the
//! logs. Every wait is bounded, and the tests run one at a time so that one test's load cannot
//! expire another's short sessions.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use aqs_test_servers::workers::{append, Workers};
use aqs_test_servers::zookeeper::TestServer;
use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Error, Mutex, MutexGuard};
use common::{bounded, server, BOUND};

/// The fault tests run one at a time: each starts its own server, and 2-second sessions must
/// not expire because another test loads the machine.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How a worker runs (see `aqs-zk-worker`'s usage).
#[derive(Clone, Copy)]
struct Job<'a> {
    recipe: &'a str,
    path: &'a str,
    limit: u32,
    tasks: usize,
    hold_ms: u64,
    /// 0: until killed.
    run_secs: u64,
    session_ms: u64,
}

/// A new log for worker processes (every wait bounded by [`BOUND`]).
fn workers(name: &str) -> Workers {
    Workers::new(&format!("zk-{name}"), BOUND)
}

/// What this file adds to the shared harness: starting `aqs-zk-worker` and logging this test's
/// own holds.
trait ZkWorkers {
    /// Starts a worker and waits (bounded) until it is connected; returns its pid.
    fn spawn(&mut self, s: &TestServer, job: Job<'_>) -> u32;
    /// Logs a hold of this test's own client (`who` must look like `<name>-<n>`).
    fn note_guard(&self, event: &str, who: &str, g: &MutexGuard);
}

impl ZkWorkers for Workers {
    fn spawn(&mut self, s: &TestServer, job: Job<'_>) -> u32 {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aqs-zk-worker"));
        command
            .args([
                &s.addr().to_string(),
                job.recipe,
                job.path,
                &job.limit.to_string(),
                &job.tasks.to_string(),
                &job.hold_ms.to_string(),
                &job.run_secs.to_string(),
            ])
            .arg(self.path())
            .arg(job.session_ms.to_string());
        self.start(command)
    }

    fn note_guard(&self, event: &str, who: &str, g: &MutexGuard) {
        self.note(&hold_line(event, who, g));
    }
}

/// The line a test writes for one of its own holds (`who` must look like `<name>-<n>`).
fn hold_line(event: &str, who: &str, g: &MutexGuard) -> String {
    format!("{event} {who} {} {}", g.fencing_token(), g.node_path())
}

async fn connect(s: &TestServer, session: Duration) -> zk::Client {
    bounded(
        "connect",
        zk::Client::connector()
            .with_session_timeout(session)
            .connect(&s.addr().to_string()),
    )
    .await
    .expect("connect")
}

/// Waits (bounded) until no lock or lease node (protected name `_c_...`) is left anywhere
/// under `path`.
async fn wait_clean(c: &zk::Client, path: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let mut left = Vec::new();
        let mut todo = vec![path.to_owned()];
        while let Some(p) = todo.pop() {
            let children = match bounded("list", c.list_children(&p)).await {
                Ok(children) => children,
                Err(zk::Error::NoNode) => Vec::new(),
                Err(e) => panic!("list {p}: {e}"),
            };
            for child in children {
                if child.starts_with("_c_") {
                    left.push(format!("{p}/{child}"));
                } else {
                    todo.push(format!("{p}/{child}"));
                }
            }
        }
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nodes left under {path}: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGKILL of a holder process: the server keeps its nodes until its session times out, then
/// deletes them, and a waiting process enters. The checker proves the waiter did not enter
/// before the holder died (its holds end at the `killed` line), for a mutex and for a semaphore
/// whose two permits were both held by the killed process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_process_loses_its_holds_after_the_session_timeout() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let c = connect(&s, Duration::from_secs(4)).await;
    for (recipe, path, limit) in [
        ("mutex", "/faults/kill/m", 1),
        ("semaphore", "/faults/kill/s", 2),
    ] {
        let mut w = workers(&format!("sigkill-{recipe}"));
        // The holder would hold for ten minutes; its session times out after two seconds.
        let holder = w.spawn(
            &s,
            Job {
                recipe,
                path,
                limit,
                tasks: limit as usize,
                hold_ms: 600_000,
                run_secs: 0,
                session_ms: 2_000,
            },
        );
        for t in 0..limit {
            w.wait_line(&format!("enter {holder}-{t} ")).await;
        }
        let waiter = w.spawn(
            &s,
            Job {
                recipe,
                path,
                limit,
                tasks: 1,
                hold_ms: 20,
                run_secs: 2,
                session_ms: 4_000,
            },
        );
        w.kill(holder);
        w.wait_line(&format!("enter {waiter}-0 ")).await;
        w.join(BOUND).await;
        let r = w.check(limit as usize);
        assert_eq!(r.killed, limit as usize, "{recipe}: {r:?}");
        assert!(
            r.exits >= 1 && r.errors == 0 && r.lost == 0,
            "{recipe}: {r:?}"
        );
        assert_eq!(r.open, 0, "{recipe}: {r:?}");
        wait_clean(&c, path).await;
    }
}

/// The server killed and restarted on the same port and data while a waiter waits, within the
/// session timeout: the server restores the sessions, so nothing is lost. The holder still
/// holds, the waiter still waits (no grant during the outage or after it), the release hands
/// over, and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_within_the_session_timeout_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let mut s = server();
    let w = workers("restart");
    let session = Duration::from_secs(20);
    let (a, b) = (connect(&s, session).await, connect(&s, session).await);
    let ma = Mutex::new(a.clone(), "/faults/restart").unwrap();
    let held = bounded("holder", ma.acquire()).await.unwrap();
    w.note_guard("enter", "a-0", &held);
    let mb = Mutex::new(b.clone(), "/faults/restart").unwrap();
    let mut waiter = tokio::spawn(async move { mb.acquire().await.map(|g| (g, mb)) });
    common::wait_children(&b, "/faults/restart", 2).await;
    tokio::task::block_in_place(|| {
        s.stop();
        s.restart(Duration::from_secs(60)).expect("restart");
    });
    // Requests fail until the client has reconnected; wait for that.
    bounded("reconnect", async {
        loop {
            match a.sync("/").await {
                Ok(()) => break,
                Err(_) if !a.state().is_terminated() => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("the session did not survive the restart: {e}"),
            }
        }
    })
    .await;
    assert!(
        !held.is_lost(),
        "a restart within the session timeout loses nothing"
    );
    // The waiter is still waiting: a request in flight when the server died is retried (rule
    // Z3), whatever error the broken socket gave it. It is never granted while the holder holds.
    if let Ok(r) = tokio::time::timeout(Duration::from_millis(500), &mut waiter).await {
        match r.unwrap() {
            Ok((g, _)) => panic!(
                "double grant: the waiter got token {} while the holder holds",
                g.fencing_token()
            ),
            Err(e) => panic!("the waiter failed across a restart its session survived: {e:?}"),
        }
    }
    w.note_guard("exit", "a-0", &held);
    held.release().await.unwrap();
    let (g, _mb) = bounded("the waiter after the restart", waiter)
        .await
        .unwrap()
        .unwrap();
    w.note_guard("enter", "b-0", &g);
    assert!(!g.is_lost());
    w.note_guard("exit", "b-0", &g);
    g.release().await.unwrap();
    let r = w.check(1);
    assert_eq!((r.enters, r.exits, r.open), (2, 2, 0), "{r:?}");
    wait_clean(&b, "/faults/restart").await;
}

/// The server down for longer than the session timeout while a waiter waits: the waiter fails
/// with `SessionLost` (never a grant, never a hang), the holder's `lost()` completes, and after
/// a restart nothing is left behind, and a new client acquires with a larger fencing token
/// (a restarted server's zxids start a new epoch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_down_past_the_session_timeout_fails_waiters_and_leaves_nothing() {
    let _serial = SERIAL.lock().await;
    let mut s = server();
    let session = Duration::from_secs(2);
    let (a, b) = (connect(&s, session).await, connect(&s, session).await);
    let ma = Mutex::new(a.clone(), "/faults/down").unwrap();
    let held = bounded("holder", ma.acquire()).await.unwrap();
    let old_token = held.fencing_token();
    let mb = Mutex::new(b.clone(), "/faults/down").unwrap();
    let waiter = tokio::spawn(async move { mb.acquire().await.map(|_| ()) });
    common::wait_children(&b, "/faults/down", 2).await;
    tokio::task::block_in_place(|| s.stop());
    // `SessionLost` once the connection has been down for a session timeout (rule Z3), even
    // if a request was in flight when the server died.
    let r = bounded("the waiter failing", waiter).await.unwrap();
    assert!(matches!(r, Err(Error::SessionLost)), "{r:?}");
    bounded("the holder learning", held.lost()).await;
    assert!(held.is_lost());
    tokio::task::block_in_place(|| s.restart(Duration::from_secs(60)).expect("restart"));
    drop(held);
    // Whatever the restarted server did with the old sessions (they expire, or the old
    // clients resume them and delete their nodes), nothing stays behind.
    let c = connect(&s, Duration::from_secs(4)).await;
    wait_clean(&c, "/faults/down").await;
    let m = Mutex::new(c.clone(), "/faults/down").unwrap();
    let g = bounded("a new client", m.try_acquire_for(BOUND))
        .await
        .unwrap()
        .expect("a new client acquires after the restart");
    assert!(
        g.fencing_token() > old_token,
        "{} <= {old_token}",
        g.fencing_token()
    );
    g.release().await.unwrap();
    wait_clean(&c, "/faults/down").await;
}

/// The server frozen with SIGSTOP past the holders' session timeout: the holders learn they
/// lost their permits (`lost()`, logged) while the server is still frozen, so no overlap needs
/// excusing; after the thaw their sessions expire and a waiter, whose longer session survived
/// the freeze, is granted. The checker passes and nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_frozen_past_the_session_timeout_tells_holders_they_lost() {
    let _serial = SERIAL.lock().await;
    let mut s = server();
    let c = connect(&s, Duration::from_secs(10)).await;
    let mut w = workers("sigstop-server");
    let path = "/faults/freeze";
    let holder = w.spawn(
        &s,
        Job {
            recipe: "semaphore",
            path,
            limit: 2,
            tasks: 2,
            hold_ms: 600_000,
            run_secs: 0,
            session_ms: 2_000,
        },
    );
    for t in 0..2 {
        w.wait_line(&format!("enter {holder}-{t} ")).await;
    }
    let waiter = w.spawn(
        &s,
        Job {
            recipe: "semaphore",
            path,
            limit: 2,
            tasks: 1,
            hold_ms: 20,
            run_secs: 2,
            session_ms: 30_000,
        },
    );
    // The waiter is queued (its gate and lease nodes exist) and, after a moment, parked on its
    // watch before the freeze: a request in flight when the connection times out would fail
    // with the transport's error instead of being retried (`node::retry` retries only `ConnectionLoss`).
    common::wait_children(&c, &format!("{path}/leases"), 3).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.freeze().unwrap();
    for t in 0..2 {
        w.wait_line(&format!("lost {holder}-{t} ")).await;
    }
    assert!(
        !w.log().contains(&format!("enter {waiter}-")),
        "granted while the server was frozen"
    );
    s.thaw();
    w.wait_line(&format!("enter {waiter}-0 ")).await;
    w.join(BOUND).await;
    let r = w.check(2);
    assert_eq!((r.lost, r.excused, r.errors, r.open), (2, 0, 0, 0), "{r:?}");
    assert!(r.exits >= 1, "{r:?}");
    wait_clean(&c, path).await;
}

/// A holder *process* paused with SIGSTOP past its session timeout, the case fencing tokens are
/// for: the server expires the session and grants the mutex to a waiting process while the
/// paused holder still believes it holds. Once resumed, it learns it lost. The log shows the
/// overlap; the checker accepts it only because the test logged the pause, the holder then
/// logs `lost` and the newcomer's token is larger, so a resource checking tokens refuses the
/// stale holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_process_is_fenced_off_and_told_it_lost() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let c = connect(&s, Duration::from_secs(4)).await;
    let mut w = workers("sigstop-holder");
    let path = "/faults/pause";
    let job = Job {
        recipe: "mutex",
        path,
        limit: 1,
        tasks: 1,
        hold_ms: 600_000,
        run_secs: 0,
        session_ms: 2_000,
    };
    let holder = w.spawn(&s, job);
    let entered = w.wait_line(&format!("enter {holder}-0 ")).await;
    let waiter = w.spawn(
        &s,
        Job {
            hold_ms: 20,
            run_secs: 2,
            session_ms: 10_000,
            ..job
        },
    );
    common::wait_children(&c, path, 2).await;
    w.pause(holder);
    let granted = w.wait_line(&format!("enter {waiter}-0 ")).await;
    w.resume(holder);
    w.wait_line(&format!("lost {holder}-0 ")).await;
    w.join(BOUND).await;
    let token = |l: &str| l.split(' ').nth(2).unwrap().parse::<i64>().unwrap();
    assert!(
        token(&granted) > token(&entered),
        "{granted} after {entered}"
    );
    let r = w.check(1);
    assert_eq!((r.lost, r.excused, r.errors, r.open), (1, 1, 0, 0), "{r:?}");
    wait_clean(&c, path).await;
}

/// 32 worker processes × 4 tasks on one semaphore of 5, then 32 × 4 on one mutex, for
/// `AQS_ZK_SOAK_SECS` (default 60) in all. Both checkers pass with no loss and no error, every
/// process exits cleanly, the semaphore was full at some moment (so its limit was exercised,
/// not just never reached), and no node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_processes_contend_for_a_minute() {
    let _serial = SERIAL.lock().await;
    let secs: u64 = std::env::var("AQS_ZK_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let phase = (secs / 2).max(1);
    let s = server();
    let c = connect(&s, Duration::from_secs(10)).await;
    let (procs, tasks, limit) = (32, 4, 5);
    for (recipe, path, limit, hold_ms) in [
        // Holds long enough that 128 contenders keep all five permits taken.
        ("semaphore", "/faults/soak/s", limit, 50),
        ("mutex", "/faults/soak/m", 1, 2),
    ] {
        let mut w = workers(&format!("soak-{recipe}"));
        for _ in 0..procs {
            w.spawn(
                &s,
                Job {
                    recipe,
                    path,
                    limit,
                    tasks,
                    hold_ms,
                    run_secs: phase,
                    // Long enough that a loaded machine does not expire sessions.
                    session_ms: 10_000,
                },
            );
        }
        w.join(Duration::from_secs(phase) + BOUND * 3).await;
        let r = w.check(limit as usize);
        println!("{recipe}: {r:?}");
        assert_eq!((r.lost, r.errors, r.open, r.killed), (0, 0, 0, 0), "{r:?}");
        assert_eq!(r.enters, r.exits, "{r:?}");
        assert_eq!(r.peak, limit as usize, "{recipe} never full: {r:?}");
        // Every task of every process was granted at least once: the queues are FIFO, so no
        // contender starves.
        assert_eq!(r.holders, procs * tasks, "{recipe}: {r:?}");
        wait_clean(&c, path).await;
    }
}

/// How many times the partition test runs: the ordering must hold in every run.
const CUT_RUNS: usize = 5;

/// A holder whose link goes silent both ways while its process keeps running (a partition:
/// the proxy drops every byte, closes nothing), past its 2 s session timeout. The server
/// expires the session and deletes the holder's node, and a waiter on a direct connection is
/// granted. The holder, checking `is_lost()` between steps as the docs say, must learn of its
/// loss before the server deletes its node, in every run. The delete is judged by the server:
/// a watcher with its own session on a direct connection sees the node's `NodeDeleted`, and
/// both instants are read from this process's monotonic clock. The holder also sees
/// `suspended` before `lost`, and the checker passes with no overlap excused (the holder is
/// running, so none may be).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_holder_learns_of_its_loss_before_the_server_deletes_its_node() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let proxy = common::Proxy::start(s.addr());
    let observer = connect(&s, Duration::from_secs(20)).await;
    let waiter_client = connect(&s, Duration::from_secs(20)).await;
    let w = workers("partition");
    let mut margins = Vec::new();
    for run in 0..CUT_RUNS {
        let path = format!("/faults/partition/{run}");
        let holder_client = common::client_via(&proxy).await; // 2 s session
        let m = Mutex::new(holder_client.clone(), &path).unwrap();
        let g = bounded("the holder", m.acquire()).await.unwrap();
        let who = format!("holder{run}-0");
        w.note(&hold_line("enter", &who, &g));
        let mw = Mutex::new(waiter_client.clone(), &path).unwrap();
        let log = w.path().to_owned();
        let waiter = tokio::spawn(async move {
            let g = mw.acquire().await?;
            append(&log, &hold_line("enter", &format!("waiter{run}-0"), &g));
            Ok::<_, Error>((g, mw))
        });
        common::wait_children(&observer, &path, 2).await;
        let (_, _, deleted) = bounded(
            "watch the holder's node",
            observer.get_and_watch_data(g.node_path()),
        )
        .await
        .unwrap();
        let deleted = tokio::spawn(async move {
            let e = deleted.changed().await;
            (Instant::now(), e.event_type)
        });
        // Let a heartbeat or two go through, then partition the holder.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!g.is_suspended() && !g.is_lost());
        proxy.silence();
        let cut = Instant::now();
        let (suspended_at, lost_at) = bounded("the holder learning", async {
            let suspended = async {
                g.suspended().await;
                Instant::now()
            };
            // The user's loop: check between steps of work.
            let lost = async {
                loop {
                    if g.is_lost() {
                        w.note(&hold_line("lost", &who, &g));
                        return Instant::now();
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::join!(suspended, lost)
        })
        .await;
        // `lost()` agrees with `is_lost()`.
        bounded("lost()", g.lost()).await;
        let (deleted_at, event) = bounded("the server deleting the node", deleted)
            .await
            .unwrap();
        assert_eq!(event, zk::EventType::NodeDeleted);
        assert!(
            lost_at < deleted_at,
            "run {run}: the holder learned {:?} after the server deleted its node",
            lost_at - deleted_at
        );
        assert!(suspended_at <= lost_at, "run {run}: lost before suspended");
        margins.push(deleted_at - lost_at);
        println!(
            "run {run}: suspended {:?} after the cut, lost {:?}, node deleted {:?}: \
             {:?} before the delete",
            suspended_at - cut,
            lost_at - cut,
            deleted_at - cut,
            deleted_at - lost_at
        );
        let (wg, _mw) = bounded("the waiter", waiter).await.unwrap().unwrap();
        w.note(&hold_line("exit", &format!("waiter{run}-0"), &wg));
        wg.release().await.unwrap();
        proxy.heal();
        drop(g);
        drop(m);
    }
    let r = w.check(1);
    assert_eq!(
        (r.lost, r.excused, r.exits, r.open),
        (CUT_RUNS, 0, CUT_RUNS, 0),
        "{r:?}"
    );
    margins.sort();
    println!(
        "loss reported before the server's delete, {CUT_RUNS} runs: min {:?}, median {:?}",
        margins[0],
        margins[margins.len() / 2]
    );
}

/// A silent link shorter than the session timeout: the holder sees `suspended` during the cut;
/// after it the client reconnects within the session, suspension clears and the hold stands
/// (never lost, its node still there), the waiter on a direct connection is not granted until
/// the holder releases, and the checker passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_cut_suspends_a_holder_and_the_hold_stands() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let proxy = common::Proxy::start(s.addr());
    let observer = connect(&s, Duration::from_secs(20)).await;
    let w = workers("short-cut");
    let path = "/faults/short-cut";
    let session = Duration::from_secs(4);
    let holder_client = common::client_via_with(&proxy, session).await;
    let m = Mutex::new(holder_client.clone(), path).unwrap();
    let g = bounded("the holder", m.acquire()).await.unwrap();
    w.note(&hold_line("enter", "holder-0", &g));
    let mw = Mutex::new(connect(&s, Duration::from_secs(20)).await, path).unwrap();
    let log = w.path().to_owned();
    let mut waiter = tokio::spawn(async move {
        let g = mw.acquire().await?;
        append(&log, &hold_line("enter", "waiter-0", &g));
        Ok::<_, Error>((g, mw))
    });
    common::wait_children(&observer, path, 2).await;
    proxy.silence();
    bounded("the holder suspended", g.suspended()).await;
    assert!(g.is_suspended() && !g.is_lost());
    // Half the session timeout in all, then the link comes back.
    tokio::time::sleep(session / 2).await;
    proxy.heal();
    bounded("suspension clearing", async {
        while g.is_suspended() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!g.is_lost(), "a cut shorter than the session loses nothing");
    assert_eq!(holder_client.state(), zk::SessionState::SyncConnected);
    assert!(
        bounded("stat", observer.check_stat(g.node_path()))
            .await
            .unwrap()
            .is_some(),
        "the holder's node stands"
    );
    // Nothing granted meanwhile, nor for a while after.
    assert!(common::still_waiting(&mut waiter, Duration::from_millis(500)).await);
    assert!(!g.is_lost() && !g.is_suspended());
    w.note(&hold_line("exit", "holder-0", &g));
    g.release().await.unwrap();
    let (wg, _mw) = bounded("the waiter", waiter).await.unwrap().unwrap();
    w.note(&hold_line("exit", "waiter-0", &wg));
    wg.release().await.unwrap();
    let r = w.check(1);
    assert_eq!((r.enters, r.exits, r.lost, r.open), (2, 2, 0, 0), "{r:?}");
    wait_clean(&observer, path).await;
}

/// Every timed acquire returns within its deadline plus a small bound whatever the connection
/// does: with the link silenced (requests get no reply, and the client would notice only 2/5
/// of its 20 s session later) and with the server stopped (requests wait for a reconnect that
/// could take up to a session timeout). Each returns `Ok(None)` (or an error) within its
/// 100 ms plus the crate's 500 ms grace, with 2 s of slack for a loaded machine: an order of
/// magnitude below the 8 s or more it took before. Nothing is left behind afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_acquires_keep_their_deadlines_during_outages() {
    let _serial = SERIAL.lock().await;
    let mut s = server();
    let proxy = common::Proxy::start(s.addr());
    let session = Duration::from_secs(20);
    let wait = Duration::from_millis(100);
    let bound = wait + Duration::from_millis(500) + Duration::from_secs(2);
    let cut = common::client_via_with(&proxy, session).await;
    let direct = connect(&s, session).await;
    async fn attempts(c: &zk::Client, base: &str, wait: Duration, bound: Duration, what: &str) {
        let m = Mutex::new(c.clone(), &format!("{base}/m")).unwrap();
        let sem = aqs_zookeeper::Semaphore::new(c.clone(), &format!("{base}/s"), 2).unwrap();
        let rw = aqs_zookeeper::RwLock::new(c.clone(), &format!("{base}/rw")).unwrap();
        let multi = aqs_zookeeper::MultiLock::new(c, &[&format!("{base}/a")]).unwrap();
        let t = Instant::now();
        let r = bounded("mutex", m.try_acquire_for(wait)).await;
        let e = t.elapsed();
        assert!(e < bound, "{what}: mutex took {e:?}: {r:?}");
        assert!(!matches!(r, Ok(Some(_))), "{what}: granted in an outage");
        let t = Instant::now();
        let r = bounded("semaphore", sem.try_acquire_for(wait)).await;
        let e = t.elapsed();
        assert!(e < bound, "{what}: semaphore took {e:?}: {r:?}");
        assert!(!matches!(r, Ok(Some(_))), "{what}: granted in an outage");
        let t = Instant::now();
        let r = bounded("write lock", rw.write_lock().try_acquire_for(wait)).await;
        let e = t.elapsed();
        assert!(e < bound, "{what}: write lock took {e:?}: {r:?}");
        assert!(!matches!(r, Ok(Some(_))), "{what}: granted in an outage");
        let t = Instant::now();
        let r = bounded("multi-lock", multi.try_acquire_for(wait)).await;
        let e = t.elapsed();
        assert!(e < bound, "{what}: multi-lock took {e:?}: {r:?}");
        assert!(!matches!(r, Ok(Some(_))), "{what}: granted in an outage");
    }
    proxy.silence();
    attempts(&cut, "/faults/deadline/cut", wait, bound, "link silenced").await;
    proxy.heal();
    tokio::task::block_in_place(|| s.stop());
    attempts(
        &direct,
        "/faults/deadline/down",
        wait,
        bound,
        "server stopped",
    )
    .await;
    tokio::task::block_in_place(|| s.restart(Duration::from_secs(60)).expect("restart"));
    // Both sessions survive; the attempts' clean-ups leave nothing behind.
    let c = connect(&s, Duration::from_secs(10)).await;
    wait_clean(&c, "/faults/deadline").await;
}
