//! Queue nodes and their reclamation.
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
//! # Invariants
//!
//! 1. **Retire only the unreachable.** A node is retired only when neither
//!    `head`, `tail`, nor any link (`prev`, `next`) of a non-retired node leads
//!    to it, and no link to it is written afterwards. (`raw.rs` states who
//!    retires what, and why that thread is the only one.)
//! 2. **Exactly one retirer per node**, so no node is freed twice.
//! 3. **Dereference only inside a guard**, or on a node the thread owns and has
//!    not retired (a waiter's own node, and its predecessor: see `raw.rs`).
//! 4. **Never park or yield-wait inside a guard.** A sleeping reader would
//!    stop all frees, and so would waiters that take turns at yielding inside
//!    guards: one of them would be inside at nearly every instant.
//!    (Measured: with fair waiters yielding inside their guards, the retired
//!    list kept growing and every push-back walked it, slower each time.)
//!
//! # Why a batch may be freed
//!
//! Let a leaver take batch `B` at time `t1` (the `swap`) and see the reader
//! count go from 1 to 0 at `t2` (its `fetch_sub`). Every node in `B` was
//! unlinked before it was pushed, so before `t1` (invariant 1). A thread that
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
//! thread is inside queue code; parked threads are never inside (invariant 4).
//! Whatever is still retired when the synchronizer is dropped is freed by its
//! `Drop`, which has `&mut self` and so proves nobody is inside.

use std::ptr;

use crate::sync::{AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering::*};

/// Status of a node that needs nothing (the default).
pub(crate) const NONE: i32 = 0;
/// The successor sleeps, or is about to: whoever releases through this node,
/// or cancels it, must wake the successor.
pub(crate) const SIGNAL: i32 = -1;
/// A release found this head with nobody to wake; whoever replaces the head
/// must keep propagating (JDK-6801020).
pub(crate) const PROPAGATE: i32 = -3;
/// The owner gave up (timeout or close). Final: never acquires, never becomes head.
pub(crate) const CANCELLED: i32 = 1;
/// A former head: its successor has become head and read (with the RMW that
/// wrote this) whatever releases had left here. Final. A releaser whose RMW
/// finds it knows the new head did not see that release, and retries on the
/// new head.
pub(crate) const PASSED: i32 = 2;

/// One waiting thread (or the ownerless head).
pub(crate) struct Node {
    /// `NONE`, `SIGNAL`, `PROPAGATE` or `CANCELLED`; about the *successor*,
    /// except `CANCELLED`, which is about this node.
    pub(crate) status: AtomicI32,
    /// Predecessor; the truth. Written only by this node's owner (at enqueue,
    /// when skipping cancelled predecessors) and cleared when it becomes head.
    pub(crate) prev: AtomicPtr<Node>,
    /// Successor; only a hint (null does not mean "none").
    pub(crate) next: AtomicPtr<Node>,
    /// The owner's wake-up permit: set by a waker before `unpark_one`, tested
    /// by `park`'s `validate`, cleared by the owner when it wakes.
    pub(crate) wake: AtomicU32,
    /// How much value the owner asks for (0 for a dummy head). Written before
    /// the node is published and never again.
    pub(crate) need: u32,
    /// Link in the retired list.
    retired_next: AtomicPtr<Node>,
    /// loom only: set where the real build frees the node; asserted clear at
    /// every dereference, so a free that races a read is a loom failure.
    #[cfg(loom)]
    freed: crate::sync::UnsafeCell<bool>,
    /// loom only: reports nodes that are never freed as leaks.
    #[cfg(loom)]
    track: crate::sync::UnsafeCell<Option<loom::alloc::Track<()>>>,
}

impl Node {
    /// Allocates a node with status `NONE`, no links, asking for `need`.
    pub(crate) fn alloc(need: u32) -> *mut Node {
        Box::into_raw(Box::new(Node {
            status: AtomicI32::new(NONE),
            prev: AtomicPtr::new(ptr::null_mut()),
            next: AtomicPtr::new(ptr::null_mut()),
            wake: AtomicU32::new(0),
            need,
            retired_next: AtomicPtr::new(ptr::null_mut()),
            #[cfg(loom)]
            freed: crate::sync::UnsafeCell::new(false),
            #[cfg(loom)]
            track: crate::sync::UnsafeCell::new(Some(loom::alloc::Track::new(()))),
        }))
    }

