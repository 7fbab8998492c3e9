//! Go programs beside the Rust tests and benchmarks: etcd's own Go recipes (`concurrency.Mutex`,
//! `recipes.RWMutex`) driven from a small `main` package, built with the system's Go toolchain
//! against the client's sources in GOPATH mode (Debian: `golang-go` and
//! `golang-etcd-server-dev`, which installs them under `/usr/share/gocode`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the etcd client's Go sources live: `AQS_GOPATH`, else Debian's `/usr/share/gocode`.
pub fn gopath() -> String {
    std::env::var("AQS_GOPATH").unwrap_or_else(|_| "/usr/share/gocode".into())
}

/// Builds the Go `main` package in `src` into `into` as `aqs-go-{name}` and returns the
/// binary's path.
///
/// Every call rebuilds, so the binary always matches its sources. It is built under a name of this
/// process's own and renamed over the last one: processes that build at once never run a
/// half-written binary, and one still running the old binary keeps it (the rename replaces the
/// name, not the file). Nothing is left behind per process. Tests and benchmarks pass Cargo's
/// scratch directory (`env!("CARGO_TARGET_TMPDIR")`), so the binary lives under `target/`.
///
/// # Errors
/// A message saying why: no `go` on the path, or the build failed (with Go's own output), for
/// example because the client's sources are missing.
pub fn build(src: &Path, name: &str, into: &Path) -> Result<PathBuf, String> {
    let out = into.join(format!("aqs-go-{name}"));
    let part = into.join(format!("aqs-go-{name}.{}.part", std::process::id()));
    let gopath = gopath();
    std::fs::create_dir_all(into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&part)
        .arg(".")
        .current_dir(src)
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .output()
        .map_err(|e| format!("no Go toolchain (`go`: {e})"))?;
    if !built.status.success() {
        let _ = std::fs::remove_file(&part);
        return Err(format!(
            "`go build` in {} failed (GOPATH {gopath}): {}",
            src.display(),
            String::from_utf8_lossy(&built.stderr).trim()
        ));
    }
    std::fs::rename(&part, &out).map_err(|e| {
        let _ = std::fs::remove_file(&part);
        format!("cannot move the Go binary to {}: {e}", out.display())
    })?;
    Ok(out)
}
