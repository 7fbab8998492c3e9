//! Acquiring after arrival: the one resumable acquire step that every
//! waiter runs (`acquire` in JDK 14+, where it replaced JDK 8's
//! `doAcquireShared` family), and the blocking driver around it.

use std::ptr;
use std::time::Instant;

use super::arrive::TryAcquire;
use super::node::{Node, CANCELLED, SIGNAL};
use super::policy::{try_acquire, Discipline, Mode, Policy};
use super::reclaim::Guard;
use super::state::{after_take, is_closed, value_of, waiters_of, ARMED, ONE_WAITER};
use super::RawSync;
use crate::loom::Ordering::*;
use crate::park::{deadline_passed, park, Parked};
use crate::spin::{Spin, YieldWindow, SECOND_IN_LINE_RENEWALS, YIELD_WINDOW};

/// Why a blocking acquire gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcquireFailed {
    /// The synchronizer was closed.
    Closed,
    /// The deadline passed.
    TimedOut,
}

/// What one [`Waiter::step`] ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Acquired; the waiter has left the queue (or heads it).
    Acquired,
    /// The synchronizer closed; the waiter has left the queue.
    Closed,
    /// The deadline passed; the waiter has left the queue.
    TimedOut,
    /// Armed (and published, A1): the caller may sleep until its node's wake
    /// flag is set, then report how with [`Waiter::resume`] and step again.
    Wait,
    /// Worth a spin round before the next look: the caller leaves its guard,
    /// runs [`Waiter::spin_round`] and steps again in a new guard (R6). Never
    /// returned under loom, where the spin budget is zero.
    Spin,
}

/// How a blocking acquire ended ([`RawSync::drive_caught`]).
pub(super) struct Driven {
    pub(super) result: Result<(), AcquireFailed>,
    /// How much the acquire took from the value (O3: what to give back).
    pub(super) taken: u32,
    /// The first panic of a waker that the last step woke (O1, O3).
    pub(super) woke: Result<(), super::Payload>,
}

/// How a wait between two steps ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resumed {
    /// The wake flag was set (and consumed): somebody woke us.
    Woken,
    /// Back without a wake-up (a yield that found the flag clear).
    Unwoken,
    /// The deadline passed while asleep.
    TimedOut,
}

/// The first queued waiter's hook result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queued {
    /// Acquired: whether to propagate, and how much the value went down
    /// (what a give-back restores exactly, hand-off bits included: O3; a
    /// latch's wait takes nothing).
    Acquired {
        propagate: bool,
        taken: u32,
    },
    Failed,
    Closed,
}

/// One queued acquire: its node and every piece of its wait state. Made by
/// [`RawSync::enqueue`] and driven by [`Waiter::step`] until that returns
/// anything but [`Step::Wait`]; a blocking caller sleeps between steps
/// ([`RawSync::acquire_shared`]).
pub(crate) struct Waiter<'s> {
    sync: &'s RawSync,
    /// Our node: linked and counted (Q1) until a step leaves the queue. Only
    /// we retire it while we wait (N1).
    node: *mut Node,
    mode: Mode,
    arg: u32,
    deadline: Option<Instant>,
    /// How the last wait ended; `Woken` is consumed by the next step,
    /// `TimedOut` stays until the step gives up.
    resumed: Resumed,
    /// The predecessor our last arming RMW armed (P1: a `SIGNAL` armed by
    /// someone else is re-armed, not trusted).
    armed_pred: *mut Node,
    /// Whether the armed bit was published after the last arming (A1).
    published: bool,
    spin: Spin,
    /// Whether we spent spin budget as second in line; becoming first then
    /// restores the budget, once.
    spun_second: bool,
    /// Whether the pending spin round ([`Step::Spin`]) is one as second in
    /// line, which may renew the budget.
    spin_second: bool,
    /// Spin budgets left for waiting second in line.
    renewals: u32,
    /// Whether this waiter spins at all: a task's never does (its poll
    /// must return instead).
    spins: bool,
    /// Blocking waits only: yielding before parking (FIFO).
    window: YieldWindow,
    /// How much the acquire took from the value (set when a step
    /// acquires): what a give-back restores (O3).
    taken: u32,
}

