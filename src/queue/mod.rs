//! The synchronizer core: one atomic state word and a CLH wait queue, run by
//! the protocol of Java's `AbstractQueuedSynchronizer`.
//!
//! Synchronizers are thin: each supplies a [`Policy`] (what its value
//! means, and its [`Discipline`], fair or barging) and calls [`RawSync`].
//! The core is split by concern: `state` (the word), `policy` (hooks and
//! discipline), `node` and `reclaim` (queue nodes and when they are freed),
//! `acquire` (arrival, enqueue and the one resumable acquire step),
//! `release` (release, propagation and wake-ups), `cancel` (leaving the
//! queue), `look` (a read arrival's look for a queued writer, and the
//! cache of its answer) and `aside` (threads a policy lets sleep outside the
//! queue). It uses the shims beside it (`loom`, `park`,
//! `spin`) and nothing else of the crate.
//!
//! # Implementation
//!
//! ## The state word
//!
//! ```text
//!  63                               32 31                      2   1   0
//! +-----------------------------------+--------------------------+---+---+
//! |  value (the policy's)             | waiters (queued threads) | A | C |
//! +-----------------------------------+--------------------------+---+---+
//! ```
//!
//! `value` belongs to the policy (a semaphore's available permits); the core
//! performs every compare-and-swap, so the waiter count and the bits change
//! in the same atomic step as the value (an acquire from the queue takes its
//! value and leaves the count in one CAS). `waiters` counts threads that
//! linked a node and have not yet acquired or left (Q1). `A` (`ARMED`) says a
//! queued thread may be asleep counting on a release through the head (A1);
//! `C` (`CLOSED`) is set once by [`RawSync::close`].
//!
//! Legal combinations:
//!
//! The last column is what the discipline asks of a release; the policy
//! may still keep a release that can admit nobody out of the head (Q1).
//!
//! | waiters | A | C | meaning | a release |
//! |---|---|---|---|---|
//! | 0 | 0 | 0 | open, nobody queued | only changes the value |
//! | > 0 | 0 | 0 | waiters queued; a barging queue's first waiter is awake | FIFO: goes through the head; barging: only changes the value |
//! | > 0 | 1 | 0 | barging only: a waiter may sleep counting on the head | goes through the head |
//! | 0 | 1 | 0 | a stale armed bit (its waiter acquired or left) | only changes the value; the next release that goes in clears it |
//! | any | any | 1 | closed: acquires fail, queued waiters are woken and leave | as above; the value still counts releases |
//!
//! A FIFO queue never has `A` set.
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
//! `wake_ahead`.) `prev` links are the truth, `next` links are hints.
//!
//! ## Invariants
//!
//! Cited by name everywhere in the crate.
//!
//! *The queue*
//!
//! * **Q1, nobody parks unseen.** A thread links its node (tail CAS) *before*
//!   it increments `waiters` with an RMW on the state word, and decrements it
//!   only in the same CAS that acquires, or when it leaves. A releaser's own
//!   RMW on the state word therefore returns a word whose `waiters` is zero
//!   only if every thread that may park will see the released value when it
//!   re-checks; otherwise the releaser synchronizes with every counted
//!   waiter's link and goes through the head (a barging release only if the
//!   armed bit is set too: A1), unless the policy says the change can admit
//!   nobody (`Policy::release_may_admit`: a latch's count-down above zero, a
//!   release under a lock's claim, a read unlock with readers left inside).
//! * **Q2, `prev` is stable.** A node's `prev` is written only by its owner:
//!   at enqueue, when it skips cancelled predecessors, and (cleared) when it
//!   becomes head. From `tail`, `prev` links always lead back to `head`.
//! * **Q3, unique successor.** For every node in the chain at most one node
//!   has `prev` pointing at it; its owner is the only thread that may unlink
//!   it.
//! * **Q4, the head is never cancelled**, and only the head's successor
//!   moves `head` (to its own node).
//!
//! * **Q5, the count never carries.** A waiter checks the count against
//!   `MAX_WAITERS` before it links its node, and panics (changing nothing)
//!   when it is reached, so the increment cannot carry into the value. The
//!   limit (2^30 less 2^20 waiters at once) is far past what memory allows
//!   for threads, and about 100 GiB of queued futures.
//!
//! *Nodes*
//!
//! * **N1, a waiter's own node and its predecessor outlive its wait.** While
//!   a thread waits, nobody retires its node (R1 retires it only after it has
//!   become head and its successor has acquired, R2 needs it cancelled, R3 is
//!   its owner's own act) nor its predecessor (R1 and R2 on the predecessor
//!   can only be done by the predecessor's unique successor: the waiter).
//! * **N2, status values.** `CANCELLED` is final and written only by the
//!   owner; `SIGNAL` only by the successor (arming), `NONE`/`PROPAGATE` only
//!   by releasers, on the head, and `PASSED` (final) only by the new head, on
//!   the old head it replaced.
//!
//! *Reclamation* (`reclaim.rs` has the grace-period argument)
//!
//! * **R1 to R3, who retires.** Each node is retired by exactly one of: R1,
//!   the thread whose node became the new head retires the old head; R2, the
//!   owner of the unique successor of a cancelled node, when it skips that
//!   node (after redirecting the predecessor's `next` hint); R3, the owner of
//!   a cancelled node that was the tail, after swinging `tail` back to its
//!   predecessor (so no successor ever linked to it). R2 and R3 exclude each
//!   other: a node with a linked successor cannot win the tail CAS, and a
//!   node that won it never gets a successor.
//! * **R4, retire only the unreachable, once.** A node is retired only when
//!   neither `head`, `tail`, nor any link of a non-retired node leads to it,
//!   and no link to it is written afterwards; R1 to R3 name one retirer per
//!   node, so none is freed twice.
//! * **R5, dereference only inside a guard** (a node loaded from `head`,
//!   `tail` or a link while the guard is held stays allocated until the
//!   guard drops; `Guard::node` ties the reference's lifetime to the guard),
//!   or a node the thread owns (N1).
//! * **R6, never park, yield or spin inside a guard.** A sleeping reader
//!   would stop all frees, and so would waiters that take turns at spinning
//!   or yielding inside guards: one of them would be inside at nearly every
//!   instant, and every node retired meanwhile would wait (on one CPU, a
//!   fair ping-pong grew the retired list past 16,000 nodes that way).
//!   The one exception is the queue's first use: a thread that finds the
//!   dummy head installed but `tail` not yet set yields inside its guard
//!   while the installing thread finishes its second store (`init_queue`).
//! * **R7, one guard per thread at a time.** No queue code enters a guard
//!   while it holds one, on this synchronizer or another: an arrival waiting
//!   at the gate (R8) must not hold a guard that the gate waits for.
//! * **R8, the backlog is bounded.** The nodes retired by guards that have
//!   left and not yet freed are counted beside the readers; while there are
//!   `BACKLOG_LIMIT` or more, arrivals back out and wait outside any guard
//!   until the guards inside have left and the last one has freed
//!   (`reclaim.rs`). So at most `BACKLOG_LIMIT - 1` nodes plus what the
//!   guards inside at the closing retire await freeing, under any schedule,
//!   and no leave walks a list except to free it.
//!
//! *Outside code* (wakers, predicates, user `Drop`s)
//!
//! * **O1, outside code runs outside.** Code the crate does not own never
//!   runs between two steps of the queue's bookkeeping, nor inside a
//!   reclamation guard. Queue code that wakes a task takes its waker out of
//!   the node's slot (`WakerSlot::take`, which runs none of the waker's
//!   code) and leaves it in its [`Guard`](reclaim::Guard), which wakes it
//!   once it has left (`Guard::finish`, or its `Drop`). A thread's wake-up
//!   (`unpark_one`) is the crate's own code and stays where it is.
//! * **O2, freeing runs nothing.** A task's waiter takes its own waker out
//!   of its node when it leaves the queue or becomes head, inside the guard
//!   that still keeps the node, so `Node::free` never drops a waker.
//! * **O3, a panic in outside code leaves everything consistent.** The
//!   collected wakers are woken one by one under `catch_unwind`, every one
//!   of them; the first panic is handed to the call that woke them once its
//!   own bookkeeping is done. A release or a close completes, then
//!   propagates it, and so does a value change that goes through the queue
//!   as a release does (a dropped write claim, W4 in `rwlock.rs`, whose
//!   claimant holds nothing then). An acquire that took value gives it
//!   back first (`give_back`), so its caller gets the panic and not the
//!   hold. A condition wait takes its mutex back and leaves the condition
//!   queue first. A thread that is unwinding already drops the panic (a second
//!   one would abort), and its call completes as if none had happened.
//!
//! *The look's cache* (`look.rs` states them; liveness only: they bound how
//! long a writer waits behind arriving readers, and no safety property
//! rests on them)
//!
//! * **V1 to V3.** A change to the queue that could turn a read arrival's
//!   look from no into yes bumps a version after it; an answer is cached
//!   only for the version its walk began under; only a synchronizer whose
//!   reads look keeps a version.
//!
//! *The armed bit*
//!
//! * **A1.** Barging policies only; FIFO ones never set, clear or read it. A
//!   waiter sets `ARMED` with an RMW on the state word after its last arming
//!   and before every park, and re-runs its whole check once after that RMW.
//!   A releaser that consumed the head's `SIGNAL` clears it, before it wakes
//!   the head's successor, and sets it back if the head moved meanwhile; a
//!   new head whose own status is `SIGNAL` sets it again. A releaser that
//!   went in on the bit but found no `SIGNAL` on the head clears it too, then
//!   re-reads the head's status with an RMW and wakes whoever armed it
//!   meanwhile (`disarm_stale`). So whenever a waiter sleeps counting on a
//!   release through the head, the bit is set or that release's value is
//!   seen by someone who will act on it: a release before the waiter's RMW is
//!   read by its re-check; a clearing releaser is waking that very waiter,
//!   or, for a waiter whose predecessor is not yet head, the predecessor's
//!   takeover sets the bit again. A barging release with the bit clear skips
//!   the queue: the first waiter is awake (or woken, waiting for a CPU) and
//!   will see the value, or arrivals take it.
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
//! * **P2, enqueue vs release.** Q1: both sides RMW the state word.
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
//! `unpark_one`; `park`'s `validate` reads it under the bucket lock (K2), and the woken owner clears it with an `Acquire` swap before
//! re-checking anything, so a wake-up arriving before the park is never lost.
//! A strict FIFO waiter early in its wait yields instead of parking
//! (`YIELD_WINDOW`): to this protocol that is a park that returns at once,
//! and it consumes its flag the same way.
//!
//! ## The core beside the JDK
//!
//! | here | JDK `AbstractQueuedSynchronizer` | difference |
//! |---|---|---|
//! | `try_acquire_shared` | `tryAcquireShared` inside `acquireShared` | the policy is a pure function of the value; the core runs the CAS |
//! | `acquire_shared`, `acquire_slow` | `acquireShared`, `tryAcquireSharedNanos` | barging arrivals spin while nobody is queued |
//! | `enqueue`, `add_waiter`, `enq` | `addWaiter`, `enq` | the waiter count is raised after linking (Q1) |
//! | `Waiter::step` | `acquire(node, arg, shared, …)` (JDK 14+; `doAcquireSharedNanos` in 8) | resumable: returns `Wait` instead of parking, so a thread parks and a future could return `Pending` between steps |
//! | `should_park_after_failed_acquire` | the same | re-arms a `SIGNAL` it did not write (P1) |
//! | `set_head_and_propagate` | the same | propagates only when value is there now; marks the old head `PASSED` (P3) |
//! | `release_shared` | `releaseShared` | the discipline decides whether the release enters the queue |
//! | `do_release_shared` | `doReleaseShared` | no `h != tail` shortcut; a FIFO release stops when the head moved (P3); wake-ahead |
//! | `unpark_successor` | `unparkSuccessor` | none |
//! | `wake_ahead` | none | wakes together the waiters one release covers |
//! | `cancel_acquire`, `unlink` | `cancelAcquire` | arms the predecessor with an RMW (P4); retires nodes (R2, R3) |
//! | `skip_cancelled` | the skipping loop of `shouldParkAfterFailedAcquire` | retires what it skips (R2) |
//! | `close` | none (tokio's `Semaphore::close`) | wakes every waiter, who leaves |
//!
//! ## Prior art
//!
//! Doug Lea, "The java.util.concurrent Synchronizer Framework" (2004), and the
//! JDK 8 `AbstractQueuedSynchronizer`; the CLH lock of Craig, and of Magnusson,
//! Landin and Hagersten; Scherer and Scott's timeouts for queue locks.

