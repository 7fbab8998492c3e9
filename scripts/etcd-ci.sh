#!/usr/bin/env bash
# CI for aqs-etcd: installs etcd, etcdctl and protoc from Debian if missing, then checks format,
# clippy (-D warnings), rustdoc (warnings denied) and runs the crate's tests. The tests start
# their own etcd servers on free loopback ports with temporary data directories and kill them
# when done (also on failure); nothing here starts a service. Nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never RUST_BACKTRACE=1
t0=$(date +%s)

need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
if ((${#need[@]})); then
  echo "=== apt-get install ${need[*]}"
  SUDO=; [[ $(id -u) == 0 ]] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
etcd --version | sed -n 1p # sed reads it all: no SIGPIPE under pipefail
etcdctl version | sed -n 1p

echo "=== cargo fmt -p aqs-etcd -p aqs-test-servers --check"
cargo fmt -p aqs-etcd -p aqs-test-servers -- --check
echo "=== cargo clippy -p aqs-etcd -p aqs-test-servers --all-targets -- -D warnings"
cargo clippy -p aqs-etcd -p aqs-test-servers --all-targets -- -D warnings
echo "=== cargo test -p aqs-test-servers --test etcd (the throwaway etcd itself)"
cargo test -p aqs-test-servers --test etcd
echo "=== cargo test -p aqs-etcd (starts its own etcd servers)"
cargo test -p aqs-etcd -- --test-threads=2
echo "=== benchmark against the v3lock service, quick mode (proves it runs; the report is in docs/etcd.md)"
# The dev profile reuses the test build; the numbers of a quick run mean nothing.
AQS_ETCD_BENCH_QUICK=1 cargo bench -q -p aqs-etcd --bench v3lock --profile dev >/dev/null
echo "=== cargo doc -p aqs-etcd (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc -p aqs-etcd --no-deps
echo "=== aqs-etcd CI: ok in $(($(date +%s) - t0))s"