impl<'s> Waiter<'s> {
    /// A waiter on `node`, already linked and counted, with fresh wait state.
    /// `spins` is false for a task's waiter, which must return from its poll
    /// instead.
    pub(super) fn new(
        sync: &'s RawSync,
        node: *mut Node,
        (mode, arg): (Mode, u32),
        deadline: Option<Instant>,
        resumed: Resumed,
        spins: bool,
    ) -> Waiter<'s> {
        Waiter {
            sync,
            node,
            mode,
            arg,
            deadline,
            resumed,
            armed_pred: ptr::null_mut(),
            published: false,
            spin: Spin::new(),
            spun_second: false,
            spin_second: false,
            renewals: if spins { SECOND_IN_LINE_RENEWALS } else { 0 },
            spins,
            window: YieldWindow::new(YIELD_WINDOW),
            taken: 0,
        }
    }
}

impl RawSync {
    /// Acquires `arg` in shared mode, queueing and parking until the policy
    /// agrees, the synchronizer closes, or `deadline` passes.
    #[inline]
    pub(crate) fn acquire_shared<P: Policy>(
        &self,
        policy: &P,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        self.acquire(policy, Mode::Shared, arg, deadline)
    }

    /// Acquires `arg` in exclusive mode, as [`RawSync::acquire_shared`] does.
    #[inline]
    pub(crate) fn acquire_exclusive<P: Policy + ?Sized>(
        &self,
        policy: &P,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        self.acquire(policy, Mode::Exclusive, arg, deadline)
    }

