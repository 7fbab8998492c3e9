//! Arriving: the CAS an acquire tries before it queues, and the look at the
//! queue that tells a read arrival whether a writer waits.
//!
//! No guard is held on the fast path; the look at the queue enters one only
//! when the gate is open (R8) and reads nodes under it (R5).

use super::node::CANCELLED;
use super::policy::{try_acquire, Mode, Policy};
use super::state::{after_take, is_closed, value_of, waiters_of};
use super::RawSync;
use crate::loom::Ordering::*;

/// The result of a non-blocking acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TryAcquire {
    /// Acquired.
    Acquired,
    /// The policy refused; nothing changed.
    Failed,
    /// The synchronizer is closed.
    Closed,
}

impl RawSync {
    /// Tries to acquire in shared mode without queueing, as an arriving
    /// thread.
    #[inline]
    pub(crate) fn try_acquire_shared<P: Policy + ?Sized>(
        &self,
        policy: &P,
        arg: u32,
    ) -> TryAcquire {
        self.arrive(policy, Mode::Shared, arg)
    }

    /// Tries to acquire in exclusive mode without queueing, as an arriving
    /// thread.
    #[inline]
    pub(crate) fn try_acquire_exclusive<P: Policy + ?Sized>(
        &self,
        policy: &P,
        arg: u32,
    ) -> TryAcquire {
        self.arrive(policy, Mode::Exclusive, arg)
    }

    /// The arrival's CAS loop: load the word, let the policy decide, CAS.
    #[inline]
    pub(super) fn arrive<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mode: Mode,
        arg: u32,
    ) -> TryAcquire {
        let mut s = self.state.load(Relaxed);
        loop {
            let acquired = if is_closed(s) {
                None
            } else {
                let others_queued = waiters_of(s) > 0
                    && (mode == Mode::Exclusive
                        || !policy.shared_arrivals_defer_to_exclusive()
                        || policy.shared_arrivals_defer_to_any(value_of(s))
                        || self.exclusive_queued());
                try_acquire(policy, mode, value_of(s), arg, others_queued)
            };
            let Some(acquired) = acquired else {
                return if is_closed(s) {
                    TryAcquire::Closed
                } else {
                    TryAcquire::Failed
                };
            };
            let next = after_take(s, acquired.value);
            // AcqRel: Acquire pairs with the release that put the value there.
            match self.state.compare_exchange_weak(s, next, AcqRel, Relaxed) {
                Ok(_) => return TryAcquire::Acquired,
                Err(actual) => s = actual,
            }
        }
    }

    /// Whether a writer waits next in line, looking from the head's
    /// successor along `next` links: the heuristic behind
    /// [`Policy::shared_arrivals_defer_to_exclusive`]. The walk passes
    /// readers with a wake-up pending (a release woke them; they have not
    /// run yet) and waiters that are leaving, and answers yes at the first
    /// exclusive node. Not only the first waiter (the JDK's
    /// `apparentlyFirstQueuedIsExclusive`): a reader that was woken but has
    /// not run yet sits first until it does, and on a busy machine that is
    /// a scheduler tick, in which arriving readers would keep passing the
    /// writer behind it. But a reader with no wake-up pending ends the walk
    /// with no: it has not been woken yet (or it has, and is running to its
    /// read), and it and the readers behind it take their reads before the
    /// writer anyway (each woken reader wakes the next). An arrival that
    /// joins them holds the writer up by at most one read hold beyond
    /// them, where deferring would hold every arrival back for the batch's
    /// whole chain of wake-ups (on a busy machine, each waits for a CPU).
    /// A waiter linking in (the tail moved, its `next` link not yet
    /// written) or leaving meanwhile may be seen or missed; the walk ends
    /// at a missing link.
    #[cold]
    fn exclusive_queued(&self) -> bool {
        // An arrival never waits at the reclamation gate (R8): while it is
        // closed, assume the worst, as for a waiter we cannot see.
        let Some(guard) = self.reclaim.try_enter() else {
            return true;
        };
        let h = self.head.load(Acquire);
        if h.is_null() {
            return false;
        }
        // SAFETY: R5: loaded from `head` inside the guard.
        let mut next = unsafe { guard.node(h) }.next.load(Acquire);
        while !next.is_null() {
            // SAFETY: R5: a `next` link loaded inside the guard.
            let node = unsafe { guard.node(next) };
            if node.mode == Mode::Exclusive {
                return true;
            }
            // A reader with no wake-up pending, and not leaving: the batch
            // it heads goes before any writer behind it.
            if node.wake.load(Acquire) == 0 && node.status.load(Acquire) != CANCELLED {
                return false;
            }
            next = node.next.load(Acquire);
        }
        false
    }
}
