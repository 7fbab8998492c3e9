#!/usr/bin/env bash
# Proves the loom models have teeth: each mutant behind
# `--cfg aqs_mutant="..."` (src/raw.rs, src/node.rs) must make a loom test fail
# with the failure KIND that mutant causes (a lost wake-up is loom's
# "deadlock"; a premature free is the freed-flag assertion or a causality
# violation). A non-zero exit for any other reason (compile error, loom's
# branch limit, a timeout, another assertion) does NOT count as caught. The
# same tests also run on the unmutated build, which must pass, so a broken
# model cannot pass for a catch. Exits 0 only if the clean build passes and
# every mutant is caught. Runs only the tests needed, one loom job at a time.
#
# Usage: bash scripts/loom-mutants.sh            (from any directory)
#
# Build trick: the mutant cfg is passed to the `aqs` crate only, through this
# script acting as RUSTC_WRAPPER, so loom and its dependencies are compiled
# once (in target/loom-mutants) and each mutant only rebuilds `aqs` and the
# test. The clean build uses target/loom, shared with scripts/loom.sh.
set -euo pipefail

# RUSTC_WRAPPER mode: cargo runs `$RUSTC_WRAPPER rustc args...`.
if [[ -n "${AQS_LOOM_MUTANT:-}" && "${1:-}" != "" && "$(basename -- "$1")" == rustc* ]]; then
  rustc=$1
  shift
  extra=()
  prev=
  for arg in "$@"; do
    if [[ $prev == --crate-name && $arg == aqs ]]; then
      extra=(--cfg "aqs_mutant=\"${AQS_LOOM_MUTANT}\"")
    fi
    prev=$arg
  done
  exec "$rustc" "$@" "${extra[@]}"
fi

cd "$(dirname "$0")/.."
root=$(pwd)
script="$root/scripts/loom-mutants.sh"
unset LOOM_MAX_PREEMPTIONS LOOM_CHECKPOINT_FILE AQS_LOOM_MUTANT
export RUSTFLAGS="--cfg loom"
export CARGO_TERM_COLOR=never

# mutant | test name filter (exact) | what its failure must say
deadlock='deadlock; threads ='
freed='aqs: a queue node was used after it was freed|Causality violation: Concurrent (read and write|write) accesses'
orphan='a queue node outlived its waiter'
mutants=(
  "no_propagate|propagation_jdk_6801020|$deadlock"
  "no_recheck|acquire_release_one_permit_nonfair|$deadlock"
  "cancel_no_wake|cancel_races_release|$deadlock"
  "free_early|add_permits_wakes_two_waiters|$freed"
  "no_unlink|add_permits_wakes_two_waiters_fair|$orphan"
  "wake_store|add_permits_wakes_two_waiters_fair|$deadlock"
  "passed_no_retry|acquire_many_at_head_fair|$deadlock"
  "stale_value|propagation_jdk_6801020|$deadlock"
  "no_armed|acquire_release_one_permit_nonfair|$deadlock"
  "armed_late_clear|acquire_many_at_head_nonfair|$deadlock"
  "unlink_load|timed_waiter_leaves_during_takeover_fair|$deadlock"
  "foreign_signal|timed_waiter_leaves_during_takeover_fair|$deadlock"
  "blind_disarm|stale_armed_bit_is_cleared_safely|$deadlock"
  "yield_unguarded|add_permits_wakes_two_waiters_fair_yielding|$freed"
)

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
t_all=$(date +%s)
declare -a summary=()
failed=0

# Builds the loom test binary in target dir $1 and prints its path.
build() {
  local dir=$1
  CARGO_TARGET_DIR="$dir" cargo test --release --test loom --no-run --message-format=json 2>"$log_dir/build.err" |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}

# Runs the exact test $2 of binary $1 (at most 10 minutes); output to $3.
# Returns the test's status.
run_test() {
  local bin=$1 name=$2 out=$3
  timeout 600 "$bin" --exact "$name" --test-threads 1 >"$out" 2>&1
}

# --- the clean build must pass the very tests that catch the mutants
t0=$(date +%s)
bin=$(build "$root/target/loom") || { cat "$log_dir/build.err"; exit 1; }
[[ -n $bin ]] || { cat "$log_dir/build.err"; echo "clean build: no test binary"; exit 1; }
echo "clean build: $(($(date +%s) - t0))s"
declare -A checked=()
for entry in "${mutants[@]}"; do
  IFS='|' read -r mutant name _ <<<"$entry"
  [[ -n ${checked[$name]:-} ]] && continue # several mutants share a model
  checked[$name]=1
  t0=$(date +%s)
  if run_test "$bin" "$name" "$log_dir/clean-$name.log" &&
    grep -q "test result: ok. 1 passed" "$log_dir/clean-$name.log"; then
    verdict="passes"
  else
    verdict="FAILS (the model is broken; no catch counts)"
    failed=1
    tail -n 30 "$log_dir/clean-$name.log"
  fi
  line=$(printf 'clean    %-16s %-38s %4ss  %s' "-" "$name" "$(($(date +%s) - t0))" "$verdict")
  echo "$line"
  summary+=("$line")
done

# --- every mutant must be caught, with the right kind of failure
mutant_dir="$root/target/loom-mutants"
for entry in "${mutants[@]}"; do
  IFS='|' read -r mutant name pattern <<<"$entry"
  t0=$(date +%s)
  # Force `aqs` (and the test) to be rebuilt with this mutant; the
  # dependencies stay compiled.
  rm -rf "$mutant_dir"/release/.fingerprint/aqs-*
  if ! bin=$(AQS_LOOM_MUTANT="$mutant" RUSTC_WRAPPER="$script" build "$mutant_dir") || [[ -z $bin ]]; then
    cat "$log_dir/build.err"
    verdict="NOT CAUGHT (build failed)"
    failed=1
  else
    out="$log_dir/$mutant.log"
    if run_test "$bin" "$name" "$out"; then
      verdict="NOT CAUGHT (test passed)"
      failed=1
    elif grep -q "test result: FAILED. 0 passed; 1 failed" "$out" && grep -Eq "$pattern" "$out"; then
      verdict="caught: $(grep -Eo "$pattern" "$out" | head -n 1)"
    else
      verdict="NOT CAUGHT (failed, but not with: $pattern)"
      failed=1
      tail -n 30 "$out"
    fi
  fi
  line=$(printf 'mutant   %-16s %-38s %4ss  %s' "$mutant" "$name" "$(($(date +%s) - t0))" "$verdict")
  echo "$line"
  summary+=("$line")
done

echo
echo "=== loom mutants summary"
for line in "${summary[@]}"; do echo "$line"; done
echo "total: $(($(date +%s) - t_all))s"
exit "$failed"
