//! Parking: the one piece of the crate that sleeps.
//!
//! On std this is `parking_lot_core`'s `park` and `unpark_one`, keyed by a
//! queue node's address (or a synchronizer's key aside, K3). loom cannot
//! see through `parking_lot_core` (it keeps its own hash table of sleeping
//! threads behind OS locks), so under `cfg(aqs_loom)` this module models
//! the small part of its contract that the queue relies on: `park` with a
//! `validate` callback run under the same lock that `unpark_one` takes,
//! and an optional timeout that may fire at any moment. Both back ends
//! expose the same three functions: [`park`], [`unpark_one`] and
//! [`deadline_passed`].
//!
//! # Invariants
//!
//! * **K1, keys are never dereferenced.** A key is a node address (or a
//!   synchronizer's key aside, K3); a late
//!   `unpark_one` on a key whose node was freed and reused only causes a
//!   spurious wake-up, which every caller's park loop absorbs.
//! * **K2, validate under the lock.** `validate` runs with the key's queue
//!   locked, and `unpark_one` takes the same lock. A waker that changes what
//!   `validate` tests *before* calling `unpark_one` is therefore never lost:
//!   either `validate` sees the change, or the sleeper is already queued and
//!   `unpark_one` finds it.
//! * **K3, one key aside per synchronizer.** Besides node addresses, the
//!   queue parks on one key per synchronizer: its own address plus one
//!   (`RawSync::park_aside`), for the one thread its policy lets wait
//!   outside the queue. That key is odd, so never a node's, and lies
//!   inside the synchronizer's own bytes, so never another object's.

use std::time::Instant;

/// Why [`park`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Another thread called [`unpark_one`] with our key.
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
/// queue lock) returns `false`, until [`unpark_one`] on the same key or until
/// `deadline`.
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
    // SAFETY: K1, K3: `key` is our node's or our synchronizer's key aside, so
    // no other synchronizer parks on it; `validate` is a load and a test (no
    // panic, no parking_lot call); the other two callbacks do nothing.
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

#[cfg(aqs_loom)]
mod loom_lot {
    //! A model of `parking_lot_core::{park, unpark_one}` for loom: one mutex
    //! stands for the bucket lock, and each sleeper waits on loom's per-thread
    //! park token until an unparker has removed its entry.
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
