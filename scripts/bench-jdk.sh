#!/usr/bin/env bash
# The JDK anchor for the benchmarks: compiles benches/jdk/SemaphoreBench.java
# into $CARGO_TARGET_DIR/jdk-classes and runs it over
# java.util.concurrent.Semaphore (fair and nonfair), writing JSON lines to
# $CARGO_TARGET_DIR/aqs-bench/jdk.jsonl for scripts/bench-report.sh
# ($AQS_JDK_OUT instead, when set: `bench-report.sh --run` writes its pass
# before the Rust suite to jdk-before.jsonl).
#
# CARGO_TARGET_DIR defaults to target/bench, like scripts/bench-report.sh.
# AQS_BENCH_QUICK=1 gives the short run, as for `cargo bench`.
# Without java/javac this prints "SKIPPED: java not installed" and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target/bench}
classes="${target}/jdk-classes"
out="${AQS_JDK_OUT:-${target}/aqs-bench/jdk.jsonl}"

if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "SKIPPED: java not installed (need java and javac on PATH)"
  exit 0
fi

t0=$(date +%s)
mkdir -p "${classes}" "$(dirname "${out}")"
javac -Xlint:all -d "${classes}" benches/jdk/SemaphoreBench.java
echo "=== javac: ${classes} in $(($(date +%s) - t0))s"

t1=$(date +%s)
java -version 2>&1 | head -1
# A fixed heap so the GC stays out of the way; the bench allocates almost nothing.
java -Xms256m -Xmx256m -cp "${classes}" SemaphoreBench "${out}"
echo "=== SemaphoreBench: ${out} in $(($(date +%s) - t1))s"
