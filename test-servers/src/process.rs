//! What the ZooKeeper and etcd test servers share: free loopback ports, a scratch directory
//! removed on drop, a server process with its output appended to a log file in that directory,
//! waiting until it serves (with the log's tail in the error when it does not), signals, and
//! killing it on drop.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How many lines of the server's log an error carries.
const LOG_TAIL_LINES: usize = 30;

/// `N` distinct free loopback ports: every listener stays open until all are picked, so no two
/// are the same. Another process may take one before the server binds it; tests accept that.
pub(crate) fn free_ports<const N: usize>() -> io::Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

/// Connects to `addr` within `connect`, sends `request`, and reads until the server closes the
/// connection (each read waiting at most `read`).
pub(crate) fn exchange(
    addr: SocketAddr,
    request: &[u8],
    connect: Duration,
    read: Duration,
) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, connect)?;
    stream.set_read_timeout(Some(read))?;
    stream.write_all(request)?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// A directory under the system's temporary directory, removed with its contents on drop.
#[derive(Debug)]
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates `<tmp>/<prefix>-<this process's id>-<port>`.
    pub(crate) fn create(prefix: &str, port: u16) -> io::Result<ScratchDir> {
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{port}", std::process::id()));
        fs::create_dir_all(&path)?;
        Ok(ScratchDir(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A server process started from a fixed command line, with stdin closed and stdout and stderr
/// appended to a log file in its scratch directory (so a restart keeps the earlier log). Killed
/// (SIGKILL) on drop, after which the scratch directory goes.
#[derive(Debug)]
pub(crate) struct Process {
    /// The server's name in error messages.
    name: &'static str,
    /// The program, then its arguments.
    command: Vec<OsString>,
    log: PathBuf,
    child: Child,
    /// Held only to be removed on drop, after [`Process`]'s own drop has killed the child.
    _dir: ScratchDir,
}

impl Process {
    /// Spawns `command` (program, then arguments), logging to `dir/<log>`. On failure `dir` is
    /// removed.
    pub(crate) fn spawn(
        name: &'static str,
        dir: ScratchDir,
        log: &str,
        command: Vec<OsString>,
    ) -> io::Result<Process> {
        let log = dir.path().join(log);
        let child = spawn_logged(&command, &log)?;
        Ok(Process {
            name,
            command,
            log,
            child,
            _dir: dir,
        })
    }

    /// The process id of the current run.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process (SIGKILL, which ends a stopped process too) and waits for it to exit.
    /// Killing an exited process only reaps it.
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        let _ = self.child.kill();
        self.child.wait().map(drop)
    }

    /// Kills the process if it runs, then spawns the same command again, logging to the same
    /// file.
    pub(crate) fn respawn(&mut self) -> io::Result<()> {
        let _ = self.kill();
        self.child = spawn_logged(&self.command, &self.log)?;
        Ok(())
    }

    /// Sends `sig` (as `kill` takes it: `-STOP`, `-CONT`, ...) to the process.
    pub(crate) fn signal(&self, sig: &str) -> io::Result<()> {
        let status = Command::new("kill")
            .arg(sig)
            .arg(self.pid().to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill {sig} failed: {status}")))
        }
    }

    /// Polls `ready` every 100 ms until it holds. If the process exits first, or `ready` does
    /// not hold within `timeout`, kills the process and fails with the tail of its log;
    /// `becomes_ready` says what was awaited, for that error.
    pub(crate) fn wait_until(
        &mut self,
        timeout: Duration,
        becomes_ready: &str,
        mut ready: impl FnMut() -> bool,
    ) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if ready() {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                return Err(self.failure(&format!("exited with {status}")));
            }
            if Instant::now() >= deadline {
                return Err(self.failure(&format!("did not {becomes_ready} within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills the process and describes `what` happened, with the tail of its log.
    fn failure(&mut self, what: &str) -> io::Error {
        let _ = self.kill();
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
        io::Error::other(format!(
            "{} test server: {what}; log tail:\n{tail}",
            self.name
        ))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Spawns `command` with stdin closed and stdout and stderr appended to `log`.
fn spawn_logged(command: &[OsString], log: &Path) -> io::Result<Child> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command line"))?;
    let log = fs::OpenOptions::new().create(true).append(true).open(log)?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
}