    /// Turns a node pointer into a reference.
    ///
    /// # Safety
    ///
    /// `node` must be non-null, come from [`Node::alloc`], and not have been
    /// freed: the caller is inside a [`Guard`] entered before it loaded the
    /// pointer from a link, or owns the node (node invariant 3).
    #[inline]
    pub(crate) unsafe fn get<'a>(node: *mut Node) -> &'a Node {
        debug_assert!(!node.is_null());
        // SAFETY: the caller guarantees the node is live (see above).
        let node = unsafe { &*node };
        #[cfg(loom)]
        node.freed.with(|freed| {
            // SAFETY: `freed` is only written by `free`; loom reports a write
            // racing this read as a causality violation.
            assert!(
                !unsafe { *freed },
                "aqs: a queue node was used after it was freed"
            );
        });
        node
    }

    /// Frees a node.
    ///
    /// # Safety
    ///
    /// `node` came from [`Node::alloc`], was never published (or has passed a
    /// grace period after being retired), and nobody will touch it again.
    pub(crate) unsafe fn free(node: *mut Node) {
        #[cfg(not(loom))]
        // SAFETY: allocated by `Box::into_raw` in `alloc`; the caller proves
        // exclusive, final access.
        drop(unsafe { Box::from_raw(node) });
        #[cfg(loom)]
        {
            // Keep the memory (a later read must fail the assertion in `get`,
            // not be undefined behaviour in the test process), but mark it
            // freed and stop tracking it so loom's leak check passes.
            // SAFETY: the caller proves nobody else touches the node; a racing
            // access is exactly what loom's causality check reports.
            let node = unsafe { &*node };
            node.freed.with_mut(|freed| {
                // SAFETY: as above.
                unsafe { *freed = true }
            });
            node.track.with_mut(|track| {
                // SAFETY: as above.
                drop(unsafe { (*track).take() })
            });
        }
    }
}

/// The grace-period bookkeeping of one synchronizer (see the module docs).
pub(crate) struct Reclaim {
    /// Threads currently inside queue code (holding [`Guard`]s).
    readers: AtomicUsize,
    /// Retired nodes, linked through `retired_next`.
    retired: AtomicPtr<Node>,
}

impl Reclaim {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Reclaim {
            readers: AtomicUsize::new(0),
            retired: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[cfg(loom)]
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
        Guard { reclaim: self }
    }

    /// Retires `node` (node invariants 1 and 2 are the caller's proof).
    ///
    /// # Safety
    ///
    /// No link leads to `node` any more, and this thread is the only one that
    /// will ever retire it. The caller is inside a guard.
    pub(crate) unsafe fn retire(&self, node: *mut Node) {
        // SAFETY: the caller is inside a guard and the node is not yet freed.
        let n = unsafe { Node::get(node) };
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
                // The `free_early` mutant frees the batch without checking that
                // it was the last reader (the decrement still happens); loom
                // must catch it.
                if !(cfg!(aqs_mutant = "free_early") || last_reader) {
                    self.push_back(batch);
                    return;
                }
                // We were the only reader: nobody can reach the batch.
                // SAFETY: every node in the batch was retired (invariants 1, 2)
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
    #[cfg(all(test, not(loom)))]
    pub(crate) fn retired_is_empty(&self) -> bool {
        self.retired.load(Acquire).is_null()
    }

    /// Threads inside a guard now; for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn readers(&self) -> usize {
        self.readers.load(Acquire)
    }

    /// Frees the retired list; for `Drop`, where `&mut` proves nobody is inside.
    pub(crate) fn drain(&mut self) {
        let batch = self.retired.swap(ptr::null_mut(), Relaxed);
        // SAFETY: `&mut self` proves no thread is inside a guard, and every
        // node on the list was retired exactly once (invariants 1, 2).
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

/// Proof of being inside queue code; see [`Reclaim::enter`].
pub(crate) struct Guard<'a> {
    reclaim: &'a Reclaim,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.reclaim.leave();
    }
}
