#!/usr/bin/env bash
# CI for aqs-etcd: installs etcd, etcdctl, protoc and Go with etcd's Go client sources (for the
# benchmark's Go side) from Debian if missing, then checks format,
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
command -v go >/dev/null 2>&1 || need+=(golang-go)
[[ -d /usr/share/gocode/src/go.etcd.io/etcd/clientv3 ]] || need+=(golang-etcd-server-dev)
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
echo "=== cargo test -p aqs-test-servers --lib --test etcd (the fault tests' checker, the throwaway etcd itself)"
cargo test -p aqs-test-servers --lib --test etcd
echo "=== cargo test -p aqs-etcd (starts its own etcd servers)"
cargo test -p aqs-etcd -- --test-threads=2
echo "=== benchmark against the v3lock service and Go's recipe, quick mode (proves all sides run; the report is in docs/etcd.md)"
# The dev profile reuses the test build; the numbers of a quick run mean nothing. Every side must
# run: a Go side left out fails here.
bench=$(AQS_ETCD_BENCH_QUICK=1 cargo bench -q -p aqs-etcd --bench v3lock --profile dev)
if grep -q "Go side is left out" <<<"${bench}"; then
  echo "${bench}"
  exit 1
fi
echo "=== cargo doc -p aqs-etcd (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc -p aqs-etcd --no-deps
echo "=== aqs-etcd CI: ok in $(($(date +%s) - t0))s"
