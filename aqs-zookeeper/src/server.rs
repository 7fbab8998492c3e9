//! A throwaway ZooKeeper server for tests: `java` running Debian's `ZooKeeperServerMain` on a free
//! loopback port with a temporary data directory.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use std::{fs, io};

/// Where Debian's `zookeeper` package puts its jars; override with `AQS_ZK_CLASSPATH`.
pub const DEFAULT_CLASSPATH: &str = "/usr/share/java/*";

/// A running ZooKeeper server, stopped (killed) and its data directory removed on drop.
#[derive(Debug)]
pub struct TestServer {
    child: Child,
    dir: PathBuf,
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
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let dir = std::env::temp_dir().join(format!("aqs-zk-{}-{port}", std::process::id()));
        fs::create_dir_all(dir.join("data"))?;
        let cfg = dir.join("zoo.cfg");
        fs::write(
            &cfg,
            format!(
                "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
                 4lw.commands.whitelist=*\nadmin.enableServer=false\nmaxSessionTimeout=60000\n\
                 minSessionTimeout=1000\n",
                dir.join("data").display()
            ),
        )?;
        let child = spawn(&dir)?;
        let mut server = TestServer {
            child,
            dir,
            addr: (Ipv4Addr::LOCALHOST, port).into(),
            frozen: false,
        };
        server.wait_serving(timeout)?;
        Ok(server)
    }

    fn wait_serving(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            // `ruok` answers `imok` before the server serves requests; `srvr` reports a mode
            // only once it does.
            if self
                .four_letter("srvr")
                .map(|r| r.contains("Mode: "))
                .unwrap_or(false)
            {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                return Err(self.failure(format!("server exited with {status}")));
            }
            if Instant::now() >= deadline {
                return Err(self.failure(format!("server did not serve within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
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
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port and data directory (stopping it first if it
    /// runs), and waits up to `timeout` until it serves: its `srvr` reports a mode. Sessions
    /// and nodes come back from the data directory.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&mut self, timeout: Duration) -> io::Result<()> {
        self.stop();
        self.child = spawn(&self.dir)?;
        self.wait_serving(timeout)
    }

    /// Stops the server's process with SIGSTOP: it neither answers nor expires sessions until
    /// [`thaw`](Self::thaw), as in a long pause.
    ///
    /// # Errors
    /// Fails if the signal cannot be sent.
    pub fn freeze(&mut self) -> io::Result<()> {
        self.signal("-STOP")?;
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
        if self.frozen && self.signal("-CONT").is_ok() {
            self.frozen = false;
        }
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

    /// The process id of the server's JVM (of the current run, after a
    /// [`restart`](Self::restart)), for tests that signal it themselves.
    pub fn pid(&self) -> u32 {
        self.child.id()
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
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(word.as_bytes())?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    fn failure(&mut self, what: String) -> io::Error {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let log = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let tail: String = log
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        io::Error::other(format!("ZooKeeper test server: {what}; log tail:\n{tail}"))
    }
}

/// Runs `ZooKeeperServerMain` on the configuration in `dir`, logging to `dir/server.log`.
fn spawn(dir: &std::path::Path) -> io::Result<Child> {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))?;
    let cp = std::env::var("AQS_ZK_CLASSPATH").unwrap_or_else(|_| DEFAULT_CLASSPATH.into());
    Command::new("java")
        .arg("-cp")
        .arg(cp)
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(dir.join("zoo.cfg"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.thaw();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}
