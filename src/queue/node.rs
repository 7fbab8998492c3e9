//! Queue nodes: one per waiting thread (or the ownerless head), their
//! statuses, and allocation. Who may dereference a node, and when it is
//! freed, is `reclaim.rs`'s business (R1 to R8 in `queue/mod.rs`).

use std::ptr;

use super::policy::Mode;
use crate::loom::{AtomicI32, AtomicPtr, AtomicU32, Ordering::Relaxed};

/// Status of a node that needs nothing (the default).
pub(crate) const NONE: i32 = 0;
/// The successor sleeps, or is about to: whoever releases through this node,
/// or cancels it, must wake the successor.
pub(crate) const SIGNAL: i32 = -1;
/// A condition waiter's node, not (yet) in the sync queue: the notifier that
/// claims it (`CONDITION -> NONE`) links it in; a waiter that times out first
/// takes it back (`CONDITION -> CANCELLED`). Whichever CAS wins decides.
pub(crate) const CONDITION: i32 = -2;
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
    /// How the owner acquires (the dummy head: `Shared`). Written before the
    /// node is published and never again; shared propagation stops at an
    /// exclusive waiter.
    pub(crate) mode: Mode,
    /// Condition waiters only: set (Release) by the notifier once it has
    /// linked the node into the sync queue and armed its predecessor; from
    /// then on the owner runs the node as any waiter (N3).
    pub(crate) transferred: AtomicU32,
    /// Link in the retired list (or a batch taken from it). Written by the
    /// retirer before the push and then only by a batch's owner; read only
    /// by a batch's owner (R4, R5: nobody else follows it).
    pub(super) retired_next: crate::loom::UnsafeCell<*mut Node>,
    /// The retired list's last node and length as they were once this node
    /// was pushed onto it: what a batch taken with this node at its head
    /// ends with, and how many nodes it holds. Written once, before the
    /// push; read by later retirers and by the taker.
    pub(super) retired_tail: crate::loom::UnsafeCell<(*mut Node, u64)>,
    /// The same for a batch parked in the spare slot with this node at its
    /// head: written by each owner that parks it (`Reclaim::stash`), read by
    /// the next owner. Only a batch's owner touches it.
    pub(super) batch_tail: crate::loom::UnsafeCell<(*mut Node, u64)>,
    /// An async waiter's waker slot (feature `async`); `None` for a thread,
    /// which parks on the node's address instead. Written before the node
    /// is published and never replaced.
    #[cfg(feature = "async")]
    pub(crate) task: Option<crate::waker::WakerSlot>,
    /// loom only: set where the real build frees the node; asserted clear at
    /// every dereference, so a free that races a read is a loom failure.
    #[cfg(aqs_loom)]
    freed: crate::loom::UnsafeCell<bool>,
    /// loom only: reports nodes that are never freed as leaks.
    #[cfg(aqs_loom)]
    track: crate::loom::UnsafeCell<Option<loom::alloc::Track<()>>>,
}

impl Node {
    /// Allocates a node with status `NONE`, no links, asking for `need`.
    pub(crate) fn alloc(need: u32, mode: Mode) -> *mut Node {
        Box::into_raw(Box::new(Node {
            status: AtomicI32::new(NONE),
            prev: AtomicPtr::new(ptr::null_mut()),
            next: AtomicPtr::new(ptr::null_mut()),
            wake: AtomicU32::new(0),
            need,
            mode,
            transferred: AtomicU32::new(0),
            retired_next: crate::loom::UnsafeCell::new(ptr::null_mut()),
            retired_tail: crate::loom::UnsafeCell::new((ptr::null_mut(), 0)),
            batch_tail: crate::loom::UnsafeCell::new((ptr::null_mut(), 0)),
            #[cfg(feature = "async")]
            task: None,
            #[cfg(aqs_loom)]
            freed: crate::loom::UnsafeCell::new(false),
            #[cfg(aqs_loom)]
            track: crate::loom::UnsafeCell::new(Some(loom::alloc::Track::new(()))),
        }))
    }

    /// Allocates an async waiter's node: as [`Node::alloc`], with a waker
    /// slot.
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn alloc_task(need: u32, mode: Mode) -> *mut Node {
        let node = Node::alloc(need, mode);
        // SAFETY: freshly allocated and not yet published: ours alone.
        unsafe { (*node).task = Some(crate::waker::WakerSlot::new()) };
        node
    }

    /// Allocates a condition waiter's node: exclusive, asking for 1, with
    /// status `CONDITION`.
    pub(crate) fn alloc_condition() -> *mut Node {
        let node = Node::alloc(1, Mode::Exclusive);
        // SAFETY: freshly allocated and not yet published: ours alone.
        unsafe { Node::get(node) }.status.store(CONDITION, Relaxed);
        node
    }

    /// Turns a node pointer into a reference of any lifetime. Queue code
    /// goes through [`Guard::node`](super::reclaim::Guard::node) or a
    /// waiter's own node instead, whose lifetimes the compiler checks.
    ///
    /// # Safety
    ///
    /// `node` must be non-null, come from [`Node::alloc`], and stay allocated
    /// for `'a`.
    #[inline]
    pub(super) unsafe fn get<'a>(node: *mut Node) -> &'a Node {
        debug_assert!(!node.is_null());
        // SAFETY: the caller guarantees the node is live (see above).
        let node = unsafe { &*node };
        #[cfg(aqs_loom)]
        node.freed.with(|freed| {
            // SAFETY: `freed` is only written by `free`; loom reports a write
            // racing this read as a causality violation.
            let freed = unsafe { *freed };
            assert!(!freed, "aqs: a queue node was used after it was freed");
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
        // O2: the owner took its waker out when it left; dropping one here,
        // inside a guard's departure, would run outside code there.
        #[cfg(all(feature = "async", not(aqs_loom)))]
        debug_assert!(
            // SAFETY: as below: the caller proves exclusive, final access.
            unsafe { &*node }
                .task
                .as_ref()
                .is_none_or(|task| task.is_empty()),
            "aqs: a queue node was freed with a waker in it"
        );
        #[cfg(not(aqs_loom))]
        // SAFETY: allocated by `Box::into_raw` in `alloc`; the caller proves
        // exclusive, final access.
        drop(unsafe { Box::from_raw(node) });
        #[cfg(aqs_loom)]
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
            // The memory stays, so drop the waker it holds here (a loom
            // waker is a tracked loom `Arc`).
            #[cfg(feature = "async")]
            if let Some(task) = &node.task {
                // SAFETY: as above: nobody else touches the node.
                unsafe { task.clear() };
            }
        }
    }
}
