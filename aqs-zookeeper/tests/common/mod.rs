//! What the behaviour tests share: a real server, clients on it, and bounded waits.
#![allow(dead_code)] // each test file uses its own subset

use std::time::Duration;

use aqs_zookeeper::server::TestServer;
use aqs_zookeeper::zookeeper_client as zk;
use tokio::time::timeout;

/// The bound on every wait: a lost wake-up fails the test instead of hanging it.
pub const BOUND: Duration = Duration::from_secs(20);

/// A fresh ZooKeeper; a server that cannot start fails the test.
pub fn server() -> TestServer {
    TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start")
}

/// A client with its own session (4 s timeout).
pub async fn client(server: &TestServer) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(&server.addr().to_string())
        .await
        .expect("connect")
}

/// Polls until `path` has `n` children, bounded.
pub async fn wait_children(c: &zk::Client, path: &str, n: usize) -> Vec<String> {
    timeout(BOUND, async {
        loop {
            let children = c.list_children(path).await.unwrap_or_default();
            if children.len() == n {
                return children;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{path} never had {n} children"))
}

/// Ends `victim`'s session from outside: a second connection takes the session over and
/// closes it, as an expiry would end it.
pub async fn end_session(server: &TestServer, victim: &zk::Client) {
    let thief = zk::Client::connector()
        .with_session(victim.session().clone())
        .connect(&server.addr().to_string())
        .await
        .expect("take the session over");
    drop(thief);
}

/// Awaits `f` within [`BOUND`], panicking with `what` if it does not finish.
pub async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {BOUND:?}"))
}

/// Whether `f` is still pending after `d`: a waiter that must not be granted yet.
pub async fn still_waiting<T>(f: &mut tokio::task::JoinHandle<T>, d: Duration) -> bool {
    tokio::time::sleep(d).await;
    !f.is_finished()
}
