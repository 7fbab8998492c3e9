//! Joining the queue: creating, linking and counting a waiter's node
//! (`addWaiter` and `enq` in the JDK), and the dummy head made on first use.

use std::ptr;
use std::time::Instant;

use super::acquire::{Resumed, Waiter};
use super::node::Node;
use super::policy::Mode;
use super::reclaim::Guard;
use super::state::ONE_WAITER;
#[cfg(not(aqs_loom))]
use super::state::{waiters_of, MAX_WAITERS};
use super::RawSync;
use crate::loom::{yield_now, Ordering::*};

impl RawSync {
    /// Creates, links and counts a node asking for `arg` (`addWaiter`).
    /// `arg` is at least 1: a request for nothing never waits (synchronizers
    /// answer it without the core), and `wake_ahead` stops at a value that
    /// covers nobody behind the first waiter.
    pub(crate) fn enqueue(
        &self,
        mode: Mode,
        arg: u32,
        deadline: Option<Instant>,
        guard: &Guard<'_>,
    ) -> Waiter<'_> {
        let node = self.add_waiter(mode, arg, guard);
        Waiter::new(self, node, (mode, arg), deadline, Resumed::Unwoken, true)
    }

    /// Creates, links and counts an async waiter's node (feature `async`):
    /// its wake-ups go to a waker slot, and it never spins.
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn enqueue_task(&self, mode: Mode, arg: u32, guard: &Guard<'_>) -> Waiter<'_> {
        debug_assert!(arg > 0, "a request for nothing was queued");
        self.check_room();
        let node = Node::alloc_task(arg, mode);
        self.enq(node, guard);
        // Q1 (P2): counted only after linking, by an RMW.
        self.state.fetch_add(ONE_WAITER, AcqRel);
        Waiter::new(self, node, (mode, arg), None, Resumed::Unwoken, false)
    }

    /// A waiter for a node that a notifier linked on its owner's behalf
    /// (`transfer`), resuming as if woken.
    pub(super) fn adopt(&self, node: *mut Node, arg: u32) -> Waiter<'_> {
        Waiter::new(
            self,
            node,
            (Mode::Exclusive, arg),
            None,
            Resumed::Woken,
            true,
        )
    }

    /// Links and counts a new node (inside a guard).
    pub(super) fn add_waiter(&self, mode: Mode, arg: u32, guard: &Guard<'_>) -> *mut Node {
        debug_assert!(arg > 0, "a request for nothing was queued");
        self.check_room();
        let node = Node::alloc(arg, mode);
        self.enq(node, guard);
        // Q1 (P2): counted only after linking, by an RMW.
        self.state.fetch_add(ONE_WAITER, AcqRel);
        node
    }

    /// Refuses a waiter that could carry the waiter count into the value
    /// (Q5), before anything changes: a panic here leaves the queue as it
    /// was.
    ///
    /// Not built under loom: it is a limit check that changes nothing, no
    /// step of the protocol, and its load of the state word before every
    /// link multiplied the interleavings of every model that queues (a
    /// timed-waiter model ran past the mutant runner's ten minutes).
    #[inline]
    fn check_room(&self) {
        #[cfg(not(aqs_loom))]
        if waiters_of(self.state.load(Relaxed)) >= MAX_WAITERS {
            too_many_waiters();
        }
    }

    /// Links `node` at the tail, creating the dummy head on first use.
    pub(super) fn enq(&self, node: *mut Node, guard: &Guard<'_>) {
        // SAFETY: freshly allocated and not yet published: ours alone.
        let me = unsafe { guard.node(node) };
        loop {
            let t = self.tail.load(Acquire);
            if t.is_null() {
                self.init_queue();
                continue;
            }
            me.prev.store(t, Relaxed);
            // AcqRel: publishes `prev` and the node's initial fields.
            if self.tail.compare_exchange(t, node, AcqRel, Acquire).is_ok() {
                // SAFETY: R5: `t` was loaded from `tail` inside the guard.
                unsafe { guard.node(t) }.next.store(node, Release);
                // V1: a writer linked, or a reader whose link a walk that
                // stopped at the missing link had not seen (a release may
                // have woken it from the tail already), can turn a read
                // arrival's look from no into yes; before our count (Q1).
                self.bump_look();
                return;
            }
        }
    }

    #[cold]
    fn init_queue(&self) {
        let dummy = Node::alloc(0, Mode::Shared);
        match self
            .head
            .compare_exchange(ptr::null_mut(), dummy, AcqRel, Acquire)
        {
            Ok(_) => self.tail.store(dummy, Release),
            Err(_) => {
                // SAFETY: never published.
                unsafe { Node::free(dummy) };
                // Another thread installed the head and is about to set the
                // tail (JDK `enq`); let it run.
                yield_now();
            }
        }
    }
}

#[cold]
#[inline(never)]
#[track_caller]
#[cfg_attr(aqs_loom, allow(dead_code))]
fn too_many_waiters() -> ! {
    panic!("aqs: too many waiters on one synchronizer (the limit is 2^30 - 2^20 queued at once)")
}
