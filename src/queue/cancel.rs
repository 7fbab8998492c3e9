//! Leaving the queue: timeouts, closing, out-of-turn exits, and skipping
//! the nodes of waiters that left (`cancelAcquire` and the skipping half of
//! `shouldParkAfterFailedAcquire`).

use std::ptr;

use super::node::{Node, CANCELLED, SIGNAL};
use super::reclaim::Guard;
use super::state::{is_closed, waiters_of, CLOSED, ONE_WAITER};
use super::RawSync;
use crate::loom::Ordering::*;

impl RawSync {
    /// Closes the synchronizer: every queued and future acquire fails.
    pub(crate) fn close(&self) {
        // AcqRel RMW (Q1): a waiter counted before it is visible to the walk
        // below; a waiter counted after it reads CLOSED.
        let old = self.state.fetch_or(CLOSED, AcqRel);
        if is_closed(old) || waiters_of(old) == 0 {
            return;
        }
        // O1: the tasks' wakers are woken after the walk, outside the guard;
        // a waker's panic reaches our caller (O3), every waiter woken.
        super::propagate(self.wake_all_waiters());
    }

    /// Wakes every queued waiter (they see `CLOSED` and leave).
    fn wake_all_waiters(&self) -> Result<(), super::Payload> {
        let guard = self.reclaim.enter();
        let mut t = self.tail.load(Acquire);
        while !t.is_null() {
            // SAFETY: R5: loaded from `tail` or a `prev` link inside the guard.
            let node = unsafe { guard.node(t) };
            let prev = node.prev.load(Acquire);
            if prev.is_null() {
                break; // the head: nobody waits on it
            }
            if node.status.load(Acquire) != CANCELLED {
                self.wake(node, t, &guard);
            }
            t = prev;
        }
        guard.finish()
    }

    /// Gives up a queued acquire (timeout or close): leaves the waiter count
    /// and the queue.
    pub(super) fn cancel_acquire(&self, node: *mut Node, guard: &Guard<'_>) {
        self.state.fetch_sub(ONE_WAITER, AcqRel);
        self.unlink(node, guard);
    }

    /// Takes `node` out of the queue for good, its owner's count already gone
    /// from the state word (a cancel, or an out-of-turn acquire): marks it
    /// cancelled, unlinks it if it is the tail, and otherwise makes sure its
    /// successor will still be woken.
    pub(super) fn unlink(&self, node: *mut Node, guard: &Guard<'_>) {
        // SAFETY: N1: our own node.
        let me = unsafe { guard.node(node) };
        let pred = self.skip_cancelled(node, me.prev.load(Relaxed), guard);
        // From here on our successor may skip and retire us (R2); we stay
        // inside our guard, so the memory stays valid while we finish.
        me.status.swap(CANCELLED, AcqRel);
        // V1: a read arrival's look now passes us.
        self.bump_look();
        if self
            .tail
            .compare_exchange(node, pred, AcqRel, Acquire)
            .is_ok()
        {
            // SAFETY: N1: our predecessor.
            let p = unsafe { guard.node(pred) };
            let _ = p
                .next
                .compare_exchange(node, ptr::null_mut(), AcqRel, Acquire);
            // SAFETY: R3: no successor linked behind us (the tail CAS would
            // have failed), `tail` and `pred.next` no longer name us, and the
            // head is never cancelled (Q4).
            unsafe { self.reclaim.retire(node, guard) };
            return;
        }
        // A successor is linked (or linking). Either `pred` is armed and will
        // wake it when it releases, or we wake it now: always when `pred` is
        // the head, since a release may have just targeted us.
        //
        // P4: we marked ourselves `CANCELLED` and now read `head` and
        // `pred`'s status; a new head at `pred` stores `head`, then consumes
        // `pred`'s `SIGNAL` and reads our status to pick whom to wake. With
        // plain loads on both sides each could miss the other's write, and
        // our successor would sleep with value free. So we arm `pred` with an
        // RMW even when it reads `SIGNAL`: either the releaser's RMW there
        // reads ours and then sees us cancelled (it wakes past us), or ours
        // reads its, and the second `head` load sees `pred` as head (we wake
        // our successor ourselves; the JDK's `pred.thread` test).
        let armed = pred != self.head.load(Acquire)
            && self.arm(pred, guard)
            && pred != self.head.load(Acquire);
        if !armed {
            self.unpark_successor(node, guard);
        }
    }

    /// Unlinks the run of cancelled predecessors in front of `node`, retiring
    /// each (R2); returns the first live predecessor. Called by `node`'s owner.
    pub(super) fn skip_cancelled(
        &self,
        node: *mut Node,
        mut pred: *mut Node,
        guard: &Guard<'_>,
    ) -> *mut Node {
        // SAFETY: N1: our own node.
        let me = unsafe { guard.node(node) };
        loop {
            // SAFETY: N1: our predecessor; nobody but us retires it.
            let p = unsafe { guard.node(pred) };
            if p.status.load(Acquire) != CANCELLED {
                return pred;
            }
            // Final: `p`'s owner skipped its own dead predecessors before it
            // marked itself cancelled (and our Acquire load saw that mark). A
            // cancelled node is never head (Q4), so `pp` is not null.
            let pp = p.prev.load(Acquire);
            me.prev.store(pp, Release);
            // SAFETY: N1: `pp` is now our predecessor.
            let before = unsafe { guard.node(pp) };
            let _ = before.next.compare_exchange(pred, node, AcqRel, Acquire);
            // SAFETY: R2: we were `pred`'s unique successor (Q3); our `prev`
            // and `pp.next` no longer lead to it, `tail` does not (we are
            // behind it) and `head` does not (Q4).
            unsafe { self.reclaim.retire(pred, guard) };
            pred = pp;
        }
    }

    /// Sets `pred`'s status to `SIGNAL` with an RMW, so that `pred`'s release
    /// wakes its successor, even when `pred` already reads `SIGNAL` (a plain
    /// load may return a `SIGNAL` that a release has consumed; P1, P4).
    /// Returns false, arming nothing, if `pred` is `CANCELLED` or has been
    /// replaced as head (`PASSED`): its successor must not wait on it.
    pub(super) fn arm(&self, pred: *mut Node, guard: &Guard<'_>) -> bool {
        // SAFETY: N1: the caller's predecessor.
        let p = unsafe { guard.node(pred) };
        let mut ws = p.status.load(Acquire);
        loop {
            if ws > 0 {
                return false; // CANCELLED or PASSED
            }
            match p.status.compare_exchange_weak(ws, SIGNAL, AcqRel, Acquire) {
                Ok(_) => return true,
                Err(actual) => ws = actual,
            }
        }
    }
}
