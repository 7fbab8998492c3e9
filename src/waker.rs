//! The waker slot of an async waiter's node (feature `async`): the polling
//! task registers its `Waker` while a releaser may be waking it. The
//! protocol is the `AtomicWaker` one that futures and tokio use, written on
//! the crate's shim so that loom sees it. Also [`WakeList`], where queue
//! code collects the wakers it must wake until it is done with the queue
//! (O1 in `queue/mod.rs`).
//!
//! The slot's state is a small bit set:
//!
//! | state | meaning |
//! |---|---|
//! | `WAITING` (0) | idle: a waker may be stored; nobody is in the cell |
//! | `REGISTERING` | the owner is writing the cell |
//! | `WAKING` | a waker is taking the cell |
//! | `REGISTERING \| WAKING` | a wake came while the owner was writing: the owner wakes the new waker itself |
//!
//! Invariants (cited as AW1 and AW2):
//!
//! * **AW1, one hand in the cell.** Only the thread whose CAS took the state
//!   from `WAITING` to `REGISTERING` (the owner), or whose `fetch_or` took
//!   it from `WAITING` to `WAKING` (a waker), touches the cell, until it
//!   clears its bit. The two cannot hold at once.
//! * **AW2, no wake is lost.** A wake that finds `REGISTERING` sets `WAKING`
//!   and leaves; the owner's closing CAS then fails, and the owner wakes the
//!   waker it just stored. A wake that finds `WAKING` already set is
//!   covered by the one in progress. A wake that finds `WAITING` takes the
//!   stored waker, to wake it once it is out of the queue's bookkeeping.
//!
//! No waker code (`clone`, `wake`, `drop`) runs while the slot is not
//! `WAITING` (O1): a panic in it cannot leave the slot locked.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

use crate::loom::{AtomicUsize, Ordering::*, UnsafeCell};
use crate::queue::Payload;

const WAITING: usize = 0;
const REGISTERING: usize = 1;
const WAKING: usize = 2;

/// A `Waker` that one owner registers and any thread may take.
pub(crate) struct WakerSlot {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
}

impl WakerSlot {
    pub(crate) fn new() -> Self {
        WakerSlot {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(None),
        }
    }

    /// Stores `waker` to be taken by the next [`WakerSlot::take`]. Only the
    /// slot's owner (one task at a time) registers. A wake that races this
    /// call is not lost (AW2): either it takes the new waker, or this call
    /// wakes it.
    ///
    /// The waker's own code (its `clone`, the old waker's `drop`, a `wake`)
    /// runs only once the slot is `WAITING` again: a panic in it propagates
    /// to the caller and leaves the slot usable, holding one of the wakers.
    pub(crate) fn register(&self, waker: &Waker) {
        match self
            .state
            .compare_exchange(WAITING, REGISTERING, Acquire, Acquire)
            .unwrap_or_else(|actual| actual)
        {
            WAITING => {
                // SAFETY: AW1: our CAS set REGISTERING from WAITING.
                let same = self.waker.with(|cell| unsafe {
                    matches!(&*cell, Some(stored) if stored.will_wake(waker))
                });
                let new = if same {
                    None
                } else {
                    // `clone` is the waker's code and may panic: then hand
                    // the slot back first, with the old waker in it, so that
                    // a wake that came meanwhile is still delivered.
                    match panic::catch_unwind(AssertUnwindSafe(|| waker.clone())) {
                        Ok(new) => Some(new),
                        Err(payload) => {
                            if let Some(pending) = self.end_registration() {
                                let _second_panic = wake_caught(pending);
                            }
                            panic::resume_unwind(payload);
                        }
                    }
                };
                // SAFETY: AW1: still ours.
                let old =
                    new.and_then(|new| self.waker.with_mut(|cell| unsafe { (*cell).replace(new) }));
                let pending = self.end_registration();
                // Outside code last, each caught, so that one panic cannot
                // unwind past the other (a drop during an unwind that
                // panics would abort): the old waker's drop, then the wake
                // a racing release left to us (AW2).
                let dropped = drop_caught(old);
                let woke = pending.map_or(Ok(()), wake_caught);
                if let Err(payload) = dropped.and(woke) {
                    panic::resume_unwind(payload);
                }
            }
            WAKING => {
                // A wake is taking the old waker right now: make sure this
                // task polls again (it may have been polled by a new waker).
                waker.wake_by_ref();
            }
            state => {
                debug_assert!(false, "aqs: two registrations at once ({state})");
            }
        }
    }