use std::ptr;

use crate::loom::{AtomicPtr, AtomicU64, Ordering::*};
use crate::spin::Pace;

mod acquire;
mod arrive;
mod aside;
mod cancel;
mod enqueue;
mod look;
// The loom build's only users of condition queues are its models.
#[cfg_attr(all(aqs_loom, not(test)), allow(dead_code))]
mod condition;
// Under loom only its models use it (the public futures are not built).
#[cfg(feature = "async")]
#[cfg_attr(aqs_loom, allow(dead_code))]
mod future;
mod node;
mod policy;
mod reclaim;
mod release;
mod state;

#[cfg(all(test, aqs_loom))]
mod loom_models;
#[cfg(test)]
mod test_policy;
#[cfg(all(test, not(aqs_loom)))]
mod tests;

pub(crate) use acquire::AcquireFailed;
pub(crate) use arrive::TryAcquire;
pub(crate) use condition::{Bound, Condition, Waited};
#[cfg(feature = "async")]
#[cfg_attr(aqs_loom, allow(unused_imports))]
pub(crate) use future::QueuedAcquire;
pub(crate) use policy::Mode;
pub(crate) use policy::{Acquired, Discipline, Policy};
pub(crate) use state::{is_closed, value_of, waiters_of};

use look::Look;
use node::Node;
use reclaim::Reclaim;

