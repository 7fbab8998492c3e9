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

/// Builds the Go `main` package in `src` into the temporary directory (the file is named after
/// `name` and this process) and returns the binary's path.
///
/// # Errors
/// A message saying why: no `go` on the path, or the build failed (with Go's own output), for
/// example because the client's sources are missing.
pub fn build(src: &Path, name: &str) -> Result<PathBuf, String> {
    let out = std::env::temp_dir().join(format!("aqs-go-{name}-{}", std::process::id()));
    let gopath = gopath();
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(src)
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .output()
        .map_err(|e| format!("no Go toolchain (`go`: {e})"))?;
    if built.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "`go build` in {} failed (GOPATH {gopath}): {}",
            src.display(),
            String::from_utf8_lossy(&built.stderr).trim()
        ))
    }
}
