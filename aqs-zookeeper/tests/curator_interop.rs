//! Interoperability with Curator 5's own Java clients on one real ZooKeeper: for a mutex, a
//! semaphore, a semaphore mutex and a read-write lock, Curator clients (Debian's
//! `libcurator-recipes-java`, driven through `java/CuratorClient.java`) and aqs-zookeeper
//! clients exclude each other, count against one limit, are granted in one queue order, and
//! each side's release wakes the other side's waiter. Every wait is bounded; a JVM or a server
//! that cannot start fails the tests.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use aqs_test_servers::zookeeper::TestServer;
use aqs_zookeeper::zookeeper_client as zk;
use aqs_zookeeper::{Mutex, RwLock, Semaphore, SemaphoreMutex};
use common::{bounded, client, server, still_waiting, wait_children, BOUND};

const SHORT: Duration = Duration::from_millis(400);

/// Compiles the Java client once per test binary; returns the class directory.
fn classes() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/java/CuratorClient.java");
        aqs_test_servers::java::compile(
            src.as_ref(),
            &classpath(),
            env!("CARGO_TARGET_TMPDIR").as_ref(),
        )
        .unwrap_or_else(|e| panic!("the Curator client must compile: {e}"))
    })
}

fn classpath() -> String {
    std::env::var("AQS_ZK_CLASSPATH")
        .unwrap_or_else(|_| aqs_test_servers::zookeeper::DEFAULT_CLASSPATH.into())
}

