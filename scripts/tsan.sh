#!/usr/bin/env bash
# ThreadSanitizer: the unit tests and every public test target (tests/*.rs
# but loom), with std rebuilt under TSan (-Zbuild-std) so that std's own
# synchronisation is visible to it, and the stress tests scaled up into a soak.
#
#   bash scripts/tsan.sh            # from any directory
#
# Environment:
#   AQS_TSAN_ITERS=N     stress multiplier for the soak (default 20; see
#                        tests/stress.rs, AQS_STRESS_ITERS)
#   AQS_TSAN_TARGET_DIR  build directory (default target/h-tsan). An exported
#                        CARGO_TARGET_DIR is ignored on purpose: TSan builds
#                        must never mix with uninstrumented ones.
#
# Any TSan report fails the run (halt_on_error=1, exit code 66). Prints
# "SKIPPED: tsan: <reason>" and exits 0 only if the tools cannot be installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR="${AQS_TSAN_TARGET_DIR:-$PWD/target/h-tsan}"
ITERS="${AQS_TSAN_ITERS:-20}"
TARGET="$(rustc -vV | sed -n 's/^host: //p')"

# --target keeps the sanitizer flags off build scripts and proc macros.
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
CARGO=(cargo +nightly)
BUILD=(-Zbuild-std --target "${TARGET}" --release --features async)

script_start=$SECONDS

step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "--- tsan: ${name}"
  if "$@"; then
    echo "--- tsan: ${name}: ok in $((SECONDS - t0))s"
  else
    local rc=$?
    echo "--- tsan: ${name}: FAILED (exit ${rc}) after $((SECONDS - t0))s"
    exit "${rc}"
  fi
}

install() {
  grep -q '^nightly' <<<"$(rustup toolchain list)" || rustup toolchain install nightly --profile minimal
  rustup component add --toolchain nightly rust-src
}

t0=$SECONDS
echo "--- tsan: install"
if [[ "${TARGET}" != x86_64-unknown-linux-gnu && "${TARGET}" != aarch64-unknown-linux-gnu ]]; then
  echo "SKIPPED: tsan: no ThreadSanitizer runtime for host ${TARGET}"
  exit 0
fi
if ! install; then
  echo "SKIPPED: tsan: could not install the nightly toolchain's rust-src component (needed by -Zbuild-std)"
  exit 0
fi
echo "--- tsan: install: ok in $((SECONDS - t0))s"
rustc +nightly -V

# The stress soak is the point; the other public test targets (all of
# tests/*.rs but loom) and the unit tests run once, at their default size.
others=(--lib)
for f in tests/*.rs; do
  name=$(basename "$f" .rs)
  [[ "$name" == loom || "$name" == stress ]] && continue
  others+=(--test "$name")
done

step "build (std and dev-dependencies under TSan)" \
  "${CARGO[@]}" test "${BUILD[@]}" "${others[@]}" --test stress --no-run
step "unit and public tests (${others[*]})" "${CARGO[@]}" test "${BUILD[@]}" "${others[@]}"
step "stress soak (AQS_STRESS_ITERS=${ITERS})" env AQS_STRESS_ITERS="${ITERS}" \
  "${CARGO[@]}" test "${BUILD[@]}" --test stress

echo "--- tsan: clean in $((SECONDS - script_start))s"
