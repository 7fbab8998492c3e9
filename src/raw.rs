//! The synchronizer core: one atomic state word and a CLH wait queue, run by
//! the shared-mode protocol of Java's `AbstractQueuedSynchronizer` (JDK 8).
//!
//! # Implementation
//!
//! ## The state word
//!
//! ```text
//!  63                               32 31                      2   1   0
//! +-----------------------------------+--------------------------+---+---+
//! |  value (the policy's: permits)    | waiters (queued threads) | A | C |
//! +-----------------------------------+--------------------------+---+---+
//! ```
//!
//! | field | owner | meaning |
//! |---|---|---|
//! | `value` | the [`SharedPolicy`] | what the synchronizer counts; a semaphore's available permits |
//! | `waiters` | the queue | threads that linked a node and have not yet acquired or cancelled |
//! | `A` (`ARMED`) | the queue | a queued thread may be asleep counting on a release through the head; see below |
//! | `C` (`CLOSED`) | the queue | set once by [`RawSync::close`]; every acquire fails afterwards |
//!
//! The policy only ever sees and returns `value`; the core performs every
//! compare-and-swap, so the waiter count and the closed bit are updated in the
//! same atomic step as the value (an acquire from the queue takes permits and
//! leaves the count in one CAS).
//!
//! ## The queue
//!
//! ```text
//!                  prev             prev             prev
//!    head --> +--------+ <----- +--------+ <----- +--------+ <-- tail
//!             |   H    |        |   N1   |        |   N2   |
//!             |(no one)| -----> |  t1    | -----> |  t2    |
//!             +--------+  next  +--------+  next  +--------+
//!    H.status == SIGNAL: "N1 sleeps; whoever releases through H wakes it".
//! ```
//!
//! `head` is the node of the last thread that acquired through the queue (or
//! a dummy); only its successor's owner may run the policy's hook from the
//! queue and become head. (A waiter woken by a multi-unit release may also
//! take value *out of turn* if the policy allows; it then leaves the queue as
//! a cancelled waiter does, so to the queue it is a cancellation: see
//! `wake_ahead`.) `prev` links are the truth, `next` links are hints. Names follow the
//! JDK (`add_waiter`, `enq`, `do_acquire_shared`, `should_park_after_failed_acquire`,
//! `set_head_and_propagate`, `do_release_shared`, `unpark_successor`,
//! `cancel_acquire`) so the JDK's comments can be read beside this file.
//!
//! ## Invariants
//!
//! 1. **Nobody parks unseen.** A thread links its node (tail CAS) *before* it
//!    increments `waiters` with an RMW on the state word, and decrements it
//!    only in the same CAS that acquires, or when it cancels. A releaser's own
//!    RMW on the state word therefore returns a word whose `waiters` is zero
//!    only if every thread that may park will see the released value when it
//!    re-checks; otherwise the releaser synchronizes with every counted
//!    waiter's link and runs [`RawSync::do_release_shared`] (a barging
//!    release only if the armed bit is set too: invariant 8).
//! 2. **`prev` is stable.** A node's `prev` is written only by its owner:
//!    at enqueue, when it skips cancelled predecessors, and (cleared) when it
//!    becomes head. From `tail`, `prev` links always lead back to `head`.
//! 3. **Unique successor.** For every node in the chain at most one node has
//!    `prev` pointing at it; its owner is the only thread that may unlink it.
//! 4. **The head is never cancelled**, and only the head's successor moves
//!    `head` (to its own node).
//! 5. **Retirement** (see `node.rs` for the grace period). Each node is
//!    retired exactly once, by exactly one of:
//!    * R1: the thread whose node became the new head retires the old head;
//!    * R2: the owner of the unique successor of a cancelled node, when it
//!      skips that node (after redirecting the predecessor's `next` hint);
//!    * R3: the owner of a cancelled node that was the tail, after swinging
//!      `tail` back to its predecessor (so no successor ever linked to it).
//!
//!    R2 and R3 exclude each other: a node with a linked successor cannot win
//!    the tail CAS, and a node that won it never gets a successor.
//! 6. **A waiter's own node and its predecessor outlive its wait.** While a
//!    thread waits, nobody retires its node (R1 retires it only after it has
//!    become head and its successor has acquired, R2 needs it cancelled, R3 is
//!    its owner's own act) nor its predecessor (R1 and R2 on the predecessor
//!    can only be done by the predecessor's unique successor: the waiter).
//!    This is why a waiter may touch both without a guard while it parks.
//! 7. **Status values**: `CANCELLED` is final and written only by the owner;
//!    `SIGNAL` only by the successor (arming), `NONE`/`PROPAGATE` only by
//!    releasers, on the head, and `PASSED` (final) only by the new head, on
//!    the old head it replaced.
//! 8. **The armed bit** (barging policies only; strict FIFO ones never set,
//!    clear or read it). A waiter sets `ARMED` with an RMW on the state word
//!    after its last arming and before every park, and re-runs its whole
//!    check once after that RMW. A releaser that consumed the head's
//!    `SIGNAL` clears it, before it wakes the head's successor, and sets it
//!    back if the head moved meanwhile; a new head whose own status is
//!    `SIGNAL` sets it again. A releaser that went in on the bit but found
//!    no `SIGNAL` on the head clears it too, then re-reads the head's status
//!    with an RMW and wakes whoever armed it meanwhile (`disarm_stale`).
//!    So whenever a waiter sleeps counting on a release
//!    through the head (its predecessor is the head and armed), the bit is
//!    set or that release's value is seen by someone who will act on it: a
//!    release before the waiter's RMW is read by its re-check; a clearing
//!    releaser is waking that very waiter, or, for a waiter whose predecessor
//!    is not yet head, the predecessor's takeover sets the bit again. A
//!    barging release with the bit clear skips the queue: the first waiter is
//!    awake (or woken, waiting for a CPU) and will see the value, or arrivals
//!    take it.
//!
//! ## Memory ordering
//!
//! Permits: every change of `value` is a CAS with `AcqRel`, so a release
//! happens-before the acquire that takes what it released (the public
//! `# Memory ordering` promise).
//!
//! AQS has three store-buffering pairs (`shared/AQS.md`, section 8), and
//! cancellation adds a fourth (P4). Each is
//! resolved with read-modify-writes on one location, never with `SeqCst`
//! loads or stores (which loom would weaken to `AcqRel` and so misjudge):
//!
//! * **P1, arm vs release.** The waiter arms its predecessor with a CAS on its
//!   status, then re-runs the hook; the releaser bumps the state word, then
//!   updates the head's status with a CAS (`SIGNAL -> NONE`, `NONE ->
//!   PROPAGATE`) or a `fetch_or(0)` when it is already `PROPAGATE`. Whichever
//!   RMW on the status comes second reads the first, so either the releaser
//!   sees `SIGNAL` and wakes, or the waiter's re-check sees the permits.
//!   A barging releaser that skips the queue (armed bit clear) relies on the
//!   word alone: the waiter's publishing RMW and the release's RMW are on the
//!   same location, so either the release sees the bit or the waiter's
//!   re-check, which follows its RMW, sees the permits.
//! * **P2, enqueue vs release.** Invariant 1: both sides RMW the state word.
//! * **P3, new head vs stale releaser.** After storing `head`, the new head
//!   swaps the old head's status to `PASSED` and then reads its own with
//!   `fetch_or(0)`. A releaser that read the old head RMWs that same status:
//!   if its RMW came first, the new head's swap reads it and the new head's
//!   propagation check covers that release (so the releaser may stop: fair
//!   policies do; barging ones still follow a moved head, see
//!   `do_release_shared`); if second, its RMW finds `PASSED`, synchronizes
//!   with the new head's store of `head`, and it retries on the new head.
//!   (JDK 8 instead re-reads `head` after every release and goes on through
//!   a new head, which wakes the new head's successor while the new head
//!   still holds what it took.)
//! * **P4, leaving waiter vs new head.** A waiter that leaves (timeout, close,
//!   out-of-turn exit) marks itself `CANCELLED` and then reads `head` and its
//!   predecessor's status, to decide whether the predecessor will wake its
//!   successor; the predecessor, becoming head, stores `head`, consumes its
//!   own `SIGNAL` and reads the leaving node's status to pick whom to wake.
//!   The leaving waiter arms its predecessor with an RMW even when it reads
//!   `SIGNAL` already (`arm`), so one of the two RMWs on the predecessor's
//!   status reads the other: either the releaser sees the node cancelled and
//!   wakes past it, or the leaving waiter sees the new head and wakes its
//!   successor itself.
//!
//! Wake-ups go through a per-node `wake` flag set with a `Release` swap (an
//! RMW, so it is totally ordered with the owner's clearing swap) before
//! `unpark_one`; `park`'s `validate` reads it under the bucket lock (shim
//! invariant 2), and the woken owner clears it with an `Acquire` swap before
//! re-checking anything, so a wake-up arriving before the park is never lost.
//! A strict FIFO waiter early in its wait yields instead of parking
//! (`YIELD_WINDOW`): to this protocol that is a park that returns at once,
//! and it consumes its flag the same way.
//!
//! ## Prior art
//!
//! Doug Lea, "The java.util.concurrent Synchronizer Framework" (2004), and the
//! JDK 8 `AbstractQueuedSynchronizer`; the CLH lock of Craig, and of Magnusson,
//! Landin and Hagersten; Scherer and Scott's timeouts for queue locks.

