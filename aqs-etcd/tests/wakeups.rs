//! No herd: a release wakes O(1) waiters, counted by the server (etcd's
//! `etcd_debugging_mvcc_events_total`, the watch events it sent) over a chain of hand-offs.
//! Requests per acquisition are printed (not asserted).

mod common;

use std::time::Duration;

use aqs_etcd::{Mutex, Semaphore};
use aqs_test_servers::etcd::TestServer;
use common::*;

const WAITERS: usize = 16;

fn events(server: &TestServer) -> f64 {
    server
        .metric_sum("etcd_debugging_mvcc_events_total", &[])
        .unwrap()
}

fn kv_requests(server: &TestServer) -> f64 {
    server
        .metric_sum(
            "grpc_server_handled_total",
            &["grpc_service=\"etcdserverpb.KV\""],
        )
        .unwrap()
}

#[tokio::test]
async fn a_semaphore_release_wakes_one_waiter() {
    let server = server();
    let c = client(&server).await;
    let holder = session(&server, 10).await;
    let p = Semaphore::new(&holder, "/w/s", 1)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..WAITERS {
        let s = session(&server, 10).await;
        let sem = Semaphore::new(&s, "/w/s", 1).unwrap();
        tasks.push(tokio::spawn(async move {
            let p = sem.acquire().await.unwrap();
            p.release().await.unwrap();
            drop(s);
        }));
        // Every waiter queued: the first holds the gate, the rest wait behind it.
        wait_keys(&c, "/w/s/lock", i + 1).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (e0, r0) = (events(&server), kv_requests(&server));
    p.release().await.unwrap();
    for t in tasks {
        bounded("the chain of hand-offs", t).await.unwrap();
    }
    let per_acq = (events(&server) - e0) / WAITERS as f64;
    let req_per_acq = (kv_requests(&server) - r0) / WAITERS as f64;
    println!("semaphore of 1, {WAITERS} waiters: {per_acq:.2} watch events and {req_per_acq:.2} KV requests per acquisition");
    // A herd would send each release to every waiter (about WAITERS / 2 on average).
    assert!(per_acq <= 3.0, "{per_acq} watch events per acquisition");
}

#[tokio::test]
async fn a_mutex_release_wakes_one_waiter() {
    let server = server();
    let c = client(&server).await;
    let holder = session(&server, 10).await;
    let g = Mutex::new(&holder, "/w/m").unwrap().lock().await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..WAITERS {
        let s = session(&server, 10).await;
        let m = Mutex::new(&s, "/w/m").unwrap();
        tasks.push(tokio::spawn(async move {
            let g = m.lock().await.unwrap();
            g.release().await.unwrap();
            drop(s);
        }));
        wait_keys(&c, "/w/m", i + 2).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (e0, r0) = (events(&server), kv_requests(&server));
    g.release().await.unwrap();
    for t in tasks {
        bounded("the chain of hand-offs", t).await.unwrap();
    }
    let per_acq = (events(&server) - e0) / WAITERS as f64;
    let req_per_acq = (kv_requests(&server) - r0) / WAITERS as f64;
    println!("mutex, {WAITERS} waiters: {per_acq:.2} watch events and {req_per_acq:.2} KV requests per acquisition");
    assert!(per_acq <= 2.0, "{per_acq} watch events per acquisition");
}

/// No wake-up is lost while other writes move the revision between a waiter's look and its
/// watch's creation (WA2 in `wait.rs`): a waiter whose watch started after its predecessor's
/// delete, and that did not look again, would wait forever. Sessions hand a mutex, a semaphore
/// of 2 and a read-write lock back and forth with no hold while a writer puts an unrelated key
/// in a tight loop; every acquire is bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_wake_up_is_lost_while_other_writes_move_the_revision() {
    use aqs_etcd::RwLock;
    let server = server();
    let noise = client(&server).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (mut kv, stop) = (noise.kv_client(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                kv.put("/noise", n.to_string(), None).await.unwrap();
                n += 1;
            }
            n
        })
    };
    let mut tasks = Vec::new();
    for i in 0..6 {
        let s = session(&server, 10).await;
        tasks.push(tokio::spawn(async move {
            let (m, sem, rw) = (
                Mutex::new(&s, "/lost/m").unwrap(),
                Semaphore::new(&s, "/lost/s", 2).unwrap(),
                RwLock::new(&s, "/lost/rw").unwrap(),
            );
            for round in 0..25 {
                bounded("a mutex hand-off", async {
                    m.lock().await.unwrap().release().await.unwrap()
                })
                .await;
                bounded("a semaphore hand-off", async {
                    sem.acquire().await.unwrap().release().await.unwrap()
                })
                .await;
                let g = if (i + round) % 3 == 0 {
                    bounded("a write hand-off", rw.write()).await
                } else {
                    bounded("a read hand-off", rw.read()).await
                };
                g.unwrap().release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let puts = bounded("the writer", writer).await.unwrap();
    println!("{puts} unrelated puts during the hand-offs");
    let c = client(&server).await;
    for name in ["/lost/m", "/lost/s", "/lost/rw"] {
        wait_keys(&c, name, 0).await;
    }
}
