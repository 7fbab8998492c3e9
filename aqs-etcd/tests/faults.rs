//! Faults against a real etcd started by the test, judged by the server's own record.

mod common;

use std::time::Duration;

use aqs_etcd::etcd_client::{Client, EventType, WatchOptions};
use aqs_etcd::{Mutex, Session};
use common::*;
use tokio::time::Instant;

/// A holder cut off by a partition (a proxy that stops forwarding both ways) learns it lost
/// its hold before the server deletes its key. The server's record decides: at the moment the
/// holder's `lost()` fired, another client still reads the key (at a revision below the
/// delete's), and a watch on the key sees the delete only later.
#[tokio::test]
async fn a_cut_off_holder_learns_of_loss_before_the_server_deletes_its_key() {
    let server = server();
    let proxy = Proxy::start(server.addr());
    let observer = client(&server).await;
    let behind = bounded(
        "connect through the proxy",
        Client::connect([proxy.addr().to_string()], None),
    )
    .await
    .unwrap();
    let session = Session::new(behind, Duration::from_secs(2)).await.unwrap();
    let ttl = session.ttl();
    let guard = Mutex::new(&session, "/f/cut")
        .unwrap()
        .lock()
        .await
        .unwrap();
    let key = guard.key().to_owned();

    // The server's record of the key, from another client.
    let mut watch = observer
        .watch_client()
        .watch(
            key.as_str(),
            Some(WatchOptions::new().with_start_revision(guard.token())),
        )
        .await
        .unwrap();
    let deleted = tokio::spawn(async move {
        loop {
            let msg = watch.message().await.unwrap().expect("watch open");
            if let Some(e) = msg
                .events()
                .iter()
                .find(|e| e.event_type() == EventType::Delete)
            {
                return (Instant::now(), e.kv().unwrap().mod_revision());
            }
        }
    });

    proxy.cut();
    let cut_at = Instant::now();
    bounded("suspended", session.suspended()).await;
    let suspended_at = Instant::now();
    bounded("lost", guard.lost()).await;
    let lost_at = Instant::now();
    let seen = observer.kv_client().get(key.as_str(), None).await.unwrap();
    assert_eq!(
        seen.kvs().len(),
        1,
        "the server had already deleted the key when the holder learned of loss"
    );
    let seen_rev = seen.header().unwrap().revision();
    let (deleted_at, delete_rev) = bounded("the server deleting the key", deleted)
        .await
        .unwrap();
    assert!(delete_rev > seen_rev);
    assert!(lost_at < deleted_at);
    println!(
        "ttl {ttl:?}: suspended {:?} and lost {:?} after the cut; the server deleted the key \
         {:?} later (revision {delete_rev} > {seen_rev})",
        suspended_at - cut_at,
        lost_at - cut_at,
        deleted_at - lost_at
    );
}

