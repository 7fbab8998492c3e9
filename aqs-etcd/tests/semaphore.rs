//! `Semaphore` against a real etcd started by the test.

mod common;

use std::time::Duration;

use aqs_etcd::{Error, Semaphore};
use common::*;

#[tokio::test]
async fn the_limit_holds_and_a_release_lets_the_waiter_in() {
    let server = server();
    let c = client(&server).await;
    let (a, b, w) = (
        session(&server, 10).await,
        session(&server, 10).await,
        session(&server, 10).await,
    );
    let pa = Semaphore::new(&a, "/s/two", 2)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let pb = Semaphore::new(&b, "/s/two", 2)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert!(pb.token() > pa.token());
    // Each token is its lease key's create revision, in the server's record.
    let held = keys(&c, "/s/two/leases").await;
    assert_eq!(
        held,
        vec![
            (pa.key().to_owned(), pa.token()),
            (pb.key().to_owned(), pb.token())
        ]
    );
    let sw = Semaphore::new(&w, "/s/two", 2).unwrap();
    let none = bounded(
        "timed acquire",
        sw.try_acquire_for(Duration::from_millis(300)),
    )
    .await;
    assert!(none.unwrap().is_none());
    assert_eq!(
        keys(&c, "/s/two/leases").await.len(),
        2,
        "the timeout left no lease key"
    );
    assert!(keys(&c, "/s/two/lock").await.is_empty(), "nor a gate key");
    let waiter = tokio::spawn(async move { sw.acquire().await });
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    drop(pa);
    let pw = bounded("waiter after a release", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(pw.token() > pb.token());
    let record = keys(&c, "/s/two/leases").await;
    assert_eq!(record.len(), 2);
    assert!(record.iter().any(|k| k.0 == pw.key()));
}

#[tokio::test]
async fn a_large_request_is_not_overtaken_by_later_small_ones() {
    let server = server();
    let (a, b, d) = (
        session(&server, 10).await,
        session(&server, 10).await,
        session(&server, 10).await,
    );
    let c = client(&server).await;
    let sa = Semaphore::new(&a, "/s/fifo", 4).unwrap();
    let three = sa.acquire_many(3).await.unwrap();
    assert_eq!(three.permits(), 3);
    let sb = Semaphore::new(&b, "/s/fifo", 4).unwrap();
    let two = tokio::spawn(async move { sb.acquire_many(2).await });
    wait_keys(&c, "/s/fifo/lock", 1).await; // b holds the gate, waiting for permits
    let sd = Semaphore::new(&d, "/s/fifo", 4).unwrap();
    let one = tokio::spawn(async move { sd.acquire().await });
    wait_keys(&c, "/s/fifo/lock", 2).await;
    // One permit is free, but d is behind b.
    assert!(still_waiting(&one, Duration::from_millis(500)).await);
    assert!(!two.is_finished());
    three.release().await.unwrap();
    let two = bounded("b", two).await.unwrap().unwrap();
    let one = bounded("d", one).await.unwrap().unwrap();
    assert!(two.token() < one.token(), "granted in arrival order");
    assert_eq!(keys(&c, "/s/fifo/leases").await.len(), 2);
}

#[tokio::test]
async fn a_closed_holders_permits_return() {
    let server = server();
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let p = Semaphore::new(&a, "/s/crash", 1)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let sb = Semaphore::new(&b, "/s/crash", 1).unwrap();
    let waiter = tokio::spawn(async move { sb.acquire().await });
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    a.close().await.unwrap();
    assert!(p.is_lost());
    let pb = bounded("b after a's lease ends", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(pb.token() > p.token());
}

#[tokio::test]
async fn bad_input_is_refused() {
    let server = server();
    let s = session(&server, 10).await;
    assert!(matches!(
        Semaphore::new(&s, "", 1),
        Err(Error::InvalidName(_))
    ));
    assert!(matches!(
        Semaphore::new(&s, "/s/bad", 0),
        Err(Error::InvalidLimit)
    ));
    let sem = Semaphore::new(&s, "/s/bad", 4).unwrap();
    for n in [0, 5] {
        let r = sem.acquire_many(n).await;
        assert!(matches!(r, Err(Error::InvalidPermits { requested, limit: 4 }) if requested == n));
    }
    let p = bounded("no deadline", sem.try_acquire_many_for(4, Duration::MAX)).await;
    assert_eq!(p.unwrap().unwrap().permits(), 4);
}
