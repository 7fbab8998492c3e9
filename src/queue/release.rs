//! Releasing: the release's RMW on the state word, and the pass through
//! the head that wakes waiters and propagates (`releaseShared`,
//! `doReleaseShared`, `setHeadAndPropagate`, `unparkSuccessor`). Between
//! the two, each release wakes the threads its policy lets wait aside
//! (`aside.rs`).

use std::ptr;

use super::node::{Node, CANCELLED, NONE, PASSED, PROPAGATE, SIGNAL};
use super::policy::{try_acquire, try_release, Discipline, Mode, Policy, WakeBudget, Wakes};
use super::reclaim::Guard;
use super::state::{value_delta, value_of, with_value, ARMED};
use super::{Payload, RawSync};
use crate::loom::Ordering::*;
use crate::park::unpark_one;

impl RawSync {
    /// Releases `arg` in shared mode and wakes the queue if anyone may need
    /// it (`releaseShared`).
    #[inline]
    pub(crate) fn release_shared<P: Policy>(&self, policy: &P, arg: u32) {
        self.release(policy, Mode::Shared, arg);
    }

    /// Releases `arg` in exclusive mode (`release`), as
    /// [`RawSync::release_shared`] does.
    #[inline]
    pub(crate) fn release_exclusive<P: Policy + ?Sized>(&self, policy: &P, arg: u32) {
        self.release(policy, Mode::Exclusive, arg);
    }

    /// The release of either mode, which propagates a woken waker's panic to
    /// its caller once the release is complete (O3).
    #[inline]
    fn release<P: Policy + ?Sized>(&self, policy: &P, mode: Mode, arg: u32) {
        super::propagate(self.release_caught(policy, mode, arg));
    }

    /// Gives back exactly what a queued acquire took from the value
    /// (`taken`, hand-off bits included), after a waker that the acquire
    /// woke panicked (O3): the acquire's caller gets the panic and not the
    /// hold. The inverse of the acquire's CAS, then the wakes aside and a
    /// release's pass through the head if the discipline says someone may
    /// need it, as a release. A
    /// panic of a waker that this wakes is dropped (the first one is the
    /// caller's); every waker is still woken. (Adding back cannot
    /// overflow: every policy bounds its value with the holds counted in.)
    pub(super) fn give_back<P: Policy + ?Sized>(&self, policy: &P, taken: u32) {
        if taken == 0 {
            return; // a latch's wait: nothing taken
        }
        let s = self.state.fetch_add(value_delta(taken), AcqRel);
        self.wake_aside_after(policy, value_of(s).wrapping_add(taken));
        let discipline = policy.discipline();
        if discipline.release_enters_queue(s)
            && policy.release_may_admit(value_of(s), value_of(s).wrapping_add(taken))
        {
            let _second_panic = self.release_slow(Wakes::of_release(policy, taken), discipline);
        }
    }

