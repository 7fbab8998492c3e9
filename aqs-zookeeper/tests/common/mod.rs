//! What the behaviour tests share: a real server, clients on it, and bounded waits.
#![allow(dead_code)] // each test file uses its own subset

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
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

/// A loopback TCP proxy in front of the server, to cut one client off: while cut, it closes
/// the connections it carries and refuses new ones, so the server hears nothing from the
/// clients behind it and expires their sessions, as a partition would.
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    conns: Arc<StdMutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Starts forwarding a free loopback port to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(StdMutex::new(Vec::new()));
        let (c, cs) = (cut.clone(), conns.clone());
        std::thread::spawn(move || {
            for down in listener.incoming().flatten() {
                if c.load(Ordering::SeqCst) {
                    continue; // refused: dropped at once
                }
                let Ok(up) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut list = cs.lock().unwrap();
                list.push(down.try_clone().unwrap());
                list.push(up.try_clone().unwrap());
                pipe(down.try_clone().unwrap(), up.try_clone().unwrap());
                pipe(up, down);
            }
        });
        Proxy { addr, cut, conns }
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every carried connection and refuses new ones until [`heal`](Self::heal).
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Forwards again.
    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// A client (2 s session timeout) whose connection runs through `proxy`.
pub async fn client_via(proxy: &Proxy) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(2))
        .connect(&proxy.addr().to_string())
        .await
        .expect("connect through the proxy")
}

/// Ends the session of `victim`, a client behind `proxy`, the way a partition does: the proxy
/// cuts it off until the server has expired the session, then lets it reconnect to learn so.
pub async fn end_session(proxy: &Proxy, victim: &zk::Client) {
    let mut states = victim.state_watcher();
    proxy.cut();
    // The server expires a session between one and two session timeouts after it last heard
    // from the client; wait past that.
    tokio::time::sleep(victim.session_timeout() * 2 + Duration::from_millis(500)).await;
    proxy.heal();
    bounded("the victim learning its session ended", async {
        while !states.state().is_terminated() {
            states.changed().await;
        }
    })
    .await;
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
