//! Behaviour of the rest of the family against a real ZooKeeper: reentrant `Mutex`,
//! `SemaphoreMutex`, multi-permit and shared-limit `Semaphore`, `MultiLock`, bad input and a
//! closed client. Every wait is bounded.

mod common;

use std::time::Duration;

use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Error, Lockable, MultiLock, Mutex, RwLock, Semaphore, SemaphoreMutex};
use common::{bounded, client, server, still_waiting, wait_children};

const SHORT: Duration = Duration::from_millis(300);

/// Writes Curator's `SharedCount` encoding (a 4-byte big-endian integer) at `path`.
async fn set_count(c: &zk::Client, path: &str, v: i32) {
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match c.create(path, &v.to_be_bytes(), &opts).await {
        Ok(_) => {}
        Err(zk::Error::NodeExists) => {
            c.set_data(path, &v.to_be_bytes(), None).await.unwrap();
        }
        Err(e) => panic!("{e}"),
    }
}

/// Re-entry is explicit, through a guard: it shares the node, the node goes with the last
/// guard, and another client waits until then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_reenters_through_a_guard_and_excludes_other_handles() {
    let s = server();
    let (ca, cb) = (client(&s).await, client(&s).await);
    let m = Mutex::new(ca.clone(), "/family/reenter").unwrap();
    let g1 = bounded("acquire", m.acquire()).await.unwrap();
    let g2 = g1.reenter().unwrap();
    assert_eq!(g1.node_path(), g2.node_path());
    assert_eq!(g2.hold_count(), 2);
    assert!(m.is_acquired());
    let other = Mutex::new(cb, "/family/reenter").unwrap();
    assert!(bounded("other", other.try_acquire())
        .await
        .unwrap()
        .is_none());
    drop(g1);
    // The holder's node stays; the failed try's node goes in the background.
    wait_children(&ca, "/family/reenter", 1).await;
    assert!(bounded("other", other.try_acquire())
        .await
        .unwrap()
        .is_none());
    g2.release().await.unwrap();
    assert!(!m.is_acquired());
    assert!(bounded("other", other.try_acquire())
        .await
        .unwrap()
        .is_some());
}

