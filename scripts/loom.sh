#!/usr/bin/env bash
# Runs the loom model-checking suite (tests/loom.rs) and prints each step's
# elapsed time. Every test sets its own preemption bound (see the comment
# above it); LOOM_MAX_PREEMPTIONS, if set, can only lower those bounds.
#
# Usage: bash scripts/loom.sh [extra libtest args, e.g. a test name filter]
#
# The suite is exactly:
#   RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
#       cargo test --release --test loom
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
export CARGO_TERM_COLOR=never

step() {
  local name=$1
  shift
  echo "=== ${name}"
  local t0
  t0=$(date +%s)
  "$@"
  echo "=== ${name}: ok in $(($(date +%s) - t0))s"
}

t_all=$(date +%s)
# Lint of the loom build: the library and every test target (the test files
# other than tests/loom.rs are `#![cfg(not(loom))]`, so they compile to
# nothing here; this keeps them that way, and keeps the loom-only code clean).
step "loom build check" cargo clippy --release --lib --tests -- -D warnings
step "loom build" cargo test --release --test loom --no-run
# One test at a time (each is single-threaded and CPU-bound), each timed.
mapfile -t tests < <(cargo test --release --test loom -q -- --list "$@" 2>/dev/null | sed -n 's/: test$//p')
[[ ${#tests[@]} -gt 0 ]] || { echo "no loom tests matched"; exit 1; }
for t in "${tests[@]}"; do
  step "loom ${t}" cargo test --release --test loom -q -- --exact "${t}"
done
echo "loom total: $(($(date +%s) - t_all))s"
