#!/usr/bin/env bash
# Runs the loom model-checking suite (the `loom_models` modules inside the
# crate: the core's in src/queue/, each synchronizer's beside it) and prints
# each model's elapsed time. Every model sets its own preemption bound (see
# the comment above it); LOOM_MAX_PREEMPTIONS, if set, can only lower those.
#
# Usage: bash scripts/loom.sh [a model name filter]
#
# The suite is exactly:
#   RUSTFLAGS="--cfg aqs_loom" CARGO_TARGET_DIR=target/loom \
#       cargo test --release --lib --features async loom_models
#
# The cfg is the crate's own, so dependencies build as usual under it.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTFLAGS="--cfg aqs_loom"
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
# Lint of the loom build: the library and its loom models.
step "loom build check" cargo clippy --release --lib --tests --features async -- -D warnings
step "loom build" cargo test --release --lib --features async --no-run
# One model at a time (each is single-threaded and CPU-bound), each timed.
mapfile -t tests < <(cargo test --release --lib --features async -q -- --list "${1:-loom_models}" 2>/dev/null | sed -n 's/: test$//p')
[[ ${#tests[@]} -gt 0 ]] || { echo "no loom models matched"; exit 1; }
for t in "${tests[@]}"; do
  step "loom ${t}" cargo test --release --lib --features async -q -- --exact "${t}"
done
echo "loom total: $(($(date +%s) - t_all))s"