/// Tasks that share one handle (`Arc<Mutex>`) never hold the lock at once: a second acquire
/// through a handle that holds queues its own node like any other contender (rule M1). A
/// `try_acquire` through the holding handle finds the lock taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_a_mutex_handle_never_hold_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let s = server();
    let c = client(&s).await;
    let m = Arc::new(Mutex::new(c.clone(), "/family/shared").unwrap());
    let g = bounded("acquire", m.acquire()).await.unwrap();
    assert!(bounded("try", m.try_acquire()).await.unwrap().is_none());
    drop(g);
    let inside = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (m, inside) = (m.clone(), inside.clone());
            tokio::spawn(async move {
                for _ in 0..3 {
                    let g = m.acquire().await.unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        bounded("a sharing task", t).await.unwrap();
    }
    // Within one task too: two futures joined on one handle take turns.
    let (a, b) = bounded("joined", async {
        tokio::join!(
            async {
                let g = m.acquire().await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                g.fencing_token()
            },
            async {
                let g = m.acquire().await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                g.fencing_token()
            }
        )
    })
    .await;
    assert_ne!(a, b, "two holds, one after the other");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_mutex_is_a_one_permit_semaphore_and_not_reentrant() {
    let s = server();
    let (ca, cb) = (client(&s).await, client(&s).await);
    let a = SemaphoreMutex::new(ca.clone(), "/family/smutex").unwrap();
    let g = bounded("acquire", a.acquire()).await.unwrap();
    assert!(g.node_path().starts_with("/family/smutex/leases/_c_"));
    assert!(g.node_path().contains("-lease-"));
    assert!(bounded("again", a.try_acquire_for(SHORT))
        .await
        .unwrap()
        .is_none());
    // It shares permits with a Semaphore of limit 1 on the same path.
    let sem = Semaphore::new(cb, "/family/smutex", 1).unwrap();
    assert!(bounded("semaphore", sem.try_acquire())
        .await
        .unwrap()
        .is_none());
    g.release().await.unwrap();
    assert!(bounded("semaphore", sem.try_acquire())
        .await
        .unwrap()
        .is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_many_is_all_or_nothing() {
    let s = server();
    let (ca, cb, cc) = (client(&s).await, client(&s).await, client(&s).await);
    let a = Semaphore::new(ca, "/family/many", 3).unwrap();
    let one = bounded("one", a.acquire()).await.unwrap();
    let b = Semaphore::new(cb, "/family/many", 3).unwrap();
    let mut three = tokio::spawn(async move { b.acquire_many(3).await.unwrap() });
    // Three new lease nodes appear while it waits, but it holds none of them yet.
    wait_children(&cc, "/family/many/leases", 4).await;
    assert!(
        still_waiting(&mut three, SHORT).await,
        "granted beside a holder"
    );
    drop(one);
    let p = bounded("three", three).await.unwrap();
    assert_eq!(p.permits(), 3);
    assert_eq!(p.node_paths().count(), 3);
    let c = Semaphore::new(cc.clone(), "/family/many", 3).unwrap();
    assert!(bounded("full", c.try_acquire()).await.unwrap().is_none());
    drop(p);
    wait_children(&cc, "/family/many/leases", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_write_nothing() {
    let s = server();
    let c = client(&s).await;
    assert!(matches!(
        Semaphore::new(c.clone(), "/family/bad", 0),
        Err(Error::InvalidLimit)
    ));
    for p in ["", "/", "x", "/a/", "/a//b", "/a/../b"] {
        assert!(matches!(
            Semaphore::new(c.clone(), p, 1),
            Err(Error::InvalidPath(_))
        ));
        assert!(matches!(
            RwLock::new(c.clone(), p),
            Err(Error::InvalidPath(_))
        ));
        assert!(matches!(
            SemaphoreMutex::new(c.clone(), p),
            Err(Error::InvalidPath(_))
        ));
    }
    let sem = Semaphore::new(c.clone(), "/family/bad", 2).unwrap();
    for n in [0, 3] {
        let r = bounded("many", sem.acquire_many(n)).await;
        assert!(
            matches!(r, Err(Error::InvalidPermits { requested, limit: 2 }) if requested == n),
            "{r:?}"
        );
    }
    let dup = MultiLock::new(&c, &["/family/x", "/family/x"]);
    assert!(matches!(dup, Err(Error::DuplicateLock(p)) if p == "/family/x"));
    assert_eq!(
        c.list_children("/").await.unwrap(),
        vec!["zookeeper".to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_limit_is_read_checked_and_a_raise_wakes_a_waiter() {
    let s = server();
    let (ca, cb, cc) = (client(&s).await, client(&s).await, client(&s).await);
    let missing =
        Semaphore::with_shared_limit(ca.clone(), "/family/shared", "/family/count").unwrap();
    let r = bounded("missing count", missing.acquire()).await;
    assert!(matches!(r, Err(Error::InvalidSharedCount { .. })), "{r:?}");
    ca.create(
        "/family",
        b"",
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    set_count(&ca, "/family/count", 1).await;
    assert_eq!(missing.limit().await.unwrap(), 1);
    let holder = bounded("holder", missing.acquire()).await.unwrap();
    // A client configured with another limit is refused before it writes anything.
    let wrong =
        Semaphore::with_checked_limit(cb.clone(), "/family/shared", 5, "/family/count").unwrap();
    let r = bounded("mismatch", wrong.acquire()).await;
    assert!(
        matches!(
            r,
            Err(Error::LimitMismatch {
                configured: 5,
                shared: 1
            })
        ),
        "{r:?}"
    );
    assert_eq!(
        cb.list_children("/family/shared/leases")
            .await
            .unwrap()
            .len(),
        1
    );
    // CURATOR-75: raising the shared count wakes a blocked acquirer.
    let waiter_sem =
        Semaphore::with_shared_limit(cb.clone(), "/family/shared", "/family/count").unwrap();
    let mut waiter = tokio::spawn(async move { waiter_sem.acquire().await.unwrap() });
    wait_children(&cc, "/family/shared/leases", 2).await;
    assert!(
        still_waiting(&mut waiter, SHORT).await,
        "granted over the limit"
    );
    set_count(&cc, "/family/count", 2).await;
    let p = bounded("waiter after the raise", waiter).await.unwrap();
    assert!(!holder.is_lost() && !p.is_lost());
    let agree = Semaphore::with_checked_limit(cc, "/family/shared", 2, "/family/count").unwrap();
    assert!(bounded("agreeing, full", agree.try_acquire())
        .await
        .unwrap()
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_takes_all_in_path_order_and_releases_all_on_timeout() {
    let s = server();
    let (ca, cb, cc) = (client(&s).await, client(&s).await, client(&s).await);
    let blocker = Mutex::new(cb.clone(), "/family/m/b").unwrap();
    let held = bounded("blocker", blocker.acquire()).await.unwrap();
    let parts = vec![
        Lockable::Write(RwLock::new(ca.clone(), "/family/m/c").unwrap()),
        Lockable::Mutex(Mutex::new(ca.clone(), "/family/m/b").unwrap()),
        Lockable::SemaphoreMutex(SemaphoreMutex::new(ca.clone(), "/family/m/a").unwrap()),
    ];
    let multi = MultiLock::from_locks(parts).unwrap();
    assert_eq!(
        multi.paths().collect::<Vec<_>>(),
        ["/family/m/a", "/family/m/b", "/family/m/c"]
    );
    assert!(bounded("multi", multi.try_acquire_for(SHORT))
        .await
        .unwrap()
        .is_none());
    // Nothing stays held: `a` was taken and released before the call returned (no waiting
    // here), `c` was never touched.
    assert!(cc
        .list_children("/family/m/a/leases")
        .await
        .unwrap_or_default()
        .is_empty());
    wait_children(&cc, "/family/m/b", 1).await;
    assert!(cc
        .list_children("/family/m/c")
        .await
        .unwrap_or_default()
        .is_empty());
    drop(held);
    let g = bounded("multi", multi.acquire()).await.unwrap();
    let tokens = g.fencing_tokens();
    assert_eq!(tokens.len(), 3);
    assert!(!g.is_lost());
    // Overlapping multi-locks given in the opposite order do not deadlock.
    let other = MultiLock::new(&cb, &["/family/m/c", "/family/m/b"]).unwrap();
    let mut waiting = tokio::spawn(async move {
        let g = other.acquire().await.unwrap();
        g.release().await.unwrap();
    });
    assert!(still_waiting(&mut waiting, SHORT).await);
    g.release().await.unwrap();
    bounded("second multi-lock", waiting).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_gets_a_clear_error() {
    let s = server();
    let proxy = common::Proxy::start(s.addr());
    let c = common::client_via(&proxy).await;
    let m = Mutex::new(c.clone(), "/family/closed").unwrap();
    let sem = Semaphore::new(c.clone(), "/family/closed-sem", 1).unwrap();
    common::end_session(&proxy, &c).await;
    let r = bounded("mutex", m.acquire()).await;
    assert!(matches!(r, Err(Error::SessionLost)), "{r:?}");
    let r = bounded("semaphore", sem.acquire()).await;
    assert!(matches!(r, Err(Error::SessionLost)), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquire_futures_leave_nothing_behind() {
    let s = server();
    let (ca, cb) = (client(&s).await, client(&s).await);
    // Holders, so that every acquire below has to wait.
    let m = Mutex::new(ca.clone(), "/family/cancel/m").unwrap();
    let _gm = bounded("mutex", m.acquire()).await.unwrap();
    let sem = Semaphore::new(ca.clone(), "/family/cancel/s", 1).unwrap();
    let _gs = bounded("semaphore", sem.acquire()).await.unwrap();
    let rw = RwLock::new(ca.clone(), "/family/cancel/rw").unwrap();
    let _gw = bounded("write", rw.write_lock().acquire()).await.unwrap();

    let wm = Mutex::new(cb.clone(), "/family/cancel/m").unwrap();
    let ws = Semaphore::new(cb.clone(), "/family/cancel/s", 1).unwrap();
    let wr = RwLock::new(cb.clone(), "/family/cancel/rw").unwrap();
    for _ in 0..3 {
        // Each future is dropped while it waits: its nodes must go.
        let waits = async {
            let _ = tokio::join!(wm.acquire(), ws.acquire(), wr.read_lock().acquire());
        };
        assert!(tokio::time::timeout(SHORT, waits).await.is_err());
    }
    wait_children(&cb, "/family/cancel/m", 1).await;
    wait_children(&cb, "/family/cancel/s/locks", 0).await;
    wait_children(&cb, "/family/cancel/s/leases", 1).await;
    wait_children(&cb, "/family/cancel/rw", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_dropped_while_disconnected_is_still_released() {
    let s = server();
    let proxy = common::Proxy::start(s.addr());
    let c = common::client_via(&proxy).await; // 2 s session
    let observer = client(&s).await;
    let sem = Semaphore::new(c.clone(), "/family/guaranteed", 1).unwrap();
    let p = bounded("permit", sem.acquire()).await.unwrap();
    proxy.cut();
    drop(p); // the delete cannot reach the server now
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        observer
            .list_children("/family/guaranteed/leases")
            .await
            .unwrap()
            .len(),
        1,
        "the lease cannot have been deleted while cut off"
    );
    proxy.heal(); // well within the session timeout: the session survives
    wait_children(&observer, "/family/guaranteed/leases", 0).await;
    let other = Semaphore::new(observer.clone(), "/family/guaranteed", 1).unwrap();
    assert!(bounded("next", other.try_acquire_for(BOUND_SHORT))
        .await
        .unwrap()
        .is_some());
}

const BOUND_SHORT: Duration = Duration::from_secs(5);

/// `try_acquire_for(Duration::MAX)` (a deadline past what an `Instant` can hold) waits without
/// a deadline instead of panicking, on every type: granted at once when free, and granted on
/// release when taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_of_duration_max_waits_without_a_deadline() {
    let s = server();
    let (a, b) = (client(&s).await, client(&s).await);
    let m = Mutex::new(a.clone(), "/max/mutex").unwrap();
    let g = bounded("mutex", m.try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    let mb = Mutex::new(b.clone(), "/max/mutex").unwrap();
    let mut waiter = tokio::spawn(async move {
        let r = mb.try_acquire_for(Duration::MAX).await;
        r.map(|g| g.map(|g| g.fencing_token()))
    });
    wait_children(&a, "/max/mutex", 2).await;
    assert!(still_waiting(&mut waiter, SHORT).await);
    drop(g);
    let token = bounded("the waiter", waiter).await.unwrap().unwrap();
    assert!(token.is_some(), "granted on release");
    let sem = Semaphore::new(a.clone(), "/max/sem", 2).unwrap();
    let p = bounded("semaphore", sem.try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    let p2 = bounded("semaphore", sem.try_acquire_many_for(1, Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    drop((p, p2));
    let sm = SemaphoreMutex::new(a.clone(), "/max/smutex").unwrap();
    let g = bounded("semaphore mutex", sm.try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    drop(g);
    let rw = RwLock::new(a.clone(), "/max/rw").unwrap();
    let r = bounded("read", rw.read_lock().try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    drop(r);
    let w = bounded("write", rw.write_lock().try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    drop(w);
    let multi = MultiLock::new(&a, &["/max/m1", "/max/m2"]).unwrap();
    let g = bounded("multi", multi.try_acquire_for(Duration::MAX))
        .await
        .unwrap()
        .expect("free");
    drop(g);
}

/// Curator's meaning of a shared count: 0 or less admits no one (operators drain a semaphore
/// that way), and a request above the count, before or during its wait, waits for a raise
/// instead of failing. Raising the count admits the waiters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_count_of_zero_or_less_drains_and_a_request_above_it_waits() {
    let s = server();
    let (ca, cb) = (client(&s).await, client(&s).await);
    ca.create(
        "/drain",
        b"",
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    set_count(&ca, "/drain/count", 0).await;
    let sem = Semaphore::with_shared_limit(ca.clone(), "/drain/sem", "/drain/count").unwrap();
    assert_eq!(bounded("limit", sem.limit()).await.unwrap(), 0);
    let mut waiter = tokio::spawn(async move { sem.acquire().await.map(|p| p.permits()) });
    wait_children(&cb, "/drain/sem/leases", 1).await;
    assert!(
        still_waiting(&mut waiter, SHORT).await,
        "granted at count 0"
    );
    set_count(&cb, "/drain/count", -3).await;
    assert!(
        still_waiting(&mut waiter, SHORT).await,
        "granted at count -3"
    );
    set_count(&cb, "/drain/count", 1).await;
    let got = bounded("the waiter after the raise", waiter).await.unwrap();
    assert_eq!(got.unwrap(), 1);
    // A request for more than the count waits, and lowering the count during its wait keeps it
    // waiting rather than failing it; a raise admits it.
    wait_children(&cb, "/drain/sem/leases", 0).await;
    let many = Semaphore::with_shared_limit(cb.clone(), "/drain/sem", "/drain/count").unwrap();
    let mut waiter = tokio::spawn(async move { many.acquire_many(2).await.map(|p| p.permits()) });
    wait_children(&ca, "/drain/sem/leases", 2).await;
    assert!(
        still_waiting(&mut waiter, SHORT).await,
        "2 granted at count 1"
    );
    set_count(&ca, "/drain/count", 0).await;
    assert!(
        still_waiting(&mut waiter, SHORT).await,
        "2 granted at count 0"
    );
    set_count(&ca, "/drain/count", 2).await;
    let got = bounded("the waiter after the raise", waiter).await.unwrap();
    assert_eq!(got.unwrap(), 2);
}
