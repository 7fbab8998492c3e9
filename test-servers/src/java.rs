//! Java programs beside the Rust tests and benchmarks (Curator's own recipes, driven from a small
//! `main` class), compiled with the system's `javac` (Debian: `default-jdk-headless`).

use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles the Java source file `src` against `classpath` and returns the directory of its
/// classes, under `into`.
///
/// The directory is named after a hash of the source and the classpath, so an unchanged source
/// reuses the classes an earlier process compiled, and a changed one gets new ones. A directory
/// appears only whole: the classes are compiled into one of this process's own and renamed into
/// place, and a process that loses that race to another uses the winner's. Nothing is left
/// behind per process. Tests and benchmarks pass Cargo's scratch directory
/// (`env!("CARGO_TARGET_TMPDIR")`), so the classes live under `target/`.
///
/// # Errors
/// A message saying why: the source cannot be read, there is no `javac` on the path, or it
/// failed (with its own output). Warnings fail the build (`-Werror`).
pub fn compile(src: &Path, classpath: &str, into: &Path) -> Result<PathBuf, String> {
    let text = fs::read(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    let mut hash = DefaultHasher::new();
    (src.file_name(), &text, classpath).hash(&mut hash);
    let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("java");
    let out = into.join(format!("aqs-java-{stem}-{:016x}", hash.finish()));
    if out.is_dir() {
        return Ok(out);
    }
    let part = into.join(format!("aqs-java-{stem}.{}.part", std::process::id()));
    let _ = fs::remove_dir_all(&part);
    fs::create_dir_all(&part).map_err(|e| format!("cannot create {}: {e}", part.display()))?;
    let compiled = Command::new("javac")
        .args(["-Xlint:all,-path", "-Werror", "-cp", classpath, "-d"])
        .arg(&part)
        .arg(src)
        .output()
        .map_err(|e| format!("no Java compiler (`javac`: {e})"));
    let failed = match &compiled {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "javac failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(e.clone()),
    };
    if let Some(why) = failed {
        let _ = fs::remove_dir_all(&part);
        return Err(why);
    }
    if fs::rename(&part, &out).is_err() {
        // Another process renamed its (identical) classes into place first.
        let _ = fs::remove_dir_all(&part);
        if !out.is_dir() {
            return Err(format!("cannot move the classes to {}", out.display()));
        }
    }
    Ok(out)
}
