//! Acquires driven by polls (feature `async`): the same queue, nodes and
//! acquire step as a blocking waiter, in the same FIFO order. A task's node
//! holds a waker slot ([`crate::waker`]) where a thread's is parked on; a
//! release that wakes it sets the node's wake flag and wakes the slot
//! instead of unparking.
//!
//! Invariants (cited as F1 to F3):
//!
//! * **F1, one node per pending future**, owned by it (N1) from the first
//!   poll that queues it until a step leaves the queue or the future's drop
//!   cancels it.
//! * **F2, no wake is lost between a `Wait` step and `Pending`.** After the
//!   step armed its predecessor, the poll registers the task's waker, then
//!   consumes the wake flag with an RMW. A releaser sets the flag with an
//!   RMW, then wakes the slot. Either the poll's swap reads the flag (and
//!   steps again), or the releaser's swap comes later and its wake finds
//!   the registered waker, or races the registration, which then wakes the
//!   new waker itself (AW2).
//! * **F3, a dropped future loses nothing.** A step that acquires returns
//!   `Ready` in the same poll, so a pending future never holds value. Its
//!   drop leaves the queue as a timed-out waiter does (`cancel_acquire`):
//!   a wake-up aimed at it goes on to its successor (P4).
//!
//! A task woken at the head of a FIFO queue acquires when it is next
//! polled; until then, value that is its stays free and the waiters behind
//! it wait, as they would behind a woken thread that has not run yet.

use std::task::{Context, Poll};

use super::acquire::{AcquireFailed, Step, Waiter};
use super::arrive::TryAcquire;
use super::policy::{Mode, Policy};
use super::{propagate, RawSync};
use crate::waker::drop_caught;

/// One acquire of `arg` in `mode` that a future drives (F1).
pub(crate) struct QueuedAcquire<'s> {
    sync: &'s RawSync,
    mode: Mode,
    arg: u32,
    /// Queued, after the first poll that could not acquire at once.
    waiter: Option<Waiter<'s>>,
    done: bool,
}

// SAFETY: the waiter's node is a heap allocation that only atomics and the
// waker slot (AW1) are used on; nothing in it is tied to a thread, so the
// future may be polled and dropped on any thread, one at a time (`&mut`).
unsafe impl Send for QueuedAcquire<'_> {}
// SAFETY: `&QueuedAcquire` gives access to nothing (every method takes
// `&mut self`).
unsafe impl Sync for QueuedAcquire<'_> {}

impl<'s> QueuedAcquire<'s> {
    /// An acquire not yet tried; `arg` is at least 1.
    pub(crate) fn new(sync: &'s RawSync, mode: Mode, arg: u32) -> Self {
        debug_assert!(arg > 0);
        QueuedAcquire {
            sync,
            mode,
            arg,
            waiter: None,
            done: false,
        }
    }

    /// Tries to acquire; queues on the first poll that cannot, and from
    /// then on steps once per wake-up.
    ///
    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    pub(crate) fn poll_acquire<P: Policy + ?Sized>(
        &mut self,
        policy: &P,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), AcquireFailed>> {
        assert!(
            !self.done,
            "aqs: an acquire future was polled after it completed"
        );
        let sync = self.sync;
        if self.waiter.is_none() {
            let arrived = match self.mode {
                Mode::Shared => sync.try_acquire_shared(policy, self.arg),
                Mode::Exclusive => sync.try_acquire_exclusive(policy, self.arg),
            };
            match arrived {
                TryAcquire::Acquired => return self.finish(Ok(())),
                TryAcquire::Closed => return self.finish(Err(AcquireFailed::Closed)),
                TryAcquire::Failed => {}
            }
        }
        if let Some(waiter) = &mut self.waiter {
            waiter.consume_wake(); // woken since the last poll (F2)
        }
        loop {
            let guard = sync.reclaim.enter();
            let (mode, arg) = (self.mode, self.arg);
            let waiter = self
                .waiter
                .get_or_insert_with(|| sync.enqueue_task(mode, arg, &guard));
            let result = match waiter.step(policy, &guard) {
                Step::Acquired => Ok(()),
                Step::Closed | Step::TimedOut => Err(AcquireFailed::Closed),
                // Never for a task's waiter; look again. Only a step that
                // acquires or leaves wakes anyone, so the guard has nothing
                // to wake.
                Step::Spin => continue,
                Step::Wait => {
                    debug_assert!(guard.wakes_nobody());
                    drop(guard);
                    if !waiter.register_and_check(cx.waker()) {
                        return Poll::Pending;
                    }
                    continue;
                }
            };
            // The waiter has left the queue (or heads it). O2: take our
            // waker out of the node while the guard still keeps it; O1: run
            // outside code (the wakers the step woke, our waker's drop) only
            // after our bookkeeping is done and the guard has left.
            let waiter = self.waiter.take().expect("stepped above");
            let own = waiter.take_waker(&guard);
            let taken = waiter.taken();
            self.done = true;
            let woke = guard.finish();
            let dropped = drop_caught(own);
            if let Err(payload) = woke.and(dropped) {
                // O3: the poller gets the panic, not the hold.
                if !std::thread::panicking() {
                    if result.is_ok() {
                        sync.give_back(policy, taken);
                    }
                    std::panic::resume_unwind(payload);
                }
            }
            return Poll::Ready(result);
        }
    }

    fn finish(&mut self, result: Result<(), AcquireFailed>) -> Poll<Result<(), AcquireFailed>> {
        self.done = true;
        Poll::Ready(result)
    }
}

impl Drop for QueuedAcquire<'_> {
    /// F3: a queued future that is dropped leaves the queue, passing on any
    /// wake-up aimed at it.
    fn drop(&mut self) {
        if let Some(waiter) = self.waiter.take() {
            let guard = self.sync.reclaim.enter();
            let own = waiter.cancel(&guard);
            // O1: outside code once the guard has left; O3: its panic is
            // the dropper's (dropped if it is unwinding already).
            let woke = guard.finish();
            propagate(woke.and(drop_caught(own)));
        }
    }
}

#[cfg(all(test, aqs_loom))]
mod loom_models;