/// What a panic carries, as `catch_unwind` returns it.
pub(crate) type Payload = Box<dyn std::any::Any + Send + 'static>;

/// Propagates the panic of outside code that a queue call ran after its
/// bookkeeping (O3), to that call's caller; unless the thread is already
/// unwinding, where a second panic would abort: then it is dropped.
#[inline]
pub(crate) fn propagate(result: Result<(), Payload>) {
    if let Err(payload) = result {
        propagate_panic(payload);
    }
}

#[cold]
#[inline(never)]
fn propagate_panic(payload: Payload) {
    if !std::thread::panicking() {
        std::panic::resume_unwind(payload);
    }
}

/// The queue core shared by every synchronizer.
pub(crate) struct RawSync {
    state: AtomicU64,
    head: AtomicPtr<Node>,
    tail: AtomicPtr<Node>,
    reclaim: Reclaim,
    /// How fast waiters acquire, one after another: whether yielding pays.
    pace: Pace,
    /// The cached answer of a read arrival's look at the queue, and its
    /// version (V1, V2 in `look.rs`).
    look: Look,
    /// Whether the look's version is kept: set at construction, for a
    /// synchronizer whose read arrivals look (V3). A plain field, so the
    /// others pay a test of it and no atomic load at each bump point.
    keeps_look: bool,
    /// How many threads sleep in the crowd aside (`aside.rs`).
    crowd: aside::CrowdCount,
    /// loom only: set where a real program would drop the synchronizer
    /// (`loom_drop`); read by code that must be done with it by then
    /// (`loom_check_alive`), so a use that could follow the drop is a loom
    /// causality violation.
    #[cfg(aqs_loom)]
    dropped: crate::loom::UnsafeCell<bool>,
    /// loom only: whether FIFO waiters yield before parking (off unless a
    /// model asks: a waiter that yields and looks again before it parks
    /// needs more preemptions to be caught asleep, which would take the
    /// models built around a park at the wrong moment past their bounds).
    #[cfg(aqs_loom)]
    loom_yields: bool,
}

