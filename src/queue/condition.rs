//! Condition queues: waiters that released an exclusive hold and wait to be
//! notified, then re-acquire (the JDK's `ConditionObject`). A notified
//! waiter is *transferred*: the notifier links its node into the sync queue
//! and arms its predecessor, so the waiter stays asleep until the lock
//! reaches it. `notify_all` on a hundred waiters wakes at most one.
//!
//! # Invariants
//!
//! * **C1, one binding.** While any waiter is on the condition queue, every
//!   wait uses the same synchronizer; a wait with another panics before it
//!   changes anything. The binding is dropped when the queue empties.
//! * **C2, one decision per node.** A node on the condition queue has status
//!   `CONDITION`. A notifier claims it with a CAS to `NONE`, under the
//!   queue's lock; a waiter that times out takes it back with a CAS to
//!   `CANCELLED`. The loser of that race does nothing to the node: a
//!   claimed node is transferred (and its waiter, even if it timed out,
//!   waits for that and re-acquires, as notified); a cancelled node is
//!   unlinked from the condition queue and freed by its waiter, after taking
//!   the queue's lock, so no notifier still reads it.
//! * **C3, nothing fails half way.** Every allocation a wait or a notify
//!   needs is made before the step it serves (the queue's slot before the
//!   node is pushed, the claimed list before the first claiming CAS), and
//!   a waker's panic during the wait's release or re-acquire is held until
//!   the hold is back and the node is off the condition queue (O3).
//! * **N3, the notifier owns a claimed node until `transferred`.** Until it
//!   sets `transferred` (Release), only the notifier touches the node's
//!   links; it acts as the owner would (N1: it skips cancelled predecessors
//!   and arms one). The waiter reads `transferred` (Acquire) before it runs
//!   the node as its own. That store is the notifier's last touch of the
//!   node and of the synchronizer: the waiter may then acquire, return, and
//!   drop both.

use std::collections::VecDeque;
use std::ptr;
use std::time::Instant;

use super::acquire::Driven;
use super::arrive::TryAcquire;
use super::node::{Node, CANCELLED, CONDITION, NONE};
use super::policy::{try_acquire, Mode, Policy};
use super::release::wake_thread;
use super::state::{value_of, ARMED, ONE_WAITER};
use super::{Payload, RawSync};
use crate::loom::{yield_now, Mutex, MutexGuard, Ordering::*};
use crate::park::{park, Parked};

/// What a synchronizer bound to a condition queue supplies (C1): its core,
/// its policy, and the arguments of its full release and re-acquire.
/// (Nominally `pub`, unreachable from outside the crate: the sealed
/// `CondvarMutex` trait names it.)
#[derive(Clone, Copy)]
pub struct Bound {
    pub(crate) sync: *const RawSync,
    pub(crate) policy: &'static (dyn Policy + Sync),
    /// What `release_exclusive` gets to release the hold in full.
    pub(crate) release: u32,
    /// What `acquire_exclusive` gets to take it back.
    pub(crate) acquire: u32,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("sync", &self.sync)
            .finish_non_exhaustive()
    }
}

/// How a condition wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// A notifier claimed the waiter (it may have timed out meanwhile: a
    /// notify that found a waiter always counts).
    Notified,
    /// The deadline passed first.
    TimedOut,
}

/// The condition queue's lock-protected part.
struct Waiters {
    /// The synchronizer every current waiter waits with (C1).
    bound: Option<Bound>,
    /// Nodes in arrival order, each `CONDITION` until claimed or cancelled.
    nodes: VecDeque<*mut Node>,
}

/// A condition queue.
pub(crate) struct Condition {
    waiters: Mutex<Waiters>,
}

// SAFETY: the raw pointers in `Waiters` are only used under its mutex, and
// each node is handed between threads by C2 and N3.
unsafe impl Send for Condition {}
// SAFETY: as above.
unsafe impl Sync for Condition {}

#[cold]
#[inline(never)]
#[track_caller]
fn two_locks() -> ! {
    panic!("aqs::Condvar: waited on with two different mutexes at once (each wait must use the mutex the current waiters use)")
}

impl Condition {
    /// An empty condition queue.
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new() -> Self {
        Condition {
            waiters: Mutex::new(Waiters {
                bound: None,
                nodes: VecDeque::new(),
            }),
        }
    }

