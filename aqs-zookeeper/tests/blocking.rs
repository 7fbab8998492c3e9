//! The blocking facade against a real ZooKeeper: threads, no runtime of their own, the
//! in-process names, and every wait bounded by the facade's own timed forms.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqs_test_servers::zookeeper::TestServer;
use aqs_zookeeper::blocking::{MultiLock, Mutex, RwLock, Semaphore, SemaphoreMutex, Session};
use aqs_zookeeper::Error;

const BOUND: Duration = Duration::from_secs(20);
const SHORT: Duration = Duration::from_millis(300);

fn setup() -> (TestServer, Session, Session) {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let addr = s.addr().to_string();
    let a = Session::connect_with_timeout(&addr, Duration::from_secs(4)).unwrap();
    let b = Session::connect_with_timeout(&addr, Duration::from_secs(4)).unwrap();
    (s, a, b)
}

#[test]
fn semaphore_limits_threads_across_sessions() {
    let (_s, a, b) = setup();
    let inside = Arc::new(AtomicUsize::new(0));
    let granted = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let session = if i % 2 == 0 { a.clone() } else { b.clone() };
            let sem = Semaphore::new(&session, "/blocking/sem", 2).unwrap();
            let (inside, granted) = (inside.clone(), granted.clone());
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let p = sem.try_acquire_for(BOUND).unwrap().expect("bounded wait");
                    assert!(inside.fetch_add(1, Ordering::SeqCst) < 2, "over the limit");
                    std::thread::sleep(Duration::from_millis(5));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    granted.fetch_add(1, Ordering::SeqCst);
                    drop(p);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(granted.load(Ordering::SeqCst), 18);
}

#[test]
fn timed_forms_time_out_and_try_forms_do_not_wait() {
    let (_s, a, b) = setup();
    let m = Mutex::new(&a, "/blocking/mutex").unwrap();
    let g = m.acquire().unwrap();
    let again = g.reenter().unwrap(); // re-entry is explicit, through the guard
    assert_eq!(g.node_path(), again.node_path());
    let other = Mutex::new(&b, "/blocking/mutex").unwrap();
    assert!(other.try_acquire().unwrap().is_none());
    let t0 = Instant::now();
    assert!(other.try_acquire_for(SHORT).unwrap().is_none());
    assert!(t0.elapsed() >= SHORT);
    assert!(other
        .try_acquire_until(Instant::now() + SHORT)
        .unwrap()
        .is_none());
    drop((g, again));
    assert!(other.try_acquire_for(BOUND).unwrap().is_some());
}

#[test]
fn the_rest_of_the_family_works_from_threads() {
    let (_s, a, b) = setup();
    let sem = Semaphore::new(&a, "/blocking/many", 3).unwrap();
    let p = sem.acquire_many(3).unwrap();
    assert_eq!(p.permits(), 3);
    assert!(Semaphore::new(&b, "/blocking/many", 3)
        .unwrap()
        .try_acquire()
        .unwrap()
        .is_none());
    assert!(matches!(
        sem.acquire_many(4),
        Err(Error::InvalidPermits {
            requested: 4,
            limit: 3
        })
    ));
    a.block_on(p.release()).unwrap();

    let sm = SemaphoreMutex::new(&a, "/blocking/smutex").unwrap();
    let g = sm.acquire().unwrap();
    assert!(SemaphoreMutex::new(&b, "/blocking/smutex")
        .unwrap()
        .try_acquire()
        .unwrap()
        .is_none());
    drop(g);

    let rw = RwLock::new(&a, "/blocking/rw").unwrap();
    let r = rw.read_lock().acquire().unwrap();
    let rw_b = RwLock::new(&b, "/blocking/rw").unwrap();
    let r2 = rw_b.read_lock().try_acquire_for(BOUND).unwrap();
    assert!(r2.is_some(), "readers share");
    assert!(
        rw_b.write_lock().try_acquire_for(SHORT).is_err(),
        "no upgrade"
    );
    drop(r2);
    let rw_c = RwLock::new(&b, "/blocking/rw").unwrap();
    assert!(rw_c.write_lock().try_acquire_for(SHORT).unwrap().is_none());
    drop(r);
    assert!(rw_c.write_lock().try_acquire_for(BOUND).unwrap().is_some());

    let multi = MultiLock::new(&a, &["/blocking/x", "/blocking/y"]).unwrap();
    let g = multi.try_acquire_for(BOUND).unwrap().expect("both free");
    assert_eq!(g.fencing_tokens().len(), 2);
    let multi_b = MultiLock::new(&b, &["/blocking/y", "/blocking/x"]).unwrap();
    assert!(multi_b.try_acquire_for(SHORT).unwrap().is_none());
    drop(g);
    assert!(multi_b.try_acquire_for(BOUND).unwrap().is_some());
}

#[test]
#[should_panic(expected = "runtime")]
fn blocking_inside_a_runtime_panics() {
    let (_s, a, _b) = setup();
    let m = Mutex::new(&a, "/blocking/in-runtime").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let _ = m.acquire();
    });
}

