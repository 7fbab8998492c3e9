//! The sync shim: the only module that names `std`'s or loom's atomics, cells,
//! threads, clocks and parking.
//!
//! Everything else in the crate imports these names from here, so building with
//! `RUSTFLAGS="--cfg loom"` swaps every scheduling-relevant operation for loom's
//! model-checked version and no code path is invisible to the model checker.
//!
//! Parking is the one piece loom cannot see through: `parking_lot_core` keeps
//! its own hash table of sleeping threads behind OS locks. Under `cfg(loom)`
//! this module therefore re-implements the small part of `parking_lot_core`'s
//! contract that the queue relies on (`park` with a `validate` callback run
//! under the same lock that `unpark_one` takes, and an optional timeout) on top
//! of `loom::sync::Mutex` and `loom::thread::park`. Both back ends expose the
//! same three functions: [`park`], [`unpark_one`] and [`deadline_passed`].
//!
//! # Invariants
//!
//! 1. A key is a node address. Keys are never dereferenced, so a late
//!    `unpark_one` on a key whose node was freed and reused only causes a
//!    spurious wake-up, which every caller's park loop absorbs.
//! 2. `validate` runs with the key's queue locked, and `unpark_one` takes the
//!    same lock. A waker that changes what `validate` tests *before* calling
//!    `unpark_one` is therefore never lost: either `validate` sees the change,
//!    or the sleeper is already queued and `unpark_one` finds it.

use std::time::Instant;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// Gives the CPU away; used only when another thread must finish a short,
/// already started step (the queue's one-time initialisation).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Bounded spinning before parking.
///
/// On std this is crossbeam's `Backoff`: exponentially longer busy-wait
/// rounds, then a few `yield_now`s (which let a preempted permit holder run on
/// an oversubscribed machine), then done. Under loom the budget is zero: a
/// spin only re-runs queue code that loom already explores, and spinning would
/// multiply the state space for nothing.
#[derive(Debug)]
pub(crate) struct Spin {
    #[cfg(not(loom))]
    backoff: crossbeam_utils::Backoff,
}

impl Spin {
    #[inline]
    pub(crate) fn new() -> Self {
        Spin {
            #[cfg(not(loom))]
            backoff: crossbeam_utils::Backoff::new(),
        }
    }

    /// Waits one round; returns `false` (without waiting) once the budget is spent.
    #[inline]
    pub(crate) fn spin(&self) -> bool {
        #[cfg(not(loom))]
        {
            if self.backoff.is_completed() {
                return false;
            }
            self.backoff.snooze();
            true
        }
        #[cfg(loom)]
        false
    }

    /// Whether [`Spin::spin_renewing`] would still wait, with `renewals`
    /// budgets in reserve (always `false` under loom, where the budget is
    /// zero): lets a caller skip the loads that decide whether to spin.
    #[inline]
    pub(crate) fn can_spin(&self, renewals: u32) -> bool {
        #[cfg(not(loom))]
        {
            renewals > 0 || !self.backoff.is_completed()
        }
        #[cfg(loom)]
        {
            let _ = renewals;
            false
        }
    }

    /// [`Spin::spin`], but a spent budget is first renewed from `renewals`
    /// (one taken per renewal) while any are left.
    #[inline]
    pub(crate) fn spin_renewing(&self, renewals: &mut u32) -> bool {
        #[cfg(not(loom))]
        if *renewals > 0 && self.backoff.is_completed() {
            *renewals -= 1;
            self.backoff.reset();
        }
        #[cfg(loom)]
        let _ = renewals;
        self.spin()
    }

    /// Restores the full budget.
    #[inline]
    pub(crate) fn reset(&self) {
        #[cfg(not(loom))]
        self.backoff.reset();
    }
}

