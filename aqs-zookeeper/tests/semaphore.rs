//! Behaviour of `Semaphore` against a real ZooKeeper; every wait is bounded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aqs_test_servers::zookeeper::TestServer;
use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Error, Semaphore};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(30);

async fn client(server: &TestServer) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(&server.addr().to_string())
        .await
        .expect("connect")
}

async fn wait_children(c: &zk::Client, path: &str, n: usize) {
    timeout(BOUND, async {
        while c.list_children(path).await.map(|v| v.len()).unwrap_or(0) != n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{path} never had {n} children"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_than_the_limit_among_six_clients() {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let inside = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let sem = Semaphore::new(client(&s).await, "/sem/limit", 2).unwrap();
        let (inside, max_seen) = (inside.clone(), max_seen.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                let p = sem.acquire().await.unwrap();
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_seen.fetch_max(n, Ordering::SeqCst);
                assert!(n <= 2, "{n} holders of a 2-permit semaphore");
                tokio::time::sleep(Duration::from_millis(5)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                drop(p);
            }
        }));
    }
    for t in tasks {
        timeout(BOUND, t).await.expect("bounded").unwrap();
    }
    assert!(max_seen.load(Ordering::SeqCst) >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layout_timeout_and_release_wakes_a_waiter() {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let (ca, cb) = (client(&s).await, client(&s).await);
    let a = Semaphore::new(ca.clone(), "/sem/one", 1).unwrap();
    let b = Semaphore::new(cb, "/sem/one", 1).unwrap();
    let pa = timeout(BOUND, a.acquire()).await.unwrap().unwrap();
    let mut top = ca.list_children("/sem/one").await.unwrap();
    top.sort();
    assert_eq!(top, ["leases", "locks"]);
    let name = pa.node_path().rsplit('/').next().unwrap();
    assert!(
        name.starts_with("_c_") && name.contains("-lease-"),
        "{name}"
    );
    assert!(pa.node_path().starts_with("/sem/one/leases/"));

    assert!(b
        .try_acquire_for(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    wait_children(&ca, "/sem/one/leases", 1).await;
    wait_children(&ca, "/sem/one/locks", 0).await;

    let waiter = tokio::spawn(async move { b.acquire().await });
    wait_children(&ca, "/sem/one/leases", 2).await;
    assert!(!waiter.is_finished());
    let token = pa.fencing_token();
    drop(pa);
    let pb = timeout(BOUND, waiter)
        .await
        .expect("release did not wake")
        .unwrap()
        .unwrap();
    assert!(pb.fencing_token() > token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_zero_is_refused() {
    let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
    let c = client(&s).await;
    assert!(matches!(
        Semaphore::new(c.clone(), "/sem/zero", 0),
        Err(Error::InvalidLimit)
    ));
    assert!(matches!(
        Semaphore::new(c.clone(), "sem", 1),
        Err(Error::InvalidPath(_))
    ));
    assert_eq!(c.list_children("/").await.unwrap(), ["zookeeper"]);
}