#[test]
fn a_client_whose_runtime_is_gone_is_closed() {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let first = tokio::runtime::Runtime::new().unwrap();
    let client = first
        .block_on(aqs_zookeeper::zookeeper_client::Client::connect(
            &s.addr().to_string(),
        ))
        .unwrap();
    let m = aqs_zookeeper::Mutex::new(client.clone(), "/blocking/closed").unwrap();
    let sem = aqs_zookeeper::Semaphore::new(client, "/blocking/closed-sem", 1).unwrap();
    drop(first); // the client's connection task ends with its runtime
    let second = tokio::runtime::Runtime::new().unwrap();
    let r = second.block_on(async { tokio::time::timeout(BOUND, m.acquire()).await });
    assert!(matches!(r, Ok(Err(Error::Closed))), "{r:?}");
    let r = second.block_on(async { tokio::time::timeout(BOUND, sem.acquire()).await });
    assert!(matches!(r, Ok(Err(Error::Closed))), "{r:?}");
}

/// Polls `cond` from this thread until it holds, bounded.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !cond() {
        assert!(Instant::now() < deadline, "{what} within {BOUND:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The blocking facade's guards report doubt and loss as the async ones do: a holder whose
/// link goes silent both ways past its 2 s session sees `is_suspended()`, then `is_lost()`,
/// from a thread with no runtime of its own, and `lost()` agrees.
#[test]
fn a_silenced_session_reports_suspended_then_lost() {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let proxy = common::Proxy::start(s.addr());
    let a =
        Session::connect_with_timeout(&proxy.addr().to_string(), Duration::from_secs(2)).unwrap();
    let m = Mutex::new(&a, "/blocking/silenced").unwrap();
    let g = m.try_acquire_for(BOUND).unwrap().expect("bounded wait");
    assert!(!g.is_suspended() && !g.is_lost());
    proxy.silence();
    wait_until("suspended", || g.is_suspended());
    wait_until("lost", || g.is_lost());
    a.block_on(async { tokio::time::timeout(BOUND, g.lost()).await })
        .expect("lost() agrees with is_lost()");
    assert!(g.is_lost(), "once lost, stays lost");
    proxy.heal();
}

/// The blocking timed forms take `Duration::MAX` as "no deadline" instead of panicking.
#[test]
fn a_blocking_timeout_of_duration_max_does_not_panic() {
    let (_s, a, _b) = setup();
    let m = Mutex::new(&a, "/blocking/max").unwrap();
    let g = m.try_acquire_for(Duration::MAX).unwrap().expect("free");
    drop(g);
    let sem = Semaphore::new(&a, "/blocking/max-sem", 2).unwrap();
    let p = sem
        .try_acquire_many_for(2, Duration::MAX)
        .unwrap()
        .expect("free");
    drop(p);
}

/// Threads that share one blocking handle (`Arc<Mutex>`) never hold the lock at once: each
/// acquire queues its own node.
#[test]
fn threads_sharing_a_blocking_mutex_never_hold_at_once() {
    let (_s, a, _b) = setup();
    let m = Arc::new(Mutex::new(&a, "/blocking/shared").unwrap());
    let inside = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (m, inside) = (m.clone(), inside.clone());
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let g = m.try_acquire_for(BOUND).unwrap().expect("bounded wait");
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two inside");
                    std::thread::sleep(Duration::from_millis(5));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(g);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Dropping the last `Session` inside async code does not panic (Tokio forbids dropping a
/// runtime there; the session shuts its own down in the background).
#[test]
fn dropping_the_last_session_inside_async_code_is_safe() {
    let (_s, a, b) = setup();
    drop(b);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        drop(a);
    });
}

/// A guard dropped after the runtime that granted it is gone, on a thread with no runtime,
/// still deletes its node: the delete is sent when the guard drops, through the client, whose
/// own connection runs on another runtime.
#[test]
fn a_guard_dropped_after_its_runtime_is_gone_still_deletes_its_node() {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let home = tokio::runtime::Runtime::new().unwrap();
    let (c, watcher) = home.block_on(async {
        let addr = s.addr().to_string();
        (
            aqs_zookeeper::zookeeper_client::Client::connect(&addr)
                .await
                .unwrap(),
            aqs_zookeeper::zookeeper_client::Client::connect(&addr)
                .await
                .unwrap(),
        )
    });
    let m = aqs_zookeeper::Mutex::new(c, "/blocking/orphan").unwrap();
    let granting = tokio::runtime::Runtime::new().unwrap();
    let g = granting.block_on(m.acquire()).unwrap();
    let path = g.node_path().to_owned();
    drop(granting);
    drop(g); // no runtime here, and the granting one is gone
    home.block_on(async {
        tokio::time::timeout(BOUND, async {
            while watcher.check_stat(&path).await.unwrap().is_some() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the node is deleted");
    });
}
