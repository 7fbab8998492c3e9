//! Behaviour of `RwLock` against a real ZooKeeper: Curator's node names, readers together,
//! writers alone, arrival order, reentrancy, the safe downgrade, and no upgrade. Every wait is
//! bounded.

mod common;

use std::time::Duration;

use aqs_zookeeper::{Error, RwLock};
use common::{bounded, client, server, still_waiting, wait_children};

const SHORT: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_names_follow_curator() {
    let s = server();
    let c = client(&s).await;
    let l = RwLock::new(c.clone(), "/rw/names").unwrap();
    let r = bounded("read", l.read_lock().acquire()).await.unwrap();
    let name = r.node_path().rsplit('/').next().unwrap().to_owned();
    assert!(name.starts_with("_c_"), "{name}");
    let seq = name
        .split("__READ__")
        .nth(1)
        .expect("__READ__ then the sequence");
    assert_eq!(seq.len(), 10, "{name}");
    drop(r);
    let other = RwLock::new(c.clone(), "/rw/names").unwrap();
    let w = bounded("write", other.write_lock().acquire())
        .await
        .unwrap();
    assert!(w.node_path().contains("-__WRIT__"), "{}", w.node_path());
    w.release().await.unwrap();
    assert!(c.list_children("/rw/names").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_waits_for_all_of_them() {
    let s = server();
    let (ca, cb, cc) = (client(&s).await, client(&s).await, client(&s).await);
    let (la, lb) = (
        RwLock::new(ca, "/rw/share").unwrap(),
        RwLock::new(cb, "/rw/share").unwrap(),
    );
    let ra = bounded("reader a", la.read_lock().acquire()).await.unwrap();
    let rb = bounded("reader b", lb.read_lock().acquire()).await.unwrap();
    let writer = RwLock::new(cc.clone(), "/rw/share").unwrap();
    let mut w = tokio::spawn(async move {
        let g = writer.write_lock().acquire().await.unwrap();
        g.release().await.unwrap();
    });
    wait_children(&cc, "/rw/share", 3).await;
    assert!(
        still_waiting(&mut w, SHORT).await,
        "writer ran beside readers"
    );
    drop(ra);
    assert!(
        still_waiting(&mut w, SHORT).await,
        "writer ran beside a reader"
    );
    drop(rb);
    bounded("writer after the last reader", w).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_arriving_behind_a_waiting_writer_waits_for_it() {
    let s = server();
    let (ca, cb, cc) = (client(&s).await, client(&s).await, client(&s).await);
    let first = RwLock::new(ca, "/rw/order").unwrap();
    let r1 = bounded("first reader", first.read_lock().acquire())
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let writer = RwLock::new(cb, "/rw/order").unwrap();
    let wtx = tx.clone();
    let w = tokio::spawn(async move {
        let g = writer.write_lock().acquire().await.unwrap();
        wtx.send("writer in").unwrap();
        tokio::time::sleep(SHORT).await;
        wtx.send("writer out").unwrap();
        drop(g);
    });
    wait_children(&cc, "/rw/order", 2).await;
    let reader = RwLock::new(cc.clone(), "/rw/order").unwrap();
    let r = tokio::spawn(async move {
        let g = reader.read_lock().acquire().await.unwrap();
        tx.send("late reader in").unwrap();
        drop(g);
    });
    wait_children(&cc, "/rw/order", 3).await;
    drop(r1);
    bounded("writer", w).await.unwrap();
    bounded("late reader", r).await.unwrap();
    let mut seen = Vec::new();
    while let Ok(e) = rx.try_recv() {
        seen.push(e);
    }
    assert_eq!(seen, ["writer in", "writer out", "late reader in"]);
}

/// Re-entry and the downgrade are explicit, through guards, and share one node; the downgrade
/// stays exclusive until the downgraded read goes. A read through the writing handle is
/// refused instead of waiting behind its own write node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrant_reads_and_writes_share_one_node() {
    let s = server();
    let c = client(&s).await;
    let l = RwLock::new(c.clone(), "/rw/reenter").unwrap();
    let w1 = bounded("write", l.write_lock().acquire()).await.unwrap();
    let w2 = w1.reenter().unwrap();
    assert_eq!(w1.node_path(), w2.node_path());
    let refused = bounded("read through the writing handle", l.read_lock().acquire()).await;
    assert!(matches!(refused, Err(Error::WouldDeadlock)), "{refused:?}");
    // Downgrade: a read guard on the write node.
    let r = w1.downgrade().unwrap();
    assert_eq!(r.node_path(), w1.node_path());
    let r2 = r.reenter().unwrap();
    drop(w1);
    drop(w2);
    drop(r2);
    assert_eq!(c.list_children("/rw/reenter").await.unwrap().len(), 1);
    // Still exclusive until the downgraded read goes: another client's read waits.
    let other = RwLock::new(client(&s).await, "/rw/reenter").unwrap();
    assert!(
        bounded("other read", other.read_lock().try_acquire_for(SHORT))
            .await
            .unwrap()
            .is_none()
    );
    drop(r);
    assert!(bounded(
        "other read",
        other.read_lock().try_acquire_for(Duration::from_secs(10))
    )
    .await
    .unwrap()
    .is_some());
}

/// A reader task and a writer task that share one handle never hold at once: whichever comes
/// second while the other holds is refused (`WouldDeadlock`) or waits, never granted inside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_and_a_writer_sharing_a_handle_never_overlap() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let s = server();
    let c = client(&s).await;
    let l = Arc::new(RwLock::new(c.clone(), "/rw/shared").unwrap());
    let writing = Arc::new(AtomicBool::new(false));
    let w = bounded("write", l.write_lock().acquire()).await.unwrap();
    writing.store(true, Ordering::SeqCst);
    let (l2, writing2) = (l.clone(), writing.clone());
    let reader = tokio::spawn(async move {
        match l2.read_lock().try_acquire_for(SHORT).await {
            Ok(Some(_)) => assert!(!writing2.load(Ordering::SeqCst), "read inside the write"),
            Ok(None) | Err(Error::WouldDeadlock) => {}
            Err(e) => panic!("{e}"),
        }
    });
    bounded("the reader", reader).await.unwrap();
    writing.store(false, Ordering::SeqCst);
    w.release().await.unwrap();
    // And the other way round: a writer task while a reader task holds through the handle.
    let r = bounded("read", l.read_lock().acquire()).await.unwrap();
    let l2 = l.clone();
    let writer = tokio::spawn(async move { l2.write_lock().try_acquire_for(SHORT).await });
    let got = bounded("the writer", writer).await.unwrap();
    assert!(!matches!(got, Ok(Some(_))), "write inside a read: {got:?}");
    r.release().await.unwrap();
    let w = bounded("write after the read", l.write_lock().acquire())
        .await
        .unwrap();
    w.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_a_reading_handle_is_refused() {
    let s = server();
    let c = client(&s).await;
    let l = RwLock::new(c.clone(), "/rw/upgrade").unwrap();
    let r = bounded("read", l.read_lock().acquire()).await.unwrap();
    let w = bounded("write", l.write_lock().try_acquire_for(SHORT)).await;
    assert!(matches!(w, Err(Error::WouldDeadlock)), "{w:?}");
    assert_eq!(c.list_children("/rw/upgrade").await.unwrap().len(), 1);
    drop(r);
    let w = bounded("write", l.write_lock().acquire()).await.unwrap();
    w.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_writer_leaves_no_node_and_lets_readers_on() {
    let s = server();
    let (ca, cb, cc) = (client(&s).await, client(&s).await, client(&s).await);
    let holder = RwLock::new(ca, "/rw/timeout").unwrap();
    let r = bounded("reader", holder.read_lock().acquire())
        .await
        .unwrap();
    let writer = RwLock::new(cb, "/rw/timeout").unwrap();
    let w = bounded("timed writer", writer.write_lock().try_acquire_for(SHORT))
        .await
        .unwrap();
    assert!(w.is_none());
    wait_children(&cc, "/rw/timeout", 1).await;
    // A reader behind the gone writer is not blocked by it.
    let reader = RwLock::new(cc, "/rw/timeout").unwrap();
    assert!(bounded("reader", reader.read_lock().try_acquire())
        .await
        .unwrap()
        .is_some());
    drop(r);
}