    /// An empty condition queue (loom's mutex is not `const`).
    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        Condition {
            waiters: Mutex::new(Waiters {
                bound: None,
                nodes: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Waiters> {
        // Nothing panics while the lock is held; a poisoned lock is intact.
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits on the condition (`await`): queues a node, releases `bound`'s
    /// exclusive hold in full, sleeps until notified or `deadline`, and takes
    /// the hold back before it returns, whatever the outcome.
    ///
    /// # Panics
    ///
    /// If other waiters wait with another synchronizer (C1); nothing has
    /// changed then, and the caller still holds its lock.
    ///
    /// # Safety
    ///
    /// The caller holds `bound`'s synchronizer exclusively, and it outlives
    /// the call.
    pub(crate) unsafe fn wait(
        &self,
        bound: Bound,
        deadline: Option<Instant>,
    ) -> (Waited, Result<(), Payload>) {
        let node = Node::alloc_condition();
        {
            let mut w = self.lock();
            // C3: reserve before anything changes, so that the push below
            // cannot fail with the node half queued.
            w.nodes.reserve(1);
            match w.bound {
                Some(b) if !ptr::eq(b.sync, bound.sync) => {
                    drop(w);
                    // SAFETY: never published.
                    unsafe { Node::free(node) };
                    two_locks();
                }
                _ => w.bound = Some(bound),
            }
            w.nodes.push_back(node);
        }
        // SAFETY: the caller's synchronizer outlives the call.
        let sync = unsafe { &*bound.sync };
        // O3: a waker that our release wakes may panic (a task waiting for
        // the mutex). The release is complete then; we give up the wait at
        // once, as if timed out, take the mutex back, and only then hand
        // the panic to our caller, so the guard it holds is true again and
        // our node is off the condition queue.
        let released = sync.release_caught(bound.policy, Mode::Exclusive, bound.release);
        let abandon = released.is_err();
        // SAFETY: our node: until a notifier claims it only we free it, and
        // once transferred nobody but us retires it while we wait (N1, N3).
        let me = unsafe { Node::get(node) };
        loop {
            let parked = if abandon {
                Parked::TimedOut
            } else {
                park(node as usize, || me.wake.load(Acquire) == 0, deadline)
            };
            me.wake.swap(0, Acquire);
            // Claimed (C2): a notifier is linking us in or has (N3). A wake
            // that arrived meanwhile came from a release through our new
            // predecessor, and must not be lost: we go on as woken.
            if me.status.load(Acquire) != CONDITION {
                break;
            }
            if parked != Parked::TimedOut {
                continue; // spurious (K1)
            }
            if me
                .status
                .compare_exchange(CONDITION, CANCELLED, AcqRel, Acquire)
                .is_ok()
            {
                self.forget(node);
                // SAFETY: C2: cancelled and unlinked under the queue's lock;
                // no notifier reads it any more, and it was never in the sync
                // queue.
                unsafe { Node::free(node) };
                let woke = sync.acquire_exclusive_keeping(bound.policy, bound.acquire);
                return (Waited::TimedOut, released.and(woke));
            }
            // C2: a notifier claimed us first: notified after all.
            break;
        }
        // N3: wait until the notifier has linked us in and armed our
        // predecessor; the node is ours from then on.
        while me.transferred.load(Acquire) == 0 {
            yield_now();
        }
        let driven = sync.acquire_transferred(bound.policy, node, bound.acquire);
        debug_assert_eq!(driven.result, Ok(()));
        if abandon {
            // A notify claimed us while we were giving up: our caller sees
            // only the panic, so pass the notify on to the next waiter (to
            // it, a notify like any other).
            self.notify_one();
        }
        (Waited::Notified, released.and(driven.woke))
    }

    /// Takes a cancelled node off the condition queue (C2).
    fn forget(&self, node: *mut Node) {
        let mut w = self.lock();
        if let Some(i) = w.nodes.iter().position(|&n| n == node) {
            w.nodes.remove(i);
        }
        if w.nodes.is_empty() {
            w.bound = None;
        }
    }

    /// Claims up to `max` waiters in arrival order (C2) and returns them with
    /// their binding.
    fn claim(&self, max: usize) -> (Option<Bound>, Vec<*mut Node>) {
        let mut w = self.lock();
        let bound = w.bound;
        // C3: room for every claim before the first claiming CAS, so that an
        // allocation failure cannot strand a claimed waiter.
        let mut claimed = Vec::with_capacity(max.min(w.nodes.len()));
        while claimed.len() < max {
            let Some(node) = w.nodes.pop_front() else {
                break;
            };
            // SAFETY: on the queue, so not freed: a cancelling waiter frees
            // its node only after taking this lock and finding it gone (C2).
            let n = unsafe { Node::get(node) };
            if n.status
                .compare_exchange(CONDITION, NONE, AcqRel, Acquire)
                .is_ok()
            {
                claimed.push(node);
            }
        }
        if w.nodes.is_empty() {
            w.bound = None;
        }
        (bound, claimed)
    }

    /// Wakes one waiter by moving it to the sync queue; returns whether
    /// there was one.
    pub(crate) fn notify_one(&self) -> bool {
        let (bound, claimed) = self.claim(1);
        self.transfer_all(bound, &claimed);
        !claimed.is_empty()
    }

    /// Moves every waiter to the sync queue, in order; returns how many.
    pub(crate) fn notify_all(&self) -> usize {
        let (bound, claimed) = self.claim(usize::MAX);
        self.transfer_all(bound, &claimed);
        claimed.len()
    }

    fn transfer_all(&self, bound: Option<Bound>, claimed: &[*mut Node]) {
        let Some(bound) = bound else {
            debug_assert!(claimed.is_empty());
            return;
        };
        for &node in claimed {
            // This node's waiter, and every later one's, is inside `wait`,
            // which borrows the synchronizer until it has seen its node
            // `transferred`: the synchronizer outlives this loop up to the
            // last store of `transferred`, and is not touched after it.
            // SAFETY: N3, as just said.
            let sync = unsafe { &*bound.sync };
            let wake_owner = sync.transfer(bound.policy, node);
            // SAFETY: N3: the node is ours until `transferred` is set; nobody
            // else retires or frees it before then.
            let me = unsafe { Node::get(node) };
            if wake_owner {
                // Before `transferred`: a claimed owner that wakes goes on
                // as woken once it sees the transfer done (C2, N3).
                wake_thread(me, node);
            }
            // The last touch of the node and of the synchronizer: once the
            // owner sees it, it may acquire, return, and drop both.
            me.transferred.store(1, Release);
        }
    }
}

impl RawSync {
    /// Links a claimed condition node into the sync queue on its sleeping
    /// owner's behalf (`transferForSignal`), doing what the owner's own
    /// acquire step would before it parks: count it after linking (Q1), arm
    /// its predecessor with an RMW (P1), publish the armed bit (A1, barging),
    /// and re-check. Returns whether the owner could take the lock now, and
    /// so must be woken; otherwise the release through its predecessor
    /// wakes it. The caller then sets `transferred` (N3), after everything
    /// here, the guard's departure included, is done with the synchronizer.
    fn transfer<P: Policy + ?Sized>(&self, policy: &P, node: *mut Node) -> bool {
        let guard = self.reclaim.enter();
        self.enq(node, &guard);
        self.state.fetch_add(ONE_WAITER, AcqRel);
        // SAFETY: N3: ours until `transferred` is set.
        let me = unsafe { guard.node(node) };
        let pred = loop {
            let pred = self.skip_cancelled(node, me.prev.load(Relaxed), &guard);
            if self.arm(pred, &guard) {
                break pred;
            }
        };
        if policy.discipline().uses_armed_bit() {
            self.state.fetch_or(ARMED, AcqRel);
        }
        // The owner's re-check after arming (P1), done for it: a release
        // whose RMW on the head's status came before our arming is seen here.
        let value = value_of(self.state.load(Acquire));
        let could_take = try_acquire(policy, Mode::Exclusive, value, me.need, false).is_some();
        let wake_owner = pred == self.head.load(Acquire) && could_take;
        drop(guard);
        // Everything above must come before the owner can see `transferred`.
        #[cfg(aqs_loom)]
        self.loom_check_alive();
        wake_owner
    }

    /// Re-acquires with a node that `transfer` linked in: the owner runs it
    /// from here as any waiter, resuming as if woken. The hold stands even
    /// if a waker it wakes panics; the panic is returned (O3).
    fn acquire_transferred<P: Policy + ?Sized>(
        &self,
        policy: &P,
        node: *mut Node,
        arg: u32,
    ) -> Driven {
        let guard = self.reclaim.enter();
        let waiter = self.adopt(node, arg);
        self.drive_caught(policy, waiter, guard)
    }

    /// Takes an exclusive hold of `arg` back after a condition wait that
    /// ended without a transfer. The hold stands even if a waker it wakes
    /// panics; the panic is returned (O3).
    fn acquire_exclusive_keeping<P: Policy + ?Sized>(
        &self,
        policy: &P,
        arg: u32,
    ) -> Result<(), Payload> {
        if self.try_acquire_exclusive(policy, arg) == TryAcquire::Acquired {
            return Ok(());
        }
        let guard = self.reclaim.enter();
        let waiter = self.enqueue(Mode::Exclusive, arg, None, &guard);
        let driven = self.drive_caught(policy, waiter, guard);
        debug_assert_eq!(driven.result, Ok(()));
        driven.woke
    }
}
