//! `close_session` and `blocking::Session::close`: the server ends the session at once, as its
//! own record shows (another session lists the nodes), and every guard of it reports lost.

use std::time::Duration;

mod common;

use aqs_zookeeper::{blocking, close_session, zookeeper_client as zk, Error, Mutex, Semaphore};
use common::{server, BOUND};
use tokio::time::timeout;

/// A session timeout long enough that an expiry can never pass for the close.
const LONG: Duration = Duration::from_secs(60);

async fn client(hosts: &str, t: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(t)
        .connect(hosts)
        .await
        .expect("connect")
}

/// The children of `path`, as the server has them after everything before this call.
async fn children(observer: &zk::Client, path: &str) -> Vec<String> {
    observer.sync(path).await.unwrap();
    observer.list_children(path).await.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_session_frees_its_locks_and_permits_and_fails_its_waiters() {
    let s = server();
    let hosts = s.addr().to_string();
    let c = client(&hosts, LONG).await;
    let observer = client(&hosts, LONG).await;
    let other = client(&hosts, LONG).await;

    let m = Mutex::new(c.clone(), "/close/mutex").unwrap();
    let sem = Semaphore::new(c.clone(), "/close/sem", 1).unwrap();
    let guard = timeout(BOUND, m.acquire()).await.unwrap().unwrap();
    let permit = timeout(BOUND, sem.acquire()).await.unwrap().unwrap();
    // A waiter of the same session, queued behind the other session's holder.
    let other_m = Mutex::new(other.clone(), "/close/held-elsewhere").unwrap();
    let held_elsewhere = timeout(BOUND, other_m.acquire()).await.unwrap().unwrap();
    let queued = tokio::spawn({
        let m = Mutex::new(c.clone(), "/close/held-elsewhere").unwrap();
        async move { m.acquire().await.map(|_| ()) }
    });
    timeout(BOUND, async {
        while children(&observer, "/close/held-elsewhere").await.len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the waiter queues");
    // And another session waiting for the mutex this session holds. It keeps the mutex until
    // the nodes have been checked, so that every node listed below can still be read.
    let (checked, checked_rx) = tokio::sync::oneshot::channel::<()>();
    let next = tokio::spawn({
        let m = Mutex::new(other.clone(), "/close/mutex").unwrap();
        async move {
            let g = m.acquire().await?;
            let _ = checked_rx.await;
            Ok::<_, Error>(g.fencing_token())
        }
    });
    timeout(BOUND, async {
        while children(&observer, "/close/mutex").await.len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the other session queues");

    timeout(BOUND, close_session(&c, &hosts))
        .await
        .expect("close_session is bounded")
        .expect("close_session");

    // When it returns, the server has deleted the session's nodes and the guards know.
    assert!(guard.is_lost() && permit.is_lost());
    let own = c.session_id().0;
    for path in ["/close/mutex", "/close/sem/leases", "/close/held-elsewhere"] {
        for child in children(&observer, path).await {
            let (_, stat) = observer.get_data(&format!("{path}/{child}")).await.unwrap();
            assert_ne!(
                stat.ephemeral_owner, own,
                "{path}/{child} outlived the close"
            );
        }
    }
    let _ = checked.send(());
    let waited = timeout(BOUND, queued)
        .await
        .expect("the waiter returns")
        .unwrap();
    assert!(matches!(waited, Err(Error::SessionLost)), "{waited:?}");
    let token = timeout(BOUND, next)
        .await
        .expect("the other session gets the mutex")
        .unwrap()
        .unwrap();
    assert!(token > guard.fencing_token());
    // The session is over for good: a new acquire through it fails, and so does nothing else.
    let again = timeout(BOUND, m.acquire()).await.unwrap();
    assert!(matches!(again, Err(Error::SessionLost)), "{again:?}");
    drop((guard, permit, held_elsewhere));
    // Closing an ended session is not an error.
    timeout(BOUND, close_session(&c, &hosts))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_needs_a_server_and_says_so() {
    let s = server();
    let hosts = s.addr().to_string();
    let c = client(&hosts, Duration::from_secs(4)).await;
    // A port nobody listens on: an error, within the session timeout, and the session stands.
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bad = nobody.local_addr().unwrap().to_string();
    drop(nobody);
    let r = timeout(BOUND, close_session(&c, &bad))
        .await
        .expect("bounded");
    assert!(matches!(r, Err(Error::Zk(_))), "{r:?}");
    let m = Mutex::new(c.clone(), "/close/still").unwrap();
    drop(timeout(BOUND, m.acquire()).await.unwrap().unwrap());
}

#[test]
fn a_blocking_session_closes_before_the_process_would_exit() {
    let s = server();
    let hosts = s.addr().to_string();
    let session = blocking::Session::connect_with_timeout(&hosts, LONG).unwrap();
    let observer = blocking::Session::connect(&hosts).unwrap();
    let m = blocking::Mutex::new(&session, "/close/blocking").unwrap();
    let guard = m.acquire().unwrap();
    let path = guard.node_path().to_string();
    session.close().unwrap();
    assert!(guard.is_lost());
    let gone = observer.block_on(async {
        observer.client().sync("/close/blocking").await.unwrap();
        observer.client().check_stat(&path).await.unwrap()
    });
    assert!(gone.is_none(), "{path} outlived the close");
    drop(guard);
}
