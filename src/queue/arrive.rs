//! Arriving: the CAS an acquire tries before it queues, and the look at the
//! queue that tells a read arrival whether a writer waits.
//!
//! No guard is held on the fast path; the look at the queue (`look.rs`)
//! enters one only when the gate is open (R8) and reads nodes under it (R5).

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

    /// [`RawSync::try_acquire_shared`] from a word the caller has just
    /// loaded (`seen`), so as not to load it again: the CAS checks it.
    #[inline]
    pub(crate) fn try_acquire_shared_from<P: Policy + ?Sized>(
        &self,
        policy: &P,
        arg: u32,
        seen: u64,
    ) -> TryAcquire {
        self.arrive_from(policy, Mode::Shared, arg, seen)
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
        self.arrive_from(policy, mode, arg, self.state.load(Relaxed))
    }

    /// The arrival's CAS loop from the word `s`, loaded by the caller.
    #[inline]
    fn arrive_from<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mode: Mode,
        arg: u32,
        mut s: u64,
    ) -> TryAcquire {
        loop {
            let acquired = if is_closed(s) {
                None
            } else {
                let others_queued = waiters_of(s) > 0
                    && (mode == Mode::Exclusive
                        || !policy.shared_arrivals_defer_to_exclusive()
                        || policy.shared_arrivals_defer_to_any(value_of(s))
                        || self.writer_waits());
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
}
