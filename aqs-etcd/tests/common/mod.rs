//! What the behaviour tests share: a real etcd, sessions on it, and bounded waits.
#![allow(dead_code)] // each test file uses its own subset

use std::time::Duration;

use aqs_etcd::etcd_client::{Client, GetOptions, SortOrder, SortTarget};
use aqs_etcd::Session;
use aqs_test_servers::etcd::TestServer;
use tokio::time::timeout;

/// The bound on every wait: a lost wake-up fails the test instead of hanging it.
pub const BOUND: Duration = Duration::from_secs(20);

/// A fresh etcd; a server that cannot start fails the test.
pub fn server() -> TestServer {
    TestServer::start(Duration::from_secs(30)).expect("etcd must start")
}

/// A client of `server`.
pub async fn client(server: &TestServer) -> Client {
    bounded("connect", Client::connect([server.endpoint()], None))
        .await
        .expect("connect")
}

/// A session with its own client and lease (`ttl` seconds).
pub async fn session(server: &TestServer, ttl: u64) -> Session {
    let c = client(server).await;
    Session::new(c, Duration::from_secs(ttl))
        .await
        .expect("session")
}

/// The keys under `name/` with their create revisions, oldest first: the server's record.
pub async fn keys(c: &Client, name: &str) -> Vec<(String, i64)> {
    let opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend);
    let resp = c
        .kv_client()
        .get(format!("{name}/"), Some(opts))
        .await
        .expect("get");
    resp.kvs()
        .iter()
        .map(|kv| (kv.key_str().unwrap().to_owned(), kv.create_revision()))
        .collect()
}

/// Polls until `name/` has exactly `n` keys, bounded.
pub async fn wait_keys(c: &Client, name: &str, n: usize) -> Vec<(String, i64)> {
    bounded(&format!("{name} reaching {n} keys"), async {
        loop {
            let k = keys(c, name).await;
            if k.len() == n {
                return k;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Awaits `f` within [`BOUND`], panicking with `what` if it does not finish.
pub async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {BOUND:?}"))
}

/// Whether `f` is still pending after `d`: a waiter that must not be granted yet.
pub async fn still_waiting<T>(f: &tokio::task::JoinHandle<T>, d: Duration) -> bool {
    tokio::time::sleep(d).await;
    !f.is_finished()
}

/// A loopback TCP proxy in front of the server that can stop forwarding both ways while
/// keeping the connections open, as a network partition does: the client behind it sees its
/// requests go unanswered, and the server hears nothing from it.
pub struct Proxy {
    addr: std::net::SocketAddr,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    /// Starts forwarding a free loopback port to `upstream`.
    pub fn start(upstream: std::net::SocketAddr) -> Proxy {
        use std::sync::atomic::AtomicBool;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let cut = std::sync::Arc::new(AtomicBool::new(false));
        let c = cut.clone();
        std::thread::spawn(move || {
            for down in listener.incoming().flatten() {
                let Ok(up) = std::net::TcpStream::connect(upstream) else {
                    continue;
                };
                pipe(
                    down.try_clone().unwrap(),
                    up.try_clone().unwrap(),
                    c.clone(),
                );
                pipe(up, down, c.clone());
            }
        });
        Proxy { addr, cut }
    }

    /// The address clients connect to.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Stops forwarding: bytes from either side are read and dropped from now on.
    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn pipe(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if cut.load(std::sync::atomic::Ordering::SeqCst) {
                continue; // a partition: dropped on the floor
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
}
