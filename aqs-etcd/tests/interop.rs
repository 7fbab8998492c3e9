//! A Rust `Mutex`, `etcdctl lock` (Go's `concurrency.Mutex`) and the server's `v3lock` service on the
//! same name share one lock and one queue, and so do a Rust `RwLock` and Go's `recipes.RWMutex`
//! (driven by the Go program `tests/go/rwmutex`), judged by the server's record (the keys under
//! the name and their create revisions) and by what the other side observed when it was granted.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aqs_etcd::{Mutex, RwLock};
use aqs_test_servers::etcd::TestServer;
use common::*;

/// `etcdctl lock NAME -- sh -c '...'` that, once it holds, writes its key and `ETCD_LOCK_REV` to
/// a file and holds until a release file appears (etcdctl gives its command no stdin). Killed on
/// drop, so a failing test leaves no process behind.
struct Etcdctl {
    child: Child,
    out: PathBuf,
    go: PathBuf,
}

impl Etcdctl {
    fn lock(server: &TestServer, name: &str) -> Etcdctl {
        let out = std::env::temp_dir().join(format!(
            "aqs-etcd-interop-{}-{}-{}",
            std::process::id(),
            server.addr().port(),
            name.replace('/', "_")
        ));
        let go = out.with_extension("go");
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(&go);
        let script = format!(
            "echo \"$ETCD_LOCK_KEY $ETCD_LOCK_REV\" > {o}.tmp && mv {o}.tmp {o} && \
             while [ ! -e {g} ]; do sleep 0.02; done",
            o = out.display(),
            g = go.display()
        );
        let child = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &server.endpoint(), "lock", name, "--"])
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("etcdctl must run (Debian package etcd-client)");
        Etcdctl { child, out, go }
    }

    /// What the command saw once it held: its key and the revision at which etcdctl was
    /// granted (at least the key's create revision), if it has run.
    fn held(&self) -> Option<(String, i64)> {
        let s = std::fs::read_to_string(&self.out).ok()?;
        let (k, r) = s.trim().split_once(' ')?;
        Some((k.to_owned(), r.parse().ok()?))
    }

    async fn wait_held(&self) -> (String, i64) {
        bounded("etcdctl holding", async {
            loop {
                if let Some(h) = self.held() {
                    return h;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
    }

    /// Lets the command exit, so etcdctl releases; waits for the exit.
    async fn release(&mut self) {
        std::fs::write(&self.go, "").unwrap();
        let status = bounded("etcdctl exiting", async {
            loop {
                if let Some(s) = self.child.try_wait().unwrap() {
                    return s;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(status.success(), "etcdctl lock failed: {status}");
    }
}

impl Drop for Etcdctl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.go);
    }
}

#[tokio::test]
async fn a_rust_holder_blocks_etcdctl_and_they_share_one_queue() {
    let server = server();
    let c = client(&server).await;
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let ga = Mutex::new(&a, "/i/q").unwrap().lock().await.unwrap();
    let mut ctl = Etcdctl::lock(&server, "/i/q");
    // etcdctl queued behind the Rust holder: the server has its key, after ours.
    let record = wait_keys(&c, "/i/q", 2).await;
    assert_eq!(record[0], (ga.key().to_owned(), ga.token()));
    let ctl_key = record[1].clone();
    // A second Rust contender queues behind etcdctl.
    let mb = Mutex::new(&b, "/i/q").unwrap();
    let rust_waiter = tokio::spawn(async move { mb.lock().await });
    wait_keys(&c, "/i/q", 3).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(ctl.held().is_none(), "etcdctl entered while Rust held");
    assert!(!rust_waiter.is_finished());
    // The Rust release wakes etcdctl, not the later Rust waiter.
    let rust_token = ga.token();
    ga.release().await.unwrap();
    let (key, granted_at) = ctl.wait_held().await;
    assert_eq!(key, ctl_key.0);
    assert!(granted_at > rust_token);
    assert!(still_waiting(&rust_waiter, Duration::from_millis(500)).await);
    // etcdctl's release wakes the Rust waiter.
    ctl.release().await;
    let gb = bounded("rust waiter", rust_waiter).await.unwrap().unwrap();
    assert!(gb.token() > ctl_key.1);
    assert_eq!(
        keys(&c, "/i/q").await,
        vec![(gb.key().to_owned(), gb.token())]
    );
}

#[tokio::test]
async fn an_etcdctl_holder_blocks_the_rust_mutex() {
    let server = server();
    let c = client(&server).await;
    let s = session(&server, 10).await;
    let mut ctl = Etcdctl::lock(&server, "/i/x");
    let (ctl_key, _) = ctl.wait_held().await;
    let record = keys(&c, "/i/x").await;
    assert_eq!(record.len(), 1);
    assert_eq!(record[0].0, ctl_key);
    let ctl_rev = record[0].1;
    let m = Mutex::new(&s, "/i/x").unwrap();
    let none = bounded("timed acquire", m.try_lock_for(Duration::from_millis(300))).await;
    assert!(none.unwrap().is_none());
    assert_eq!(
        keys(&c, "/i/x").await.len(),
        1,
        "the timed-out attempt left no key"
    );
    let waiter = tokio::spawn(async move { m.lock().await });
    wait_keys(&c, "/i/x", 2).await;
    assert!(still_waiting(&waiter, Duration::from_millis(500)).await);
    ctl.release().await;
    let g = bounded("rust after etcdctl", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(g.token() > ctl_rev);
    assert_eq!(
        keys(&c, "/i/x").await,
        vec![(g.key().to_owned(), g.token())]
    );
}

/// The server's own lock service (`v3lock` `Lock`, the recipe run server-side with the caller's
/// lease) and the Rust `Mutex` exclude each other and wake each other's waiters.
#[tokio::test]
async fn the_server_lock_service_and_the_rust_mutex_exclude_each_other() {
    use aqs_etcd::etcd_client::LockOptions;
    let server = server();
    let c = client(&server).await;
    let s = session(&server, 10).await;
    let lease = c.lease_client().grant(10, None).await.unwrap().id();
    // The service holds first; a Rust waiter queues behind it.
    let held = c
        .lock_client()
        .lock("/i/svc", Some(LockOptions::new().with_lease(lease)))
        .await
        .unwrap();
    let svc_key = held.key().to_vec();
    let m = Mutex::new(&s, "/i/svc").unwrap();
    let waiter = tokio::spawn(async move { m.lock().await });
    let record = wait_keys(&c, "/i/svc", 2).await;
    assert_eq!(record[0].0.as_bytes(), svc_key.as_slice());
    assert!(still_waiting(&waiter, Duration::from_millis(300)).await);
    c.lock_client().unlock(svc_key).await.unwrap();
    let g = bounded("rust after the service", waiter)
        .await
        .unwrap()
        .unwrap();
    // Now the service's Lock call waits behind the Rust holder.
    let svc = tokio::spawn({
        let c = c.clone();
        async move {
            c.lock_client()
                .lock("/i/svc", Some(LockOptions::new().with_lease(lease)))
                .await
        }
    });
    let record = wait_keys(&c, "/i/svc", 2).await;
    assert_eq!(record[0], (g.key().to_owned(), g.token()));
    assert!(still_waiting(&svc, Duration::from_millis(300)).await);
    drop(g);
    let again = bounded("service after rust", svc).await.unwrap().unwrap();
    assert_eq!(again.key(), record[1].0.as_bytes());
}

/// Go's `recipes.RWMutex` holding or waiting in its own process (`tests/go/rwmutex`): it says
/// `ready`, then `held` once it holds, and lets go when told. Killed on drop.
struct GoRw {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl GoRw {
    /// Starts a Go reader or writer (`side` is `read` or `write`) on `name` and waits until its
    /// session is open.
    fn start(server: &TestServer, name: &str, side: &str) -> GoRw {
        static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let bin = BIN.get_or_init(|| {
            let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/rwmutex");
            aqs_test_servers::golang::build(&src, "rwmutex", env!("CARGO_TARGET_TMPDIR").as_ref())
                .unwrap_or_else(|e| {
                    panic!(
                        "Go's RWMutex must build (Debian: golang-go, golang-etcd-server-dev): {e}"
                    )
                })
        });
        let mut child = Command::new(bin)
            .args([&server.endpoint(), name, side])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the Go RWMutex");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let go = GoRw { child, lines };
        go.expect("ready", BOUND);
        go
    }

    /// The next line within `within`, if any.
    fn line(&self, within: Duration) -> Option<String> {
        tokio::task::block_in_place(|| self.lines.recv_timeout(within).ok())
    }

    /// Fails the test unless the next line, within `within`, is `want`.
    fn expect(&self, want: &str, within: Duration) {
        assert_eq!(self.line(within).as_deref(), Some(want));
    }

    /// Lets go, and waits until it has.
    fn release(&mut self) {
        use std::io::Write;
        writeln!(self.child.stdin.as_mut().unwrap(), "go").unwrap();
        self.expect("released", BOUND);
    }
}

impl Drop for GoRw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Go's `recipes.RWMutex` and the Rust `RwLock` on one name, in one queue: a Go writer keeps a
/// Rust reader out until it lets go; a Go reader shares with a Rust reader; a Rust writer queued
/// behind both keeps out a Go reader that arrived after it (readers defer to an earlier writer,
/// R1) until the writer has released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_rwmutex_and_the_rust_rwlock_share_one_queue() {
    let server = server();
    let c = client(&server).await;
    let name = "/rw/go";
    let (a, b) = (session(&server, 10).await, session(&server, 10).await);
    let reads = RwLock::new(&a, name).unwrap();

    let mut go_writer = GoRw::start(&server, name, "write");
    go_writer.expect("held", BOUND);
    assert!(reads
        .try_read_for(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    let r = reads.clone();
    let reader = tokio::spawn(async move { r.read().await });
    assert!(still_waiting(&reader, Duration::from_millis(300)).await);
    go_writer.release();
    let read = bounded("the Rust reader after the Go writer", reader)
        .await
        .unwrap()
        .unwrap();

    let mut go_reader = GoRw::start(&server, name, "read");
    go_reader.expect("held", BOUND);

    let w = RwLock::new(&b, name).unwrap();
    let writer = tokio::spawn(async move { w.write().await });
    wait_keys(&c, name, 3).await; // two reads and the Rust writer's key
    let mut late = GoRw::start(&server, name, "read");
    wait_keys(&c, name, 4).await;
    assert_eq!(
        late.line(Duration::from_millis(300)),
        None,
        "a read passed a queued writer"
    );
    assert!(!writer.is_finished());

    read.release().await.unwrap();
    go_reader.release();
    let write = bounded("the Rust writer after both readers", writer)
        .await
        .unwrap()
        .unwrap();
    assert!(write.is_write());
    assert_eq!(
        late.line(Duration::from_millis(300)),
        None,
        "a read inside a write"
    );
    write.release().await.unwrap();
    late.expect("held", BOUND);
    late.release();
    wait_keys(&c, name, 0).await;
}