/// Yielding instead of parking, for a bounded time from the start of a wait.
///
/// On std the window is a span of wall-clock time that opens at the first
/// [`YieldWindow::yield_now`] and closes `length` later. Under loom, where
/// time does not pass, it holds exactly one yield: a model then explores a
/// waiter that gives its CPU away once and re-checks, as well as one that
/// parks, without multiplying the state space by a count of rounds. (Only
/// the models that ask for it yield at all: `RawSync::yields`.)
#[derive(Debug)]
pub(crate) struct YieldWindow {
    #[cfg(not(loom))]
    length: std::time::Duration,
    /// When the window opened (`None`: not yet).
    #[cfg(not(loom))]
    opened: Option<Instant>,
    /// Whether the one yield of a loom window is spent.
    #[cfg(loom)]
    spent: bool,
}

impl YieldWindow {
    /// A window of `length`, opened by its first use.
    #[inline]
    pub(crate) fn new(length: std::time::Duration) -> Self {
        #[cfg(not(loom))]
        {
            YieldWindow {
                length,
                opened: None,
            }
        }
        #[cfg(loom)]
        {
            let _ = length;
            YieldWindow { spent: false }
        }
    }

    /// Yields the CPU once and returns `true` if the window is open (opening
    /// it on first use); returns `false` without yielding once it has closed.
    #[inline]
    pub(crate) fn yield_now(&mut self) -> bool {
        #[cfg(not(loom))]
        {
            let now = Instant::now();
            let opened = *self.opened.get_or_insert(now);
            if now.duration_since(opened) >= self.length {
                return false;
            }
        }
        #[cfg(loom)]
        {
            if self.spent {
                return false;
            }
            self.spent = true;
        }
        yield_now();
        true
    }

    /// Closes the window's current span: the next use opens a new one.
    #[inline]
    pub(crate) fn reset(&mut self) {
        #[cfg(not(loom))]
        {
            self.opened = None;
        }
        #[cfg(loom)]
        {
            self.spent = false;
        }
    }
}

/// An `UnsafeCell` with loom's closure-based API on both back ends.
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// An `UnsafeCell` with loom's closure-based API on both back ends.
#[cfg(not(loom))]
#[derive(Debug)]
#[allow(dead_code)] // only the loom build's node bookkeeping uses it today
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
#[allow(dead_code)]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

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
    #[cfg(not(loom))]
    {
        Instant::now() >= deadline
    }
    #[cfg(loom)]
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
#[cfg(not(loom))]
pub(crate) fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    deadline: Option<Instant>,
) -> Parked {
    use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN};
    let (before_sleep, timed_out, token) = (|| {}, |_, _| {}, DEFAULT_PARK_TOKEN);
    // SAFETY: invariant 1: `key` is our own node's address, so no other
    // synchronizer parks on it; `validate` is one atomic load (no panic, no
    // parking_lot call) and the other two callbacks do nothing.
    let result =
        unsafe { parking_lot_core::park(key, validate, before_sleep, timed_out, token, deadline) };
    match result {
        ParkResult::Unparked(_) => Parked::Woken,
        ParkResult::Invalid => Parked::Invalid,
        ParkResult::TimedOut => Parked::TimedOut,
    }
}

/// Wakes one thread parked on `key`, if there is one. Remembers nothing when
/// nobody is parked: callers set the sleeper's wake flag first (invariant 2).
#[cfg(not(loom))]
pub(crate) fn unpark_one(key: usize) {
    use parking_lot_core::DEFAULT_UNPARK_TOKEN;
    // SAFETY: the callback only returns a token, so it neither panics nor calls
    // into parking_lot; `key` is a node address (invariant 1).
    unsafe {
        parking_lot_core::unpark_one(key, |_| DEFAULT_UNPARK_TOKEN);
    }
}

#[cfg(loom)]
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

#[cfg(loom)]
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

#[cfg(loom)]
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::YieldWindow;
    use std::time::Duration;

    #[test]
    fn yield_window_yields_while_open_and_reopens_after_reset() {
        let mut open = YieldWindow::new(Duration::from_secs(3600));
        assert!(open.yield_now(), "a fresh window is open");
        assert!(open.yield_now(), "and stays open within its length");
        let mut empty = YieldWindow::new(Duration::ZERO);
        assert!(!empty.yield_now(), "a window of no length never yields");
        empty.reset();
        assert!(!empty.yield_now(), "nor after a reset");
        open.reset();
        assert!(open.yield_now(), "a reset window opens again");
    }
}
