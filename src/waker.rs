//! The waker slot of an async waiter's node (feature `async`): the polling
//! task registers its `Waker` while a releaser may be waking it. The
//! protocol is the `AtomicWaker` one that futures and tokio use, written on
//! the crate's shim so that loom sees it.
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
//!   covered by the one in progress. A wake that finds `WAITING` takes and
//!   wakes the stored waker.

use std::task::Waker;

use crate::loom::{AtomicUsize, Ordering::*, UnsafeCell};

const WAITING: usize = 0;
const REGISTERING: usize = 1;
const WAKING: usize = 2;

/// A `Waker` that one owner registers and any thread may wake.
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

    /// Stores `waker` to be woken by the next [`WakerSlot::wake`]. Only the
    /// slot's owner (one task at a time) registers. A wake that races this
    /// call is not lost (AW2): either it takes the new waker, or this call
    /// wakes it.
    pub(crate) fn register(&self, waker: &Waker) {
        match self
            .state
            .compare_exchange(WAITING, REGISTERING, Acquire, Acquire)
            .unwrap_or_else(|actual| actual)
        {
            WAITING => {
                // SAFETY: AW1: our CAS set REGISTERING from WAITING.
                let old = self.waker.with_mut(|cell| unsafe {
                    match &*cell {
                        Some(stored) if stored.will_wake(waker) => None,
                        _ => (*cell).replace(waker.clone()),
                    }
                });
                if let Err(actual) =
                    self.state
                        .compare_exchange(REGISTERING, WAITING, AcqRel, Acquire)
                {
                    // AW2: a wake came while we wrote; it left the cell to us.
                    debug_assert_eq!(actual, REGISTERING | WAKING);
                    // SAFETY: AW1: still ours; the waker only set its bit.
                    let stored = self.waker.with_mut(|cell| unsafe { (*cell).take() });
                    self.state.swap(WAITING, AcqRel);
                    if let Some(stored) = stored {
                        stored.wake();
                    }
                }
                drop(old);
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

    /// Wakes the registered waker, if any, taking it out of the slot.
    pub(crate) fn wake(&self) {
        if let Some(waker) = self.take() {
            waker.wake();
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

    fn take(&self) -> Option<Waker> {
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
}
