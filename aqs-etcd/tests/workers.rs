//! Safety under faults with real processes on a real etcd, judged by an independent checker:
//! worker processes (`src/bin/aqs-etcd-worker.rs`, `loop` mode, started through
//! `aqs_test_servers::workers`) take a `Mutex` or a `Semaphore` over and over and log every
//! entry and exit to one file; the test logs what it does to them (`killed`, `paused`), and the
//! checker (`aqs_test_servers::checker`) replays the file: never more holders inside than the
//! limit, a mutex's tokens always growing, and an overlap excused only with a hold of a process
//! the test froze that later logs `lost` and whose token is smaller. Each test also asks the
//! server that no key is left. Every wait is bounded, and the tests run one at a time so that
//! one test's load cannot expire another's 2-second leases.

mod common;

use std::process::Command;
use std::time::Duration;

use aqs_test_servers::etcd::TestServer;
use aqs_test_servers::workers::Workers;
use common::{client, server, wait_keys, BOUND};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How a worker runs (see `aqs-etcd-worker`'s `loop` mode).
#[derive(Clone, Copy)]
struct Job<'a> {
    recipe: &'a str,
    name: &'a str,
    limit: u32,
    tasks: usize,
    hold_ms: u64,
    /// 0: until killed.
    run_secs: u64,
    ttl_secs: u64,
}

/// A new log for worker processes (every wait bounded by [`BOUND`]).
fn workers(name: &str) -> Workers {
    Workers::new(&format!("etcd-{name}"), BOUND)
}

/// Starts a worker and waits (bounded) until its sessions are open; returns its pid.
fn spawn(w: &mut Workers, s: &TestServer, job: Job<'_>) -> u32 {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aqs-etcd-worker"));
    command
        .arg("loop")
        .arg(s.endpoint())
        .args([
            job.recipe,
            job.name,
            &job.limit.to_string(),
            &job.tasks.to_string(),
            &job.hold_ms.to_string(),
            &job.run_secs.to_string(),
        ])
        .arg(w.path())
        .arg(job.ttl_secs.to_string());
    w.start(command)
}

/// The token of an `enter` line.
fn token(line: &str) -> i64 {
    line.split(' ').nth(2).unwrap().parse().unwrap()
}

/// SIGKILL of a holder process: etcd keeps its keys until its leases end, then deletes them,
/// and a waiting process enters. The checker proves the waiter did not enter before the holder
/// died (its holds end at the `killed` line), for a mutex and for a semaphore whose two permits
/// were both held by the killed process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_process_loses_its_holds_when_its_leases_end() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let c = client(&s).await;
    for (recipe, name, limit) in [("mutex", "/w/kill/m", 1), ("semaphore", "/w/kill/s", 2)] {
        let mut w = workers(&format!("sigkill-{recipe}"));
        // It would hold for ten minutes; its leases end two seconds after it dies.
        let holder = spawn(
            &mut w,
            &s,
            Job {
                recipe,
                name,
                limit,
                tasks: limit as usize,
                hold_ms: 600_000,
                run_secs: 0,
                ttl_secs: 2,
            },
        );
        for t in 0..limit {
            w.wait_line(&format!("enter {holder}-{t} ")).await;
        }
        let waiter = spawn(
            &mut w,
            &s,
            Job {
                recipe,
                name,
                limit,
                tasks: 1,
                hold_ms: 20,
                run_secs: 2,
                ttl_secs: 10,
            },
        );
        w.kill(holder);
        w.wait_line(&format!("enter {waiter}-0 ")).await;
        w.join(BOUND).await;
        let r = w.check(limit as usize);
        assert_eq!(r.killed, limit as usize, "{recipe}: {r:?}");
        assert!(
            r.exits >= 1 && r.errors == 0 && r.lost == 0 && r.open == 0,
            "{recipe}: {r:?}"
        );
        wait_keys(&c, name, 0).await;
    }
}

/// A holder *process* frozen (SIGSTOP) past its lease's TTL, the case fencing tokens are for:
/// etcd ends the lease and grants the mutex to a waiting process while the frozen holder still
/// believes it holds. Once resumed, it learns it lost. The checker accepts the overlap only
/// because the test logged the pause, the holder then logs `lost`, and the newcomer's token is
/// larger, so a resource checking tokens refuses the stale holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_process_is_fenced_off_and_told_it_lost() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let c = client(&s).await;
    let name = "/w/pause";
    let mut w = workers("sigstop-holder");
    let job = Job {
        recipe: "mutex",
        name,
        limit: 1,
        tasks: 1,
        hold_ms: 600_000,
        run_secs: 0,
        ttl_secs: 2,
    };
    let holder = spawn(&mut w, &s, job);
    let entered = w.wait_line(&format!("enter {holder}-0 ")).await;
    let waiter = spawn(
        &mut w,
        &s,
        Job {
            hold_ms: 20,
            run_secs: 2,
            ttl_secs: 10,
            ..job
        },
    );
    wait_keys(&c, name, 2).await;
    w.pause(holder);
    let granted = w.wait_line(&format!("enter {waiter}-0 ")).await;
    w.resume(holder);
    w.wait_line(&format!("lost {holder}-0 ")).await;
    w.join(BOUND).await;
    assert!(
        token(&granted) > token(&entered),
        "{granted} after {entered}"
    );
    let r = w.check(1);
    assert_eq!((r.lost, r.excused, r.errors, r.open), (1, 1, 0, 0), "{r:?}");
    wait_keys(&c, name, 0).await;
}

