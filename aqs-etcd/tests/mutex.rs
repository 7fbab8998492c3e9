//! `Mutex` against a real etcd started by the test: exclusion, order, timeouts, session loss.

mod common;

use std::time::Duration;

use aqs_etcd::{Error, Mutex, Session};
use common::*;

#[tokio::test]
async fn two_sessions_exclude_each_other() {
    let server = server();
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let (ma, mb) = (
        Mutex::new(&a, "/t/x").unwrap(),
        Mutex::new(&b, "/t/x").unwrap(),
    );
    let ga = bounded("a locks", ma.lock()).await.unwrap();
    assert_eq!(ga.key(), format!("/t/x/{:x}", a.lease_id()));
    assert!(mb.try_lock().await.unwrap().is_none());
    let waiter = tokio::spawn(async move { mb.lock().await });
    assert!(still_waiting(&waiter, Duration::from_millis(500)).await);
    let token_a = ga.token();
    ga.release().await.unwrap();
    let gb = bounded("b enters after a's release", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(gb.token() > token_a, "fencing tokens grow");
    let c = client(&server).await;
    assert_eq!(
        keys(&c, "/t/x").await,
        vec![(gb.key().to_owned(), gb.token())]
    );
}

#[tokio::test]
async fn waiters_are_granted_in_create_revision_order() {
    let server = server();
    let c = client(&server).await;
    let holder = session(&server, 10).await;
    let g = Mutex::new(&holder, "/t/fifo")
        .unwrap()
        .lock()
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut sessions = Vec::new();
    for i in 0..3 {
        let s = session(&server, 10).await;
        let m = Mutex::new(&s, "/t/fifo").unwrap();
        let tx = tx.clone();
        tokio::spawn(async move {
            let g = m.lock().await.unwrap();
            tx.send((i, g.token())).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(g);
        });
        wait_keys(&c, "/t/fifo", i + 2).await; // queued before the next one starts
        sessions.push(s);
    }
    drop(g);
    let mut order = Vec::new();
    for _ in 0..3 {
        order.push(bounded("next grant", rx.recv()).await.unwrap());
    }
    assert_eq!(order.iter().map(|o| o.0).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1));
}

#[tokio::test]
async fn timed_out_acquire_leaves_no_key() {
    let server = server();
    let c = client(&server).await;
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let g = Mutex::new(&a, "/t/timeout").unwrap().lock().await.unwrap();
    let mb = Mutex::new(&b, "/t/timeout").unwrap();
    let got = bounded("timed acquire", mb.try_lock_for(Duration::from_millis(300))).await;
    assert!(got.unwrap().is_none());
    // The timed-out attempt deleted its key before returning.
    assert_eq!(
        keys(&c, "/t/timeout").await,
        vec![(g.key().to_owned(), g.token())]
    );
    // Cancelled at every early point, including while the create's reply is in flight.
    for us in [0, 50, 200, 500, 1000, 2000, 5000] {
        let _ = tokio::time::timeout(Duration::from_micros(us), mb.lock()).await;
    }
    wait_keys(&c, "/t/timeout", 1).await;
    // And it can still queue and enter afterwards.
    let waiter = tokio::spawn(async move { mb.try_lock_for(Duration::MAX).await });
    drop(g);
    let gb = bounded("b enters", waiter).await.unwrap().unwrap();
    assert!(gb.is_some());
}

#[tokio::test]
async fn closing_the_holders_session_lets_the_next_waiter_in() {
    let server = server();
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let ga = Mutex::new(&a, "/t/close").unwrap().lock().await.unwrap();
    let mb = Mutex::new(&b, "/t/close").unwrap();
    let waiter = tokio::spawn(async move { mb.lock().await });
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    a.close().await.unwrap();
    assert!(ga.is_lost());
    let gb = bounded("b enters after a's lease is revoked", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(gb.token() > ga.token());
    let again = Mutex::new(&a, "/t/close").unwrap().try_lock().await;
    assert!(matches!(again, Err(Error::Closed)));
}

#[tokio::test]
async fn one_session_queues_its_own_contenders_in_process() {
    let server = server();
    let c = client(&server).await;
    let s = session(&server, 10).await;
    let (m1, m2) = (
        Mutex::new(&s, "/t/local").unwrap(),
        Mutex::new(&s, "/t/local").unwrap(),
    );
    let g1 = m1.lock().await.unwrap();
    assert!(
        m2.try_lock().await.unwrap().is_none(),
        "same session, same key: still excluded"
    );
    let waiter = tokio::spawn(async move { m2.lock().await });
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    assert_eq!(keys(&c, "/t/local").await.len(), 1, "one key per lease");
    let t1 = g1.token();
    drop(g1);
    let g2 = bounded("second contender", waiter).await.unwrap().unwrap();
    assert!(g2.token() > t1, "a fresh key, not the released one");
}

#[tokio::test]
async fn bad_input_is_refused() {
    let server = server();
    let s = session(&server, 10).await;
    assert!(matches!(Mutex::new(&s, ""), Err(Error::InvalidName(_))));
    let c = client(&server).await;
    for ttl in [Duration::ZERO, Duration::from_millis(1500), Duration::MAX] {
        let r = Session::new(c.clone(), ttl).await;
        assert!(matches!(r, Err(Error::InvalidTtl(_))), "{ttl:?}");
    }
    let m = Mutex::new(&s, "/t/bad").unwrap();
    let g = bounded("no deadline", m.try_lock_for(Duration::MAX)).await;
    assert!(g.unwrap().is_some());
}

#[tokio::test]
async fn a_live_session_is_neither_lost_nor_suspended() {
    let server = server();
    let s = session(&server, 2).await;
    // Several TTLs: keep-alives must keep it live.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!s.is_lost());
    assert!(!s.is_suspended());
    let g = Mutex::new(&s, "/t/live").unwrap().lock().await.unwrap();
    assert!(!g.is_lost());
}

#[tokio::test]
async fn a_stopped_server_makes_the_session_lost() {
    let server = server();
    let s = session(&server, 2).await;
    let g = Mutex::new(&s, "/t/down").unwrap().lock().await.unwrap();
    drop(server);
    bounded("suspended", s.suspended()).await;
    bounded("lost", g.lost()).await;
    assert!(s.is_lost() && !s.is_suspended());
    let m = Mutex::new(&s, "/t/down").unwrap();
    assert!(matches!(m.try_lock().await, Err(Error::SessionLost)));
}

#[test]
fn types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Session>();
    check::<Mutex>();
    check::<aqs_etcd::MutexGuard>();
    check::<Error>();
}

/// Regression: a zero timeout once raced the create request against a deadline that had
/// already passed, so `try_lock` could give up on a free lock without asking the server.
#[tokio::test]
async fn try_lock_on_a_free_lock_always_looks() {
    let server = server();
    let s = session(&server, 10).await;
    let m = Mutex::new(&s, "/t/try").unwrap();
    for _ in 0..20 {
        let g = m.try_lock().await.unwrap().expect("a free lock is taken");
        g.release().await.unwrap();
        let g = m
            .try_lock_for(Duration::ZERO)
            .await
            .unwrap()
            .expect("zero timeout");
        g.release().await.unwrap();
    }
}
