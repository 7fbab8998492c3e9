//! `RwLock` against a real etcd started by the test.

mod common;

use std::time::Duration;

use aqs_etcd::RwLock;
use common::*;

#[tokio::test]
async fn readers_share_writers_wait_and_order_is_fifo() {
    let server = server();
    let c = client(&server).await;
    let (a, b, w, r) = (
        session(&server, 10).await,
        session(&server, 10).await,
        session(&server, 10).await,
        session(&server, 10).await,
    );
    let ra = RwLock::new(&a, "/rw/x").unwrap().read().await.unwrap();
    let rb = bounded("second reader", RwLock::new(&b, "/rw/x").unwrap().read())
        .await
        .unwrap();
    assert!(!ra.is_write() && !rb.is_write());
    let lw = RwLock::new(&w, "/rw/x").unwrap();
    assert!(lw
        .try_write_for(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        keys(&c, "/rw/x").await.len(),
        2,
        "the timed-out writer left no key"
    );
    let writer = tokio::spawn(async move { lw.write().await });
    wait_keys(&c, "/rw/x", 3).await;
    // A reader arriving after the waiting writer waits for it (FIFO).
    let lr = RwLock::new(&r, "/rw/x").unwrap();
    let late_reader = tokio::spawn(async move { lr.read().await });
    wait_keys(&c, "/rw/x", 4).await;
    assert!(still_waiting(&writer, Duration::from_millis(300)).await);
    assert!(!late_reader.is_finished());
    drop(ra);
    assert!(
        still_waiting(&writer, Duration::from_millis(300)).await,
        "one reader remains"
    );
    rb.release().await.unwrap();
    let gw = bounded("writer", writer).await.unwrap().unwrap();
    assert!(gw.is_write());
    assert!(still_waiting(&late_reader, Duration::from_millis(300)).await);
    let wt = gw.token();
    drop(gw);
    let gr = bounded("late reader", late_reader).await.unwrap().unwrap();
    assert!(gr.token() > wt);
}

#[tokio::test]
async fn a_closed_writers_hold_passes_to_readers() {
    let server = server();
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let gw = RwLock::new(&a, "/rw/c").unwrap().write().await.unwrap();
    let lr = RwLock::new(&b, "/rw/c").unwrap();
    let reader = tokio::spawn(async move { lr.read().await });
    assert!(still_waiting(&reader, Duration::from_millis(300)).await);
    a.close().await.unwrap();
    assert!(gw.is_lost());
    let gr = bounded("reader after the writer's lease ends", reader)
        .await
        .unwrap()
        .unwrap();
    assert!(gr.token() > gw.token());
}