use std::ptr;
use std::time::{Duration, Instant};

use crate::node::{Node, Reclaim, CANCELLED, NONE, PASSED, PROPAGATE, SIGNAL};
use crate::sync::{
    deadline_passed, park, unpark_one, yield_now, AtomicPtr, AtomicU64, Ordering::*, Parked, Spin,
    YieldWindow,
};

/// The closed bit.
pub(crate) const CLOSED: u64 = 1;
/// The armed bit: a queued thread may be asleep counting on a release to
/// wake it through the head (see "The armed bit" above).
const ARMED: u64 = 1 << 1;
/// One queued thread in the `waiters` field.
pub(crate) const ONE_WAITER: u64 = 1 << 2;
/// The `waiters` field: bits 2 to 31.
const WAITER_MASK: u64 = 0xFFFF_FFFC;
/// Where the policy's `value` starts.
const VALUE_SHIFT: u32 = 32;
/// The queue's half of the word: `waiters` and `CLOSED`.
const LOW_MASK: u64 = (1 << VALUE_SHIFT) - 1;

/// How many times a strict FIFO waiter second in line renews its spin budget
/// while its predecessor wakes (`RawSync::first_is_waking`). One budget
/// (about 127 pause instructions, then a few yields) is often shorter than a
/// wake-up here: two threads over one fair permit ran 0.85 to 1.3 µs a pair
/// with one budget, 0.34 to 0.46 with four (quick criterion runs, interleaved).
const SECOND_IN_LINE_RENEWALS: u32 = 3;

/// How long a strict FIFO waiter gives its CPU away with `yield_now` where it
/// would otherwise park, from the start of its wait and again after each
/// wake-up from a park. In this 2-CPU guest a park costs about 10 µs of
/// kernel time for the sleeper and its waker together, and once the CPUs go
/// idle every wake-up goes through the host; waiters that stay runnable keep
/// the CPUs busy and catch their turn without a wake-up. Standalone probe,
/// fair, µs per pair, median of five 200 ms windows:
///
/// | window | 4 threads, 1 permit | 16, 1 | 16, 4 |
/// |---|---:|---:|---:|
/// | none (the build before) | 10.7 | 10.6 | 3.26 |
/// | 10 µs | 0.85 | 8.43 | 0.84 |
/// | 20 µs | 0.81 | 7.00 | 0.95 |
/// | 50 µs | 0.83 | 3.44 | 0.93 |
/// | 100 µs | 0.77 | 3.91 | 0.97 |
/// | 200 µs | 0.82 | 4.47 | 1.05 |
///
/// 16 threads over one permit need 50 µs: a waiter at the back waits about
/// 15 turns. Longer windows keep more waiters awake and slow it again.
///
/// The cost is CPU: a waiter on a permit that stays held burns up to this
/// long (in `sched_yield` calls, which hand the CPU to any thread that wants
/// it) before it sleeps.
const YIELD_WINDOW: Duration = Duration::from_micros(50);

/// The policy's value held in a state word.
#[inline]
pub(crate) const fn value_of(state: u64) -> u32 {
    (state >> VALUE_SHIFT) as u32
}

/// The number of queued threads in a state word.
#[inline]
pub(crate) const fn waiters_of(state: u64) -> u32 {
    ((state & WAITER_MASK) >> 2) as u32
}

/// Whether a state word has the armed bit.
#[inline]
const fn is_armed(state: u64) -> bool {
    state & ARMED != 0
}

/// Whether a state word is closed.
#[inline]
pub(crate) const fn is_closed(state: u64) -> bool {
    state & CLOSED != 0
}

/// `state` with its value replaced by `value`.
#[inline]
pub(crate) const fn with_value(state: u64, value: u32) -> u64 {
    (state & LOW_MASK) | (value as u64) << VALUE_SHIFT
}

/// `state` with its value lowered to `value` (an acquire only takes):
/// `with_value` by one subtraction, which cannot borrow from the low half.
/// It sits between an acquire's load and its CAS, where the mask-and-merge
/// of `with_value` cost about 0.4 ns uncontended.
#[inline]
const fn after_take(state: u64, value: u32) -> u64 {
    debug_assert!(value <= value_of(state));
    state - ((value_of(state).wrapping_sub(value) as u64) << VALUE_SHIFT)
}

/// A successful shared acquire, as decided by a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Acquired {
    /// The value after the acquire.
    pub(crate) value: u32,
    /// Whether a following shared acquire might succeed too (the JDK's
    /// "positive return"): the next waiter is woken to try.
    pub(crate) propagate: bool,
}

/// What a synchronizer means by its value: the two AQS hooks, as pure
/// functions. The core runs them inside its own CAS loops.
///
/// Both must be cheap, must not block, and `try_acquire_shared` must not
/// panic (it runs while the caller's node is linked into the queue).
pub(crate) trait SharedPolicy {
    /// Decides an acquire of `arg` from `value`. `others_queued` is true when
    /// the caller is an arriving thread and somebody is already queued; it is
    /// false for arrivals into an empty queue and for the first queued waiter.
    /// Returns `None` when the caller must wait.
    fn try_acquire_shared(&self, value: u32, arg: u32, others_queued: bool) -> Option<Acquired>;

    /// Returns the value after releasing `arg`. May panic (for example on
    /// overflow); the state word is then left unchanged.
    fn try_release_shared(&self, value: u32, arg: u32) -> u32;

    /// Whether every release of `arg` adds exactly `arg` to the value *and*
    /// the policy guarantees that the sum never passes `u32::MAX` (a counter
    /// that bounds what is outstanding). The core then releases with one
    /// `fetch_add` instead of a load + CAS loop: uncontended, that is the
    /// difference between a release that waits for the acquire's locked
    /// instruction to retire before it can even compute its CAS, and one that
    /// does not. `try_release_shared` is then only a debug-build cross-check.
    /// Off by default.
    fn release_adds(&self) -> bool {
        false
    }

    /// Whether arrivals may take the value while others are queued (a
    /// nonfair policy). Only such arrivals spin before queueing: a fair
    /// arrival that spun outside the queue would race other arrivals for a
    /// free value and break FIFO order.
    fn barging(&self) -> bool;

    /// Whether a multi-unit release wakes every waiter it could serve, not
    /// only the first, letting them take value out of turn through
    /// [`SharedPolicy::try_acquire_out_of_turn`] (see `RawSync::wake_ahead`).
    /// Off by default.
    fn out_of_turn(&self) -> bool {
        false
    }

    /// Decides an acquire of `arg` from `value` by a woken waiter that is not
    /// first in line. `ahead` is at least the sum of the `arg`s of the live
    /// waiters queued in front of it (it may over-count, never under-count):
    /// a FIFO policy must leave them that much; a barging one may ignore it.
    /// Only called when [`SharedPolicy::out_of_turn`] is true.
    fn try_acquire_out_of_turn(&self, value: u32, arg: u32, ahead: u32) -> Option<Acquired> {
        let _ = (value, arg, ahead);
        None
    }
}

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

/// Why a blocking acquire gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcquireFailed {
    /// The synchronizer was closed.
    Closed,
    /// The deadline passed.
    TimedOut,
}

/// The queue core shared by every synchronizer.
pub(crate) struct RawSync {
    state: AtomicU64,
    head: AtomicPtr<Node>,
    tail: AtomicPtr<Node>,
    reclaim: Reclaim,
    /// loom only: whether strict FIFO waiters yield before parking (off
    /// unless a model asks; see `RawSync::loom_yield_before_parking`).
    #[cfg(loom)]
    loom_yields: bool,
}

// SAFETY: all fields are atomics or `Reclaim` (atomics). The raw node pointers
// they hold are shared on purpose; every dereference follows the reclamation
// rules of `node.rs` (guards) and invariants 5 and 6 above.
unsafe impl Send for RawSync {}
// SAFETY: as above; all mutation goes through atomic operations.
unsafe impl Sync for RawSync {}

impl RawSync {
    /// A synchronizer holding `value`, with an empty (not yet allocated) queue.
    #[cfg(not(loom))]
    pub(crate) const fn new(value: u32) -> Self {
        RawSync {
            state: AtomicU64::new((value as u64) << VALUE_SHIFT),
            head: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicPtr::new(ptr::null_mut()),
            reclaim: Reclaim::new(),
        }
    }

    /// A synchronizer holding `value` (loom's atomics have no `const fn new`).
    #[cfg(loom)]
    pub(crate) fn new(value: u32) -> Self {
        RawSync {
            state: AtomicU64::new((value as u64) << VALUE_SHIFT),
            head: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicPtr::new(ptr::null_mut()),
            reclaim: Reclaim::new(),
            loom_yields: false,
        }
    }

    /// The current state word (a snapshot).
    #[inline]
    pub(crate) fn state(&self) -> u64 {
        self.state.load(Acquire)
    }

    /// Tries to acquire without queueing, as an arriving thread.
    #[inline]
    pub(crate) fn try_acquire_shared<P: SharedPolicy>(&self, policy: &P, arg: u32) -> TryAcquire {
        self.arrive(policy, arg)
    }

