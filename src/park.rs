//! Parking: the one piece of the crate that sleeps.
//!
//! On std this is `parking_lot_core`'s `park`, `unpark_one` and
//! `unpark_all`, keyed by a queue node's address (or one of a
//! synchronizer's keys aside, K3). loom cannot see through
//! `parking_lot_core` (it keeps its own hash table of sleeping threads
//! behind OS locks), so under `cfg(aqs_loom)` this module models the small
//! part of its contract that the queue relies on: `park` with a `validate`
//! callback run under the same lock that the unparks take, and an optional
//! timeout that may fire at any moment. Both back ends expose the same four
//! functions: [`park`], [`unpark_one`], [`unpark_all`] and
//! [`deadline_passed`].
//!
//! # Invariants
//!
//! * **K1, keys are never dereferenced.** A key is a node address (or one
//!   of a synchronizer's keys aside, K3); a late unpark on a key whose node
//!   was freed and reused only causes a spurious wake-up, which every
//!   caller's park loop absorbs.
//! * **K2, validate under the lock.** `validate` runs with the key's queue
//!   locked, and `unpark_one` and `unpark_all` take the same lock. A waker
//!   that changes what `validate` tests *before* it unparks is therefore
//!   never lost: either `validate` sees the change, or the sleeper is
//!   already queued and the unpark finds it.
//! * **K3, two keys aside per synchronizer.** Besides node addresses, the
//!   queue parks on two keys per synchronizer, for threads its policy lets
//!   wait outside the queue: its own address plus one
//!   (`RawSync::park_aside`), for at most one thread, woken alone; and its
//!   address plus three (`RawSync::park_crowd`), for any number, woken all
//!   at once. Both keys are odd, so never a node's, and lie inside the
//!   synchronizer's own bytes (its state word alone is eight), so never
//!   another object's.

use std::time::Instant;

/// Why [`park`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Another thread called [`unpark_one`] or [`unpark_all`] with our key.
    Woken,
    /// `validate` returned `false`; the thread never slept.
    Invalid,
    /// The deadline passed first.
    TimedOut,
}

/// Whether `deadline` has passed. Under loom time never passes on its own:
/// timeouts are modelled inside [`park`] instead, so models stay deterministic.
#[inline]
pub(crate) fn deadline_passed(deadline: Instant) -> bool {
    #[cfg(not(aqs_loom))]
    {
        Instant::now() >= deadline
    }
    #[cfg(aqs_loom)]
    {
        let _ = deadline;
        false
    }
}

/// Parks the calling thread on `key` unless `validate` (run under the key's
/// queue lock) returns `false`, until [`unpark_one`] or [`unpark_all`] on
/// the same key or until `deadline`.
///
/// `validate` must not panic and must not park or unpark (it runs under a
/// parking-lot bucket lock).
#[cfg(not(aqs_loom))]
pub(crate) fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    deadline: Option<Instant>,
) -> Parked {
    use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN};
    let (before_sleep, timed_out, token) = (|| {}, |_, _| {}, DEFAULT_PARK_TOKEN);
    let park = parking_lot_core::park;
    // SAFETY: K1, K3: `key` is our node's or one of our keys aside, so no other
    // synchronizer parks on it; `validate` is a load and a test (no panic, no
    // parking_lot call); the other two callbacks do nothing.
    let result = unsafe { park(key, validate, before_sleep, timed_out, token, deadline) };
    match result {
        ParkResult::Unparked(_) => Parked::Woken,
        ParkResult::Invalid => Parked::Invalid,
        ParkResult::TimedOut => Parked::TimedOut,
    }
}

/// Wakes one thread parked on `key`, if there is one. Remembers nothing when
/// nobody is parked: callers set the sleeper's wake flag first (K2).
#[cfg(not(aqs_loom))]
pub(crate) fn unpark_one(key: usize) {
    use parking_lot_core::DEFAULT_UNPARK_TOKEN;
    // SAFETY: the callback only returns a token, so it neither panics nor calls
    // into parking_lot; `key` is a node address or a key aside (K1, K3).
    unsafe {
        parking_lot_core::unpark_one(key, |_| DEFAULT_UNPARK_TOKEN);
    }
}

/// Wakes every thread parked on `key`. Remembers nothing when nobody is
/// parked: callers clear the sleepers' condition first (K2).
#[cfg(not(aqs_loom))]
pub(crate) fn unpark_all(key: usize) {
    use parking_lot_core::DEFAULT_UNPARK_TOKEN;
    // SAFETY: K1, K3: `key` is a synchronizer's key aside, on which only its
    // own threads park; no callback runs.
    unsafe {
        parking_lot_core::unpark_all(key, DEFAULT_UNPARK_TOKEN);
    }
}

#[cfg(aqs_loom)]
mod loom_lot {
    //! A model of `parking_lot_core::{park, unpark_one, unpark_all}` for
    //! loom: one mutex stands for the bucket lock, and each sleeper waits on
    //! loom's per-thread park token until an unparker has removed its entry.
    use loom::sync::Mutex;
    use loom::thread::Thread;

    pub(super) struct Lot {
        pub(super) next_ticket: u64,
        pub(super) sleepers: Vec<(usize, u64, Thread)>,
    }

    loom::lazy_static! {
        pub(super) static ref LOT: Mutex<Lot> = Mutex::new(Lot { next_ticket: 0, sleepers: Vec::new() });
    }
}

#[cfg(aqs_loom)]
pub(crate) fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    deadline: Option<Instant>,
) -> Parked {
    use loom_lot::LOT;
    let ticket = {
        let mut lot = LOT.lock().unwrap();
        if !validate() {
            return Parked::Invalid;
        }
        let ticket = lot.next_ticket;
        lot.next_ticket += 1;
        lot.sleepers.push((key, ticket, loom::thread::current()));
        ticket
    };
    let still_queued = |lot: &loom_lot::Lot| lot.sleepers.iter().position(|s| s.1 == ticket);
    if deadline.is_some() {
        // A timeout may fire at any moment: after the lock is released, either
        // an unparker removes us first (woken) or we withdraw (timed out).
        // loom explores both orders; this is how models reach the cancel path.
        let mut lot = LOT.lock().unwrap();
        return match still_queued(&lot) {
            Some(i) => {
                lot.sleepers.remove(i);
                Parked::TimedOut
            }
            None => Parked::Woken,
        };
    }
    loop {
        loom::thread::park();
        let lot = LOT.lock().unwrap();
        if still_queued(&lot).is_none() {
            return Parked::Woken;
        }
    }
}

#[cfg(aqs_loom)]
pub(crate) fn unpark_one(key: usize) {
    let sleeper = {
        let mut lot = loom_lot::LOT.lock().unwrap();
        lot.sleepers
            .iter()
            .position(|s| s.0 == key)
            .map(|i| lot.sleepers.remove(i))
    };
    if let Some((_, _, thread)) = sleeper {
        thread.unpark();
    }
}

#[cfg(aqs_loom)]
pub(crate) fn unpark_all(key: usize) {
    let sleepers: Vec<_> = {
        let mut lot = loom_lot::LOT.lock().unwrap();
        let (woken, kept) = std::mem::take(&mut lot.sleepers)
            .into_iter()
            .partition(|s| s.0 == key);
        lot.sleepers = kept;
        woken
    };
    for (_, _, thread) in sleepers {
        thread.unpark();
    }
}