// SAFETY: all fields are atomics or `Reclaim` (atomics). The raw node pointers
// they hold are shared on purpose; every dereference follows R5 and N1.
unsafe impl Send for RawSync {}
// SAFETY: as above; all mutation goes through atomic operations.
unsafe impl Sync for RawSync {}

impl RawSync {
    /// A synchronizer holding `value`, with an empty (not yet allocated) queue.
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new(value: u32) -> Self {
        Self::with_look(value, false)
    }

    /// A synchronizer holding `value` (loom's atomics have no `const fn new`).
    #[cfg(aqs_loom)]
    pub(crate) fn new(value: u32) -> Self {
        Self::with_look(value, false)
    }

    /// A synchronizer holding `value`, keeping the version of the look at
    /// the queue if `keeps_look` (V3): for a policy that answers
    /// [`Policy::shared_arrivals_defer_to_exclusive`] with true.
    #[cfg(not(aqs_loom))]
    pub(crate) const fn with_look(value: u32, keeps_look: bool) -> Self {
        RawSync {
            state: AtomicU64::new(state::initial(value)),
            head: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicPtr::new(ptr::null_mut()),
            reclaim: Reclaim::new(),
            pace: Pace::new(),
            look: Look::new(),
            keeps_look,
            crowd: aside::CrowdCount::new(),
        }
    }

