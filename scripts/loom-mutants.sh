#!/usr/bin/env bash
# Proves the loom models have teeth: each planted bug in tests/mutants/*.patch
# is applied to a scratch copy of the crate, and a loom model must then fail
# with the failure KIND that bug causes (a lost wake-up is loom's
# "deadlock"; a premature free is the freed-node assertion or a causality
# violation; an orphaned node is the models' own check). A non-zero exit for
# any other reason (a patch that no longer applies, a compile error, loom's
# branch limit, a timeout, another assertion) does NOT count as caught; nor
# does an abort, unless loom's first panic already reported that KIND. The
# same models also run on the unpatched crate, which must pass, so a broken
# model cannot pass for a catch. Exits 0 only if the clean build passes and
# every planted bug is caught. One loom job at a time.
#
# Usage: bash scripts/loom-mutants.sh            (from any directory)
#
# AQS_MUTANTS_CLEAN=0 skips the clean runs, for a caller that runs every
# model on the clean crate itself and fails if one fails: CI does, with
# scripts/loom.sh beside this script. AQS_MUTANTS_ONLY (below) narrows the
# run to some planted bugs.
#
# The protocol code carries no trace of the bugs. A patch is a unified diff
# against src/ (`patch -p1`); to write a new one, edit a copy of the crate
# and `diff -u` it, with a first paragraph saying what the bug is.
#
# Build: the scratch copy lives at one fixed path (target/mutant-src) and
# builds into one target dir (target/loom-mutants), so loom and the other
# dependencies compile once and each bug only rebuilds `aqs`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
unset LOOM_MAX_PREEMPTIONS LOOM_CHECKPOINT_FILE
export RUSTFLAGS="--cfg aqs_loom"
export CARGO_TERM_COLOR=never

