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