    /// As above, for loom.
    #[cfg(aqs_loom)]
    pub(crate) fn with_look(value: u32, keeps_look: bool) -> Self {
        RawSync {
            state: AtomicU64::new(state::initial(value)),
            head: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicPtr::new(ptr::null_mut()),
            reclaim: Reclaim::new(),
            pace: Pace::new(),
            look: Look::new(),
            keeps_look,
            crowd: aside::CrowdCount::new(),
            dropped: crate::loom::UnsafeCell::new(false),
            loom_yields: false,
        }
    }

    /// The current state word (a snapshot).
    #[inline]
    pub(crate) fn state(&self) -> u64 {
        self.state.load(Acquire)
    }

    /// The uncontended acquire of a synchronizer whose free value is known:
    /// one CAS from `free` with nobody queued and no flag set to `taken`,
    /// without loading the word first (after the previous holder's release,
    /// a load would wait for that locked instruction before the CAS could
    /// issue). Returns whether it took. The caller's policy must grant an
    /// arrival exactly this change (`taken <= free`); on `false` it goes the
    /// usual way, through the policy.
    #[inline]
    pub(crate) fn try_take_idle(&self, free: u32, taken: u32) -> bool {
        debug_assert!(taken <= free);
        // AcqRel, as an arrival's CAS: Acquire pairs with the release that
        // put the value there.
        self.state
            .compare_exchange(state::initial(free), state::initial(taken), AcqRel, Relaxed)
            .is_ok()
    }

    /// An arrival's take of one unit while the queue's half of the word is
    /// clear (nobody counted in it (Q1), not armed, not closed): one load and
    /// one CAS, small enough to inline into the caller. `grants(value)` must
    /// be true only where the caller's policy grants an arrival with nobody
    /// counted a take of exactly one unit that keeps every flag (so the value
    /// is at least 1). On a refusal or a failed CAS (lost, or spurious) it
    /// returns the word it saw last, for the caller to go the usual way
    /// from, through the policy (`RawSync::try_acquire_shared_from`),
    /// without loading it again.
    #[inline]
    pub(crate) fn try_take_one_unqueued(
        &self,
        grants: impl FnOnce(u32) -> bool,
    ) -> Result<(), u64> {
        let s = self.state.load(Relaxed);
        if !state::queue_half_clear(s) || !grants(state::value_of(s)) {
            return Err(s);
        }
        debug_assert!(state::value_of(s) >= 1, "a take of one unit from none");
        // AcqRel, as an arrival's CAS: Acquire pairs with the release that
        // put the value there.
        self.state
            .compare_exchange_weak(s, s - state::value_delta(1), AcqRel, Relaxed)
            .map(drop)
    }

    /// Applies `f` to the value until the CAS succeeds, without waking anyone;
    /// for changes that admit no waiter: a take, or setting or clearing a
    /// flag that no acquire hook reads or that only refuses (a read-write
    /// lock's claim and crowd flag, W4 and W6 in `rwlock.rs`). Returns the
    /// old value, or
    /// `Err(value)` if `f` returned `None`.
    pub(crate) fn fetch_update_value(&self, f: impl FnMut(u32) -> Option<u32>) -> Result<u32, u32> {
        self.update_value(|_| false, f)
    }

    /// [`RawSync::fetch_update_value`] that also refuses while anyone is
    /// queued or the synchronizer is closed, checked in the same CAS: for a
    /// change that only an arrival into an empty queue may make (a fair
    /// mutex's claim on the next turn, M4 in `mutex.rs`). Wakes nobody, so
    /// `f` must admit nobody. Returns the old value, or `Err(value)` if it
    /// refused.
    pub(crate) fn update_value_unqueued(
        &self,
        f: impl FnMut(u32) -> Option<u32>,
    ) -> Result<u32, u32> {
        self.update_value(|s| waiters_of(s) > 0 || is_closed(s), f)
    }

    /// The CAS loop of both: `refuses` looks at the whole word first.
    #[inline]
    fn update_value(
        &self,
        refuses: impl Fn(u64) -> bool,
        mut f: impl FnMut(u32) -> Option<u32>,
    ) -> Result<u32, u32> {
        self.update_word(refuses, |value| f(value).map(|value| (value, ())))
            .map(|(s, ())| value_of(s))
    }