# planted bug | model (exact test path) | what its failure must say
deadlock='deadlock; threads ='
freed='aqs: a queue node was used after it was freed|Causality violation: Concurrent (read and write|write) accesses'
orphan='a queue node outlived its waiter'
barged='a barger took a lock handed to a waiter'
dropped='Causality violation|a synchronizer was used after it was dropped'
# A waiter that returns without the lock reads the flag unguarded (a
# causality violation) or unlocks a lock it does not hold, so that the next
# lock() never returns (loom's deadlock) or the lock is left held.
unheld='Causality violation|the lock was left held|deadlock; threads ='
passed='a reader passed a queued writer'
claim_taken='a claimed turn was taken by another'
claim_passed='a claimant passed a queued waiter'
write_claim_passed='a reader passed a claimed writer'
# The message of a panic a model plants on purpose (a waker's, O3), which
# the model catches; it is never a verdict.
planted_panic='loom model: a waker panics'
# A node lost: loom's leak report, or the models' check that nothing is left
# retired once all have left (the lost node is still counted in the backlog).
leaked='Allocation leaked|retired nodes lingered'
mutants=(
  "no_propagate|queue::future::loom_models::propagation_mixes_tasks_and_threads_bound_2|$deadlock"
  "no_recheck|queue::loom_models::acquire_release_one_permit_nonfair|$deadlock"
  "cancel_no_wake|queue::loom_models::cancel_races_release|$deadlock"
  "free_early|queue::loom_models::add_permits_wakes_two_waiters|$freed"
  "no_unlink|queue::loom_models::add_permits_wakes_two_waiters_fair|$orphan"
  "wake_store|queue::loom_models::add_permits_wakes_two_waiters_fair|$deadlock"
  "passed_no_retry|queue::loom_models::acquire_many_at_head_fair|$deadlock"
  "stale_value|queue::loom_models::propagation_jdk_6801020|$deadlock"
  "no_armed|queue::loom_models::acquire_release_one_permit_nonfair|$deadlock"
  "armed_late_clear|queue::loom_models::stale_armed_bit_is_cleared_safely|$deadlock"
  "unlink_load|queue::loom_models::timed_waiter_leaves_during_takeover_fair|$deadlock"
  "foreign_signal|queue::loom_models::timed_waiter_leaves_during_takeover_fair|$deadlock"
  "blind_disarm|queue::loom_models::stale_armed_bit_is_cleared_safely|$deadlock"
  "disarm_no_rearm|queue::loom_models::disarm_races_a_takeover|$deadlock"
  "yield_unguarded|queue::loom_models::add_permits_wakes_two_waiters_fair_yielding|$freed"
  "handoff_ignored|mutex::loom_models::unlock_fair_hands_off_past_a_barger|$barged"
  "claim_ignored|mutex::loom_models::claimed_turn_refuses_an_arrival_fair|$claim_taken"
  "claim_dropped_when_free|mutex::loom_models::claimed_turn_against_a_queued_waiter_fair|$deadlock"
  "claim_past_queue|mutex::loom_models::claim_waits_behind_a_queued_waiter_fair|$claim_passed"
  "claimed_wake_dropped|condvar::loom_models::notify_all_two_waiters|$deadlock"
  "transfer_no_recheck|condvar::loom_models::notify_one_after_unlock_nonfair|$deadlock"
  "timeout_no_reacquire|condvar::loom_models::timed_wait_races_notify|$unheld"
  "transfer_store_early|condvar::loom_models::notifier_is_done_before_the_waiter_returns|$dropped"
  "transfer_store_early|condvar::loom_models::notify_all_is_done_before_the_last_waiter_returns|$dropped"
  "reader_passes_writer|rwlock::loom_models::arriving_reader_defers_to_a_queued_writer_nonfair|$passed"
  "fast_read_passes_queue|rwlock::loom_models::arriving_reader_defers_to_a_queued_writer_nonfair|$passed"
  "fair_reader_barges|rwlock::loom_models::arriving_reader_defers_to_a_queued_writer_fair|$passed"
  "downgrade_no_wake|rwlock::loom_models::downgrade_while_readers_queue_fair|$deadlock"
  "latch_last_skips_queue|latch::loom_models::last_count_down_wakes_two_waiters|$deadlock"
  "register_keeps_stale_waker|queue::future::loom_models::waker_replaced_while_a_release_wakes|$deadlock"
  "register_skips_flag|queue::future::loom_models::waker_replaced_while_a_release_wakes|$deadlock"
  "dropped_future_stays_queued|queue::future::loom_models::dropped_signalled_future_passes_the_wake_on|$deadlock"
  "handoff_first_look|rwlock::loom_models::handed_off_lock_refuses_arriving_readers_behind_a_leaving_reader|$barged"
  "close_skips_tasks|queue::future::loom_models::close_wakes_queued_tasks|$deadlock"
  "owner_takes_unguarded|queue::future::loom_models::future_dropped_while_another_thread_wakes_it|Causality violation"
  "wake_inline|queue::future::loom_models::wake_panics_mid_propagation|permits were lost or invented"
  "stash_drops_batch|queue::loom_models::add_permits_wakes_two_waiters|$leaked"
  "join_drops_other|queue::loom_models::guards_retire_and_leave|$leaked"
  "skip_no_redirect|queue::loom_models::release_after_a_cancelled_node_is_freed|$freed"
  "tail_unlink_no_clear|queue::loom_models::release_after_a_cancelled_node_is_freed|$freed"
  "reader_first_look|rwlock::loom_models::arriving_reader_defers_to_a_writer_behind_a_woken_reader_nonfair|$passed"
  "look_wake_no_bump|rwlock::loom_models::arriving_reader_defers_to_a_writer_behind_a_woken_reader_nonfair|$passed"
  "look_link_no_bump|rwlock::loom_models::arriving_reader_sees_a_writer_queued_after_its_last_look_nonfair|$passed"
  "look_cancel_no_bump|rwlock::loom_models::arriving_reader_joins_a_batch_nobody_has_woken_before_a_writer_nonfair|$passed"
  "look_head_no_bump|rwlock::loom_models::arriving_reader_sees_a_writer_behind_a_new_head_nonfair|$passed"
  "write_claim_ignored|rwlock::loom_models::writer_wait::claimed_write_refuses_arriving_readers_nonfair|$write_claim_passed"
  "fast_read_passes_claim|rwlock::loom_models::writer_wait::claimed_write_refuses_arriving_readers_nonfair|$write_claim_passed"
  "write_claim_kept|rwlock::loom_models::writer_wait::claimed_write_refuses_arriving_readers_timed_nonfair|the lock was left held"
  "claim_unlock_wakes_nobody|rwlock::loom_models::writer_wait::parked_claimant_wakes_at_the_last_read_unlock_nonfair|$deadlock"
  "give_back_wakes_nobody_aside|rwlock::loom_models::writer_wait::give_back_wakes_a_sleeping_claimant_nonfair|$deadlock"
  "handoff_leaves_claimant_asleep|rwlock::loom_models::writer_wait::give_back_restoring_a_hand_off_wakes_a_sleeping_claimant_nonfair|$deadlock"
  "recursive_read_clears_parked|rwlock::loom_models::writer_wait::parked_claimant_wakes_at_the_last_read_unlock_nonfair|a recursive read cleared the claimant's mark|$deadlock"
  "write_claim_takes_early|rwlock::loom_models::writer_against_readers_nonfair|Causality violation"
  "write_claim_drop_wakes_nobody|rwlock::loom_models::writer_wait::dropped_claim_wakes_a_reader_queued_under_it_nonfair|a dropped claim left a reader queued under it asleep"
  "read_unlock_wakes_writer|rwlock::loom_models::writer_wait::read_unlock_with_readers_inside_wakes_nobody_nonfair|a read unlock with a reader still inside woke the queued writer"
  "crowd_wakes_one|rwlock::loom_models::readers_aside::write_unlock_wakes_the_whole_crowd_nonfair|$deadlock"
  "crowd_parks_without_the_flag|rwlock::loom_models::readers_aside::crowd_misses_no_release_nonfair|$deadlock"
  "crowd_woken_before_the_clear|rwlock::loom_models::readers_aside::crowd_misses_no_release_nonfair|$deadlock"
  "write_take_drops_the_crowd|rwlock::loom_models::readers_aside::crowd_misses_no_release_nonfair|$deadlock"
  "claim_take_drops_the_crowd|rwlock::loom_models::readers_aside::claim_wakes_the_reads_it_turned_aside_nonfair|$deadlock"
  "dropped_claim_leaves_the_crowd_asleep|rwlock::loom_models::readers_aside::claim_wakes_the_reads_it_turned_aside_timed_nonfair|a dropped claim left the reads it turned aside asleep"
  "downgrade_leaves_the_crowd_asleep|rwlock::loom_models::downgrade_while_readers_queue_nonfair|$deadlock"
  "read_take_drops_the_crowd|rwlock::loom_models::readers_aside::crowd_misses_no_release_to_a_read_nonfair|$deadlock"
  "claim_give_up_take_drops_the_crowd|rwlock::loom_models::readers_aside::claim_wakes_the_reads_it_turned_aside_timed_unlocked_early_nonfair|$deadlock"
)

