//! A throwaway ZooKeeper server for tests: `java` running Debian's `ZooKeeperServerMain` on a free
//! loopback port with a temporary data directory.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;
use std::{fs, io};

use crate::process::{self, Process, ScratchDir};

/// Where Debian's `zookeeper` package puts its jars; override with `AQS_ZK_CLASSPATH`.
pub const DEFAULT_CLASSPATH: &str = "/usr/share/java/*";

/// A running ZooKeeper server, stopped (killed) and its data directory removed on drop.
#[derive(Debug)]
pub struct TestServer {
    process: Process,
    addr: SocketAddr,
    frozen: bool,
}

impl TestServer {
    /// Starts a standalone server on a free loopback port and waits up to `timeout` until it
    /// serves requests (its `srvr` four-letter word reports a mode).
    ///
    /// # Errors
    /// Fails if `java` cannot be spawned, the server exits, or it does not serve within
    /// `timeout`; the error carries the tail of the server's log.
    pub fn start(timeout: Duration) -> io::Result<TestServer> {
        let [port] = process::free_ports()?;
        let dir = ScratchDir::create("aqs-zk", port)?;
        let data = dir.path().join("data");
        fs::create_dir_all(&data)?;
        let cfg = dir.path().join("zoo.cfg");
        fs::write(
            &cfg,
            format!(
                "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
                 4lw.commands.whitelist=*\nadmin.enableServer=false\nmaxSessionTimeout=60000\n\
                 minSessionTimeout=1000\n",
                data.display()
            ),
        )?;
        let classpath =
            std::env::var("AQS_ZK_CLASSPATH").unwrap_or_else(|_| DEFAULT_CLASSPATH.into());
        let command: Vec<OsString> = vec![
            "java".into(),
            "-cp".into(),
            classpath.into(),
            "org.apache.zookeeper.server.ZooKeeperServerMain".into(),
            cfg.into(),
        ];
        let mut server = TestServer {
            process: Process::spawn("ZooKeeper", dir, "server.log", command)?,
            addr: (Ipv4Addr::LOCALHOST, port).into(),
            frozen: false,
        };
        server.wait_serving(timeout)?;
        Ok(server)
    }

    fn wait_serving(&mut self, timeout: Duration) -> io::Result<()> {
        let addr = self.addr;
        // `ruok` answers `imok` before the server serves requests; `srvr` reports a mode only
        // once it does.
        self.process.wait_until(timeout, "serve", || {
            four_letter(addr, "srvr")
                .map(|r| r.contains("Mode: "))
                .unwrap_or(false)
        })
    }

    /// Kills the server (SIGKILL, as a crash; a frozen server is thawed first) and waits for it
    /// to exit, keeping its port and data directory for [`restart`](Self::restart). Clients see
    /// a connection loss; their sessions survive a restart within their timeout, because the
    /// server persists sessions. Stopping a stopped server does nothing.
    ///
    /// # Errors
    /// None are reported: a process that already exited is stopped.
    pub fn stop(&mut self) {
        self.thaw();
        let _ = self.process.kill();
    }

    /// Starts the server again on the same port and data directory (stopping it first if it
    /// runs), and waits up to `timeout` until it serves: its `srvr` reports a mode. Sessions
    /// and nodes come back from the data directory.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&mut self, timeout: Duration) -> io::Result<()> {
        self.stop();
        self.process.respawn()?;
        self.wait_serving(timeout)
    }

    /// Stops the server's process with SIGSTOP: it neither answers nor expires sessions until
    /// [`thaw`](Self::thaw), as in a long pause.
    ///
    /// # Errors
    /// Fails if the signal cannot be sent.
    pub fn freeze(&mut self) -> io::Result<()> {
        self.process.signal("-STOP")?;
        self.frozen = true;
        Ok(())
    }

    /// Resumes a [`freeze`](Self::freeze)d server (SIGCONT); does nothing if it is not frozen.
    /// Sessions whose clients went quiet for their timeout meanwhile expire at once. Dropping
    /// the server thaws it too.
    ///
    /// # Errors
    /// None are reported: if the signal cannot be sent the server stays marked frozen, and
    /// [`stop`](Self::stop) and drop kill it anyway (SIGKILL ends a stopped process).
    pub fn thaw(&mut self) {
        if self.frozen && self.process.signal("-CONT").is_ok() {
            self.frozen = false;
        }
    }

    /// The process id of the server's JVM (of the current run, after a
    /// [`restart`](Self::restart)), for tests that signal it themselves.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Whether the server is [`freeze`](Self::freeze)d.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// The client address, `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends a four-letter word (`ruok`, `srvr`, `mntr`, ...) and returns the whole answer.
    ///
    /// # Errors
    /// Fails if the server does not accept the connection or answer within two seconds.
    pub fn four_letter(&self, word: &str) -> io::Result<String> {
        four_letter(self.addr, word)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // The process is killed and the data directory removed when `process` drops.
        self.thaw();
    }
}

