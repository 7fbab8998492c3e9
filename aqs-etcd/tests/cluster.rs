//! The recipes on a three-member etcd cluster (issue 36): each session's client knows all
//! three endpoints, and a follower, then the leader, is killed and restarted under load. Requests and lease
//! keep-alives that were on the dead member move to the others. Judged by the server's
//! record: fencing tokens (create revisions) grow with every grant, and no key is left once
//! the workers have released.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use aqs_etcd::etcd_client::{Client, GetOptions};
use aqs_etcd::{Mutex, Semaphore, Session};
use aqs_test_servers::etcd::Cluster;
use tokio::time::timeout;

/// Every wait is bounded; a member's death can cost a client a few retries.
const BOUND: Duration = Duration::from_secs(60);
const TTL: Duration = Duration::from_secs(10);
const WORKERS: usize = 4;

async fn wait_grants(grants: &AtomicUsize, n: usize, what: &str) {
    timeout(BOUND, async {
        while grants.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no progress to {n} grants {what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_hold_while_a_follower_then_the_leader_die_and_return() {
    let mut cluster = Cluster::start(BOUND).expect("an etcd cluster must start");
    let endpoints = cluster.endpoints();
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicUsize::new(0));
    let in_mutex = Arc::new(AtomicUsize::new(0));
    let in_semaphore = Arc::new(AtomicUsize::new(0));
    let last_token = Arc::new(StdMutex::new(0i64));
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let client = Client::connect(endpoints.clone(), None)
            .await
            .expect("connect");
        let session = Session::new(client, TTL).await.expect("session");
        let mutex = Mutex::new(&session, "cluster/mutex").unwrap();
        let semaphore = Semaphore::new(&session, "cluster/semaphore", 2).unwrap();
        let (stop, grants, in_mutex, in_semaphore, last_token) = (
            stop.clone(),
            grants.clone(),
            in_mutex.clone(),
            in_semaphore.clone(),
            last_token.clone(),
        );
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let guard = timeout(BOUND, mutex.lock())
                    .await
                    .expect("the mutex is granted within the bound")
                    .expect("a dead member costs a lock nothing");
                assert_eq!(in_mutex.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                {
                    let mut last = last_token.lock().unwrap();
                    assert!(guard.token() > *last, "a token went back");
                    *last = guard.token();
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                in_mutex.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.expect("released");

                let permit = timeout(BOUND, semaphore.acquire())
                    .await
                    .expect("a permit is granted within the bound")
                    .expect("a dead member costs an acquire nothing");
                assert!(
                    in_semaphore.fetch_add(1, Ordering::SeqCst) < 2,
                    "over the limit"
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
                in_semaphore.fetch_sub(1, Ordering::SeqCst);
                permit.release().await.expect("released");
                grants.fetch_add(1, Ordering::SeqCst);
            }
            assert!(!session.is_lost(), "a member's death ended a session");
            session.close().await.expect("closed");
        }));
    }

    wait_grants(&grants, 20, "before the kill").await;
    let leader = cluster.leader();
    let victim = (0..3).find(|&i| Some(i) != leader).expect("a follower");
    eprintln!("killing member {victim} (leader {leader:?})");
    cluster.kill(victim).expect("killed");
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "with a member down").await;
    cluster
        .restart(victim, BOUND)
        .expect("the member comes back");
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "after the member came back").await;
    // Then the leader: an election, after which the others serve.
    let leader = cluster.leader().expect("a leader");
    eprintln!("killing the leader, member {leader}");
    cluster.kill(leader).expect("killed");
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "after the leader died").await;
    cluster
        .restart(leader, BOUND)
        .expect("the member comes back");
    let before = grants.load(Ordering::SeqCst);
    wait_grants(&grants, before + 20, "after the old leader came back").await;
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        timeout(BOUND, w)
            .await
            .expect("workers stop")
            .expect("a worker failed");
    }
    eprintln!("{} grants in all", grants.load(Ordering::SeqCst));

    // The server's record, read through a fresh client: no key under either name is left.
    let observer = Client::connect(endpoints, None).await.expect("connect");
    let left = observer
        .kv_client()
        .get(
            "cluster/",
            Some(GetOptions::new().with_prefix().with_keys_only()),
        )
        .await
        .expect("get");
    let left: Vec<_> = left
        .kvs()
        .iter()
        .map(|kv| kv.key_str().unwrap().to_owned())
        .collect();
    assert!(left.is_empty(), "keys left: {left:?}");
}