# Every patch file has a row above, and every row a patch file.
for p in tests/mutants/*.patch; do
  name=$(basename "$p" .patch)
  # No pipe into `grep -q`: it exits at the first match, and under pipefail
  # the writer's SIGPIPE would read as "not listed".
  grep -q "^${name}|" <<<"$(printf '%s\n' "${mutants[@]}")" || { echo "no model listed for $p"; exit 1; }
done

# AQS_MUTANTS_ONLY (an extended regex), if set, keeps only the planted bugs
# whose names match it, for a developer checking new ones.
if [[ -n ${AQS_MUTANTS_ONLY:-} ]]; then
  mapfile -t mutants < <(printf '%s\n' "${mutants[@]}" | grep -E "^(${AQS_MUTANTS_ONLY})\|")
  [[ ${#mutants[@]} -gt 0 ]] || { echo "no planted bug matches AQS_MUTANTS_ONLY"; exit 1; }
fi

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
t_all=$(date +%s)
declare -a summary=()
failed=0
scratch="$root/target/mutant-src"

# Copies the clean crate to the scratch path, as a workspace of its own.
fresh_copy() {
  mkdir -p "$scratch"
  rm -rf "$scratch/src"
  cp -r "$root/src" "$scratch/src"
  cp "$root/Cargo.lock" "$scratch/"
  # The scratch crate is alone: no benchmark member.
  sed -e '/^\[workspace\]/,$d' "$root/Cargo.toml" >"$scratch/Cargo.toml"
  printf '\n[workspace]\n' >>"$scratch/Cargo.toml"
  cp "$root/README.md" "$scratch/" # the crate's doctests include it
  rm -rf "$scratch/examples"
  cp -r "$root/examples" "$scratch/" # the manifest names one
}

# Builds the lib's loom test binary of the crate in $1 into target dir $2
# and prints its path.
build() {
  (cd "$1" && CARGO_TARGET_DIR="$2" cargo test --release --lib --features async --no-run --message-format=json 2>"$log_dir/build.err") |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}

# Runs the exact model $2 of binary $1 (at most 20 minutes: two loom runs share
# the machine in CI); output to $3.
run_test() {
  timeout 1200 "$1" --exact "$2" --test-threads 1 >"$3" 2>&1
}

# --- the clean build must pass the very models that catch the bugs
if [[ ${AQS_MUTANTS_CLEAN:-1} != 0 ]]; then
  t0=$(date +%s)
  bin=$(build "$root" "$root/target/loom") || { cat "$log_dir/build.err"; exit 1; }
  [[ -n $bin ]] || { cat "$log_dir/build.err"; echo "clean build: no test binary"; exit 1; }
  echo "clean build: $(($(date +%s) - t0))s"
  declare -A checked=()
  for entry in "${mutants[@]}"; do
    IFS='|' read -r mutant name _ <<<"$entry"
    [[ -n ${checked[$name]:-} ]] && continue # several bugs share a model
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
    line=$(printf 'clean    %-16s %-62s %4ss  %s' "-" "$name" "$(($(date +%s) - t0))" "$verdict")
    echo "$line"
    summary+=("$line")
  done
else
  echo "clean runs skipped (AQS_MUTANTS_CLEAN=0): the caller runs every model on the clean crate"
fi

# --- every planted bug must be caught, with the right kind of failure
for entry in "${mutants[@]}"; do
  IFS='|' read -r mutant name pattern <<<"$entry"
  t0=$(date +%s)
  fresh_copy
  if ! (cd "$scratch" && patch -p1 --quiet --forward <"$root/tests/mutants/$mutant.patch") >"$log_dir/patch.log" 2>&1; then
    cat "$log_dir/patch.log"
    verdict="NOT CAUGHT (the patch no longer applies)"
    failed=1
  elif ! bin=$(build "$scratch" "$root/target/loom-mutants") || [[ -z $bin ]]; then
    cat "$log_dir/build.err"
    verdict="NOT CAUGHT (build failed)"
    failed=1
  else
    out="$log_dir/$mutant.log"
    rc=0
    run_test "$bin" "$name" "$out" || rc=$?
    if [[ $rc -eq 0 ]]; then
      verdict="NOT CAUGHT (model passed)"
      failed=1
    elif grep -q "test result: FAILED. 0 passed; 1 failed" "$out" && grep -Eq "$pattern" "$out"; then
      verdict="caught: $(grep -Eo "$pattern" "$out" | sed -n 1p)"
    elif [[ $rc -eq 134 ]] && grep -q "non-unwinding panic" "$out" &&
      grep -A1 "panicked at" "$out" | grep -v -e "panicked at" -e '^--$' -e "$planted_panic" |
      sed -n 1p | grep -Eq "$pattern"; then
      # Loom reported the failure, then aborted tearing the execution down
      # (a loom Arc dropped during the unwind from inside `block_on`). The
      # first panic is the verdict, past those the model plants itself (a
      # waker that panics on purpose, caught by the model).
      verdict="caught (loom aborted after its report): $(grep -Eo "$pattern" "$out" | sed -n 1p)"
    else
      verdict="NOT CAUGHT (failed, but not with: $pattern)"
      failed=1
      tail -n 30 "$out"
    fi
  fi
  line=$(printf 'mutant   %-16s %-62s %4ss  %s' "$mutant" "$name" "$(($(date +%s) - t0))" "$verdict")
  echo "$line"
  summary+=("$line")
done

echo
echo "=== loom mutants summary"
for line in "${summary[@]}"; do echo "$line"; done
echo "total: $(($(date +%s) - t_all))s"
exit "$failed"
