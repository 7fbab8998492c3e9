//! What the behaviour tests share: a real server, clients on it, and bounded waits.
#![allow(dead_code)] // each test file uses its own subset

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use aqs_test_servers::zookeeper::TestServer;
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

/// A loopback TCP proxy in front of the server, to cut one client off. Two kinds of cut:
/// - [`cut`](Proxy::cut) closes the connections it carries and refuses new ones, so the client
///   sees its connection fail at once;
/// - [`silence`](Proxy::silence) keeps every connection open but drops every byte both ways, as
///   a partition does: the client only notices the silence, and the server hears nothing.
///
/// Either way the server expires the sessions behind it once they time out.
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    silent: Arc<AtomicBool>,
    conns: Arc<StdMutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Starts forwarding a free loopback port to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let silent = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(StdMutex::new(Vec::new()));
        let (c, q, cs) = (cut.clone(), silent.clone(), conns.clone());
        std::thread::spawn(move || {
            for down in listener.incoming().flatten() {
                if c.load(Ordering::SeqCst) {
                    continue; // refused: dropped at once
                }
                let mut list = cs.lock().unwrap();
                if q.load(Ordering::SeqCst) {
                    // Accepted, never answered: a partitioned server looks like this.
                    list.push(down.try_clone().unwrap());
                    pipe(down, None, q.clone());
                    continue;
                }
                let Ok(up) = TcpStream::connect(upstream) else {
                    continue;
                };
                list.push(down.try_clone().unwrap());
                list.push(up.try_clone().unwrap());
                pipe(
                    down.try_clone().unwrap(),
                    Some(up.try_clone().unwrap()),
                    q.clone(),
                );
                pipe(up, Some(down), q.clone());
            }
        });
        Proxy {
            addr,
            cut,
            silent,
            conns,
        }
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every carried connection and refuses new ones until [`heal`](Self::heal).
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.close_all();
    }

    /// Drops every byte both ways, on carried and new connections, until [`heal`](Self::heal);
    /// nothing is closed, so only timeouts tell either side.
    pub fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    /// Forwards again. Connections that were silenced are closed first: bytes were dropped
    /// from their streams, so they cannot carry on.
    pub fn heal(&self) {
        if self.silent.load(Ordering::SeqCst) {
            self.close_all();
        }
        self.silent.store(false, Ordering::SeqCst);
        self.cut.store(false, Ordering::SeqCst);
    }

    fn close_all(&self) {
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `to` (or nowhere), dropping what it reads while `silent` is set.
fn pipe(mut from: TcpStream, mut to: Option<TcpStream>, silent: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if silent.load(Ordering::SeqCst) {
                continue;
            }
            let Some(to) = to.as_mut() else { continue };
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        if let Some(to) = to {
            let _ = to.shutdown(Shutdown::Both);
        }
    });
}

/// A client (2 s session timeout) whose connection runs through `proxy`.
pub async fn client_via(proxy: &Proxy) -> zk::Client {
    client_via_with(proxy, Duration::from_secs(2)).await
}

/// A client with the given session timeout whose connection runs through `proxy`.
pub async fn client_via_with(proxy: &Proxy, session: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(session)
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