    /// The CAS loop under every change of the value that is neither an
    /// acquire nor an addition (`update_value`, `update_value_releasing`):
    /// `f` maps the value to the new one and a result of its own, or
    /// refuses; `refuses` looks at the whole word first. Returns the word
    /// the CAS replaced with `f`'s result, or `Err(value)` on a refusal.
    #[inline]
    fn update_word<T>(
        &self,
        refuses: impl Fn(u64) -> bool,
        mut f: impl FnMut(u32) -> Option<(u32, T)>,
    ) -> Result<(u64, T), u32> {
        let mut s = self.state.load(Relaxed);
        loop {
            let changed = if refuses(s) { None } else { f(value_of(s)) };
            let Some((value, result)) = changed else {
                return Err(value_of(s));
            };
            // AcqRel, as a release's RMW: Release publishes the caller's
            // writes to whoever acquires next; Acquire pairs with the release
            // that put the old value there and with counted waiters' links
            // (Q1).
            match self
                .state
                .compare_exchange_weak(s, state::with_value(s, value), AcqRel, Relaxed)
            {
                Ok(_) => return Ok((s, result)),
                Err(actual) => s = actual,
            }
        }
    }

    /// Whether FIFO waiters yield before parking (`YIELD_WINDOW`): always,
    /// except in loom models that did not ask for it.
    #[inline]
    fn yields(&self) -> bool {
        #[cfg(aqs_loom)]
        {
            self.loom_yields
        }
        #[cfg(not(aqs_loom))]
        {
            true
        }
    }

    /// loom only: asserts nobody has marked the synchronizer dropped, with a
    /// read that loom orders against `loom_drop`'s write.
    #[cfg(aqs_loom)]
    pub(crate) fn loom_check_alive(&self) {
        self.dropped.with(|dropped| {
            // SAFETY: written only by `loom_drop`; loom reports a write that
            // races this read as a causality violation.
            let dropped = unsafe { *dropped };
            assert!(
                !dropped,
                "aqs: a synchronizer was used after it was dropped"
            );
        });
    }

    /// loom only: marks the synchronizer dropped, where a real program's
    /// owner could drop it.
    #[cfg(all(test, aqs_loom))]
    pub(crate) fn loom_drop(&self) {
        // SAFETY: see `loom_check_alive`.
        self.dropped.with_mut(|dropped| unsafe { *dropped = true });
    }

    /// The queue nodes that are neither the head nor cancelled; for tests.
    /// With nobody waiting it must be 0: a live node without a waiting owner
    /// would take the wake-ups aimed at whoever queues behind it.
    #[cfg(test)]
    pub(crate) fn live_nodes(&self) -> usize {
        let guard = self.reclaim.enter();
        let mut live = 0;
        let mut t = self.tail.load(Acquire);
        while !t.is_null() {
            // SAFETY: R5: loaded from `tail` or a `prev` link inside the guard.
            let n = unsafe { guard.node(t) };
            t = n.prev.load(Acquire);
            if !t.is_null() && n.status.load(Acquire) != node::CANCELLED {
                live += 1;
            }
        }
        live
    }
}

impl Drop for RawSync {
    fn drop(&mut self) {
        // A failed loom model (a deadlock) unwinds the model's threads after
        // loom's execution is gone, and the loom atomics below would then
        // panic inside a panic and abort the report. The model has failed
        // already; leak the queue.
        #[cfg(aqs_loom)]
        if std::thread::panicking() {
            return;
        }
        // `&mut self`: no thread is inside the queue. Free the chain from the
        // tail (which reaches every unretired node: Q2, R4), then the retired
        // list.
        // A node still linked here belongs to a waiter that will never run
        // again: a future that was leaked (`mem::forget`, a cycle) while
        // queued, which still holds its task's waker. Take those out first
        // and drop them last, once the queue is gone (O1, O2).
        #[cfg(feature = "async")]
        let mut wakers = Vec::new();
        let mut t = self.tail.load(Relaxed);
        while !t.is_null() {
            // SAFETY: unretired chain nodes, reachable only from here now.
            let node = unsafe { Node::get(t) };
            let prev = node.prev.load(Relaxed);
            #[cfg(feature = "async")]
            wakers.extend(node.task.as_ref().and_then(|task| task.take()));
            // SAFETY: as above; each chain node is freed once.
            unsafe { Node::free(t) };
            t = prev;
        }
        self.reclaim.drain();
        #[cfg(feature = "async")]
        for waker in wakers {
            propagate(crate::waker::drop_caught(Some(waker)));
        }
    }
}
