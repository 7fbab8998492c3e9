//! Worker processes that contend for a lock recipe and share one log, which
//! [`checker`](crate::checker) replays: the fault tests of `aqs-zookeeper` (`aqs-zk-worker`) and
//! `aqs-etcd` (`aqs-etcd-worker`) start them, kill, pause and resume them, and note what they
//! did to them in the same log.
//!
//! A worker prints `ready` on stdout once it is connected and writes its own `enter`, `exit`,
//! `lost` and `error` lines (see the checker's module docs). Every wait here is bounded by the
//! bound given to [`Workers::new`], so that a worker that hangs fails its test instead of hanging
//! it, and every worker still running is killed when the [`Workers`] drop, passed or failed.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::checker::{check, Report};

/// Worker processes sharing one log file.
pub struct Workers {
    children: Vec<Child>,
    log: PathBuf,
    bound: Duration,
}

impl Workers {
    /// A new, empty log in the temporary directory, named after `name` and this process; every
    /// wait is bounded by `bound`.
    pub fn new(name: &str, bound: Duration) -> Workers {
        let log = std::env::temp_dir().join(format!("aqs-{name}-{}.log", std::process::id()));
        let _ = fs::remove_file(&log);
        Workers {
            children: Vec::new(),
            log,
            bound,
        }
    }

    /// The log's path, for the workers' command lines.
    pub fn path(&self) -> &Path {
        &self.log
    }

    /// Starts `command` (stdout piped) and waits until it prints `ready`; returns its pid.
    ///
    /// # Panics
    /// If the worker cannot start, or does not print `ready` within the bound.
    pub fn start(&mut self, mut command: Command) -> u32 {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the worker");
        let pid = child.id();
        let stdout = child.stdout.take().unwrap();
        // Registered first, so that Drop kills it even if it never becomes ready.
        self.children.push(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let _ = tx.send(line);
            }
        });
        match rx.recv_timeout(self.bound) {
            Ok(Ok(l)) if l == "ready" => pid,
            other => panic!("worker {pid} did not report ready: {other:?}"),
        }
    }

    /// SIGKILLs the worker `pid`, waits until it is dead, and then logs `killed <pid>`.
    pub fn kill(&mut self, pid: u32) {
        let i = self.children.iter().position(|c| c.id() == pid).unwrap();
        let mut c = self.children.remove(i);
        c.kill().unwrap();
        c.wait().unwrap();
        self.note(&format!("killed {pid}"));
    }

    /// Freezes the worker `pid` (SIGSTOP), then logs `paused <pid>`.
    pub fn pause(&self, pid: u32) {
        signal(pid, "-STOP");
        self.note(&format!("paused {pid}"));
    }

    /// Lets the worker `pid` run again (SIGCONT).
    pub fn resume(&self, pid: u32) {
        signal(pid, "-CONT");
    }

    /// Appends one line to the log, as a worker does: one `write` to a file opened with
    /// `O_APPEND`.
    pub fn note(&self, line: &str) {
        append(&self.log, line);
    }

    /// The whole log so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log has a line starting with `prefix`, and returns it.
    ///
    /// # Panics
    /// If no such line appears within the bound.
    pub async fn wait_line(&self, prefix: &str) -> String {
        let deadline = Instant::now() + self.bound;
        loop {
            if let Some(l) = self.log().lines().find(|l| l.starts_with(prefix)) {
                return l.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no line {prefix:?} within {:?}; log:\n{}",
                self.bound,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for every worker to exit, each with status 0 (every task ended without error).
    ///
    /// # Panics
    /// If a worker fails, or is still running after `bound`.
    pub async fn join(&mut self, bound: Duration) {
        let deadline = Instant::now() + bound;
        while let Some(mut c) = self.children.pop() {
            loop {
                if let Some(status) = c.try_wait().unwrap() {
                    assert!(
                        status.success(),
                        "worker {} failed: {status}; log tail:\n{}",
                        c.id(),
                        tail(&self.log())
                    );
                    break;
                }
                if Instant::now() > deadline {
                    self.children.push(c); // killed by Drop
                    panic!("a worker did not finish within {bound:?}");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// Replays the log with the checker against `limit`.
    ///
    /// # Panics
    /// On a violation, with the log's tail.
    pub fn check(&self, limit: usize) -> Report {
        let log = self.log();
        check(&log, limit).unwrap_or_else(|e| panic!("checker: {e}\nlog:\n{}", tail(&log)))
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill(); // SIGKILL ends a stopped process too
            let _ = c.wait();
        }
        let _ = fs::remove_file(&self.log);
    }
}

/// Appends one line to the log at `log` with one `write` to a file opened with `O_APPEND`, as a
/// worker does; for a test's task that cannot borrow the [`Workers`].
///
/// # Panics
/// If the file cannot be opened or written.
pub fn append(log: &Path, line: &str) {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// The last 60 lines of a log, for failure messages.
pub fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// Sends `sig` (`-STOP`, `-CONT`) to the process `pid`.
///
/// # Panics
/// If `kill(1)` fails.
pub fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid}: {status}");
}