/// One Curator client process (one session), answering one line per command.
struct Curator {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Curator {
    fn start(server: &TestServer, recipe: &str, path: &str, limit: Option<u32>) -> Curator {
        let cp = format!("{}:{}", classes().display(), classpath());
        let mut cmd = Command::new("java");
        cmd.args([
            "-cp",
            &cp,
            "CuratorClient",
            &server.addr().to_string(),
            recipe,
            path,
        ]);
        if let Some(l) = limit {
            cmd.arg(l.to_string());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("java must run");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut c = Curator {
            child,
            stdin,
            lines,
        };
        c.expect("ready");
        c
    }

    fn send(&mut self, cmd: &str) {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next answer, within [`BOUND`].
    fn answer(&mut self) -> String {
        self.lines
            .recv_timeout(BOUND)
            .expect("the Curator client did not answer in time")
    }

    fn expect(&mut self, want: &str) {
        let got = self.answer();
        assert_eq!(got, want, "Curator client answered {got:?}");
    }

    /// Whether no answer arrives within `d`: a waiter that must not be granted yet.
    fn silent_for(&mut self, d: Duration) -> bool {
        match self.lines.recv_timeout(d) {
            Ok(line) => panic!("unexpected answer {line:?}"),
            Err(_) => true,
        }
    }

    fn acquire(&mut self) {
        self.send("acquire");
        self.expect("acquired");
    }

    fn release(&mut self) {
        self.send("release");
        self.expect("released");
    }
}

impl Drop for Curator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lock and lease nodes (not containers) left anywhere under `path`.
async fn leftovers(c: &zk::Client, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![path.to_owned()];
    while let Some(p) = todo.pop() {
        for child in c.list_children(&p).await.unwrap_or_default() {
            let full = format!("{p}/{child}");
            if child.starts_with("_c_") {
                out.push(full);
            } else {
                todo.push(full);
            }
        }
    }
    out
}

/// Polls until no lock or lease node is left under `path`.
async fn assert_clean(c: &zk::Client, path: &str) {
    bounded("clean-up", async {
        while !leftovers(c, path).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_excludes_and_queues_across_curator_and_rust() {
    let s = server();
    let c = client(&s).await;
    let path = "/interop/mutex";
    let mut j0 = Curator::start(&s, "mutex", path, None);
    let mut j2 = Curator::start(&s, "mutex", path, None);
    j0.acquire();
    // Exclusion both ways.
    let r = Mutex::new(client(&s).await, path).unwrap();
    assert!(bounded("rust try", r.try_acquire_for(SHORT))
        .await
        .unwrap()
        .is_none());
    // The timed-out try's node is deleted in the background; the counts below must not see it.
    wait_children(&c, path, 1).await;
    // Queue: Curator holds; Rust, Curator, Rust wait in that order.
    let r1 = Mutex::new(client(&s).await, path).unwrap();
    let mut r1 = tokio::spawn(async move { (r1.acquire().await.unwrap(), r1) });
    wait_children(&c, path, 2).await;
    j2.send("acquire");
    wait_children(&c, path, 3).await;
    let r3 = Mutex::new(client(&s).await, path).unwrap();
    let mut r3 = tokio::spawn(async move { (r3.acquire().await.unwrap(), r3) });
    wait_children(&c, path, 4).await;
    assert!(still_waiting(&mut r1, SHORT).await);
    // Curator's release wakes the Rust waiter, and only it.
    j0.release();
    let (g1, _m1) = bounded("rust after curator", r1).await.unwrap();
    assert!(j2.silent_for(SHORT));
    assert!(still_waiting(&mut r3, Duration::ZERO).await);
    // The Rust release wakes the Curator waiter, and only it.
    g1.release().await.unwrap();
    j2.expect("acquired");
    assert!(still_waiting(&mut r3, SHORT).await);
    j2.release();
    let (g3, _m3) = bounded("rust after curator", r3).await.unwrap();
    // And Curator is refused while Rust holds.
    j0.send(&format!("acquire {}", SHORT.as_millis()));
    j0.expect("timeout");
    g3.release().await.unwrap();
    assert_clean(&c, path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_shares_one_limit_and_one_queue_with_curator() {
    let s = server();
    let c = client(&s).await;
    let path = "/interop/semaphore";
    let limit = 2;
    let mut ja = Curator::start(&s, "semaphore", path, Some(limit));
    let mut jc = Curator::start(&s, "semaphore", path, Some(limit));
    ja.acquire();
    let rb = Semaphore::new(client(&s).await, path, limit).unwrap();
    let pb = bounded("rust holder", rb.acquire()).await.unwrap();
    // Full: one Curator and one Rust holder. Neither side gets a third.
    jc.send(&format!("acquire {}", SHORT.as_millis()));
    jc.expect("timeout");
    let rd = Semaphore::new(client(&s).await, path, limit).unwrap();
    assert!(bounded("rust try", rd.try_acquire_for(SHORT))
        .await
        .unwrap()
        .is_none());
    wait_children(&c, &format!("{path}/leases"), 2).await;
    // Queue: Rust first, then Curator.
    let mut rd = tokio::spawn(async move { rd.acquire().await.unwrap() });
    wait_children(&c, &format!("{path}/leases"), 3).await; // the gate holder's node
    jc.send("acquire");
    wait_children(&c, &format!("{path}/locks"), 2).await; // gate: Rust holds, Curator waits
    assert!(still_waiting(&mut rd, SHORT).await);
    // Curator's release wakes the Rust waiter first in line.
    ja.release();
    let pd = bounded("rust after curator", rd).await.unwrap();
    assert!(jc.silent_for(SHORT), "over the limit");
    // The Rust release wakes the Curator waiter.
    pb.release().await.unwrap();
    jc.expect("acquired");
    let leases = c.list_children(&format!("{path}/leases")).await.unwrap();
    assert_eq!(leases.len(), 2, "{leases:?}");
    jc.release();
    pd.release().await.unwrap();
    assert_clean(&c, path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_mutex_excludes_across_curator_and_rust() {
    let s = server();
    let c = client(&s).await;
    let path = "/interop/semaphore-mutex";
    let mut j = Curator::start(&s, "semaphore-mutex", path, None);
    j.acquire();
    let r = SemaphoreMutex::new(client(&s).await, path).unwrap();
    assert!(bounded("rust try", r.try_acquire_for(SHORT))
        .await
        .unwrap()
        .is_none());
    let mut waiting = tokio::spawn(async move { r.acquire().await.unwrap() });
    assert!(still_waiting(&mut waiting, SHORT).await);
    j.release();
    let g = bounded("rust after curator", waiting).await.unwrap();
    j.send("acquire");
    assert!(j.silent_for(SHORT));
    drop(g);
    j.expect("acquired");
    j.release();
    assert_clean(&c, path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_follows_one_queue_across_curator_and_rust() {
    let s = server();
    let c = client(&s).await;
    let path = "/interop/rwlock";
    // Readers from both sides hold together.
    let mut jr = Curator::start(&s, "read", path, None);
    jr.acquire();
    let rr = RwLock::new(client(&s).await, path).unwrap();
    let gr = bounded("rust reader", rr.read_lock().acquire())
        .await
        .unwrap();
    // A Rust writer waits for both readers.
    let rw = RwLock::new(client(&s).await, path).unwrap();
    let mut w = tokio::spawn(async move {
        let g = rw.write_lock().acquire().await.unwrap();
        (g, rw)
    });
    wait_children(&c, path, 3).await;
    // A Curator reader arriving behind the waiting writer waits (Curator's own rule, which
    // our writer node must trigger).
    let mut jlate = Curator::start(&s, "read", path, None);
    jlate.send("acquire");
    wait_children(&c, path, 4).await;
    assert!(jlate.silent_for(SHORT));
    jr.release();
    assert!(still_waiting(&mut w, SHORT).await);
    drop(gr);
    let (gw, _rw) = bounded("rust writer after both readers", w).await.unwrap();
    assert!(jlate.silent_for(SHORT), "reader beside a writer");
    // The Rust writer's release wakes the Curator reader.
    gw.release().await.unwrap();
    jlate.expect("acquired");
    // A Curator writer waits for a Rust reader and is woken by its release.
    jlate.release();
    let rr2 = RwLock::new(client(&s).await, path).unwrap();
    let gr2 = bounded("rust reader", rr2.read_lock().acquire())
        .await
        .unwrap();
    let mut jw = Curator::start(&s, "write", path, None);
    jw.send("acquire");
    assert!(jw.silent_for(SHORT));
    gr2.release().await.unwrap();
    jw.expect("acquired");
    // And a Rust reader waits for the Curator writer.
    let rr3 = RwLock::new(client(&s).await, path).unwrap();
    assert!(
        bounded("rust reader", rr3.read_lock().try_acquire_for(SHORT))
            .await
            .unwrap()
            .is_none()
    );
    jw.release();
    assert!(
        bounded("rust reader", rr3.read_lock().try_acquire_for(BOUND))
            .await
            .unwrap()
            .is_some()
    );
    assert_clean(&c, path).await;
}
