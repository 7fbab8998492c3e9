#!/usr/bin/env bash
# The JDK anchors: compiles benchmark/jdk/*.java into TARGET/jdk-classes and
# runs SemaphoreBench (java.util.concurrent.Semaphore, fair and nonfair) and
# MutexBench (ReentrantLock, fair and nonfair, and synchronized) and
# RwLockBench (ReentrantReadWriteLock, fair and nonfair, and StampedLock),
# writing TARGET/aqs-bench/jdk.jsonl, jdk-mutex.jsonl and jdk-rwlock.jsonl
# for bench_report.py. TARGET is $CARGO_TARGET_DIR, by default target/bench.
# AQS_BENCH_QUICK=1 gives the short run, as for `cargo bench`. Without java
# and javac it says so and exits 0.
#
#   benchmark/scripts/bench-jdk.sh                 all three
#   benchmark/scripts/bench-jdk.sh mutex           MutexBench only (or: semaphore, rwlock)
set -euo pipefail

case "${1:-all}" in
  all) benches=(semaphore mutex rwlock) ;;
  semaphore | mutex | rwlock) benches=("$1") ;;
  *)
    sed -n '2,12p' "$0"
    exit 2
    ;;
esac
cd "$(dirname "$0")/../.."
target=${CARGO_TARGET_DIR:-target/bench}
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "SKIPPED: java not installed (need java and javac on PATH)"
  exit 0
fi
mkdir -p "${target}/jdk-classes"
javac -Xlint:all -Werror -d "${target}/jdk-classes" benchmark/jdk/*.java
java -version 2>&1 | sed -n 1p
# A fixed heap keeps the GC out of the way; the benches allocate almost nothing.
java=(java -Xms256m -Xmx256m -cp "${target}/jdk-classes")
for bench in "${benches[@]}"; do
  case ${bench} in
    semaphore) "${java[@]}" SemaphoreBench "${target}/aqs-bench/jdk.jsonl" ;;
    # C2 would coarsen the uncontended loop's synchronized blocks (see MutexBench.java).
    mutex) "${java[@]}" -XX:-EliminateLocks MutexBench "${target}/aqs-bench/jdk-mutex.jsonl" ;;
    rwlock) "${java[@]}" RwLockBench "${target}/aqs-bench/jdk-rwlock.jsonl" ;;
  esac
done