/// etcd frozen (SIGSTOP) past the holders' 2-second leases while a waiter with a long lease is
/// queued: both holders log `lost` while the server is still frozen, so before it could grant
/// anyone their places, and nobody enters meanwhile; after the thaw the server ends their leases
/// and the waiter enters. The checker passes with no overlap excused (no process was paused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_tells_holders_they_lost_before_anyone_enters() {
    let _serial = SERIAL.lock().await;
    let s = server();
    let c = client(&s).await;
    let name = "/w/frozen";
    let mut w = workers("sigstop-server");
    let job = Job {
        recipe: "semaphore",
        name,
        limit: 2,
        tasks: 2,
        hold_ms: 600_000,
        run_secs: 0,
        ttl_secs: 2,
    };
    let holder = spawn(&mut w, &s, job);
    for t in 0..2 {
        w.wait_line(&format!("enter {holder}-{t} ")).await;
    }
    let waiter = spawn(
        &mut w,
        &s,
        Job {
            tasks: 1,
            hold_ms: 20,
            run_secs: 1,
            ttl_secs: 30,
            ..job
        },
    );
    // Both permits' keys and the waiter's contender key.
    common::bounded("the waiter queued", async {
        while common::keys(&c, name).await.len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    s.freeze().unwrap();
    for t in 0..2 {
        w.wait_line(&format!("lost {holder}-{t} ")).await;
    }
    assert!(
        !w.log().contains(&format!("enter {waiter}-")),
        "a grant while the server was frozen"
    );
    s.thaw().unwrap();
    w.wait_line(&format!("enter {waiter}-0 ")).await;
    // The holder's tasks stopped after `lost`; it would otherwise wait for a kill.
    w.kill(holder);
    w.join(BOUND).await;
    let r = w.check(2);
    assert_eq!((r.lost, r.excused, r.errors, r.open), (2, 0, 0, 0), "{r:?}");
    wait_keys(&c, name, 0).await;
}

/// etcd killed and restarted on the same port and data while processes contend, within the
/// leases' TTL: every acquire and release still succeeds (requests that fail to reach the server
/// are retried, M5), nobody loses a hold, the checker passes, and no key is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_contend_through_a_brief_server_restart() {
    let _serial = SERIAL.lock().await;
    let mut s = server();
    for (recipe, name, limit) in [
        ("mutex", "/w/restart/m", 1),
        ("semaphore", "/w/restart/s", 2),
    ] {
        let mut w = workers(&format!("restart-{recipe}"));
        for _ in 0..3 {
            spawn(
                &mut w,
                &s,
                Job {
                    recipe,
                    name,
                    limit,
                    tasks: 2,
                    hold_ms: 10,
                    run_secs: 4,
                    ttl_secs: 10,
                },
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        s.kill().unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.restart(Duration::from_secs(30)).unwrap();
        w.join(BOUND).await;
        let r = w.check(limit as usize);
        println!("{recipe}: {r:?}");
        assert_eq!((r.lost, r.errors, r.open), (0, 0, 0), "{recipe}: {r:?}");
        assert!(r.enters > 6, "{recipe}: {r:?}");
        let c = client(&s).await;
        wait_keys(&c, name, 0).await;
    }
}

/// 8 worker processes × 4 tasks (32 sessions) on one semaphore of 3, then on one mutex, for
/// `AQS_ETCD_SOAK_SECS` (default 12) in all. Both checkers pass with no loss and no error, every
/// process exits cleanly, the semaphore was full at some moment (its limit was reached, not just
/// never approached), every task entered at least once (FIFO queues starve no one), and no key
/// is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_contend() {
    let _serial = SERIAL.lock().await;
    let secs: u64 = std::env::var("AQS_ETCD_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let phase = (secs / 2).max(1);
    let s = server();
    let c = client(&s).await;
    let (procs, tasks) = (8, 4);
    for (recipe, name, limit, hold_ms) in [
        // Holds long enough that 32 contenders keep all three permits taken.
        ("semaphore", "/w/soak/s", 3, 30),
        ("mutex", "/w/soak/m", 1, 2),
    ] {
        let mut w = workers(&format!("soak-{recipe}"));
        for _ in 0..procs {
            spawn(
                &mut w,
                &s,
                Job {
                    recipe,
                    name,
                    limit,
                    tasks,
                    hold_ms,
                    run_secs: phase,
                    // Long enough that a loaded machine does not end leases.
                    ttl_secs: 10,
                },
            );
        }
        w.join(Duration::from_secs(phase) + BOUND * 2).await;
        let r = w.check(limit as usize);
        println!("{recipe}: {r:?}");
        assert_eq!((r.lost, r.errors, r.open, r.killed), (0, 0, 0, 0), "{r:?}");
        assert_eq!(r.enters, r.exits, "{r:?}");
        assert_eq!(r.peak, limit as usize, "{recipe} never full: {r:?}");
        assert_eq!(r.holders, procs * tasks, "{recipe}: {r:?}");
        wait_keys(&c, name, 0).await;
    }
}
