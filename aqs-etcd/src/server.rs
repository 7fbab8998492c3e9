//! A throwaway etcd for tests: Debian's `etcd` on free loopback ports with a temporary data
//! directory, killed and cleaned up on drop.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use std::{fs, io};

/// A running etcd server, killed (SIGKILL) and its data directory removed on drop, also when
/// a test panics.
#[derive(Debug)]
pub struct TestServer {
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
    peer_port: u16,
}

impl TestServer {
    /// Starts a single-member etcd on free loopback client and peer ports and waits up to
    /// `timeout` until its `/health` endpoint reports healthy. The binary is `etcd` from `PATH`,
    /// or `AQS_ETCD_BIN`.
    ///
    /// # Errors
    /// Fails if `etcd` cannot be spawned, exits, or is not healthy within `timeout`; the error
    /// carries the tail of the server's log.
    pub fn start(timeout: Duration) -> io::Result<TestServer> {
        // Both ports are picked while both listeners are open, so they differ.
        let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let (cport, pport) = (a.local_addr()?.port(), b.local_addr()?.port());
        drop((a, b));
        let dir = std::env::temp_dir().join(format!("aqs-etcd-{}-{cport}", std::process::id()));
        fs::create_dir_all(&dir)?;
        let child = match spawn(&dir, cport, pport) {
            Ok(c) => c,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut server = TestServer {
            child,
            dir,
            addr: (Ipv4Addr::LOCALHOST, cport).into(),
            peer_port: pport,
        };
        server.wait_healthy(timeout)?;
        Ok(server)
    }

    fn wait_healthy(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.healthy() {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                return Err(self.failure(format!("etcd exited with {status}")));
            }
            if Instant::now() >= deadline {
                return Err(self.failure(format!("etcd not healthy within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn healthy(&self) -> bool {
        self.http_get("/health")
            .map(|body| body.contains("\"health\":\"true\""))
            .unwrap_or(false)
    }

    /// The server's Prometheus metrics, as text (for counting requests and watch events).
    ///
    /// # Errors
    /// If the server does not answer.
    pub fn metrics(&self) -> io::Result<String> {
        self.http_get("/metrics")
    }

    /// The sum of every sample of the metric `name` whose labels contain all of `labels`
    /// (`key="value"` strings), from [`metrics`](Self::metrics).
    ///
    /// # Errors
    /// If the server does not answer.
    pub fn metric_sum(&self, name: &str, labels: &[&str]) -> io::Result<f64> {
        let text = self.metrics()?;
        Ok(text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
                (metric == name && labels.iter().all(|lab| rest.contains(lab)))
                    .then(|| value.parse::<f64>().ok())
                    .flatten()
            })
            .sum())
    }

    fn http_get(&self, path: &str) -> io::Result<String> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        let req = format!("GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
        s.write_all(req.as_bytes())?;
        let mut body = String::new();
        s.read_to_string(&mut body)?;
        Ok(body)
    }

    fn failure(&self, what: String) -> io::Error {
        let log = fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
        let tail: String = log
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        io::Error::other(format!("{what}; log tail:\n{tail}"))
    }

    /// Kills the server (SIGKILL, as a crash) and waits for it to exit, keeping its ports and
    /// data directory for [`restart`](Self::restart). A frozen server is killed all the same.
    ///
    /// # Errors
    /// If the process cannot be signalled or waited for.
    pub fn kill(&mut self) -> io::Result<()> {
        let _ = self.child.kill();
        self.child.wait()?;
        Ok(())
    }

    /// Starts a killed server again on the same ports and data (its keys and leases survive;
    /// etcd extends every lease by its TTL when it becomes leader again) and waits until it is
    /// healthy.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&mut self, timeout: Duration) -> io::Result<()> {
        self.child = spawn(&self.dir, self.addr.port(), self.peer_port)?;
        self.wait_healthy(timeout)
    }

    /// Freezes the server (SIGSTOP): it answers nothing and its clocks' effects wait until
    /// [`thaw`](Self::thaw), as in a long pause.
    ///
    /// # Errors
    /// If `kill` cannot be run.
    pub fn freeze(&self) -> io::Result<()> {
        self.signal("-STOP")
    }

    /// Lets a frozen server run again (SIGCONT).
    ///
    /// # Errors
    /// If `kill` cannot be run.
    pub fn thaw(&self) -> io::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&self, sig: &str) -> io::Result<()> {
        let status = Command::new("kill")
            .arg(sig)
            .arg(self.child.id().to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill {sig} failed: {status}")))
        }
    }

    /// The client address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The client endpoint as `etcd_client::Client::connect` and `etcdctl --endpoints` take it.
    pub fn endpoint(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Spawns etcd for the data in `dir` on the given client and peer ports, logging to
/// `dir/etcd.log` (appended, so a restart keeps the earlier log).
fn spawn(dir: &std::path::Path, cport: u16, pport: u16) -> io::Result<Child> {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("etcd.log"))?;
    let bin = std::env::var("AQS_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
    let client = format!("http://127.0.0.1:{cport}");
    let peer = format!("http://127.0.0.1:{pport}");
    Command::new(bin)
        .arg("--name=aqs")
        .arg(format!("--data-dir={}", dir.join("data").display()))
        .arg(format!("--listen-client-urls={client}"))
        .arg(format!("--advertise-client-urls={client}"))
        .arg(format!("--listen-peer-urls={peer}"))
        .arg(format!("--initial-advertise-peer-urls={peer}"))
        .arg(format!("--initial-cluster=aqs={peer}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
}
