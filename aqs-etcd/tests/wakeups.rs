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
