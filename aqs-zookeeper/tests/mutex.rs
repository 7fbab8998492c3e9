//! Behaviour of `Mutex` against a real ZooKeeper; every wait is bounded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;

use aqs_zookeeper::{Error, Mutex};
use common::{client, server, wait_children, BOUND};
use tokio::time::timeout;

fn is_curator_lock_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_c_") else {
        return false;
    };
    let (uuid, tail) = rest.split_at(36);
    uuid::Uuid::parse_str(uuid)
        .map(|u| u.get_version_num() == 4)
        .unwrap_or(false)
        && uuid.chars().all(|c| !c.is_ascii_uppercase())
        && tail
            .strip_prefix("-lock-")
            .is_some_and(|s| s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_names_and_parents_match_curator_layout() {
    let s = server();
    let c = client(&s).await;
    let m = Mutex::new(c.clone(), "/layout/a/mutex").unwrap();
    let g = timeout(BOUND, m.acquire()).await.unwrap().unwrap();
    let children = c.list_children("/layout/a/mutex").await.unwrap();
    assert_eq!(children.len(), 1);
    assert!(is_curator_lock_name(&children[0]), "{children:?}");
    assert_eq!(g.node_path(), format!("/layout/a/mutex/{}", children[0]));
    let (data, stat) = c.get_data(g.node_path()).await.unwrap();
    assert_eq!(data, b"127.0.0.1");
    assert_eq!(stat.ephemeral_owner, c.session_id().0);
    drop(g);
    wait_children(&c, "/layout/a/mutex", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_waiter_leaves_nothing_and_a_release_hands_off() {
    let s = server();
    let (ca, cb) = (client(&s).await, client(&s).await);
    let a = Mutex::new(ca.clone(), "/handoff").unwrap();
    let b = Mutex::new(cb, "/handoff").unwrap();
    let ga = timeout(BOUND, a.acquire()).await.unwrap().unwrap();
    let none = b.try_acquire_for(Duration::from_millis(300)).await.unwrap();
    assert!(none.is_none(), "the mutex was granted twice");
    wait_children(&ca, "/handoff", 1).await;

    let waiter = tokio::spawn(async move { b.acquire().await });
    wait_children(&ca, "/handoff", 2).await;
    assert!(
        !waiter.is_finished(),
        "the waiter got the lock while it was held"
    );
    let token_a = ga.fencing_token();
    drop(ga);
    let gb = timeout(BOUND, waiter)
        .await
        .expect("release did not wake the waiter")
        .unwrap()
        .unwrap();
    assert!(gb.fencing_token() > token_a);
    assert!(!gb.is_lost());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_two_holders_among_four_clients() {
    let s = server();
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let m = Mutex::new(client(&s).await, "/exclusion").unwrap();
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for _ in 0..5 {
                let g = m.acquire().await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                assert!(g.fencing_token() > last);
                last = g.fencing_token();
                tokio::time::sleep(Duration::from_millis(5)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
            }
        }));
    }
    for t in tasks {
        timeout(BOUND, t).await.expect("bounded").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_and_a_waiter_learn_their_session_ended() {
    let s = server();
    let proxy = common::Proxy::start(s.addr());
    let (ca, cb) = (common::client_via(&proxy).await, client(&s).await);
    let holder = Mutex::new(ca.clone(), "/lost").unwrap();
    let g = timeout(BOUND, holder.acquire()).await.unwrap().unwrap();
    assert!(!g.is_lost());
    // A waiter on the same session: its node is ephemeral in the session that ends.
    let other = Mutex::new(ca.clone(), "/lost").unwrap();
    let waiter = tokio::spawn(async move { other.acquire().await.map(|_| ()) });
    wait_children(&cb, "/lost", 2).await;
    common::end_session(&proxy, &ca).await;
    timeout(BOUND, g.lost())
        .await
        .expect("loss was never signalled");
    assert!(g.is_lost());
    let r = timeout(BOUND, waiter).await.expect("waiter hangs").unwrap();
    assert!(matches!(r, Err(Error::SessionLost)), "{r:?}");
    // A new acquire through the holder's handle is refused, not re-entered on a dead node.
    assert!(matches!(holder.acquire().await, Err(Error::SessionLost)));
    // The server removed the session's nodes; another client gets the lock.
    let m = Mutex::new(cb.clone(), "/lost").unwrap();
    let g2 = timeout(BOUND, m.acquire()).await.unwrap().unwrap();
    assert!(g2.fencing_token() > g.fencing_token());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_paths_are_refused_and_write_nothing() {
    let s = server();
    let c = client(&s).await;
    for p in ["", "/", "relative", "/trailing/", "/a//b", "/a/./b"] {
        assert!(
            matches!(Mutex::new(c.clone(), p), Err(Error::InvalidPath(_))),
            "{p:?}"
        );
    }
    assert_eq!(
        c.list_children("/").await.unwrap(),
        vec!["zookeeper".to_string()]
    );
}

/// A waiter whose node someone else deletes while its session lives fails with
/// `Error::NodeDeleted`, not `SessionLost`, and is not granted: for a mutex (noticed on its
/// next look, when the holder releases) and for a semaphore (its lease node, noticed at once
/// through its children watch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_node_someone_else_deletes_gets_a_distinct_error() {
    let s = server();
    let (a, b, operator) = (client(&s).await, client(&s).await, client(&s).await);
    let holder = Mutex::new(a.clone(), "/deleted/m").unwrap();
    let g = timeout(BOUND, holder.acquire()).await.unwrap().unwrap();
    let mb = Mutex::new(b.clone(), "/deleted/m").unwrap();
    let waiter = tokio::spawn(async move { mb.acquire().await.map(|g| g.fencing_token()) });
    let children = wait_children(&operator, "/deleted/m", 2).await;
    let theirs = children
        .iter()
        .find(|c| format!("/deleted/m/{c}") != g.node_path())
        .unwrap();
    let theirs = format!("/deleted/m/{theirs}");
    operator.delete(&theirs, None).await.unwrap();
    g.release().await.unwrap();
    let r = timeout(BOUND, waiter).await.expect("waiter hangs").unwrap();
    assert!(
        matches!(&r, Err(Error::NodeDeleted { path }) if *path == theirs),
        "{r:?}"
    );

    let sa = aqs_zookeeper::Semaphore::new(a.clone(), "/deleted/s", 1).unwrap();
    let p = timeout(BOUND, sa.acquire()).await.unwrap().unwrap();
    let sb = aqs_zookeeper::Semaphore::new(b.clone(), "/deleted/s", 1).unwrap();
    let waiter = tokio::spawn(async move { sb.acquire().await.map(|p| p.fencing_token()) });
    let leases = wait_children(&operator, "/deleted/s/leases", 2).await;
    let theirs = leases
        .iter()
        .find(|c| format!("/deleted/s/leases/{c}") != p.node_path())
        .unwrap();
    let theirs = format!("/deleted/s/leases/{theirs}");
    operator.delete(&theirs, None).await.unwrap();
    let r = timeout(BOUND, waiter).await.expect("waiter hangs").unwrap();
    assert!(
        matches!(&r, Err(Error::NodeDeleted { path }) if *path == theirs),
        "{r:?}"
    );
    assert!(!p.is_lost(), "the holder is untouched");
    p.release().await.unwrap();
    // Nothing of the failed waiters stays behind.
    assert!(wait_children(&operator, "/deleted/m", 0).await.is_empty());
    wait_children(&operator, "/deleted/s/leases", 0).await;
    wait_children(&operator, "/deleted/s/locks", 0).await;
}

/// Past 2^31 creates under one parent, ZooKeeper writes negative sequences (`%010d` of the
/// parent's signed `cversion`), and Curator sorts them as strings, before every positive one.
/// A real parent cannot be driven there in a test (2^31 creates), so another session creates a
/// node by that name itself, as a Curator holder's node after the wrap: the mutex must count it
/// and sort it first, and is granted once it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_a_wrapped_negative_sequence_sorts_first() {
    let s = server();
    let (a, other) = (client(&s).await, client(&s).await);
    let m = Mutex::new(a.clone(), "/wrapped").unwrap();
    // Let the parent exist, then put the "wrapped" holder in.
    m.acquire().await.unwrap().release().await.unwrap();
    let opts = aqs_zookeeper::zookeeper_client::CreateMode::Ephemeral
        .with_acls(aqs_zookeeper::zookeeper_client::Acls::anyone_all());
    let wrapped = "/wrapped/_c_4d0bccb7-3850-4c7f-8f2d-81c3559f55fc-lock--000000005";
    other.create(wrapped, b"127.0.0.1", &opts).await.unwrap();
    assert!(
        timeout(BOUND, m.try_acquire())
            .await
            .unwrap()
            .unwrap()
            .is_none(),
        "granted past a holder whose sequence wrapped"
    );
    let waiter = tokio::spawn(async move { m.acquire().await.map(|g| g.fencing_token()) });
    wait_children(&other, "/wrapped", 2).await;
    other.delete(wrapped, None).await.unwrap();
    timeout(BOUND, waiter)
        .await
        .expect("granted once the wrapped node goes")
        .unwrap()
        .unwrap();
}