    /// The blocking acquire of either mode (`acquire` in JDK 14+).
    #[inline]
    fn acquire<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mode: Mode,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        match self.arrive(policy, mode, arg) {
            TryAcquire::Acquired => Ok(()),
            TryAcquire::Closed => Err(AcquireFailed::Closed),
            TryAcquire::Failed => {
                if deadline.is_some_and(deadline_passed) {
                    return Err(AcquireFailed::TimedOut);
                }
                self.acquire_slow(policy, mode, arg, deadline)
            }
        }
    }

    /// Spins briefly, retrying as an arrival, before joining the queue: under
    /// contention a value is usually back within a critical section's time,
    /// far sooner than a park and wake-up round trip. Only barging policies
    /// spin here, and only while nobody is queued (with waiters parked, the
    /// value is unlikely to come free soon, and spinning would take CPU from
    /// the threads that hold it; parking_lot's mutex uses the same rule).
    /// The exception is a read on a lock whose reads defer to queued
    /// writers ([`Policy::shared_arrivals_defer_to_exclusive`]): it spins
    /// its budget with others queued too, whatever kept it out (a writer
    /// next in line, a write hold, a pending hand-off). A queued writer is
    /// waiting for short read holds to drain, so it usually acquires and
    /// releases within the budget, and a read that queued instead would cost
    /// a park and a wake-up that waits for a CPU, and would sit in the queue
    /// in front of the next writer (parking_lot's readers also spin while a
    /// writer holds or waits). A timed acquire starts no spin round after its
    /// deadline. Then it queues and sleeps between acquire steps; a deadline
    /// that passed while it spun is noticed at its first step, which leaves
    /// through the queue's cancellation path (or acquires, if the value is
    /// there for a first waiter).
    #[cold]
    #[inline(never)]
    fn acquire_slow<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mode: Mode,
        arg: u32,
        deadline: Option<Instant>,
    ) -> Result<(), AcquireFailed> {
        let discipline = policy.discipline();
        let spin = Spin::new();
        let may_spin = |s: u64| {
            discipline.arrival_spins()
                && (waiters_of(s) == 0
                    || (mode == Mode::Shared && policy.shared_arrivals_defer_to_exclusive()))
                && policy.arrival_may_spin(mode, value_of(s))
        };
        while may_spin(self.state.load(Relaxed))
            && !deadline.is_some_and(deadline_passed)
            && spin.spin()
        {
            match self.arrive(policy, mode, arg) {
                TryAcquire::Acquired => return Ok(()),
                TryAcquire::Closed => return Err(AcquireFailed::Closed),
                TryAcquire::Failed => {}
            }
        }
        let guard = self.reclaim.enter();
        let waiter = self.enqueue(mode, arg, deadline, &guard);
        self.drive(policy, waiter, guard)
    }

    /// The blocking driver: steps `waiter` inside a guard and sleeps between
    /// steps outside it, until it acquires or gives up. If a waker that the
    /// final step woke panics (a task's, behind us in the queue), the hold
    /// is given back and the panic propagates to our caller (O3); while the
    /// thread is unwinding already, the panic is dropped instead and the
    /// acquire stands.
    pub(super) fn drive<P: Policy + ?Sized>(
        &self,
        policy: &P,
        waiter: Waiter<'_>,
        guard: Guard<'_>,
    ) -> Result<(), AcquireFailed> {
        let driven = self.drive_caught(policy, waiter, guard);
        if let Err(payload) = driven.woke {
            if !std::thread::panicking() {
                if driven.result.is_ok() {
                    self.give_back(policy, driven.taken);
                }
                std::panic::resume_unwind(payload);
            }
        }
        driven.result
    }

    /// [`RawSync::drive`] without the give-back: the acquire stands, and the
    /// panic of a waker it woke is returned for the caller to propagate once
    /// its own state is consistent (a condition wait: O3).
    pub(super) fn drive_caught<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mut waiter: Waiter<'_>,
        guard: Guard<'_>,
    ) -> Driven {
        let discipline = policy.discipline();
        let mut guard = Some(guard);
        // When the first wait began, and the waiters queued then.
        let mut waited: Option<(Instant, u32)> = None;
        loop {
            let step = waiter.step(policy, guard.as_ref().expect("re-entered after every wait"));
            let result = match step {
                Step::Acquired => Ok(()),
                Step::Closed => Err(AcquireFailed::Closed),
                Step::TimedOut => Err(AcquireFailed::TimedOut),
                Step::Spin | Step::Wait => {
                    // Only a step that acquires or leaves wakes anyone.
                    let inside = guard.take().expect("entered");
                    debug_assert!(inside.wakes_nobody());
                    // R6: never spin, yield or park inside a guard. A
                    // spinner that held one would keep every node retired
                    // meanwhile alive, and on a busy CPU its guard would
                    // overlap the next one's.
                    drop(inside);
                    if step == Step::Spin {
                        waiter.spin_round();
                    } else {
                        waited.get_or_insert_with(|| {
                            (Instant::now(), waiters_of(self.state.load(Relaxed)))
                        });
                        waiter.wait_blocking(discipline);
                    }
                    guard = Some(self.reclaim.enter());
                    continue;
                }
            };
            // O1: wake whom the step woke only after its guard has left.
            let woke = guard.take().expect("entered").finish();
            if let (Ok(()), Some((since, turns))) = (result, waited) {
                self.pace.turned(since.elapsed(), turns);
            }
            return Driven {
                result,
                taken: waiter.taken,
                woke,
            };
        }
    }

    /// A queued waiter's hook call: acquires and leaves the waiter count in
    /// one CAS. `ahead` is `None` for the first waiter, and what the waiters
    /// in front of an out-of-turn caller need otherwise.
    fn try_acquire_queued<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mode: Mode,
        arg: u32,
        ahead: Option<u32>,
    ) -> Queued {
        let mut s = self.state.load(Acquire);
        loop {
            if is_closed(s) {
                return Queued::Closed;
            }
            let acquired = match ahead {
                None => try_acquire(policy, mode, value_of(s), arg, false),
                Some(ahead) => policy.try_acquire_out_of_turn(value_of(s), arg, ahead),
            };
            let Some(acquired) = acquired else {
                return Queued::Failed;
            };
            let new = after_take(s, acquired.value) - ONE_WAITER;
            match self.state.compare_exchange_weak(s, new, AcqRel, Acquire) {
                Ok(_) => {
                    return Queued::Acquired {
                        propagate: acquired.propagate,
                        taken: value_of(s) - acquired.value,
                    }
                }
                Err(actual) => s = actual,
            }
        }
    }

    /// Whether `pred`, our predecessor, is the live first waiter and the value
    /// it needs is there: it has been woken, or is about to take the value,
    /// and we are next. A FIFO waiter spins there instead of parking, so that
    /// two threads over one fair permit do not lock into a convoy in which
    /// the second parks behind a first that is still waking, and every
    /// permit costs a full wake-up. Only the second in line spins, and only
    /// while the value waits, so with more threads than CPUs it rarely
    /// happens and takes no CPU from the waiter being woken. "The value is
    /// there" is the hook's answer for the first waiter, not a count: a
    /// policy's value may carry bits that keep a waiter out (a fair mutex's
    /// claim on a held lock, M4 in `mutex.rs`).
    fn first_is_waking<P: Policy + ?Sized>(&self, policy: &P, pred: &Node) -> bool {
        let h = pred.prev.load(Acquire);
        // A cancelled predecessor is for `should_park_after_failed_acquire`
        // to skip, not to wait on.
        !h.is_null()
            && h == self.head.load(Acquire)
            && pred.status.load(Acquire) != CANCELLED
            && try_acquire(
                policy,
                pred.mode,
                value_of(self.state.load(Acquire)),
                pred.need,
                false,
            )
            .is_some()
    }

    /// The total need of the live waiters in front of `me` (our own node),
    /// walking `prev` links to the head. Over-counts waiters that are leaving
    /// or just became head; never misses one: every waiter ahead of us is on
    /// our `prev` chain (Q2).
    fn need_ahead(&self, me: &Node, guard: &Guard<'_>) -> u32 {
        let mut sum = 0u32;
        let mut p = me.prev.load(Relaxed); // only we write it (Q2)
        loop {
            // SAFETY: R5: our predecessor, or loaded from a `prev` link
            // inside the guard.
            let n = unsafe { guard.node(p) };
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

    /// Arms `pred` to wake us, skipping cancelled predecessors first; returns
    /// true only when `pred` is still armed by *our* RMW (`armed_pred` names
    /// the node we last armed), so that the caller re-runs the hook once
    /// after arming before it may park (P1).
    ///
    /// A `SIGNAL` that someone else wrote is re-armed, not trusted: a node
    /// that was `pred`'s successor before us (it left, or we skipped it) armed
    /// it for itself, and a release may have consumed that `SIGNAL` and woken
    /// that node. A plain load can still return the consumed `SIGNAL`. Our
    /// own RMW either comes before the consuming one, which then
    /// synchronizes with it and wakes us, or reads it, and we re-check.
    /// (JDK 8 trusts the load: its volatile reads are sequentially
    /// consistent.)
    fn should_park_after_failed_acquire(
        &self,
        pred: *mut Node,
        node: *mut Node,
        armed_pred: &mut *mut Node,
        guard: &Guard<'_>,
    ) -> bool {
        // SAFETY: N1: our predecessor.
        let ws = unsafe { guard.node(pred) }.status.load(Acquire);
        if ws == SIGNAL && *armed_pred == pred {
            return true;
        }
        if ws == CANCELLED {
            self.skip_cancelled(node, pred, guard);
        } else if self.arm(pred, guard) {
            *armed_pred = pred;
        }
        false
    }
}

impl Waiter<'_> {
    /// Our own node (N1: nobody else retires it while we wait).
    #[inline]
    fn me<'g>(&self, guard: &'g Guard<'_>) -> &'g Node {
        // SAFETY: N1: our own node, linked until this waiter leaves.
        unsafe { guard.node(self.node) }
    }

    /// Runs the acquire loop until it acquires, gives up, or must wait
    /// (`acquire` in JDK 14+, one pass per wake-up). Called inside `guard`,
    /// entered after the last wait; after anything but [`Step::Wait`], the
    /// waiter is done and must not step again.
    pub(crate) fn step<P: Policy + ?Sized>(&mut self, policy: &P, guard: &Guard<'_>) -> Step {
        let sync = self.sync;
        let discipline = policy.discipline();
        loop {
            let me = self.me(guard);
            // Only we write `prev` (Q2).
            let mut pred = me.prev.load(Relaxed);
            let woken = self.resumed == Resumed::Woken;
            if woken {
                self.resumed = Resumed::Unwoken;
                // Woken behind a node that left (cancelled, or served out of
                // turn)? Unlink it first, so that a waiter that is in fact
                // first takes its turn as first and becomes head.
                // SAFETY: N1: our predecessor.
                if unsafe { guard.node(pred) }.status.load(Acquire) == CANCELLED {
                    pred = sync.skip_cancelled(self.node, pred, guard);
                }
            }
            let first = pred == sync.head.load(Acquire);
            // A woken shared waiter may take value out of turn, if the policy
            // allows: a release woke it because there was value for it
            // (`wake_ahead`).
            let out_of_turn = !first && woken && self.mode == Mode::Shared && policy.out_of_turn();
            if first || out_of_turn {
                let ahead = (!first).then(|| sync.need_ahead(me, guard));
                match sync.try_acquire_queued(policy, self.mode, self.arg, ahead) {
                    Queued::Acquired { propagate, taken } if first => {
                        self.taken = taken;
                        sync.set_head_and_propagate(policy, self.node, pred, propagate, guard);
                        // SAFETY: R1: `head` now names our node and we cleared
                        // our `prev`; we are the old head's only successor, so
                        // no link leads to it and nobody else retires it.
                        unsafe { sync.reclaim.retire(pred, guard) };
                        return Step::Acquired;
                    }
                    Queued::Acquired { taken, .. } => {
                        self.taken = taken;
                        // Out of turn: our count left with the CAS; leave the
                        // queue the way a cancelled waiter does.
                        sync.unlink(self.node, guard);
                        return Step::Acquired;
                    }
                    Queued::Closed => {
                        sync.cancel_acquire(self.node, guard);
                        return Step::Closed;
                    }
                    Queued::Failed => {}
                }
            } else if is_closed(sync.state.load(Acquire)) {
                sync.cancel_acquire(self.node, guard);
                return Step::Closed;
            }
            if self.resumed == Resumed::TimedOut || self.deadline.is_some_and(deadline_passed) {
                sync.cancel_acquire(self.node, guard);
                return Step::TimedOut;
            }
            if self.wants_spin(policy, first, pred, discipline, guard) {
                return Step::Spin;
            }
            if !sync.should_park_after_failed_acquire(pred, self.node, &mut self.armed_pred, guard)
            {
                self.published = false; // (re)armed a predecessor: publish after it
                continue;
            }
            // A1: a barging waiter publishes the armed bit before every park,
            // after its last arming, then re-runs the whole check once: a
            // release whose RMW on the word came before ours is read by it;
            // one after it sees the bit and goes through the head.
            if !self.published && discipline.uses_armed_bit() {
                sync.state.fetch_or(ARMED, AcqRel);
                self.published = true;
                continue;
            }
            self.published = false;
            return Step::Wait;
        }
    }

    /// Whether this is the time for a spin round ([`Waiter::spin_round`]
    /// runs it, outside the guard). The first waiter is next to run: it
    /// spins a little before parking (a bounded budget per wake-up).
    /// Having just become first after spinning as second, it gets the
    /// budget afresh, once: what it spent was the wait for its predecessor
    /// to wake, not for value. A FIFO waiter second in line, behind a first
    /// waiter whose value is free, spins through that waiter's wake-up for
    /// up to `SECOND_IN_LINE_RENEWALS` more budgets.
    fn wants_spin<P: Policy + ?Sized>(
        &mut self,
        policy: &P,
        first: bool,
        pred: *mut Node,
        d: Discipline,
        guard: &Guard<'_>,
    ) -> bool {
        if !self.spins {
            return false;
        }
        if first {
            if self.spun_second {
                self.spun_second = false;
                self.spin.reset();
            }
            self.spin_second = false;
            return self.spin.can_spin(0);
        }
        if d.spins_second_in_line()
            && self.spin.can_spin(self.renewals)
            // SAFETY: N1: our predecessor.
            && self.sync.first_is_waking(policy, unsafe { guard.node(pred) })
        {
            self.spun_second = true;
            self.spin_second = true;
            return true;
        }
        false
    }

    /// Runs the spin round that [`Step::Spin`] asked for, outside any guard
    /// (R6): a busy-wait round, or a yield once the rounds are spent.
    pub(crate) fn spin_round(&mut self) {
        if self.spin_second {
            self.spin.spin_renewing(&mut self.renewals);
        } else {
            self.spin.spin();
        }
    }

    /// Consumes a wake-up that arrived since the last step, if any (an
    /// async waiter's poll, F2).
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn consume_wake(&mut self) {
        // SAFETY: N1: our own node.
        let me = unsafe { Node::get(self.node) };
        if me.wake.swap(0, Acquire) != 0 {
            self.resume(Resumed::Woken);
        }
    }

    /// After a `Wait` step, outside any guard: registers the task's waker,
    /// then consumes the wake flag (F2). Returns whether a wake-up came
    /// (then the caller steps again) or the task may return `Pending`.
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn register_and_check(&mut self, waker: &std::task::Waker) -> bool {
        // SAFETY: N1: our own node.
        let me = unsafe { Node::get(self.node) };
        me.task
            .as_ref()
            .expect("a task's node has a waker slot")
            .register(waker);
        if me.wake.swap(0, Acquire) != 0 {
            self.resume(Resumed::Woken);
            return true;
        }
        false
    }

    /// Leaves the queue for good (an async waiter's future was dropped,
    /// F3), passing on any wake-up aimed at it. Returns the task's waker,
    /// taken out of the node (O2), for the caller to drop once the guard
    /// has left (O1).
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn cancel(self, guard: &Guard<'_>) -> Option<std::task::Waker> {
        self.sync.cancel_acquire(self.node, guard);
        self.take_waker(guard)
    }

    /// Takes the task's waker out of our node once the waiter has left the
    /// queue (or heads it), inside the guard that still keeps the node: so
    /// that whoever frees the node later drops no waker (O2).
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn take_waker(&self, guard: &Guard<'_>) -> Option<std::task::Waker> {
        self.me(guard).task.as_ref().and_then(|task| task.take())
    }

    /// How much the acquire took from the value: what a give-back
    /// restores (O3). Meaningful once a step returned `Acquired`.
    #[cfg(feature = "async")]
    #[cfg_attr(aqs_loom, allow(dead_code))]
    pub(crate) fn taken(&self) -> u32 {
        self.taken
    }

    /// Records how a wait between two steps ended.
    pub(crate) fn resume(&mut self, how: Resumed) {
        if how == Resumed::Woken {
            self.spin.reset();
            self.renewals = SECOND_IN_LINE_RENEWALS;
        }
        self.resumed = how;
    }

    /// A blocking wait after [`Step::Wait`], outside any guard (R6): a FIFO
    /// waiter early in its wait, on a queue that turns over fast (`Pace`),
    /// gives its CPU away and looks again (`YIELD_WINDOW`); otherwise it parks until its wake flag is set or the
    /// deadline passes. To the protocol a yield is a park that returns at
    /// once: we are armed, and a release that counts on us sets our flag,
    /// which we consume as after a park.
    pub(crate) fn wait_blocking(&mut self, d: Discipline) {
        // SAFETY: N1: our own node stays allocated while we wait, guard or no
        // guard (nobody but us retires it before we leave the queue).
        let me = unsafe { Node::get(self.node) };
        // The pace is read once per span, when the window would open: it
        // shares a line with the state word, and yielders reading it every
        // round would take that line from the holder.
        if d.yields_before_parking()
            && self.sync.yields()
            && (self.window.is_open() || self.sync.pace.is_fast())
            && self.window.yield_now()
        {
            let woken = me.wake.swap(0, Acquire) != 0;
            self.resume(if woken {
                Resumed::Woken
            } else {
                Resumed::Unwoken
            });
            return;
        }
        let parked = park(
            self.node as usize,
            || me.wake.load(Acquire) == 0,
            self.deadline,
        );
        // Consume the wake-up before re-checking anything; Acquire makes the
        // waker's changes visible to the re-check.
        me.wake.swap(0, Acquire);
        self.window.reset();
        self.resume(if parked == Parked::TimedOut {
            Resumed::TimedOut
        } else {
            Resumed::Woken
        });
    }
}
