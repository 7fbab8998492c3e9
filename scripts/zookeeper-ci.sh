#!/usr/bin/env bash
# CI for aqs-zookeeper: installs ZooKeeper and Curator from Debian if missing, then runs the
# crate's tests (they start their own ZooKeeper server; a server that cannot start fails them),
# clippy with -D warnings and rustdoc with warnings denied. Nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never RUST_BACKTRACE=1
t0=$(date +%s)

need=()
dpkg -s zookeeper >/dev/null 2>&1 || need+=(zookeeper)
dpkg -s libcurator-recipes-java >/dev/null 2>&1 || need+=(libcurator-recipes-java)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
if ((${#need[@]})); then
  echo "=== apt-get install ${need[*]}"
  SUDO=; [[ $(id -u) == 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
test -f /usr/share/java/zookeeper.jar || { echo "FATAL: /usr/share/java/zookeeper.jar missing" >&2; exit 1; }

echo "=== cargo fmt --check (aqs-zookeeper, aqs-test-servers)"
cargo fmt -p aqs-zookeeper -p aqs-test-servers -- --check
echo "=== cargo clippy -p aqs-zookeeper -p aqs-test-servers --all-targets -- -D warnings"
cargo clippy -p aqs-zookeeper -p aqs-test-servers --all-targets -- -D warnings
echo "=== cargo test -p aqs-test-servers: the throwaway ZooKeeper itself, start failures, javac"
cargo test -p aqs-test-servers --test zookeeper --test start_failure --test java
echo "=== cargo test -p aqs-zookeeper (starts its own ZooKeeper)"
cargo test -p aqs-zookeeper -- --test-threads=2
echo "=== example users_online (three worker processes, one limit; starts its own ZooKeeper)"
cargo run -q -p aqs-zookeeper --example users_online > /dev/null
echo "=== benchmark against Curator, quick mode (proves it runs; the report is docs/bench-zookeeper.md)"
# The dev profile reuses the test build above: this run only proves that the
# benchmark works; its numbers mean nothing, and a release build of the
# crate and its dependencies would cost CI a minute or more.
AQS_ZK_BENCH_QUICK=1 cargo bench -q -p aqs-zookeeper --bench curator --profile dev > /dev/null
echo "=== cargo doc -p aqs-zookeeper (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc -p aqs-zookeeper --no-deps
echo "=== aqs-zookeeper CI: ok in $(($(date +%s) - t0))s"