    /// Hands the slot back after a registration. If a wake came meanwhile,
    /// it left the cell to us (AW2): we take what the cell holds and return
    /// it, for the caller to wake once the slot is `WAITING` again.
    #[must_use]
    fn end_registration(&self) -> Option<Waker> {
        match self
            .state
            .compare_exchange(REGISTERING, WAITING, AcqRel, Acquire)
        {
            Ok(_) => None,
            Err(actual) => {
                debug_assert_eq!(actual, REGISTERING | WAKING);
                // SAFETY: AW1: still ours; the waker only set its bit.
                let stored = self.waker.with_mut(|cell| unsafe { (*cell).take() });
                self.state.swap(WAITING, AcqRel);
                stored
            }
        }
    }

    /// Drops the stored waker (loom's node `free`, which keeps the memory).
    ///
    /// # Safety
    ///
    /// Nobody else uses the slot, now or later.
    #[cfg(aqs_loom)]
    pub(crate) unsafe fn clear(&self) {
        // SAFETY: the caller's promise (AW1 holds trivially).
        drop(self.waker.with_mut(|cell| unsafe { (*cell).take() }));
    }

    /// Takes the registered waker out of the slot, if no other hand is in
    /// it, without running any of its code. A releaser takes it to wake it
    /// after the queue's bookkeeping ([`WakeList`], O1); the owner takes it
    /// when it leaves the queue, so that freeing the node never drops a
    /// waker (O2).
    pub(crate) fn take(&self) -> Option<Waker> {
        match self.state.fetch_or(WAKING, AcqRel) {
            WAITING => {
                // SAFETY: AW1: our fetch_or set WAKING from WAITING.
                let waker = self.waker.with_mut(|cell| unsafe { (*cell).take() });
                self.state.fetch_and(!WAKING, Release);
                waker
            }
            // REGISTERING: the owner sees our bit and wakes (AW2). WAKING:
            // another waker is at it.
            _ => None,
        }
    }

    /// Whether a waker is stored; for tests (the owner must have taken it
    /// by the time its node is freed: O2).
    #[cfg(not(aqs_loom))]
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: a read under AW1's rules is not guaranteed; this is only
        // called where nobody else can use the slot (a node being freed).
        self.waker.with(|cell| unsafe { (*cell).is_none() })
    }
}

/// The wakers that queue code took while inside its bookkeeping, woken
/// only after it is done (O1; tokio's `WakeList`). Kept by one thread (a
/// [`Guard`](crate::queue) is not `Send`).
///
/// Every guard carries one, and most carry none or one waker, so an empty
/// list is one length test to drop (its fields have no drop glue of their
/// own) and the first waker has a place of its own (no allocation).
///
/// `len` is 0 exactly when `first` is `None` and `rest` is an empty `Vec`
/// with no allocation; so an empty list holds nothing to drop.
#[derive(Default)]
pub(crate) struct WakeList {
    /// How many wakers the list holds: the first in `first`, the others in
    /// `rest`.
    len: Cell<usize>,
    /// The first waker pushed, once `len` is 1 or more.
    first: Cell<ManuallyDrop<Option<Waker>>>,
    /// The wakers after the first, in push order: a release that wakes
    /// ahead of the first waiter (`wake_ahead`), or `close` waking everyone.
    rest: Cell<ManuallyDrop<Vec<Waker>>>,
}

impl WakeList {
    /// Adds a taken waker, to be woken by [`WakeList::wake_all`].
    #[inline]
    pub(crate) fn push(&self, waker: Waker) {
        if self.len.get() == 0 {
            self.first.set(ManuallyDrop::new(Some(waker)));
        } else {
            let mut rest = self.rest.take();
            rest.push(waker);
            self.rest.set(rest);
        }
        self.len.set(self.len.get() + 1);
    }

    /// Whether any waker waits to be woken.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// Moves every waker into a new list, leaving this one empty.
    #[inline]
    pub(crate) fn take(&self) -> WakeList {
        if self.is_empty() {
            return WakeList::default();
        }
        WakeList {
            len: Cell::new(self.len.replace(0)),
            first: Cell::new(self.first.take()),
            rest: Cell::new(self.rest.take()),
        }
    }

    /// Wakes every waker in the list, in the order they were pushed. A
    /// waker that panics does not stop the others (every wake-up is still
    /// delivered); the first panic's payload is returned for the caller to
    /// propagate once its own state is consistent (O3), and later ones are
    /// dropped.
    #[inline]
    pub(crate) fn wake_all(self) -> Result<(), Payload> {
        if self.is_empty() {
            return Ok(());
        }
        self.wake_each()
    }