    /// The arrival's CAS loop: load the word, let the policy decide, CAS.
    ///
    /// An earlier version guessed the first CAS's expected word from a
    /// `hint` stored beside `state` by every acquire and release, so that an
    /// uncontended CAS need not wait for a load behind the thread's last
    /// locked instruction. It saved 0.9 ns per uncontended pair on one host
    /// and nothing on another, where at four permits it was slower in two of
    /// three interleaved sets of runs and level in the third (its stores and
    /// wrong guesses): see `docs/design.md`.
    #[inline]
    fn arrive<P: SharedPolicy>(&self, policy: &P, arg: u32) -> TryAcquire {
        let mut s = self.state.load(Relaxed);
        loop {
            let acquired = if is_closed(s) {
                None
            } else {
                policy.try_acquire_shared(value_of(s), arg, waiters_of(s) > 0)
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

    /// Acquires `arg`, queueing and parking until the policy agrees, the
    /// synchronizer closes, or `deadline` passes.
    #[inline]
    pub(crate) fn acquire_shared<P: SharedPolicy>(
        &self,
        policy: &P,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        match self.try_acquire_shared(policy, arg) {
            TryAcquire::Acquired => Ok(()),
            TryAcquire::Closed => Err(AcquireFailed::Closed),
            TryAcquire::Failed => {
                if deadline.is_some_and(deadline_passed) {
                    return Err(AcquireFailed::TimedOut);
                }
                self.acquire_slow(policy, arg, deadline)
            }
        }
    }

    /// Spins briefly, retrying as an arrival, before joining the queue: under
    /// contention a permit is usually back within a critical section's time,
    /// far sooner than a park and wake-up round trip. Only barging policies
    /// spin here, and only while nobody is queued (with waiters parked, the
    /// value is unlikely to come free soon, and spinning would take CPU from
    /// the threads that hold it; parking_lot's mutex uses the same rule).
    #[cold]
    #[inline(never)]
    fn acquire_slow<P: SharedPolicy>(
        &self,
        policy: &P,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        let spin = Spin::new();
        while policy.barging() && waiters_of(self.state.load(Relaxed)) == 0 && spin.spin() {
            match self.arrive(policy, arg) {
                TryAcquire::Acquired => return Ok(()),
                TryAcquire::Closed => return Err(AcquireFailed::Closed),
                TryAcquire::Failed => {}
            }
        }
        self.do_acquire_shared(policy, arg, deadline)
    }

    /// Releases `arg` and wakes the queue if anyone waits.
    #[inline]
    pub(crate) fn release_shared<P: SharedPolicy>(&self, policy: &P, arg: u32) {
        // AcqRel on either path: Release publishes the caller's writes to the
        // acquirer; Acquire synchronizes with counted waiters' links
        // (invariant 1).
        let s = if policy.release_adds() {
            // The policy promises `value + arg <= u32::MAX`, so no carry
            // leaves the value field. (Were it broken, the carry would fall
            // off bit 63: the waiter count and the closed bit below cannot be
            // touched by an addition to the high half.)
            let delta = u64::from(arg) << VALUE_SHIFT;
            let s = self.state.fetch_add(delta, AcqRel);
            debug_assert_eq!(
                policy.try_release_shared(value_of(s), arg),
                value_of(s).wrapping_add(arg)
            );
            s
        } else {
            let mut s = self.state.load(Relaxed);
            loop {
                let value = policy.try_release_shared(value_of(s), arg);
                match self
                    .state
                    .compare_exchange_weak(s, with_value(s, value), AcqRel, Relaxed)
                {
                    Ok(_) => break s,
                    Err(actual) => s = actual,
                }
            }
        };
        // A barging release skips the queue unless somebody may sleep
        // through it (the armed bit): while the first waiter is awake, or
        // woken and waiting for a CPU, its own re-check covers this value, and
        // arrivals may take it anyway. (At 16 threads over 4 nonfair permits,
        // 41% of all releases used to take the slow path in that state.) A
        // strict FIFO release always goes in: with the first waiter awake, its
        // value is for the next one (`do_release_shared`).
        if waiters_of(s) > 0 && (is_armed(s) || !policy.barging()) {
            self.release_slow(if policy.out_of_turn() { arg } else { 0 }, policy.barging());
        }
    }

    /// Applies `f` to the value until the CAS succeeds, without waking anyone;
    /// for changes that only ever take from the value. Returns the old value,
    /// or `Err(value)` if `f` returned `None`.
    pub(crate) fn fetch_update_value(
        &self,
        mut f: impl FnMut(u32) -> Option<u32>,
    ) -> Result<u32, u32> {
        let mut s = self.state.load(Relaxed);
        loop {
            let Some(value) = f(value_of(s)) else {
                return Err(value_of(s));
            };
            match self
                .state
                .compare_exchange_weak(s, with_value(s, value), AcqRel, Relaxed)
            {
                Ok(_) => return Ok(value_of(s)),
                Err(actual) => s = actual,
            }
        }
    }

    /// Closes the synchronizer: every queued and future acquire fails.
    pub(crate) fn close(&self) {
        // AcqRel RMW (invariant 1): a waiter counted before it is visible to
        // the walk below; a waiter counted after it reads CLOSED.
        let old = self.state.fetch_or(CLOSED, AcqRel);
        if is_closed(old) || waiters_of(old) == 0 {
            return;
        }
        let _guard = self.reclaim.enter();
        let mut t = self.tail.load(Acquire);
        while !t.is_null() {
            // SAFETY: loaded from `tail` or a `prev` link inside the guard.
            let node = unsafe { Node::get(t) };
            let prev = node.prev.load(Acquire);
            if prev.is_null() {
                break; // the head: nobody waits on it
            }
            if node.status.load(Acquire) != CANCELLED {
                wake(t);
            }
            t = prev;
        }
    }

    #[cold]
    #[inline(never)]
    fn release_slow(&self, released: u32, barging: bool) {
        let _guard = self.reclaim.enter();
        self.do_release_shared(released, barging);
    }

    /// The queued part of an acquire (`doAcquireSharedNanos`).
    #[cold]
    #[inline(never)]
    fn do_acquire_shared<P: SharedPolicy>(
        &self,
        policy: &P,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        let mut guard = Some(self.reclaim.enter());
        let node = self.add_waiter(arg);
        // SAFETY: our own node; nobody retires it while we wait (invariant 6).
        let me = unsafe { Node::get(node) };
        let mut timed_out = false;
        let mut woken = false;
        let mut published = false;
        let mut armed_pred = ptr::null_mut(); // the predecessor our last RMW armed
        let spin = Spin::new();
        let mut spun_second = false; // spent budget as second in line
        let mut renewals = SECOND_IN_LINE_RENEWALS;
        let mut window = YieldWindow::new(YIELD_WINDOW);
        loop {
            // Only we write `prev` (invariant 2).
            let mut pred = me.prev.load(Relaxed);
            // Woken behind a node that left (cancelled, or served out of
            // turn)? Unlink it first, so that a waiter that is in fact first
            // takes its turn as first and becomes head. (Left linked, it
            // would take its value out of turn and leave the queue too, and
            // a head that never moves keeps every release walking past a
            // dead `next` hint.)
            // SAFETY: our predecessor (invariant 6).
            if woken && unsafe { Node::get(pred) }.status.load(Acquire) == CANCELLED {
                pred = self.skip_cancelled(node, pred);
            }
            let first = pred == self.head.load(Acquire);
            // A woken waiter may take value out of turn, if the policy allows:
            // a release woke it because there was value for it
            // (`wake_ahead`), and waiting for the waiters ahead of it to wake
            // one after another is what the wake-ahead avoids.
            let out_of_turn = !first && woken && policy.out_of_turn();
            woken = false;
            if first || out_of_turn {
                let ahead = if first {
                    None
                } else {
                    Some(self.need_ahead(me))
                };
                match self.try_acquire_queued(policy, arg, ahead) {
                    Queued::Acquired(propagate) if first => {
                        self.set_head_and_propagate(node, pred, propagate, policy.barging());
                        // SAFETY: R1: `head` now names our node and we cleared
                        // our `prev`; we are the old head's only successor, so
                        // no link leads to it and nobody else retires it.
                        unsafe { self.reclaim.retire(pred) };
                        return Ok(());
                    }
                    Queued::Acquired(_) => {
                        // Out of turn: our count left with the CAS; leave the
                        // queue the way a cancelled waiter does. (The mutant
                        // forgets to: its node stays in the chain, live.)
                        #[cfg(not(aqs_mutant = "no_unlink"))]
                        self.unlink(node);
                        return Ok(());
                    }
                    Queued::Closed => {
                        self.cancel_acquire(node);
                        return Err(AcquireFailed::Closed);
                    }
                    Queued::Failed => {}
                }
            } else if is_closed(self.state.load(Acquire)) {
                self.cancel_acquire(node);
                return Err(AcquireFailed::Closed);
            }
            if timed_out || deadline.is_some_and(deadline_passed) {
                self.cancel_acquire(node);
                return Err(AcquireFailed::TimedOut);
            }
            // The first waiter is next to run: spin a little before parking
            // (a bounded number of rounds per wake-up, then yields). Having
            // just become first after spinning as second, it gets the budget
            // afresh, once: what it spent was the wait for its predecessor to
            // wake, not for a permit.
            if first && spun_second {
                spun_second = false;
                spin.reset();
            }
            // Second in line, behind a first waiter whose value is free (it
            // was woken and has not run yet): spin through its wake-up, for
            // up to `SECOND_IN_LINE_RENEWALS` more budgets. Strict FIFO only.
            if !first
                && !policy.barging()
                && spin.can_spin(renewals)
                && self.first_is_waking(pred)
                && spin.spin_renewing(&mut renewals)
            {
                spun_second = true;
                continue;
            }
            if first && spin.spin() {
                continue;
            }
            if !self.should_park_after_failed_acquire(pred, node, &mut armed_pred) {
                published = false; // (re)armed a predecessor: publish after it
            } else {
                // Barging policies: publish the armed bit before every park,
                // after the last arming, then re-run the whole check (head,
                // hook) once: a release whose RMW on the word came before
                // ours is read by it (we see its value, and whether we are
                // first); one after it sees the bit and goes through the
                // head. (Strict FIFO releases always go through the head.)
                // The `no_armed` mutant parks without publishing; the
                // `no_recheck` one publishes but parks without the re-check.
                #[cfg(not(aqs_mutant = "no_armed"))]
                if !published && policy.barging() {
                    self.state.fetch_or(ARMED, AcqRel);
                    published = true;
                    #[cfg(not(aqs_mutant = "no_recheck"))]
                    continue;
                }
                published = false;
                // Node invariant 4: never park inside a guard. Nor yield: a
                // thread inside a guard holds up every free, and waiters that
                // yield in turn would keep one inside at every instant.
                drop(guard.take());
                // Strict FIFO, early in the wait: give the CPU away and look
                // again, instead of sleeping (`YIELD_WINDOW`). To the protocol
                // this is a park that returns at once: we are armed, and a
                // release that counts on us sets our flag, which we consume
                // as after a park.
                let yielded = !policy.barging() && self.yields() && window.yield_now();
                if yielded {
                    woken = me.wake.swap(0, Acquire) != 0;
                } else {
                    let parked = park(node as usize, || me.wake.load(Acquire) == 0, deadline);
                    // Consume the wake-up before re-checking anything; Acquire
                    // makes the waker's changes visible to the re-check.
                    me.wake.swap(0, Acquire);
                    timed_out = parked == Parked::TimedOut;
                    woken = !timed_out;
                    window.reset();
                }
                // The `yield_unguarded` mutant goes on after a yield without a
                // guard; loom must see it read a freed node.
                if !(cfg!(aqs_mutant = "yield_unguarded") && yielded) {
                    guard = Some(self.reclaim.enter());
                }
                if woken {
                    spin.reset();
                    renewals = SECOND_IN_LINE_RENEWALS;
                }
            }
        }
    }

    /// Whether strict FIFO waiters yield before parking (`YIELD_WINDOW`):
    /// always, except in loom models that did not ask for it.
    #[inline]
    fn yields(&self) -> bool {
        #[cfg(loom)]
        {
            self.loom_yields
        }
        #[cfg(not(loom))]
        {
            true
        }
    }

    /// Whether `pred`, our predecessor, is the live first waiter and the value
    /// it needs is there (inside a guard): it has been woken, or is about to
    /// take the value, and we are next.
    ///
    /// A strict FIFO waiter spins there instead of parking. Otherwise two
    /// threads over one fair permit lock into a convoy: the releaser wakes
    /// the first waiter, comes back while that one is still waking, queues
    /// second and parks, so every permit costs a full wake-up (4 to 14 µs a
    /// pair here, with both CPUs mostly idle). Spinning through the wake-up,
    /// the second is first by the time the new head releases, and catches
    /// the permit without parking (0.34 to 0.46 µs a pair). Only the second
    /// in line spins, and only while the value waits, so with more threads
    /// than CPUs it rarely happens (under 0.3% of pairs at 4 threads over one
    /// permit) and takes no CPU from the waiter being woken.
    fn first_is_waking(&self, pred: *mut Node) -> bool {
        // SAFETY: our predecessor (invariant 6).
        let first = unsafe { Node::get(pred) };
        let h = first.prev.load(Acquire);
        // A cancelled predecessor is for `should_park_after_failed_acquire`
        // to skip, not to wait on.
        !h.is_null()
            && h == self.head.load(Acquire)
            && first.status.load(Acquire) != CANCELLED
            && value_of(self.state.load(Acquire)) >= first.need
    }

    /// A queued waiter's hook call: acquires and leaves the waiter count in
    /// one CAS. `ahead` is `None` for the first waiter, and what the waiters
    /// in front of an out-of-turn caller need otherwise.
    fn try_acquire_queued<P: SharedPolicy>(
        &self,
        policy: &P,
        arg: u32,
        ahead: Option<u32>,
    ) -> Queued {
        let mut s = self.state.load(Acquire);
        loop {
            if is_closed(s) {
                return Queued::Closed;
            }
            let acquired = match ahead {
                None => policy.try_acquire_shared(value_of(s), arg, false),
                Some(ahead) => policy.try_acquire_out_of_turn(value_of(s), arg, ahead),
            };
            let Some(acquired) = acquired else {
                return Queued::Failed;
            };
            let new = after_take(s, acquired.value) - ONE_WAITER;
            match self.state.compare_exchange_weak(s, new, AcqRel, Acquire) {
                Ok(_) => return Queued::Acquired(acquired.propagate),
                Err(actual) => s = actual,
            }
        }
    }

    /// Creates, links and counts a node for the calling thread (inside a guard).
    /// `arg` is at least 1: a request for nothing never waits (the semaphore
    /// answers it without the core), and `wake_ahead` stops at a value that
    /// covers nobody behind the first waiter.
    fn add_waiter(&self, arg: u32) -> *mut Node {
        debug_assert!(arg > 0, "a request for nothing was queued");
        let node = Node::alloc(arg);
        self.enq(node);
        // Invariant 1 (P2): counted only after linking, by an RMW.
        self.state.fetch_add(ONE_WAITER, AcqRel);
        node
    }

    /// Links `node` at the tail (inside a guard), creating the dummy head on
    /// first use.
    fn enq(&self, node: *mut Node) {
        // SAFETY: freshly allocated and not yet published: ours alone.
        let me = unsafe { Node::get(node) };
        loop {
            let t = self.tail.load(Acquire);
            if t.is_null() {
                self.init_queue();
                continue;
            }
            me.prev.store(t, Relaxed);
            // AcqRel: publishes `prev` and the node's initial fields.
            if self.tail.compare_exchange(t, node, AcqRel, Acquire).is_ok() {
                // SAFETY: `t` was the tail at our CAS. A node leaves the tail
                // before it is retired (R3) and we entered our guard before
                // loading it, so it is not freed.
                unsafe { Node::get(t) }.next.store(node, Release);
                return;
            }
        }
    }

    #[cold]
    fn init_queue(&self) {
        let dummy = Node::alloc(0);
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

    /// Makes `node` the head and wakes the next waiter if a following acquire
    /// may succeed, or if a release is pending (JDK-6801020).
    fn set_head_and_propagate(
        &self,
        node: *mut Node,
        pred: *mut Node,
        propagate: bool,
        barging: bool,
    ) {
        // SAFETY: our own node, and our predecessor (invariant 6).
        let (me, old) = unsafe { (Node::get(node), Node::get(pred)) };
        self.head.store(node, Release);
        me.prev.store(ptr::null_mut(), Release);
        // P3: take over the old head's status with an RMW that marks it
        // PASSED. A releaser whose RMW on it came first is read here (its
        // PROPAGATE mark, or the SIGNAL it cleared), and it may stop there:
        // this check covers it. A releaser that comes later fails on PASSED
        // and retries on the new head.
        #[cfg(aqs_mutant = "stale_value")]
        let early = value_of(self.state.load(Acquire));
        let old_status = old.status.swap(PASSED, AcqRel);
        #[cfg(aqs_mutant = "no_propagate")]
        let go = {
            let _ = (old_status, me);
            propagate
        };
        #[cfg(not(aqs_mutant = "no_propagate"))]
        let go = propagate || {
            // Wake the successor only if there is value to take *now*, and a
            // status says a waiter or a release may need it: the old head's
            // (a release left PROPAGATE there or cleared its SIGNAL), or our
            // own (SIGNAL: a successor parks; PROPAGATE: a release found us
            // already head with nobody to wake). The value load must come
            // after both RMWs: each reads any release whose RMW on that
            // status came first, so the load sees that release's value. With
            // nothing left, what it released was taken already (by us, or by
            // a waiter woken out of turn), and a release after our RMWs finds
            // our SIGNAL and wakes the successor itself.
            //
            // JDK 8 propagates on any such status alone. That woke the
            // successor after every queued acquire (it woke, failed, parked
            // again: a futex round trip per hand-off), and worse: the woken
            // waiter spun as first before arming us, a release during that
            // spin marked us PROPAGATE, and the next head woke *its*
            // successor for nothing in turn. At 16 threads over one fair
            // permit that regime, once entered, held at 8.4 µs per hand-off
            // against 4.9 µs without it.
            let own = me.status.fetch_or(0, AcqRel);
            let marked = old_status < 0 || own == PROPAGATE || own == SIGNAL;
            // A successor that armed us sleeps counting on our release; the
            // releaser that woke us cleared the armed bit, so set it again
            // (and read the value from that RMW: a release before it is
            // seen here, one after it sees the bit).
            let armed = (own == SIGNAL && barging).then(|| self.state.fetch_or(ARMED, AcqRel));
            // The mutant reads the value before the swap: a release between
            // that read and the swap stops at the old head (P3) and is lost.
            #[cfg(aqs_mutant = "stale_value")]
            let value = early;
            #[cfg(aqs_mutant = "stale_value")]
            let _ = armed;
            #[cfg(not(aqs_mutant = "stale_value"))]
            let value = value_of(armed.unwrap_or_else(|| self.state.load(Acquire)));
            marked && value > 0
        };
        if go {
            self.do_release_shared(0, barging);
        }
    }

    /// Wakes the head's successor, or leaves PROPAGATE on the head so that the
    /// next head propagates (inside a guard). `released` is what a release
    /// just returned (0 when propagating): see [`RawSync::wake_ahead`].
    /// `barging` is the policy's: a barging release follows a moved head (see
    /// the end of the loop); a strict FIFO one instead wakes the next waiter
    /// its value can serve when the first one is already awake (see
    /// `wake_ahead`).
    fn do_release_shared(&self, released: u32, barging: bool) {
        loop {
            let h = self.head.load(Acquire);
            // Unlike the JDK, no `h != tail` shortcut: `tail` is not ordered
            // with a waiter that armed `h` after seeing a stale head, so the
            // shortcut could skip the status RMW that P1/P3 rely on (loom found
            // this: the new head read a stale tail, its successor parked).
            if h.is_null() {
                return; // no queue yet: nobody can have counted as a waiter
            }
            // SAFETY: loaded from `head` inside a guard.
            let head = unsafe { Node::get(h) };
            let ws = head.status.load(Acquire);
            if ws == SIGNAL {
                if head
                    .status
                    .compare_exchange(SIGNAL, NONE, AcqRel, Acquire)
                    .is_err()
                {
                    continue;
                }
                // We consumed the SIGNAL the armed bit stood for: clear it
                // *before* waking, so that the woken waiter's own publish
                // before it parks again comes later.
                #[cfg(not(aqs_mutant = "armed_late_clear"))]
                if barging {
                    self.disarm(h);
                }
                let first = self.unpark_successor(h);
                // The mutant clears after waking: the woken waiter may
                // already have failed, published again and parked.
                #[cfg(aqs_mutant = "armed_late_clear")]
                if barging {
                    self.disarm(h);
                }
                // A barging release spends only what it released (arrivals
                // may take the rest); a strict FIFO one wakes every waiter
                // the available value covers (see `wake_ahead`).
                if !first.is_null() && (released > 1 || (released > 0 && !barging)) {
                    self.wake_ahead(first, barging.then_some(released));
                }
            } else if ws == NONE {
                #[cfg(not(aqs_mutant = "no_propagate"))]
                if head
                    .status
                    .compare_exchange(NONE, PROPAGATE, AcqRel, Acquire)
                    .is_err()
                {
                    continue;
                }
            } else if ws == PROPAGATE {
                // Already marked; still RMW so that P1 and P3 order us
                // against the waiter's arming and the next head's takeover.
                if head.status.fetch_or(0, AcqRel) != PROPAGATE {
                    continue;
                }
            } else {
                // PASSED: the head moved on without seeing us; retry on the
                // new one (it is published: its owner stored `head` before
                // the swap we just read). The mutant gives up instead.
                #[cfg(not(aqs_mutant = "passed_no_retry"))]
                continue;
            }
            // Our RMW on `h` succeeded, so it comes before any takeover of
            // `h` in its modification order: if `h` is no longer the head, the
            // new head's swap read our RMW and its own check covers what we
            // released (P3), so we may stop here. A strict FIFO policy does:
            // going on through the new head (as JDK 8 does) wakes its
            // successor while the new head still holds what it took (more
            // than half of all wake-ups at 16 threads over 1 fair permit).
            // A barging policy goes on, like the JDK: the extra wake-up is
            // speculative but cheap there, because the woken first waiter
            // spins and usually catches the next release (without it, 16
            // threads over 4 nonfair permits ran 2.5x slower).
            if ws != SIGNAL && released > 0 && !barging {
                // The first waiter was woken by an earlier release (or has not
                // parked yet), so our value is for someone behind it. Without
                // this, a burst of single releases reached the waiters one
                // hand-off after another along the propagation chain, and at
                // 16 threads over 4 fair permits a CPU sat idle 40% of the
                // time. Barging policies skip it: their arrivals take freed
                // value anyway, and the extra wake-ups cost them throughput.
                let mut first = head.next.load(Acquire);
                // SAFETY: `next` links loaded inside the guard lead to
                // unretired nodes (invariant 5), which stay allocated.
                while !first.is_null()
                    && unsafe { Node::get(first) }.status.load(Acquire) == CANCELLED
                {
                    // SAFETY: as above.
                    first = unsafe { Node::get(first) }.next.load(Acquire);
                }
                if !first.is_null() {
                    self.wake_ahead(first, None);
                }
            }
            // A barging release goes in only when it read the armed bit
            // (`release_shared`), and the bit stands for a SIGNAL on the
            // head. Finding none, the bit is stale: it was published by a
            // waiter behind the first (the first waiter's takeover sets it
            // again), or by a waiter whose re-check then acquired (its
            // takeover marks the old head PASSED, so no releaser ever consumes
            // that SIGNAL). Left set, it sends every release through here
            // until some waiter parks and is woken: at 16 threads over 1
            // nonfair permit that was 85% of all releases, at 16 over 4 about
            // 23%. So clear it, and re-read the head's status (invariant 8).
            if barging && ws != SIGNAL && self.disarm_stale(head) {
                continue; // a waiter armed the head meanwhile: wake it
            }
            if !barging || h == self.head.load(Acquire) {
                return;
            }
        }
    }

    /// Clears an armed bit that no SIGNAL on the head stands for, after our
    /// RMW on `head`'s status found it `NONE` or `PROPAGATE`; returns whether
    /// a waiter has armed `head` since (then the caller goes round again and
    /// consumes that SIGNAL, waking the waiter).
    ///
    /// Why a waiter cannot sleep through this (P1 again). A waiter whose
    /// arming CAS on `head`'s status came before our earlier RMW on it would
    /// have made that RMW read `SIGNAL`, unless another releaser consumed
    /// that `SIGNAL` first, and that releaser woke it. So consider a waiter
    /// whose arming came after our earlier RMW. If it also comes before our
    /// `fetch_or` below, we read `SIGNAL` and wake it. If it comes after, it
    /// reads our `fetch_or`, so our clear happens-before its publishing RMW,
    /// which therefore comes later in the word's order and keeps its bit;
    /// and the re-check after that RMW sees what we released. A waiter whose
    /// predecessor is not the head relies on that predecessor's takeover to
    /// set the bit again (invariant 8), and the takeover's RMWs come after
    /// ours on `head`'s status, or it reads `PASSED` and the caller retries.
    fn disarm_stale(&self, head: &Node) -> bool {
        self.state.fetch_and(!ARMED, AcqRel);
        // The mutant skips the re-read: a waiter that published between our
        // status RMW and the clear sleeps with the bit cleared.
        #[cfg(aqs_mutant = "blind_disarm")]
        return false;
        #[cfg(not(aqs_mutant = "blind_disarm"))]
        {
            head.status.fetch_or(0, AcqRel) == SIGNAL
        }
    }

    /// Clears the armed bit after consuming `h`'s SIGNAL. If `h` is no longer
    /// the head, a waiter may have published the bit for the new head: its
    /// RMW came before our clear in the word's order, so our clear
    /// synchronizes with it and the `head` load after it sees the move (the
    /// waiter loaded the new head before publishing); then set the bit back.
    /// A waiter that publishes after our clear keeps its bit.
    fn disarm(&self, h: *mut Node) {
        self.state.fetch_and(!ARMED, AcqRel);
        if self.head.load(Acquire) != h {
            self.state.fetch_or(ARMED, AcqRel);
        }
    }

    /// Wakes, after `first` (the first live waiter), the further waiters that
    /// the available value can serve, so that their wake-up latencies overlap
    /// instead of adding up along the propagation chain.
    ///
    /// *Covered* bounds the walk: the value now available, less the needs of
    /// every live waiter in front (all of them come first in FIFO order).
    /// Waiters whose wake flag is still set were woken earlier and have not
    /// run yet; they are counted in front but not woken again.
    ///
    /// A strict FIFO release (`budget` is `None`) wakes every waiter it
    /// covers, whoever released the value: fair arrivals never take value
    /// while others are queued, so a unit with no waiter woken for it would
    /// sit idle until a later release or a propagation reached it. (An
    /// earlier version woke only as many units as this release returned, and
    /// charged them to any waiter with a clear flag. A waiter that had already
    /// woken, consumed its flag and not yet taken its unit was charged too,
    /// and the released unit then had nobody on the way: at 16 threads over 4
    /// fair permits about 1.6 of the 4 permits sat in the word that way, and
    /// the CPUs idled 30% of the time.) A barging release that woke `first`
    /// itself passes what it released as `budget`: `first`'s need is charged
    /// first, and it wakes no more than the rest, since arrivals may take any
    /// value it leaves.
    ///
    /// Called by a release that woke `first` itself (barging: only when it
    /// released more than one unit), and by a strict FIFO release that found
    /// `first` already awake. These wake-ups are an optimisation the protocol
    /// never relies on: each woken waiter re-checks, spins briefly for its
    /// turn, and is woken again by propagation if it parked meanwhile.
    fn wake_ahead(&self, first: *mut Node, budget: Option<u32>) {
        // SAFETY: `first` was loaded from a link inside our guard.
        let first = unsafe { Node::get(first) };
        let Some(mut covered) = value_of(self.state.load(Acquire)).checked_sub(first.need) else {
            return;
        };
        let mut budget = match budget.map(|released| released.checked_sub(first.need)) {
            Some(None) => return, // `first` alone needs more than was released
            budget => budget.flatten(),
        };
        // Nothing left for anyone behind `first` (every queued need is at
        // least 1: see `add_waiter`).
        if covered == 0 {
            return;
        }
        let mut n = first.next.load(Acquire);
        while !n.is_null() {
            // SAFETY: loaded from a `next` link inside the guard (invariant 5).
            let node = unsafe { Node::get(n) };
            if node.status.load(Acquire) != CANCELLED {
                match covered.checked_sub(node.need) {
                    Some(left) => covered = left,
                    None => return,
                }
                // A set flag: woken by an earlier release, not yet running.
                if node.wake.load(Acquire) == 0 {
                    if let Some(units) = budget {
                        match units.checked_sub(node.need) {
                            Some(left) => budget = Some(left),
                            None => return,
                        }
                    }
                    wake(n);
                }
            }
            n = node.next.load(Acquire);
        }
    }

    /// The total need of the live waiters in front of `me` (our own node),
    /// walking `prev` links to the head (inside a guard). Over-counts waiters
    /// that are leaving or just became head; never misses one: every waiter
    /// ahead of us is on our `prev` chain (invariant 2).
    fn need_ahead(&self, me: &Node) -> u32 {
        let mut sum = 0u32;
        let mut p = me.prev.load(Relaxed); // only we write it (invariant 2)
        loop {
            // SAFETY: our predecessor (invariant 6), or loaded from a `prev`
            // link inside our guard, so not freed (node.rs).
            let n = unsafe { Node::get(p) };
            let prev = n.prev.load(Acquire);
            if prev.is_null() {
                return sum; // the head: it already has what it took
            }
            if n.status.load(Acquire) != CANCELLED {
                sum = sum.saturating_add(n.need);
            }
            p = prev;
        }
    }

    /// Wakes the first live waiter after `node` and returns it, or null if
    /// there is none (inside a guard).
    fn unpark_successor(&self, node: *mut Node) -> *mut Node {
        // SAFETY: the callers hold `node` under a guard (a head they loaded,
        // or their own node).
        let me = unsafe { Node::get(node) };
        let mut s = me.next.load(Acquire);
        // SAFETY: `next` links lead only to unretired nodes when loaded
        // (invariant 5), and we are inside a guard.
        if s.is_null() || unsafe { Node::get(s) }.status.load(Acquire) == CANCELLED {
            // The hint is missing or dead: walk back from the tail and keep
            // the live node closest to `node`. Stop at a head (null `prev`),
            // so that a stale `node` makes us wake the current first waiter.
            s = ptr::null_mut();
            let mut t = self.tail.load(Acquire);
            while !t.is_null() && t != node {
                // SAFETY: loaded from `tail` or `prev` inside the guard.
                let n = unsafe { Node::get(t) };
                let prev = n.prev.load(Acquire);
                if prev.is_null() {
                    break;
                }
                if n.status.load(Acquire) != CANCELLED {
                    s = t;
                }
                t = prev;
            }
        }
        if !s.is_null() {
            wake(s);
        }
        s
    }

    /// Arms `pred` to wake us, skipping cancelled predecessors first; returns
    /// true only when `pred` is still armed by *our* RMW (`armed_pred` names the
    /// node we last armed), so that the caller re-runs the hook once after
    /// arming before it may park (P1).
    ///
    /// A `SIGNAL` that someone else wrote is re-armed, not trusted: a node
    /// that was `pred`'s successor before us (it left, or we skipped it) armed
    /// it for itself, and a release may have consumed that `SIGNAL` and woken
    /// that node. A plain load can still return the consumed `SIGNAL` (loom
    /// found this: the third of three waiters parked on it, with the middle
    /// one gone). Our own RMW either comes before the consuming one, which
    /// then synchronizes with it and wakes us, or reads it, and we re-check.
    /// (JDK 8 trusts the load: its volatile reads are sequentially
    /// consistent.)
    fn should_park_after_failed_acquire(
        &self,
        pred: *mut Node,
        node: *mut Node,
        armed_pred: &mut *mut Node,
    ) -> bool {
        // SAFETY: our predecessor (invariant 6).
        let ws = unsafe { Node::get(pred) }.status.load(Acquire);
        // The mutant trusts any `SIGNAL`.
        if ws == SIGNAL && (*armed_pred == pred || cfg!(aqs_mutant = "foreign_signal")) {
            return true;
        }
        if ws == CANCELLED {
            self.skip_cancelled(node, pred);
        } else if self.arm(pred) {
            *armed_pred = pred;
            // The real code never parks on the round that armed: it re-runs
            // the hook first. The mutant re-creates the lost wake-up.
            #[cfg(aqs_mutant = "no_recheck")]
            return true;
        }
        false
    }

    /// Unlinks the run of cancelled predecessors in front of `node`, retiring
    /// each (R2); returns the first live predecessor. Called by `node`'s owner.
    fn skip_cancelled(&self, node: *mut Node, mut pred: *mut Node) -> *mut Node {
        // SAFETY: our own node (invariant 6).
        let me = unsafe { Node::get(node) };
        loop {
            // SAFETY: `pred` is our predecessor: nobody but us retires it.
            let p = unsafe { Node::get(pred) };
            if p.status.load(Acquire) != CANCELLED {
                return pred;
            }
            // Final: `p`'s owner skipped its own dead predecessors before it
            // marked itself cancelled (and our Acquire load saw that mark). A
            // cancelled node is never head, so `pp` is not null.
            let pp = p.prev.load(Acquire);
            me.prev.store(pp, Release);
            // SAFETY: `pp` is now our predecessor (invariant 6).
            let before = unsafe { Node::get(pp) };
            let _ = before.next.compare_exchange(pred, node, AcqRel, Acquire);
            // SAFETY: R2: we were `pred`'s unique successor (invariant 3); our
            // `prev` and `pp.next` no longer lead to it, `tail` does not (we
            // are behind it) and `head` does not (invariant 4).
            unsafe { self.reclaim.retire(pred) };
            pred = pp;
        }
    }

    /// Gives up a queued acquire (timeout or close): leaves the waiter count,
    /// marks the node cancelled, unlinks it if it is the tail, and otherwise
    /// makes sure its successor will still be woken (inside a guard).
    fn cancel_acquire(&self, node: *mut Node) {
        self.state.fetch_sub(ONE_WAITER, AcqRel);
        self.unlink(node);
    }

    /// Takes `node` out of the queue for good, its owner's count already gone
    /// from the state word (a cancel, or an out-of-turn acquire): marks it
    /// cancelled, unlinks it if it is the tail, and otherwise makes sure its
    /// successor will still be woken (inside a guard).
    fn unlink(&self, node: *mut Node) {
        // SAFETY: our own node (invariant 6).
        let me = unsafe { Node::get(node) };
        let pred = self.skip_cancelled(node, me.prev.load(Relaxed));
        // From here on our successor may skip and retire us (R2); we stay
        // inside our guard, so the memory stays valid while we finish.
        me.status.swap(CANCELLED, AcqRel);
        if self
            .tail
            .compare_exchange(node, pred, AcqRel, Acquire)
            .is_ok()
        {
            // SAFETY: our predecessor (invariant 6).
            let p = unsafe { Node::get(pred) };
            let _ = p
                .next
                .compare_exchange(node, ptr::null_mut(), AcqRel, Acquire);
            // SAFETY: R3: no successor linked behind us (the tail CAS would
            // have failed), `tail` and `pred.next` no longer name us, and the
            // head is never cancelled.
            unsafe { self.reclaim.retire(node) };
            return;
        }
        #[cfg(aqs_mutant = "cancel_no_wake")]
        return;
        // A successor is linked (or linking). Either `pred` is armed and will
        // wake it when it releases, or we wake it now: always when `pred` is
        // the head, since a release may have just targeted us.
        //
        // P4, our own store-buffering pair: we marked ourselves `CANCELLED`
        // and now read `head` and `pred`'s status; a new head at `pred`
        // stores `head`, then consumes `pred`'s `SIGNAL` and reads our status
        // to pick whom to wake. With plain loads on both sides each can miss
        // the other's write: we see `pred` armed and not yet head, it sees us
        // live and wakes us, and our successor sleeps with value free (Miri
        // found this). So we arm `pred` with an RMW even when it reads
        // `SIGNAL`: either the releaser's RMW there reads ours and then sees
        // us cancelled (it wakes past us), or ours reads its, and the second
        // `head` load sees `pred` as head (we wake our successor ourselves;
        // the JDK's `pred.thread` test). The `unlink_load` mutant trusts a
        // plain load of `SIGNAL`, as JDK 8 can (its volatiles are
        // sequentially consistent).
        #[allow(unreachable_code)]
        let armed = pred != self.head.load(Acquire)
            // SAFETY: our predecessor (invariant 6).
            && ((cfg!(aqs_mutant = "unlink_load") && unsafe { Node::get(pred) }.status.load(Acquire) == SIGNAL)
                || self.arm(pred))
            && pred != self.head.load(Acquire);
        if !armed {
            self.unpark_successor(node);
        }
    }

    /// Sets `pred`'s status to `SIGNAL` with an RMW, so that `pred`'s release
    /// wakes its successor, even when `pred` already reads `SIGNAL` (a plain
    /// load may return a `SIGNAL` that a release has consumed; P1, P4).
    /// Returns false, arming nothing, if `pred` is `CANCELLED` or has been
    /// replaced as head (`PASSED`): its successor must not wait on it.
    fn arm(&self, pred: *mut Node) -> bool {
        // SAFETY: the caller's predecessor (invariant 6).
        let p = unsafe { Node::get(pred) };
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

    /// The queue as a list of statuses from head to tail; for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn queue_statuses(&self) -> Vec<i32> {
        let _guard = self.reclaim.enter();
        let mut out = Vec::new();
        let mut t = self.tail.load(Acquire);
        while !t.is_null() {
            // SAFETY: inside a guard.
            let n = unsafe { Node::get(t) };
            out.push(n.status.load(Acquire));
            t = n.prev.load(Acquire);
        }
        out.reverse();
        out
    }

    /// Sets the armed bit with nobody asleep on it, the state a waiter
    /// leaves when the re-check after its publishing RMW acquires; for the
    /// loom model that starts there.
    #[cfg(loom)]
    pub(crate) fn arm_stale(&self) {
        self.state.fetch_or(ARMED, AcqRel);
    }

    /// Lets strict FIFO waiters yield once before parking, as real builds do
    /// for `YIELD_WINDOW`; for the loom models of that path. Off by default:
    /// a waiter that yields and looks again before it parks needs more
    /// preemptions to be caught asleep, which would take the models built
    /// around a park at the wrong moment past their bounds.
    #[cfg(loom)]
    pub(crate) fn loom_yield_before_parking(&mut self) {
        self.loom_yields = true;
    }

    /// The queue nodes that are neither the head nor cancelled; for tests.
    #[cfg(any(test, loom))]
    pub(crate) fn live_nodes(&self) -> usize {
        let _guard = self.reclaim.enter();
        let mut live = 0;
        let mut t = self.tail.load(Acquire);
        while !t.is_null() {
            // SAFETY: loaded from `tail` or a `prev` link inside the guard.
            let n = unsafe { Node::get(t) };
            t = n.prev.load(Acquire);
            if !t.is_null() && n.status.load(Acquire) != CANCELLED {
                live += 1;
            }
        }
        live
    }

    /// The reclamation state; for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn reclaim(&self) -> &Reclaim {
        &self.reclaim
    }
}

/// The first waiter's hook result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queued {
    Acquired(bool),
    Failed,
    Closed,
}

/// Sets `node`'s wake flag and unparks its owner (inside a guard).
fn wake(node: *mut Node) {
    // An RMW, not a store (loom found this): the owner consumes the flag with
    // `swap(0)`, and a plain store of ours is not ordered against that earlier
    // swap, so the model lets the swap come after our store in the flag's
    // modification order (reading our indistinguishable 1) and the owner's
    // next `validate` read its own 0: a lost wake-up. With two RMWs, either
    // the owner's swap reads our 1 and synchronizes with everything we did
    // before waking it, or our swap comes later and `validate`, which runs
    // after our `unpark_one` under the same lock, must see it.
    // SAFETY: callers hold `node` under a guard.
    let flag = &unsafe { Node::get(node) }.wake;
    #[cfg(not(aqs_mutant = "wake_store"))]
    if flag.swap(1, Release) != 0 {
        // Already pending: the waker whose swap set it calls `unpark_one`
        // (or already has), and the owner, whose consuming swap comes after
        // ours in the flag's order, synchronizes with us too. A second
        // unpark would only take the bucket lock for nothing.
        return;
    }
    // The mutant re-creates the bug: a plain store.
    #[cfg(aqs_mutant = "wake_store")]
    flag.store(1, Release);
    unpark_one(node as usize);
}

impl Drop for RawSync {
    fn drop(&mut self) {
        // A failed loom model (a deadlock) unwinds the model's threads after
        // loom's execution is gone, and the loom atomics below would then
        // panic inside a panic and abort the report. The model has failed
        // already; leak the queue.
        #[cfg(loom)]
        if std::thread::panicking() {
            return;
        }
        // `&mut self`: no thread is inside the queue. Free the chain from the
        // tail (which reaches every unretired node, invariant 2 and 5), then
        // the retired list.
        let mut t = self.tail.load(Relaxed);
        while !t.is_null() {
            // SAFETY: unretired chain nodes, reachable only from here now.
            let prev = unsafe { Node::get(t) }.prev.load(Relaxed);
            // SAFETY: as above; each chain node is freed once.
            unsafe { Node::free(t) };
            t = prev;
        }
        self.reclaim.drain();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    /// A plain counting policy (nonfair) for driving the core directly.
    struct Count;

    impl SharedPolicy for Count {
        fn try_acquire_shared(
            &self,
            value: u32,
            arg: u32,
            _others_queued: bool,
        ) -> Option<Acquired> {
            let left = value.checked_sub(arg)?;
            Some(Acquired {
                value: left,
                propagate: left > 0,
            })
        }
        fn try_release_shared(&self, value: u32, arg: u32) -> u32 {
            value.checked_add(arg).expect("overflow")
        }
        fn barging(&self) -> bool {
            true
        }
        fn out_of_turn(&self) -> bool {
            true
        }
        fn try_acquire_out_of_turn(&self, value: u32, arg: u32, _ahead: u32) -> Option<Acquired> {
            self.try_acquire_shared(value, arg, false)
        }
    }

    /// A strict FIFO counting policy (a fair semaphore's rules).
    struct Fifo;

    /// `Count`'s arithmetic under FIFO rules.
    impl SharedPolicy for Fifo {
        fn try_acquire_shared(
            &self,
            value: u32,
            arg: u32,
            others_queued: bool,
        ) -> Option<Acquired> {
            (!others_queued)
                .then(|| Count.try_acquire_shared(value, arg, false))
                .flatten()
        }
        fn try_release_shared(&self, value: u32, arg: u32) -> u32 {
            Count.try_release_shared(value, arg)
        }
        fn barging(&self) -> bool {
            false
        }
        fn out_of_turn(&self) -> bool {
            true
        }
        fn try_acquire_out_of_turn(&self, value: u32, arg: u32, ahead: u32) -> Option<Acquired> {
            Count
                .try_acquire_shared(value, arg, false)
                .filter(|a| a.value >= ahead)
        }
    }

    /// `n` nodes of need 1 linked and counted by the test thread, which
    /// stands in for their owners (nobody parks on them, so a wake-up only
    /// sets the node's flag, which the test can read).
    fn queue_of(sync: &RawSync, n: usize) -> Vec<*mut Node> {
        let _guard = sync.reclaim.enter();
        (0..n).map(|_| sync.add_waiter(1)).collect()
    }

    /// A core holding 2 units with four queued waiters (`queue_of`), its
    /// head armed if `armed` (with the armed bit for a barging policy), after
    /// one release of `n` under `policy`.
    fn four_waiters_after_release<P: SharedPolicy>(
        policy: &P,
        armed: bool,
        n: u32,
    ) -> (RawSync, Vec<*mut Node>) {
        let sync = RawSync::new(2);
        let nodes = queue_of(&sync, 4);
        if armed {
            assert!(
                sync.arm(sync.head.load(Acquire)),
                "the dummy head can be armed"
            );
            if policy.barging() {
                sync.state.fetch_or(ARMED, AcqRel);
            }
        }
        sync.release_shared(policy, n);
        (sync, nodes)
    }

    /// Which of `nodes` have their wake flag set.
    fn woken(nodes: &[*mut Node]) -> Vec<bool> {
        // SAFETY: node invariant 3: the nodes stay linked, so nobody retires
        // them, until their core is dropped.
        nodes
            .iter()
            .map(|&n| unsafe { Node::get(n) }.wake.load(Acquire) != 0)
            .collect()
    }

    /// Bounded wait for a condition that another thread makes true.
    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        for _ in 0..20_000 {
            if cond() {
                return;
            }
            thread::sleep(Duration::from_micros(500));
        }
        panic!("timed out waiting until {what}");
    }

    fn settled(sync: &RawSync) {
        assert_eq!(sync.reclaim().readers(), 0, "a guard was leaked");
        assert!(
            sync.reclaim().retired_is_empty(),
            "retired nodes were not freed after quiescence"
        );
    }

    #[test]
    fn state_word_fields_are_independent() {
        let s = with_value(CLOSED | (3 * ONE_WAITER), 7);
        assert_eq!(value_of(s), 7);
        assert_eq!(waiters_of(s), 3);
        assert!(is_closed(s));
        let s = with_value(s, u32::MAX);
        assert_eq!(
            (value_of(s), waiters_of(s), is_closed(s)),
            (u32::MAX, 3, true)
        );
        let s = with_value(0x3FFF_FFFF * ONE_WAITER, 0);
        assert_eq!(
            (value_of(s), waiters_of(s), is_closed(s), is_armed(s)),
            (0, 0x3FFF_FFFF, false, false)
        );
        let s = s | ARMED;
        assert_eq!(
            (value_of(s), waiters_of(s), is_closed(s), is_armed(s)),
            (0, 0x3FFF_FFFF, false, true)
        );
        assert_eq!(value_of(with_value(s, 1) - ONE_WAITER), 1);
    }

    #[test]
    fn uncontended_use_never_creates_the_queue() {
        let sync = RawSync::new(2);
        assert_eq!(sync.try_acquire_shared(&Count, 2), TryAcquire::Acquired);
        assert_eq!(sync.try_acquire_shared(&Count, 1), TryAcquire::Failed);
        sync.release_shared(&Count, 2);
        assert_eq!(value_of(sync.state()), 2);
        assert!(
            sync.queue_statuses().is_empty(),
            "the fast path touched the queue"
        );
    }

    #[test]
    fn queued_acquire_leaves_only_the_new_head() {
        let sync = Arc::new(RawSync::new(0));
        let waiter = {
            let sync = Arc::clone(&sync);
            thread::spawn(move || sync.acquire_shared(&Count, 1, None))
        };
        wait_until("the waiter is queued", || waiters_of(sync.state()) == 1);
        sync.release_shared(&Count, 1);
        assert_eq!(waiter.join().unwrap(), Ok(()));
        assert_eq!(
            sync.queue_statuses().len(),
            1,
            "the old head was not unlinked"
        );
        assert_eq!(waiters_of(sync.state()), 0);
        settled(&sync);
    }

    #[test]
    fn timed_out_tail_unlinks_itself() {
        let sync = RawSync::new(0);
        let deadline = Instant::now() + Duration::from_millis(5);
        assert_eq!(
            sync.acquire_shared(&Count, 1, Some(deadline)),
            Err(AcquireFailed::TimedOut)
        );
        // Only the dummy head is left (it may keep the SIGNAL its departed
        // successor armed, as in the JDK: at most one wasted wake attempt).
        assert_eq!(
            sync.queue_statuses().len(),
            1,
            "the cancelled tail is still linked"
        );
        assert_eq!(waiters_of(sync.state()), 0);
        settled(&sync);
    }

    #[test]
    fn cancelled_middle_node_is_skipped_and_freed() {
        let sync = Arc::new(RawSync::new(0));
        let first = {
            let sync = Arc::clone(&sync);
            thread::spawn(move || sync.acquire_shared(&Count, 1, None))
        };
        wait_until("the first waiter is queued", || {
            waiters_of(sync.state()) == 1
        });
        let middle = {
            let sync = Arc::clone(&sync);
            thread::spawn(move || {
                sync.acquire_shared(&Count, 1, Some(Instant::now() + Duration::from_millis(200)))
            })
        };
        wait_until("the middle waiter is queued", || {
            waiters_of(sync.state()) == 2
        });
        let last = {
            let sync = Arc::clone(&sync);
            thread::spawn(move || sync.acquire_shared(&Count, 1, None))
        };
        wait_until("the last waiter is queued", || {
            waiters_of(sync.state()) == 3
        });
        assert_eq!(middle.join().unwrap(), Err(AcquireFailed::TimedOut));
        assert_eq!(waiters_of(sync.state()), 2);
        sync.release_shared(&Count, 2);
        assert_eq!(first.join().unwrap(), Ok(()));
        assert_eq!(last.join().unwrap(), Ok(()));
        assert_eq!(sync.queue_statuses().len(), 1);
        assert_eq!(value_of(sync.state()), 0);
        settled(&sync);
    }

    /// One release of 6 wakes all 6 waiters at once (`wake_ahead`); those
    /// that run before their turn take their unit out of turn and leave like
    /// cancelled waiters. Whatever the order, everyone is served, nobody
    /// stays counted, no live node is left behind, and every node is freed.
    #[test]
    fn batch_release_serves_everyone_and_leaves_no_live_node() {
        let sync = Arc::new(RawSync::new(0));
        for round in 0..20 {
            let waiters: Vec<_> = (0..6)
                .map(|_| {
                    let sync = Arc::clone(&sync);
                    thread::spawn(move || sync.acquire_shared(&Count, 1, None))
                })
                .collect();
            wait_until("all six are queued", || waiters_of(sync.state()) == 6);
            sync.release_shared(&Count, 6);
            for w in waiters {
                assert_eq!(w.join().unwrap(), Ok(()), "round {round}");
            }
            assert_eq!(
                (value_of(sync.state()), waiters_of(sync.state())),
                (0, 0),
                "round {round}"
            );
            assert_eq!(
                sync.live_nodes(),
                0,
                "round {round}: a node outlived its waiter"
            );
            settled(&sync);
        }
    }

    #[test]
    fn wake_ahead_stops_at_the_first_waiter_the_release_cannot_serve() {
        // Queue: 1, 3, 1. A release of 2 serves the first; the second needs 3
        // of the 1 left, so the walk stops there, and the third (which 1
        // permit could serve) is not woken ahead of it.
        let sync = Arc::new(RawSync::new(0));
        let mut waiters = Vec::new();
        for (i, need) in [1, 3, 1].into_iter().enumerate() {
            let sync2 = Arc::clone(&sync);
            waiters.push(thread::spawn(move || {
                sync2.acquire_shared(&Count, need, None)
            }));
            wait_until("the waiter is queued", || {
                waiters_of(sync.state()) == i as u32 + 1
            });
        }
        sync.release_shared(&Count, 2);
        let first = waiters.remove(0);
        assert_eq!(first.join().unwrap(), Ok(()));
        wait_until("the first waiter is gone", || waiters_of(sync.state()) == 2);
        // Give the third waiter a chance to run if it was (wrongly) woken; a
        // nonfair out-of-turn take would leave the value at 0.
        thread::sleep(Duration::from_millis(20));
        assert_eq!((value_of(sync.state()), waiters_of(sync.state())), (1, 2));
        sync.release_shared(&Count, 3);
        for w in waiters {
            assert_eq!(w.join().unwrap(), Ok(()));
        }
        assert_eq!((value_of(sync.state()), waiters_of(sync.state())), (0, 0));
        assert_eq!(sync.live_nodes(), 0);
        settled(&sync);
    }

    /// A strict FIFO release wakes every waiter that the available value
    /// covers, not only as many as it released. Here the first two waiters
    /// have woken and cleared their flags but not yet taken their units (the
    /// value holds 2 for them); a release of 1 that finds the first one awake
    /// must wake the third. An earlier version charged its unit to the second
    /// waiter (its flag was clear), and the unit then sat in the word with
    /// nobody on the way to it: fair arrivals never take value from a queue.
    #[test]
    fn fifo_release_wakes_every_waiter_the_value_covers() {
        let (sync, nodes) = four_waiters_after_release(&Fifo, false, 1);
        assert_eq!(woken(&nodes), [false, true, true, false]);
        assert_eq!((value_of(sync.state()), waiters_of(sync.state())), (3, 4));
        settled(&sync);
    }

    /// The same when the release consumes the head's `SIGNAL` and wakes the
    /// first waiter itself: the value it finds covers two more (released
    /// earlier, with nobody woken for them), so it wakes them too.
    #[test]
    fn fifo_release_through_signal_wakes_the_covered_waiters_behind_the_first() {
        let (sync, nodes) = four_waiters_after_release(&Fifo, true, 1);
        assert_eq!(woken(&nodes), [true, true, true, false]);
        settled(&sync);
    }

    /// A barging release that wakes the first waiter spends only what it
    /// released: arrivals may take the rest of the value.
    #[test]
    fn barging_release_wakes_only_what_it_released() {
        let (sync, nodes) = four_waiters_after_release(&Count, true, 2);
        assert_eq!(woken(&nodes), [true, true, false, false]);
        settled(&sync);
    }

    #[test]
    fn close_wakes_every_waiter_and_empties_the_queue() {
        let sync = Arc::new(RawSync::new(0));
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let sync = Arc::clone(&sync);
                thread::spawn(move || sync.acquire_shared(&Count, 1, None))
            })
            .collect();
        wait_until("all four are queued", || waiters_of(sync.state()) == 4);
        sync.close();
        for w in waiters {
            assert_eq!(w.join().unwrap(), Err(AcquireFailed::Closed));
        }
        assert_eq!(waiters_of(sync.state()), 0);
        assert!(sync
            .queue_statuses()
            .iter()
            .all(|&s| s == CANCELLED || s <= 0));
        settled(&sync);
    }
}
