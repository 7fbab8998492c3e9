//! Node reclamation: a small grace-period scheme per synchronizer.
//!
//! AQS was written for a garbage collector: releasers, cancellers and backward
//! scans keep reading nodes after those nodes have left the queue. Here nodes
//! are heap allocations freed by a small, per-synchronizer grace-period scheme:
//!
//! * every thread that dereferences a node it does not own runs inside a
//!   [`Guard`] (a count of *readers* in [`Reclaim::readers`]);
//! * a node that no link leads to any more is *retired*: pushed onto
//!   [`Reclaim::retired`] by the one thread that unlinked it;
//! * a reader that leaves first takes the whole retired list and then
//!   decrements the reader count; only if it was the last reader does it free
//!   the list, otherwise it puts the list back.
//!
//! The invariants it relies on are R1 to R6 in `queue/mod.rs`: who retires
//! a node (R1 to R3), that only the unreachable is retired, once (R4), that
//! nodes are dereferenced only inside a guard or by their owner (R5), and
//! that nobody parks or yields inside a guard (R6).
//!
//! # Why a batch may be freed
//!
//! Let a leaver take batch `B` at time `t1` (the `swap`) and see the reader
//! count go from 1 to 0 at `t2` (its `fetch_sub`). Every node in `B` was
//! unlinked before it was pushed, so before `t1` (R4). A thread that
//! could still hold a pointer to such a node loaded it before the unlink, so it
//! was a reader before `t1`, and since it was not counted at `t2` it has left:
//! its `fetch_sub` (Release) is earlier in the count's modification order than
//! ours (AcqRel), so all its accesses happen-before our free. A thread that
//! enters after `t2` increments the count with an Acquire RMW that reads ours
//! (Release), so it sees every unlink and cannot reach a node of `B`. Both
//! sides are read-modify-writes of one location, so no fence is needed and
//! loom checks exactly the code that ships.
//!
//! Garbage is thus freed at the end of every stretch of time in which some
//! thread is inside queue code; parked threads are never inside (R6).
//! Whatever is still retired when the synchronizer is dropped is freed by its
//! `Drop`, which has `&mut self` and so proves nobody is inside.

use std::marker::PhantomData;
use std::ptr;

use super::node::Node;
use super::Payload;
use crate::loom::{AtomicPtr, AtomicUsize, Ordering::*};

/// The grace-period bookkeeping of one synchronizer (see the module docs).
pub(crate) struct Reclaim {
    /// Threads currently inside queue code (holding [`Guard`]s).
    readers: AtomicUsize,
    /// Retired nodes, linked through `retired_next`.
    retired: AtomicPtr<Node>,
}

