//! A throwaway etcd for tests: Debian's `etcd` on free loopback ports with a temporary data
//! directory, killed and cleaned up on drop.

use std::ffi::OsString;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::process::{self, Process, ScratchDir};

/// A running etcd server, killed (SIGKILL) and its data directory removed on drop, also when
/// a test panics.
#[derive(Debug)]
pub struct TestServer {
    process: Process,
    addr: SocketAddr,
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
        let [cport, pport] = process::free_ports()?;
        let dir = ScratchDir::create("aqs-etcd", cport)?;
        let bin = std::env::var("AQS_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
        let client = format!("http://127.0.0.1:{cport}");
        let peer = format!("http://127.0.0.1:{pport}");
        let command: Vec<OsString> = vec![
            bin.into(),
            "--name=aqs".into(),
            format!("--data-dir={}", dir.path().join("data").display()).into(),
            format!("--listen-client-urls={client}").into(),
            format!("--advertise-client-urls={client}").into(),
            format!("--listen-peer-urls={peer}").into(),
            format!("--initial-advertise-peer-urls={peer}").into(),
            format!("--initial-cluster=aqs={peer}").into(),
        ];
        let mut server = TestServer {
            process: Process::spawn("etcd", dir, "etcd.log", command)?,
            addr: (Ipv4Addr::LOCALHOST, cport).into(),
        };
        server.wait_healthy(timeout)?;
        Ok(server)
    }

    fn wait_healthy(&mut self, timeout: Duration) -> io::Result<()> {
        let addr = self.addr;
        self.process.wait_until(timeout, "report healthy", || {
            http_get(addr, "/health")
                .map(|body| body.contains("\"health\":\"true\""))
                .unwrap_or(false)
        })
    }

    /// The server's Prometheus metrics, as text (for counting requests and watch events).
    ///
    /// # Errors
    /// If the server does not answer.
    pub fn metrics(&self) -> io::Result<String> {
        http_get(self.addr, "/metrics")
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

    /// Kills the server (SIGKILL, as a crash) and waits for it to exit, keeping its ports and
    /// data directory for [`restart`](Self::restart). A frozen server is killed all the same.
    ///
    /// # Errors
    /// If the process cannot be waited for.
    pub fn kill(&mut self) -> io::Result<()> {
        self.process.kill()
    }

    /// Starts a killed server again on the same ports and data (its keys and leases survive;
    /// etcd extends every lease by its TTL when it becomes leader again) and waits until it is
    /// healthy. A server still running is killed first.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&mut self, timeout: Duration) -> io::Result<()> {
        self.process.respawn()?;
        self.wait_healthy(timeout)
    }

    /// Freezes the server (SIGSTOP): it answers nothing and its clocks' effects wait until
    /// [`thaw`](Self::thaw), as in a long pause.
    ///
    /// # Errors
    /// If `kill` cannot be run.
    pub fn freeze(&self) -> io::Result<()> {
        self.process.signal("-STOP")
    }

    /// Lets a frozen server run again (SIGCONT).
    ///
    /// # Errors
    /// If `kill` cannot be run.
    pub fn thaw(&self) -> io::Result<()> {
        self.process.signal("-CONT")
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

/// A three-member etcd cluster on loopback ports (one process and data directory per member),
/// for tests of clients that lose a member. Members are killed and their data directories
/// removed on drop.
#[derive(Debug)]
pub struct Cluster {
    members: Vec<(Process, SocketAddr)>,
}

impl Cluster {
    /// Starts three members and waits up to `timeout` until each reports healthy (the cluster
    /// has a leader). The binary is as for [`TestServer::start`].
    ///
    /// # Errors
    /// As [`TestServer::start`], for any member.
    pub fn start(timeout: Duration) -> io::Result<Cluster> {
        // Per member: the client port, then the peer port.
        let ports: [u16; 6] = process::free_ports()?;
        let bin = std::env::var("AQS_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
        let peers: Vec<String> = (0..3)
            .map(|i| format!("m{i}=http://127.0.0.1:{}", ports[2 * i + 1]))
            .collect();
        let initial = peers.join(",");
        let mut members = Vec::with_capacity(3);
        for i in 0..3 {
            let (cport, pport) = (ports[2 * i], ports[2 * i + 1]);
            let dir = ScratchDir::create("aqs-etcd-cluster", cport)?;
            let client = format!("http://127.0.0.1:{cport}");
            let peer = format!("http://127.0.0.1:{pport}");
            let command: Vec<OsString> = vec![
                bin.clone().into(),
                format!("--name=m{i}").into(),
                format!("--data-dir={}", dir.path().join("data").display()).into(),
                format!("--listen-client-urls={client}").into(),
                format!("--advertise-client-urls={client}").into(),
                format!("--listen-peer-urls={peer}").into(),
                format!("--initial-advertise-peer-urls={peer}").into(),
                format!("--initial-cluster={initial}").into(),
                "--initial-cluster-state=new".into(),
                "--initial-cluster-token=aqs-test".into(),
            ];
            let process = Process::spawn("etcd cluster member", dir, "etcd.log", command)?;
            members.push((process, (Ipv4Addr::LOCALHOST, cport).into()));
        }
        let mut cluster = Cluster { members };
        for i in 0..3 {
            cluster.wait_healthy(i, timeout)?;
        }
        Ok(cluster)
    }

    fn wait_healthy(&mut self, i: usize, timeout: Duration) -> io::Result<()> {
        let (process, addr) = &mut self.members[i];
        let addr = *addr;
        process.wait_until(timeout, "report healthy", || {
            http_get(addr, "/health")
                .map(|body| body.contains("\"health\":\"true\""))
                .unwrap_or(false)
        })
    }

    /// Every member's client endpoint, as `etcd_client::Client::connect` takes them.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|(_, a)| a.to_string()).collect()
    }

    /// The member that leads now, by its `etcd_server_is_leader` metric.
    pub fn leader(&self) -> Option<usize> {
        (0..3).find(|&i| {
            http_get(self.members[i].1, "/metrics")
                .map(|m| m.lines().any(|l| l.trim() == "etcd_server_is_leader 1"))
                .unwrap_or(false)
        })
    }

    /// Kills member `i` (SIGKILL, as a crash) and waits for it to exit, keeping its ports and
    /// data for [`restart`](Self::restart).
    ///
    /// # Errors
    /// If the process cannot be waited for.
    ///
    /// # Panics
    /// If `i` is not 0, 1 or 2.
    pub fn kill(&mut self, i: usize) -> io::Result<()> {
        self.members[i].0.kill()
    }

    /// Starts member `i` again on its ports and data, and waits up to `timeout` until it
    /// reports healthy.
    ///
    /// # Errors
    /// As [`TestServer::start`].
    ///
    /// # Panics
    /// If `i` is not 0, 1 or 2.
    pub fn restart(&mut self, i: usize, timeout: Duration) -> io::Result<()> {
        self.members[i].0.respawn()?;
        self.wait_healthy(i, timeout)
    }
}

/// `GET path` over HTTP/1.0 (the server closes the connection after answering); returns the
/// whole response, headers included.
fn http_get(addr: SocketAddr, path: &str) -> io::Result<String> {
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    process::exchange(
        addr,
        request.as_bytes(),
        Duration::from_secs(1),
        Duration::from_secs(5),
    )
}