    /// [`WakeList::wake_all`] for a list that is not empty.
    fn wake_each(self) -> Result<(), Payload> {
        self.len.set(0); // emptied below: the `Drop` that follows has nothing to do
        let first = ManuallyDrop::into_inner(self.first.take());
        let rest = ManuallyDrop::into_inner(self.rest.take());
        let mut result = Ok(());
        for waker in first.into_iter().chain(rest) {
            if let Err(payload) = wake_caught(waker) {
                if result.is_ok() {
                    result = Err(payload);
                }
            }
        }
        result
    }
}

impl Drop for WakeList {
    /// Drops wakers that were never woken (only on a path that unwinds).
    #[inline]
    fn drop(&mut self) {
        if !self.is_empty() {
            self.drop_wakers();
        }
    }
}

impl WakeList {
    /// Drops every waker without waking it. Both parts are taken out
    /// first, so that a waker whose drop panics does not keep the others
    /// from being dropped.
    #[cold]
    fn drop_wakers(&self) {
        self.len.set(0);
        let _wakers = (
            ManuallyDrop::into_inner(self.first.take()),
            ManuallyDrop::into_inner(self.rest.take()),
        );
    }
}

/// Wakes `waker` (the waker's own code) and returns its panic, if any.
fn wake_caught(waker: Waker) -> Result<(), Payload> {
    panic::catch_unwind(AssertUnwindSafe(|| waker.wake()))
}

/// Drops `waker` (the waker's own code) and returns its panic, if any.
pub(crate) fn drop_caught(waker: Option<Waker>) -> Result<(), Payload> {
    match waker {
        None => Ok(()),
        Some(waker) => panic::catch_unwind(AssertUnwindSafe(|| drop(waker))),
    }
}

#[cfg(all(test, not(aqs_loom)))]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::task::{Wake, Waker};

    use super::WakeList;

    /// Records its id when woken; panics instead if `panics`.
    struct Probe {
        id: usize,
        panics: bool,
        log: Arc<Mutex<Vec<usize>>>,
    }

    impl Wake for Probe {
        fn wake(self: Arc<Self>) {
            self.log.lock().unwrap().push(self.id);
            if self.panics {
                panic!("probe {} panics", self.id);
            }
        }
    }

    fn probe(id: usize, panics: bool, log: &Arc<Mutex<Vec<usize>>>) -> Waker {
        Waker::from(Arc::new(Probe {
            id,
            panics,
            log: Arc::clone(log),
        }))
    }

    #[test]
    fn wakes_every_waker_in_push_order_and_returns_the_first_panic() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let list = WakeList::default();
        assert!(list.is_empty());
        // The first, a middle and the last waker panic.
        list.push(probe(0, true, &log));
        assert!(!list.is_empty());
        list.push(probe(1, false, &log));
        list.push(probe(2, true, &log));
        list.push(probe(3, true, &log));
        let taken = list.take();
        assert!(list.is_empty(), "take leaves the list empty");
        let payload = taken.wake_all().expect_err("three wakers panicked");
        assert_eq!(payload.downcast_ref::<String>().unwrap(), "probe 0 panics");
        assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3]);
        assert_eq!(Arc::strong_count(&log), 1, "every woken waker is dropped");
        // Usable again, and one waker alone wakes.
        list.push(probe(4, false, &log));
        assert!(list.take().wake_all().is_ok());
        assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 4]);
        assert!(list.take().wake_all().is_ok(), "an empty list wakes nobody");
        assert_eq!(log.lock().unwrap().len(), 5);
    }

    #[test]
    fn a_dropped_list_drops_its_wakers_without_waking_them() {
        let log = Arc::new(Mutex::new(Vec::new()));
        for n in 1..=3 {
            let list = WakeList::default();
            for id in 0..n {
                list.push(probe(id, false, &log));
            }
            assert_eq!(Arc::strong_count(&log), 1 + n);
            drop(list);
            assert_eq!(Arc::strong_count(&log), 1, "{n} wakers: all dropped");
            // The same for a list taken out of another and then dropped.
            let list = WakeList::default();
            for id in 0..n {
                list.push(probe(id, false, &log));
            }
            let taken = list.take();
            drop(list);
            assert_eq!(Arc::strong_count(&log), 1 + n, "taken, not dropped");
            drop(taken);
            assert_eq!(Arc::strong_count(&log), 1, "{n} taken wakers: all dropped");
        }
        assert!(log.lock().unwrap().is_empty(), "none was woken");
    }
}