    /// The release of either mode: one RMW on the word, the wakes aside that
    /// the policy asks for (`aside.rs`), then through the head if the
    /// discipline says someone may need it. Returns the first panic of
    /// a waker it woke (after its guard has left: O1).
    #[inline]
    pub(super) fn release_caught<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mode: Mode,
        arg: u32,
    ) -> Result<(), Payload> {
        // AcqRel on either path: Release publishes the caller's writes to the
        // acquirer; Acquire synchronizes with counted waiters' links (Q1).
        let (s, after) = if policy.release_adds() {
            // The policy promises `value + arg <= u32::MAX`, so no carry
            // leaves the value field. (Were it broken, the carry would fall
            // off bit 63: the low half cannot be touched by an addition to
            // the high half.)
            let s = self.state.fetch_add(value_delta(arg), AcqRel);
            debug_assert_eq!(
                try_release(policy, mode, value_of(s), arg),
                value_of(s).wrapping_add(arg)
            );
            (s, value_of(s).wrapping_add(arg))
        } else {
            let mut s = self.state.load(Relaxed);
            loop {
                let value = try_release(policy, mode, value_of(s), arg);
                match self
                    .state
                    .compare_exchange_weak(s, with_value(s, value), AcqRel, Relaxed)
                {
                    Ok(_) => break (s, value),
                    Err(actual) => s = actual,
                }
            }
        };
        self.wake_aside_after(policy, after);
        let discipline = policy.discipline();
        if discipline.release_enters_queue(s) {
            let wakes = Wakes::of_release(policy, arg);
            return self.release_if_admits(policy, (value_of(s), after), wakes, discipline);
        }
        Ok(())
    }

    /// The rest of a release that the discipline sends into the queue: the
    /// policy's word on whether the change may let anyone in, then the pass
    /// through the head. Out of line, so that a release that finds nobody
    /// armed inlines only its RMW and the discipline's test.
    #[cold]
    #[inline(never)]
    fn release_if_admits<P: Policy + ?Sized>(
        &self,
        policy: &P,
        (before, after): (u32, u32),
        wakes: Wakes,
        discipline: Discipline,
    ) -> Result<(), Payload> {
        if policy.release_may_admit(before, after) {
            return self.release_slow(wakes, discipline);
        }
        Ok(())
    }

    /// A change to the value that is no addition but may still let in a
    /// waiter that the old value refused: a write claim dropped with readers
    /// inside, or with a hand-off restored beside it (W4 in `rwlock.rs`).
    /// `f` maps the value to the new one and says whether the change may
    /// admit a waiter; it runs in a CAS loop, as a release's RMW. After it,
    /// the policy's hooks may wake threads aside (`wake_aside_after` in
    /// `aside.rs`: a dropped claim wakes the reads it turned aside). If it may,
    /// and the discipline says a queued waiter may need it (read from the
    /// word the CAS replaced, as a release reads it), this goes through the
    /// head as a release does: a waiter that armed before the CAS is woken,
    /// and one that arms after it re-checks the new value (P1, A1). The first
    /// panic of a waker it woke propagates once the change is done (O1, O3).
    /// Returns the old value.
    pub(crate) fn update_value_releasing<P: Policy + ?Sized>(
        &self,
        policy: &P,
        mut f: impl FnMut(u32) -> (u32, bool),
    ) -> u32 {
        let changed = self.update_word(
            |_| false,
            |value| {
                let (new, admits) = f(value);
                Some((new, (new, admits)))
            },
        );
        let Ok((s, (new, admits))) = changed else {
            unreachable!("neither `f` nor the check refuses");
        };
        self.wake_aside_after(policy, new);
        let discipline = policy.discipline();
        if admits
            && discipline.release_enters_queue(s)
            && policy.release_may_admit(value_of(s), new)
        {
            super::propagate(self.release_slow(Wakes::First, discipline));
        }
        value_of(s)
    }

    #[cold]
    #[inline(never)]
    fn release_slow(&self, wakes: Wakes, discipline: Discipline) -> Result<(), Payload> {
        let guard = self.reclaim.enter();
        self.do_release_shared(wakes, discipline, &guard);
        guard.finish()
    }

    /// Makes `node` the head and wakes the next waiter if a following acquire
    /// may succeed, or if a release is pending (JDK-6801020).
    pub(super) fn set_head_and_propagate<P: Policy + ?Sized>(
        &self,
        policy: &P,
        node: *mut Node,
        pred: *mut Node,
        propagate: bool,
        guard: &Guard<'_>,
    ) {
        let discipline = policy.discipline();
        // SAFETY: N1: our own node, and our predecessor.
        let (me, old) = unsafe { (guard.node(node), guard.node(pred)) };
        self.head.store(node, Release);
        // V1: a read arrival's look no longer stops at us (we may have
        // acquired without a wake-up pending).
        if me.mode == Mode::Shared {
            self.bump_look();
        }
        me.prev.store(ptr::null_mut(), Release);
        // P3: take over the old head's status with an RMW that marks it
        // PASSED. A releaser whose RMW on it came first is read here (its
        // PROPAGATE mark, or the SIGNAL it cleared), and it may stop there:
        // this check covers it. A releaser that comes later fails on PASSED
        // and retries on the new head.
        let old_status = old.status.swap(PASSED, AcqRel);
        let go = (propagate && Self::propagates_to_successor(me, guard)) || {
            // Wake the successor only if it could take the value *now*, and a
            // status says a waiter or a release may need it: the old head's
            // (a release left PROPAGATE there or cleared its SIGNAL), or our
            // own (SIGNAL: a successor parks; PROPAGATE: a release found us
            // already head with nobody to wake). The value load must come
            // after both RMWs: each reads any release whose RMW on that
            // status came first, so the load sees that release's value. With
            // nothing there for the successor, what was released was taken
            // already (by us, or by a waiter woken out of turn) or is too
            // little for it (a writer behind readers), and a release after
            // our RMWs finds our SIGNAL and wakes the successor itself.
            // (JDK 8 propagates on
            // any such status alone, which wakes the successor after every
            // queued acquire for nothing: `docs/design.md`.)
            let own = me.status.fetch_or(0, AcqRel);
            let marked = old_status < 0 || own == PROPAGATE || own == SIGNAL;
            // A1: a successor that armed us sleeps counting on our release;
            // the releaser that woke us cleared the armed bit, so set it
            // again (and read the value from that RMW: a release before it is
            // seen here, one after it sees the bit).
            let armed = (own == SIGNAL && discipline.uses_armed_bit())
                .then(|| self.state.fetch_or(ARMED, AcqRel));
            let value = value_of(armed.unwrap_or_else(|| self.state.load(Acquire)));
            marked && Self::successor_could_take(policy, me, value, guard)
        };
        if go {
            self.do_release_shared(Wakes::First, discipline, guard);
        }
    }

    /// Whether a shared acquire's own "propagate" may wake the node after
    /// `me`: not if it is known to be exclusive (the JDK's `s.isShared()`
    /// test). A pending release's wake (a marked status) is never skipped.
    fn propagates_to_successor(me: &Node, guard: &Guard<'_>) -> bool {
        let next = me.next.load(Acquire);
        // SAFETY: R5: a `next` link loaded inside the guard.
        next.is_null() || unsafe { guard.node(next) }.mode == Mode::Shared
    }

    /// Whether the waiter after `me` could take from `value` as first in
    /// line. Where that cannot be told (no successor linked yet, or a
    /// cancelled one, behind which anyone may wait), whether there is any
    /// value at all.
    fn successor_could_take<P: Policy + ?Sized>(
        policy: &P,
        me: &Node,
        value: u32,
        guard: &Guard<'_>,
    ) -> bool {
        let next = me.next.load(Acquire);
        if !next.is_null() {
            // SAFETY: R5: a `next` link loaded inside the guard.
            let succ = unsafe { guard.node(next) };
            if succ.status.load(Acquire) != CANCELLED {
                return try_acquire(policy, succ.mode, value, succ.need, false).is_some();
            }
        }
        value > 0
    }

    /// Wakes the head's successor, or leaves PROPAGATE on the head so that the
    /// next head propagates. `wakes` says whether waiters behind the first
    /// may be woken too (`wake_ahead`); the discipline decides how far, and
    /// whether a release follows a head that moved under it.
    pub(super) fn do_release_shared(&self, wakes: Wakes, d: Discipline, guard: &Guard<'_>) {
        loop {
            let h = self.head.load(Acquire);
            // Unlike the JDK, no `h != tail` shortcut: `tail` is not ordered
            // with a waiter that armed `h` after seeing a stale head, so the
            // shortcut could skip the status RMW that P1/P3 rely on.
            if h.is_null() {
                return; // no queue yet: nobody can have counted as a waiter
            }
            // SAFETY: R5: loaded from `head` inside the guard.
            let head = unsafe { guard.node(h) };
            let ws = head.status.load(Acquire);
            if ws == SIGNAL {
                if head
                    .status
                    .compare_exchange(SIGNAL, NONE, AcqRel, Acquire)
                    .is_err()
                {
                    continue;
                }
                // A1: we consumed the SIGNAL the armed bit stood for: clear
                // it *before* waking, so that the woken waiter's own publish
                // before it parks again comes later.
                if d.uses_armed_bit() {
                    self.disarm(h);
                }
                let first = self.unpark_successor(h, guard);
                if let (false, Some(budget)) = (first.is_null(), d.wake_ahead_after_signal(wakes)) {
                    self.wake_ahead(first, budget, guard);
                }
            } else if ws == NONE {
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
                // the swap we just read).
                continue;
            }
            // Our RMW on `h` succeeded, so it comes before any takeover of
            // `h` in its modification order: if `h` is no longer the head, the
            // new head's swap read our RMW and its own check covers what we
            // released (P3), so we may stop here; a barging release goes on
            // through the new head (`Discipline::follows_moved_head`).
            if ws != SIGNAL && d.wakes_ahead_of_awake_first(wakes) {
                // The first waiter was woken by an earlier release (or has not
                // parked yet), so our value is for someone behind it.
                let mut first = head.next.load(Acquire);
                while !first.is_null() {
                    // SAFETY: R5: a `next` link loaded inside the guard.
                    let node = unsafe { guard.node(first) };
                    if node.status.load(Acquire) != CANCELLED {
                        self.wake_ahead(first, WakeBudget::Covered, guard);
                        break;
                    }
                    first = node.next.load(Acquire);
                }
            }
            // A barging release goes in only when it read the armed bit
            // (`Discipline::release_enters_queue`), and the bit stands for a
            // SIGNAL on the head. Finding none, the bit is stale: it was
            // published by a waiter behind the first (the first waiter's
            // takeover sets it again), or by a waiter whose re-check then
            // acquired. Left set, it would send every release through here
            // until some waiter parks and is woken. So clear it, and re-read
            // the head's status (A1).
            if d.uses_armed_bit() && ws != SIGNAL && self.disarm_stale(head) {
                continue; // a waiter armed the head meanwhile: wake it
            }
            if !d.follows_moved_head() || h == self.head.load(Acquire) {
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
    /// set the bit again (A1), and the takeover's RMWs come after ours on
    /// `head`'s status, or it reads `PASSED` and the caller retries.
    fn disarm_stale(&self, head: &Node) -> bool {
        self.state.fetch_and(!ARMED, AcqRel);
        head.status.fetch_or(0, AcqRel) == SIGNAL
    }

    /// Clears the armed bit after consuming `h`'s SIGNAL. If `h` is no longer
    /// the head, a waiter may have published the bit for the new head: its
    /// RMW came before our clear in the word's order, so our clear
    /// synchronizes with it and the `head` load after it sees the move (the
    /// waiter loaded the new head before publishing); then set the bit back.
    /// A waiter that publishes after our clear keeps its bit. (The caller's
    /// follow-up through the moved head covers the same case; the re-set
    /// keeps the bit right on its own, without relying on that.)
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
    /// run yet; they are counted in front but not woken again. `budget`
    /// bounds it further for a barging release ([`WakeBudget`]).
    ///
    /// These wake-ups are an optimisation the protocol never relies on: each
    /// woken waiter re-checks, spins briefly for its turn, and is woken again
    /// by propagation if it parked meanwhile.
    pub(super) fn wake_ahead(&self, first: *mut Node, budget: WakeBudget, guard: &Guard<'_>) {
        // SAFETY: R5: `first` was loaded from a link inside the guard.
        let first = unsafe { guard.node(first) };
        let Some(mut covered) = value_of(self.state.load(Acquire)).checked_sub(first.need) else {
            return;
        };
        let mut units = match budget {
            WakeBudget::Covered => None,
            WakeBudget::Released(released) => match released.checked_sub(first.need) {
                None => return, // `first` alone needs more than was released
                left => left,
            },
        };
        // Nothing left for anyone behind `first` (every queued need is at
        // least 1: see `add_waiter`).
        if covered == 0 {
            return;
        }
        let mut n = first.next.load(Acquire);
        while !n.is_null() {
            // SAFETY: R5: loaded from a `next` link inside the guard.
            let node = unsafe { guard.node(n) };
            if node.mode == Mode::Exclusive {
                return; // shared value wakes nobody past an exclusive waiter
            }
            if node.status.load(Acquire) != CANCELLED {
                match covered.checked_sub(node.need) {
                    Some(left) => covered = left,
                    None => return,
                }
                // A set flag: woken by an earlier release, not yet running.
                if node.wake.load(Acquire) == 0 {
                    if let Some(left) = units {
                        match left.checked_sub(node.need) {
                            Some(left) => units = Some(left),
                            None => return,
                        }
                    }
                    self.wake(node, n, guard);
                }
            }
            n = node.next.load(Acquire);
        }
    }

    /// Wakes the first live waiter after `node` and returns it, or null if
    /// there is none.
    pub(super) fn unpark_successor(&self, node: *mut Node, guard: &Guard<'_>) -> *mut Node {
        // SAFETY: R5: a head loaded inside the guard, or our own node (N1).
        let me = unsafe { guard.node(node) };
        let mut s = me.next.load(Acquire);
        // SAFETY: R5: a `next` link loaded inside the guard.
        if s.is_null() || unsafe { guard.node(s) }.status.load(Acquire) == CANCELLED {
            // The hint is missing or dead: walk back from the tail and keep
            // the live node closest to `node`. Stop at a head (null `prev`),
            // so that a stale `node` makes us wake the current first waiter.
            s = ptr::null_mut();
            let mut t = self.tail.load(Acquire);
            while !t.is_null() && t != node {
                // SAFETY: R5: loaded from `tail` or `prev` inside the guard.
                let n = unsafe { guard.node(t) };
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
            // SAFETY: R5: as above.
            self.wake(unsafe { guard.node(s) }, s, guard);
        }
        s
    }

    /// Sets `node`'s wake flag and unparks its owner (`ptr` is its address, the
    /// park key); a task's waker is taken and left in `guard`, to be woken once
    /// the guard has left (O1).
    ///
    /// An RMW, not a store: the owner consumes the flag with `swap(0)`, and a
    /// plain store of ours is not ordered against that earlier swap, so the
    /// model lets the swap come after our store in the flag's modification order
    /// (reading our indistinguishable 1) and the owner's next `validate` read its
    /// own 0: a lost wake-up. With two RMWs, either the owner's swap reads our 1
    /// and synchronizes with everything we did before waking it, or our swap
    /// comes later and `validate`, which runs after our `unpark_one` under the
    /// same lock (K2), must see it.
    pub(super) fn wake(&self, node: &Node, ptr: *mut Node, guard: &Guard<'_>) {
        if node.wake.swap(1, Release) != 0 {
            // Already pending: the waker whose swap set it calls `unpark_one`
            // (or already has), and the owner, whose consuming swap comes after
            // ours in the flag's order, synchronizes with us too.
            return;
        }
        // V1: a read arrival's look now passes this reader.
        if node.mode == Mode::Shared {
            self.bump_look();
        }
        #[cfg(feature = "async")]
        if let Some(task) = &node.task {
            // F2, AW2: the waker is ours to wake now; O1: not here.
            if let Some(waker) = task.take() {
                guard.defer_wake(waker);
            }
            return;
        }
        #[cfg(not(feature = "async"))]
        let _ = guard;
        unpark_one(ptr as usize);
    }
}

/// As [`RawSync::wake`], for a thread's node (no waker slot), outside any
/// guard: a condition waiter that a notifier transferred. It is exclusive, so
/// its wake-up changes no read arrival's look (V1).
pub(super) fn wake_thread(node: &Node, ptr: *mut Node) {
    #[cfg(feature = "async")]
    debug_assert!(node.task.is_none(), "a condition waiter is a thread");
    if node.wake.swap(1, Release) == 0 {
        unpark_one(ptr as usize);
    }
}
