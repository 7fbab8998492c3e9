//! Unit tests of the read-write locks' core: the read limit, W5's release
//! rule (`release_may_admit`), W4's wake aside and a recursive read under a
//! claim, W6's crowd flag (kept by every take, the read fast path's too,
//! cleared by the releases that open reads), a hand-off nobody waits for
//! (W2), `Debug`, and the debug checks on unlocks.

use super::*;

#[test]
fn a_read_past_the_limit_panics_and_changes_nothing() {
    let lock = RwCore::<false>::with_readers(MAX_READERS - 1);
    assert!(lock.try_read(), "the last read below the limit");
    assert_eq!(lock.readers(), MAX_READERS);
    for attempt in 0..3 {
        let taken = std::panic::catch_unwind(|| match attempt {
            0 => lock.read(None),
            1 => lock.try_read(),
            _ => lock.try_read_recursive(),
        });
        let message = *taken
            .expect_err("a read past the limit")
            .downcast::<String>()
            .unwrap();
        assert!(message.contains("past its limit"), "{message}");
        assert_eq!(lock.readers(), MAX_READERS, "the panic changed nothing");
        assert_eq!(queue::waiters_of(lock.sync.state()), 0);
    }
    // SAFETY: a read is held.
    unsafe { lock.unlock_read() };
    assert!(lock.try_read(), "below the limit again");
}

/// W5 at its edges: which releases go through the queue.
#[test]
fn release_may_admit_only_what_can_let_a_waiter_in() {
    let policy = RwPolicy::<false, false>;
    let admits = |before: u32, after: u32| policy.release_may_admit(before, after);
    // A read unlock with readers left inside, and the last one.
    assert!(!admits(FREE - 3, FREE - 2));
    assert!(admits(FREE - 1, FREE));
    // A write unlock, fair or not, and a downgrade.
    assert!(admits(0, FREE));
    assert!(admits(0, FREE | HANDOFF));
    assert!(admits(0, FREE - 1));
    // A read unlock from the read limit opens reads again.
    assert!(admits(1, 2));
    // A read unlock with a hand-off pending (a leaving reader took it).
    assert!(admits((FREE - 2) | HANDOFF, (FREE - 1) | HANDOFF));
    // A give-back that restores a hand-off beside readers.
    assert!(admits(FREE - 3, (FREE - 2) | HANDOFF));
    // Under a claim nothing goes in (W4); its drop with readers inside
    // does.
    assert!(!admits((FREE - 2) | CLAIMED, (FREE - 1) | CLAIMED));
    assert!(!admits((FREE - 1) | CLAIMED, FREE | CLAIMED));
    assert!(admits((FREE - 2) | CLAIMED, FREE - 2));
    // The fair lock follows the same rule.
    let fair = RwPolicy::<true, false>;
    assert!(!fair.release_may_admit(FREE - 3, FREE - 2));
    assert!(fair.release_may_admit(FREE - 1, FREE));
}

/// W4's wake aside: only a release that empties a lock with a sleeping
/// claimant, or restores a hand-off beside one, wakes it.
#[test]
fn only_a_release_the_claimant_waits_for_wakes_it() {
    let wakes = |after: u32| RwPolicy::<false, false>.release_wakes_aside(after);
    let asleep = CLAIMED | PARKED;
    // The last read unlock, and one that leaves a reader inside.
    assert!(wakes(FREE | asleep));
    assert!(!wakes((FREE - 1) | asleep));
    // A give-back that restores a hand-off beside readers or none.
    assert!(wakes((FREE - 1) | HANDOFF | asleep));
    assert!(wakes(FREE | HANDOFF | asleep));
    // A claimant that has not gone to sleep spins on the value itself.
    assert!(!wakes(FREE | CLAIMED));
    // Without a claim nobody sleeps aside; the fair lock never claims.
    assert!(!wakes(FREE));
    assert!(!wakes(FREE | HANDOFF));
    assert!(!RwPolicy::<true, false>.release_wakes_aside(FREE | asleep));
}

/// A recursive read admitted under a sleeping claim keeps both of the
/// claim's bits, so that the last read unlock still wakes the claimant.
#[test]
fn a_recursive_read_under_a_claim_keeps_its_bits() {
    let asleep = CLAIMED | PARKED;
    let taken = RwPolicy::<false, true>.try_acquire_shared((FREE - 1) | asleep, 1, false);
    assert_eq!(taken.map(|a| a.value), Some((FREE - 2) | asleep));
    // Nor does a claim with nobody inside admit it; the claimant's turn.
    assert!(RwPolicy::<false, true>
        .try_acquire_shared(FREE | asleep, 1, false)
        .is_none());
}

