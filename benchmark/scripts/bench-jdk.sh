#!/usr/bin/env bash
# The JDK anchor: compiles benchmark/jdk/SemaphoreBench.java into
# TARGET/jdk-classes and runs it over java.util.concurrent.Semaphore (fair and
# nonfair), writing TARGET/aqs-bench/jdk.jsonl for bench_report.py. TARGET is
# $CARGO_TARGET_DIR, by default target/bench. AQS_BENCH_QUICK=1 gives the
# short run, as for `cargo bench`. Without java and javac it says so and
# exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=${CARGO_TARGET_DIR:-target/bench}
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "SKIPPED: java not installed (need java and javac on PATH)"
  exit 0
fi
mkdir -p "${target}/jdk-classes"
javac -Xlint:all -Werror -d "${target}/jdk-classes" benchmark/jdk/SemaphoreBench.java
java -version 2>&1 | head -1
# A fixed heap keeps the GC out of the way; the bench allocates almost nothing.
java -Xms256m -Xmx256m -cp "${target}/jdk-classes" SemaphoreBench "${target}/aqs-bench/jdk.jsonl"