impl Reclaim {
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new() -> Self {
        Reclaim {
            readers: AtomicUsize::new(0),
            retired: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        Reclaim {
            readers: AtomicUsize::new(0),
            retired: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Enters queue code: from now until the guard drops, no node reachable
    /// now or retired later is freed.
    #[inline]
    pub(crate) fn enter(&self) -> Guard<'_> {
        // Acquire: reads the last leaver's Release decrement, so every unlink
        // before its frees is visible to our link loads (module docs).
        self.readers.fetch_add(1, Acquire);
        Guard {
            reclaim: self,
            #[cfg(feature = "async")]
            wakes: Default::default(),
            _not_send: PhantomData,
        }
    }

    /// Retires `node` (R4 is the caller's proof).
    ///
    /// # Safety
    ///
    /// No link leads to `node` any more, and this thread is the only one that
    /// will ever retire it (R4). `guard` is this `Reclaim`'s.
    pub(crate) unsafe fn retire(&self, node: *mut Node, guard: &Guard<'_>) {
        // SAFETY: the caller reached `node` inside `guard` and has not
        // retired it yet, so it is not freed (R5).
        let n = unsafe { guard.node(node) };
        let mut head = self.retired.load(Relaxed);
        loop {
            n.retired_next.store(head, Relaxed);
            // Release: the unlinking writes before this push happen-before
            // whoever takes the list with its Acquire swap.
            match self
                .retired
                .compare_exchange_weak(head, node, Release, Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    fn leave(&self) {
        let mut batch = ptr::null_mut();
        if !self.retired.load(Acquire).is_null() {
            batch = self.retired.swap(ptr::null_mut(), Acquire);
        }
        loop {
            // AcqRel: Release publishes our accesses to whoever frees after
            // us; Acquire (on the last decrement) makes every earlier
            // reader's accesses happen-before our frees (module docs).
            let last_reader = self.readers.fetch_sub(1, AcqRel) == 1;
            if !batch.is_null() {
                if !last_reader {
                    self.push_back(batch);
                    return;
                }
                // We were the only reader: nobody can reach the batch.
                // SAFETY: every node in the batch was retired (R4)
                // before our swap, and no reader remains who entered before that.
                unsafe { free_list(batch) };
            }
            // A reader that left before us may have pushed a batch back after
            // our first look. If we were the last one out, take another turn
            // so that nothing lingers once the synchronizer is quiet.
            if !last_reader || self.retired.load(Acquire).is_null() {
                return;
            }
            self.readers.fetch_add(1, Acquire);
            batch = self.retired.swap(ptr::null_mut(), Acquire);
        }
    }

    /// Puts a taken batch back onto the retired list.
    fn push_back(&self, batch: *mut Node) {
        // We took the batch with `swap`: no other thread frees a node that is
        // not on the shared list, so its nodes stay allocated while we walk it,
        // even though we are no longer counted as a reader.
        let mut last = batch;
        loop {
            // SAFETY: batch nodes are freed only by whoever takes them from
            // the shared list, and this batch is held by us alone.
            let next = unsafe { (*last).retired_next.load(Relaxed) };
            if next.is_null() {
                break;
            }
            last = next;
        }
        let mut head = self.retired.load(Relaxed);
        loop {
            // SAFETY: as above, `last` is ours until the CAS below publishes it.
            unsafe { (*last).retired_next.store(head, Relaxed) };
            match self
                .retired
                .compare_exchange_weak(head, batch, Release, Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Whether no retired node awaits freeing; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn retired_is_empty(&self) -> bool {
        self.retired.load(Acquire).is_null()
    }

    /// Threads inside a guard now; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn readers(&self) -> usize {
        self.readers.load(Acquire)
    }

    /// Frees the retired list; for `Drop`, where `&mut` proves nobody is inside.
    pub(crate) fn drain(&mut self) {
        let batch = self.retired.swap(ptr::null_mut(), Relaxed);
        // SAFETY: `&mut self` proves no thread is inside a guard, and every
        // node on the list was retired exactly once (R4).
        unsafe { free_list(batch) };
    }
}

/// Frees every node of a retired batch.
///
/// # Safety
///
/// The batch is owned by the caller and no thread can reach its nodes.
unsafe fn free_list(mut node: *mut Node) {
    while !node.is_null() {
        // SAFETY: owned by the caller (see above); read the link before freeing.
        let next = unsafe { (*node).retired_next.load(Relaxed) };
        // SAFETY: the caller's proof that nobody can reach the batch.
        unsafe { Node::free(node) };
        node = next;
    }
}

/// Proof of being inside queue code; see [`Reclaim::enter`]. Node
/// references borrowed through it live no longer than it does.
///
/// It also carries the wakers that the code inside took to wake (O1): they
/// are woken after the guard has left, by [`Guard::finish`] or, if the
/// guard is just dropped, by its `Drop`.
pub(crate) struct Guard<'a> {
    reclaim: &'a Reclaim,
    #[cfg(feature = "async")]
    wakes: crate::waker::WakeList,
    /// A guard is a count on its `Reclaim`, left by the thread that entered.
    _not_send: PhantomData<*mut ()>,
}

impl Guard<'_> {
    /// A node that the guard keeps allocated, for as long as the guard lives.
    ///
    /// # Safety
    ///
    /// `node` is non-null and came from `Node::alloc` for this guard's
    /// synchronizer, and it was not freed when the guard was entered: it was
    /// loaded from `head`, `tail` or a link of such a node while this guard
    /// was held, or it is the caller's own node or its predecessor (R5, N1).
    #[inline]
    pub(crate) unsafe fn node(&self, node: *mut Node) -> &Node {
        // SAFETY: R5: a node reachable while the guard was held is freed only
        // after the guard leaves (the grace-period argument above).
        unsafe { Node::get(node) }
    }
}

impl Guard<'_> {
    /// Keeps a waker taken from a node inside the guard, to be woken once
    /// the guard has left (O1).
    #[cfg(feature = "async")]
    pub(crate) fn defer_wake(&self, waker: std::task::Waker) {
        self.wakes.push(waker);
    }

    /// Whether no waker waits to be woken when the guard leaves.
    pub(crate) fn wakes_nobody(&self) -> bool {
        #[cfg(feature = "async")]
        return self.wakes.is_empty();
        #[cfg(not(feature = "async"))]
        true
    }

    /// Leaves, then wakes the wakers taken inside (O1). Every one is woken;
    /// the first one's panic, if any, is returned for the caller to
    /// propagate once its own state is consistent (O3).
    pub(crate) fn finish(self) -> Result<(), Payload> {
        #[cfg(feature = "async")]
        {
            let mut this = self;
            let wakes = std::mem::take(&mut this.wakes);
            drop(this); // leaves: the list is empty now
            wakes.wake_all()
        }
        #[cfg(not(feature = "async"))]
        {
            drop(self);
            Ok(())
        }
    }
}

impl Drop for Guard<'_> {
    /// Leaves, then wakes what is left to wake (O1). A guard whose owner
    /// did not call [`Guard::finish`] has no state of its own to restore,
    /// so a waker's panic propagates from here, unless the thread is
    /// unwinding already (then it is dropped: a second panic would abort).
    fn drop(&mut self) {
        self.reclaim.leave();
        #[cfg(feature = "async")]
        if !self.wakes.is_empty() {
            if let Err(payload) = self.wakes.wake_all() {
                super::propagate(Err(payload));
            }
        }
    }
}