/// A holder process killed with SIGKILL: its key goes when its lease ends, and the next waiter
/// enters with a larger token.
#[tokio::test]
async fn a_killed_holders_key_goes_with_its_lease_and_the_next_waiter_enters() {
    let server = server();
    let c = client(&server).await;
    let (mut worker, key, token) = Worker::hold(&server, "/f/kill").await;
    assert_eq!(keys(&c, "/f/kill").await, vec![(key.clone(), token)]);
    let s = session(&server, 10).await;
    let m = Mutex::new(&s, "/f/kill").unwrap();
    let waiter = tokio::spawn(async move { m.lock().await });
    assert!(still_waiting(&waiter, Duration::from_millis(500)).await);
    worker.0.kill().unwrap(); // SIGKILL: no release, no revoke
    let g = bounded("the waiter after the lease ends", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(g.token() > token);
    assert_eq!(
        keys(&c, "/f/kill").await,
        vec![(g.key().to_owned(), g.token())]
    );
}

/// etcd frozen (SIGSTOP) past every session's TTL: the holder learns of loss and every waiter
/// fails with `SessionLost` instead of being granted through a key the server is about to
/// delete (etcd 3.4's Go Mutex was seen to grant three waiters so); after the thaw the leases
/// end and no key is left.
#[tokio::test]
async fn a_frozen_server_past_the_ttl_grants_no_one() {
    let server = server();
    let c = client(&server).await;
    let holder = session(&server, 2).await;
    let g = Mutex::new(&holder, "/f/frozen")
        .unwrap()
        .lock()
        .await
        .unwrap();
    let mut waiters = Vec::new();
    for i in 0..3 {
        let s = session(&server, 2).await;
        let m = Mutex::new(&s, "/f/frozen").unwrap();
        waiters.push(tokio::spawn(
            async move { m.lock().await.map(|g| g.token()) },
        ));
        wait_keys(&c, "/f/frozen", i + 2).await;
    }
    server.freeze().unwrap();
    bounded("the holder learning of loss", g.lost()).await;
    for w in waiters {
        let r = bounded("a waiter", w).await.unwrap();
        assert!(
            matches!(r, Err(aqs_etcd::Error::SessionLost)),
            "a waiter was granted: {r:?}"
        );
    }
    server.thaw().unwrap();
    wait_keys(&c, "/f/frozen", 0).await;
}

/// A worker process holding a `Mutex` with a 2 s TTL; killed on drop.
struct Worker(std::process::Child);

impl Worker {
    /// Starts a worker on `name` and waits until it holds: its key and token.
    async fn hold(
        server: &aqs_test_servers::etcd::TestServer,
        name: &str,
    ) -> (Worker, String, i64) {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aqs-etcd-worker"))
            .args(["hold", &server.endpoint(), name, "2"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let worker = Worker(child);
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufReader::new(out).read_line(&mut line).unwrap();
            line
        });
        let line = bounded("the worker holding", line).await.unwrap();
        let mut parts = line.split_whitespace().skip(1);
        let key = parts.next().expect("held KEY TOKEN").to_owned();
        let token = parts.next().expect("held KEY TOKEN").parse().unwrap();
        (worker, key, token)
    }

    fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A holder process frozen (SIGSTOP) past its TTL: the server ends its lease and the next
/// waiter enters with a larger token, so a resource that checks tokens fences the old holder
/// off; when the holder runs again it learns of the loss at once (it exits with "lost").
#[tokio::test]
async fn a_frozen_holder_is_fenced_off_and_learns_of_loss_when_it_runs() {
    let server = server();
    let c = client(&server).await;
    let (mut worker, key, token) = Worker::hold(&server, "/f/paused").await;
    assert_eq!(keys(&c, "/f/paused").await, vec![(key, token)]);
    let s = session(&server, 10).await;
    let m = Mutex::new(&s, "/f/paused").unwrap();
    let waiter = tokio::spawn(async move { m.lock().await });
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    worker.signal("-STOP");
    let g = bounded("the waiter after the frozen holder's lease ends", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(
        g.token() > token,
        "the new holder's token fences the old one off"
    );
    worker.signal("-CONT");
    let status = bounded("the thawed holder noticing", async {
        loop {
            if let Some(st) = worker.0.try_wait().unwrap() {
                return st;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        !status.success(),
        "the worker exits only when it learns of loss"
    );
}

/// Many acquires from several sessions with short timeouts, some cancelled by dropping the
/// future: when all are done, no key of theirs is left.
#[tokio::test]
async fn churn_with_timeouts_and_cancellation_leaves_no_key() {
    let server = server();
    let c = client(&server).await;
    let mut tasks = Vec::new();
    for i in 0..4u64 {
        let s = session(&server, 10).await;
        tasks.push(tokio::spawn(async move {
            let m = Mutex::new(&s, "/f/churn").unwrap();
            for j in 0..15u64 {
                let t = Duration::from_millis((i * 7 + j * 13) % 40);
                if j % 3 == 0 {
                    // Cancelled from outside, at any point of the attempt.
                    let _ = tokio::time::timeout(t, m.lock()).await;
                } else if let Some(g) = m.try_lock_for(t).await.unwrap() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    drop(g);
                }
            }
            s
        }));
    }
    let mut sessions = Vec::new();
    for t in tasks {
        sessions.push(bounded("a churning task", t).await.unwrap());
    }
    // Deletes of dropped guards and cancelled attempts run in the background: bounded wait.
    wait_keys(&c, "/f/churn", 0).await;
    assert!(
        sessions.iter().all(|s| !s.is_lost()),
        "no key went by lease expiry"
    );
}

/// etcd killed and restarted within the loss bound: the holder's session is suspended, then
/// live again; its hold and the waiter's place survive (M5), and the release still hands over.
#[tokio::test]
async fn a_brief_server_restart_is_invisible_to_holder_and_waiter() {
    let mut server = server();
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let g = Mutex::new(&a, "/f/restart").unwrap().lock().await.unwrap();
    let mb = Mutex::new(&b, "/f/restart").unwrap();
    let waiter = tokio::spawn(async move { mb.lock().await });
    let c = client(&server).await;
    wait_keys(&c, "/f/restart", 2).await;
    server.kill().unwrap();
    bounded("suspended while the server is down", a.suspended()).await;
    server.restart(Duration::from_secs(30)).unwrap();
    bounded("live again", async {
        while a.is_suspended() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(!g.is_lost() && !a.is_lost() && !b.is_lost());
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    let token = g.token();
    g.release().await.unwrap();
    let gb = bounded("the waiter after the restart", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(gb.token() > token);
}

/// etcd down for longer than the sessions' loss bound: the holder reports loss, the waiter
/// fails with `SessionLost` rather than hanging or being granted, and a new session works once
/// the server is back.
#[tokio::test]
async fn a_server_down_past_the_ttl_ends_holds_and_waits() {
    let mut server = server();
    let (a, b) = (session(&server, 2).await, session(&server, 2).await);
    let g = Mutex::new(&a, "/f/down").unwrap().lock().await.unwrap();
    let mb = Mutex::new(&b, "/f/down").unwrap();
    let waiter = tokio::spawn(async move { mb.lock().await });
    let c = client(&server).await;
    wait_keys(&c, "/f/down", 2).await;
    server.kill().unwrap();
    bounded("the holder learning of loss", g.lost()).await;
    let r = bounded("the waiter", waiter).await.unwrap();
    assert!(matches!(r, Err(aqs_etcd::Error::SessionLost)), "{r:?}");
    server.restart(Duration::from_secs(30)).unwrap();
    let fresh = session(&server, 2).await;
    let g2 = bounded(
        "a new session once the old leases end",
        Mutex::new(&fresh, "/f/down").unwrap().lock(),
    )
    .await
    .unwrap();
    assert!(g2.token() > g.token());
}

/// The same brief restart under a semaphore waiter and a writer waiting on readers: both keep
/// their places and enter after the release.
#[tokio::test]
async fn semaphore_and_rwlock_waiters_ride_out_a_brief_restart() {
    use aqs_etcd::{RwLock, Semaphore};
    let mut server = server();
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let permit = Semaphore::new(&a, "/f/rs", 1)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let read = RwLock::new(&a, "/f/rw").unwrap().read().await.unwrap();
    let (sb, rb) = (
        Semaphore::new(&b, "/f/rs", 1).unwrap(),
        RwLock::new(&b, "/f/rw").unwrap(),
    );
    let sem_waiter = tokio::spawn(async move { sb.acquire().await });
    let writer = tokio::spawn(async move { rb.write().await });
    let c = client(&server).await;
    wait_keys(&c, "/f/rs/lock", 1).await;
    wait_keys(&c, "/f/rw", 2).await;
    server.kill().unwrap();
    bounded("suspended", a.suspended()).await;
    server.restart(Duration::from_secs(30)).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!sem_waiter.is_finished() && !writer.is_finished());
    permit.release().await.unwrap();
    read.release().await.unwrap();
    let p = bounded("the semaphore waiter", sem_waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.permits(), 1);
    let w = bounded("the writer", writer).await.unwrap().unwrap();
    assert!(w.is_write());
}