fn four_letter(addr: SocketAddr, word: &str) -> io::Result<String> {
    let two_secs = Duration::from_secs(2);
    process::exchange(addr, word.as_bytes(), two_secs, two_secs)
}

/// A three-server ZooKeeper ensemble on loopback ports (`QuorumPeerMain`, one JVM and data
/// directory per member), for tests of clients that move between members. Members are
/// stopped (killed) and their data directories removed on drop.
#[derive(Debug)]
pub struct Ensemble {
    members: Vec<Member>,
}

#[derive(Debug)]
struct Member {
    process: Process,
    addr: SocketAddr,
}

impl Ensemble {
    /// Starts three members and waits up to `timeout` until each serves as leader or follower.
    ///
    /// # Errors
    /// As [`TestServer::start`], for any member.
    pub fn start(timeout: Duration) -> io::Result<Ensemble> {
        // Per member: the client port, the quorum port and the election port.
        let ports: [u16; 9] = process::free_ports()?;
        let servers: String = (0..3)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    ports[3 * i + 1],
                    ports[3 * i + 2]
                )
            })
            .collect();
        let classpath =
            std::env::var("AQS_ZK_CLASSPATH").unwrap_or_else(|_| DEFAULT_CLASSPATH.into());
        let mut members = Vec::with_capacity(3);
        for i in 0..3 {
            let port = ports[3 * i];
            let dir = ScratchDir::create("aqs-zk-ensemble", port)?;
            let data = dir.path().join("data");
            fs::create_dir_all(&data)?;
            fs::write(data.join("myid"), format!("{}\n", i + 1))?;
            let cfg = dir.path().join("zoo.cfg");
            fs::write(
                &cfg,
                format!(
                    "tickTime=500\ninitLimit=20\nsyncLimit=10\ndataDir={}\nclientPort={port}\n\
                     clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n\
                     admin.enableServer=false\nmaxSessionTimeout=60000\nminSessionTimeout=1000\n\
                     reconfigEnabled=false\n{servers}",
                    data.display()
                ),
            )?;
            let command: Vec<OsString> = vec![
                "java".into(),
                "-cp".into(),
                classpath.clone().into(),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain".into(),
                cfg.into(),
            ];
            members.push(Member {
                process: Process::spawn("ZooKeeper ensemble member", dir, "server.log", command)?,
                addr: (Ipv4Addr::LOCALHOST, port).into(),
            });
        }
        let mut ensemble = Ensemble { members };
        for i in 0..3 {
            ensemble.wait_serving(i, timeout)?;
        }
        Ok(ensemble)
    }

    fn wait_serving(&mut self, i: usize, timeout: Duration) -> io::Result<()> {
        let member = &mut self.members[i];
        let addr = member.addr;
        member.process.wait_until(timeout, "serve", || {
            four_letter(addr, "srvr")
                .map(|r| r.contains("Mode: leader") || r.contains("Mode: follower"))
                .unwrap_or(false)
        })
    }

    /// The connect string of all three members, `127.0.0.1:<a>,127.0.0.1:<b>,127.0.0.1:<c>`.
    pub fn connect_string(&self) -> String {
        let addrs: Vec<String> = self.members.iter().map(|m| m.addr.to_string()).collect();
        addrs.join(",")
    }

    /// Member `i`'s client address.
    ///
    /// # Panics
    /// If `i` is not 0, 1 or 2.
    pub fn addr(&self, i: usize) -> SocketAddr {
        self.members[i].addr
    }

    /// The member that leads now, by its `srvr` answer.
    pub fn leader(&self) -> Option<usize> {
        (0..3).find(|&i| {
            four_letter(self.members[i].addr, "srvr")
                .map(|r| r.contains("Mode: leader"))
                .unwrap_or(false)
        })
    }

    /// Kills member `i` (SIGKILL, as a crash) and waits for it to exit, keeping its ports and
    /// data for [`restart`](Self::restart).
    ///
    /// # Panics
    /// If `i` is not 0, 1 or 2.
    pub fn stop(&mut self, i: usize) {
        let _ = self.members[i].process.kill();
    }

    /// Starts member `i` again on its ports and data, and waits up to `timeout` until it
    /// serves as leader or follower.
    ///
    /// # Errors
    /// As [`TestServer::start`].
    ///
    /// # Panics
    /// If `i` is not 0, 1 or 2.
    pub fn restart(&mut self, i: usize, timeout: Duration) -> io::Result<()> {
        self.members[i].process.respawn()?;
        self.wait_serving(i, timeout)
    }

    /// Sends a four-letter word to member `i` and returns the whole answer.
    ///
    /// # Errors
    /// As [`TestServer::four_letter`].
    pub fn four_letter(&self, i: usize, word: &str) -> io::Result<String> {
        four_letter(self.members[i].addr, word)
    }
}
