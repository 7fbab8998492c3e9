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
        let log = fs::File::create(dir.join("server.log"))?;
        let cp = std::env::var("AQS_ZK_CLASSPATH").unwrap_or_else(|_| DEFAULT_CLASSPATH.into());
        let child = Command::new("java")
            .arg("-cp")
            .arg(cp)
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let mut server = TestServer {
            child,
            dir,
            addr: (Ipv4Addr::LOCALHOST, port).into(),
        };
        let deadline = Instant::now() + timeout;
        loop {
            // `ruok` answers `imok` before the server serves requests; `srvr` reports a mode
            // only once it does.
            if server
                .four_letter("srvr")
                .map(|r| r.contains("Mode: "))
                .unwrap_or(false)
            {
                return Ok(server);
            }
            if let Some(status) = server.child.try_wait()? {
                return Err(server.failure(format!("server exited with {status}")));
            }
            if Instant::now() >= deadline {
                return Err(server.failure(format!("server did not serve within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
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

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}