/// W6's wake of the crowd: a release wakes the reads aside exactly when
/// it leaves reads open (at least 2 free, no claim) beside the flag.
#[test]
fn only_a_release_that_opens_reads_wakes_the_crowd() {
    let wakes = |after: u32| RwPolicy::<false, false>.release_wakes_crowd(after);
    let aside = READERS_ASIDE;
    // A write unlock, fair or not, and a downgrade.
    assert_eq!(wakes(FREE | aside), aside);
    assert_eq!(wakes(FREE | HANDOFF | aside), aside);
    assert_eq!(wakes((FREE - 1) | aside), aside);
    // A dropped claim with readers inside.
    assert_eq!(wakes((FREE - 2) | aside), aside);
    // Under a claim, asleep or not, reads stay shut.
    assert_eq!(wakes(FREE | CLAIMED | aside), 0);
    assert_eq!(wakes((FREE - 1) | CLAIMED | PARKED | aside), 0);
    // A write hold, and the read limit, let no read in.
    assert_eq!(wakes(aside), 0);
    assert_eq!(wakes(1 | aside), 0);
    // Without the flag nobody sleeps there; the fair lock never sets it.
    assert_eq!(wakes(FREE), 0);
    assert_eq!(RwPolicy::<true, false>.release_wakes_crowd(FREE | aside), 0);
}

/// W6: every take keeps the crowd's flag, so that only the clear of a
/// release that opens reads removes it; and the flag refuses nothing.
#[test]
fn every_take_keeps_the_crowd_flag() {
    let aside = READERS_ASIDE;
    let write = RwPolicy::<false, false>.try_acquire_exclusive(FREE | aside, FREE, false);
    assert_eq!(write, Some(aside));
    let read = RwPolicy::<false, false>.try_acquire_shared((FREE - 1) | aside, 1, false);
    assert_eq!(read.map(|a| a.value), Some((FREE - 2) | aside));
    let recursive =
        RwPolicy::<false, true>.try_acquire_shared((FREE - 1) | CLAIMED | aside, 1, false);
    assert_eq!(
        recursive.map(|a| a.value),
        Some((FREE - 2) | CLAIMED | aside)
    );
    // A write unlock opens reads and clears the flag.
    let lock = RwCore::<false>::new();
    assert!(lock.try_write());
    assert!(lock.sync.fetch_update_value(|v| Some(v | aside)).is_ok());
    // SAFETY: this thread holds the write lock.
    unsafe { lock.unlock_write(false) };
    assert_eq!(queue::value_of(lock.sync.state()), FREE);
    // The read fast path keeps it too (a flag left by a timed-out reader).
    assert!(lock.sync.fetch_update_value(|v| Some(v | aside)).is_ok());
    assert!(lock.try_read());
    assert!(lock.read(None));
    assert_eq!(queue::value_of(lock.sync.state()), (FREE - 2) | aside);
}

/// W2 with nobody queued: a fair write unlock leaves a hand-off that no
/// waiter is there to take; the read fast path leaves it to the policy,
/// which grants the read and clears it.
#[test]
fn a_read_clears_a_hand_off_nobody_waits_for() {
    for (i, via_try) in [false, true].into_iter().enumerate() {
        let lock = RwCore::<false>::new();
        assert!(lock.try_write());
        // SAFETY: this thread holds the write lock.
        unsafe { lock.unlock_write(true) };
        assert_eq!(
            queue::value_of(lock.sync.state()),
            FREE | HANDOFF,
            "case {i}"
        );
        assert!(if via_try {
            lock.try_read()
        } else {
            lock.read(None)
        });
        assert_eq!(queue::value_of(lock.sync.state()), FREE - 1, "case {i}");
    }
}

#[test]
fn debug_shows_a_claim() {
    let raw = <RawRwLock as lock_api::RawRwLock>::INIT;
    assert!(raw.lock.try_read());
    let shown = format!("{raw:?}");
    assert!(
        shown.contains("readers: 1, write_claimed: false"),
        "{shown}"
    );
    // A claim as `claim_write` sets it, with the reader still inside.
    let claimed = raw.lock.sync.fetch_update_value(|v| Some(v | CLAIMED));
    assert!(claimed.is_ok());
    let shown = format!("{raw:?}");
    assert!(shown.contains("readers: 1, write_claimed: true"), "{shown}");
    assert!(!raw.lock.try_read(), "a claimed lock turns reads away (W4)");
    let dropped = raw.lock.sync.fetch_update_value(|v| Some(v & !CLAIMED));
    assert!(dropped.is_ok());
    // SAFETY: a read is held.
    unsafe { raw.lock.unlock_read() };
    assert!(format!("{raw:?}").contains("readers: 0, write_claimed: false"));
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "no reader held it")]
fn a_read_unlock_of_an_unheld_lock_panics_in_debug_builds() {
    let lock = RwCore::<true>::new();
    // SAFETY: deliberately broken: the debug check panics first.
    unsafe { lock.unlock_read() };
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "no writer held it")]
fn a_write_unlock_while_reading_panics_in_debug_builds() {
    let lock = RwCore::<false>::new();
    assert!(lock.try_read());
    // SAFETY: deliberately broken: the debug check panics first.
    unsafe { lock.unlock_write(false) };
}
