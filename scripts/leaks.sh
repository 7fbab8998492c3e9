#!/usr/bin/env bash
# Leak check: the stress tests (timeouts, closes and cancellations racing
# releases, semaphores dropped with retired and still-linked queue nodes) run
# as a soak under valgrind's memcheck. Any byte "definitely lost", and any
# memcheck error (invalid read or write, use of uninitialised memory), fails.
#
#   bash scripts/leaks.sh           # from any directory
#
# Environment:
#   AQS_LEAKS_ITERS=N      stress multiplier (default 6; see tests/stress.rs,
#                          AQS_STRESS_ITERS). Valgrind runs one thread at a
#                          time, ~50x slower: the default takes under a minute.
#   AQS_LEAKS_TARGET_DIR   build directory (default target/h-stress). An
#                          exported CARGO_TARGET_DIR is ignored on purpose.
#
# Prints "SKIPPED: leaks: <reason>" and exits 0 only if valgrind is missing
# and cannot be installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR="${AQS_LEAKS_TARGET_DIR:-$PWD/target/h-stress}"
ITERS="${AQS_LEAKS_ITERS:-6}"

script_start=$SECONDS

step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "--- leaks: ${name}"
  if "$@"; then
    echo "--- leaks: ${name}: ok in $((SECONDS - t0))s"
  else
    local rc=$?
    echo "--- leaks: ${name}: FAILED (exit ${rc}) after $((SECONDS - t0))s"
    exit "${rc}"
  fi
}

t0=$SECONDS
echo "--- leaks: install"
if ! command -v valgrind >/dev/null; then
  if ! { apt-get update -qq && apt-get install -y -qq valgrind; } >/dev/null 2>&1 || ! command -v valgrind >/dev/null; then
    echo "SKIPPED: leaks: valgrind is not installed and apt-get could not install it"
    exit 0
  fi
fi
echo "--- leaks: install: ok in $((SECONDS - t0))s"
valgrind --version

# Build the stress test binary and take its path from cargo's JSON messages.
# The dev profile, not --release: it compiles in a third of the time (the CI
# budget), and keeps debug assertions and overflow checks on during the soak.
build() {
  local json
  json=$(cargo test --no-run --test stress --message-format=json)
  BIN=$(printf '%s\n' "$json" | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  if [[ -z "${BIN}" || ! -x "${BIN}" ]]; then
    echo "could not find the stress test binary in cargo's output" >&2
    return 1
  fi
  echo "binary: ${BIN}"
}
step "build" build

# --fair-sched=yes: valgrind's default lock hands the CPU to whichever thread
# grabs it, which can starve a waiter for far longer than any real scheduler.
# --test-threads=1: one test at a time, so each one's waits stay bounded.
soak() {
  AQS_STRESS_ITERS="${ITERS}" AQS_STRESS_WAIT_SECS=120 valgrind \
    --tool=memcheck --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    --error-exitcode=1 --fair-sched=yes --quiet \
    "${BIN}" --test-threads=1
}
step "stress soak under valgrind (AQS_STRESS_ITERS=${ITERS})" soak

echo "--- leaks: clean in $((SECONDS - script_start))s"
