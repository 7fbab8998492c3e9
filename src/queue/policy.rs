//! What a synchronizer tells the core: its hooks (the value's meaning), in
//! shared and exclusive [`Mode`], and its [`Discipline`] (fair or barging).

use super::state::{is_armed, waiters_of};

/// A successful shared acquire, as decided by a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Acquired {
    /// The value after the acquire.
    pub(crate) value: u32,
    /// Whether a following shared acquire might succeed too (the JDK's
    /// "positive return"): the next waiter is woken to try.
    pub(crate) propagate: bool,
}

/// How an acquire holds what it takes, as in AQS: a shared acquire may let
/// the next shared waiter in too (propagation); an exclusive one never does,
/// and shared propagation stops at an exclusive waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `tryAcquireShared`: a semaphore's permits, a read lock, a latch.
    Shared,
    /// `tryAcquire`: a mutex, a write lock.
    Exclusive,
}

/// What a synchronizer means by its value: the AQS hooks, as pure functions.
/// The core runs them inside its own CAS loops. A synchronizer implements the
/// hooks of the modes it uses; the defaults refuse (acquire) or panic
/// (release), so a mode a policy never asked for cannot be used by mistake.
///
/// All must be cheap, must not block, and the acquire hooks must not panic
/// (they run while the caller's node is linked into the queue).
pub(crate) trait Policy {
    /// Decides a shared acquire of `arg` from `value`. `others_queued` is
    /// true when the caller is an arriving thread and somebody is already
    /// queued; it is false for arrivals into an empty queue and for the first
    /// queued waiter. Returns `None` when the caller must wait.
    fn try_acquire_shared(&self, value: u32, arg: u32, others_queued: bool) -> Option<Acquired> {
        let _ = (value, arg, others_queued);
        None
    }

    /// Returns the value after a shared release of `arg`. May panic (for
    /// example on overflow); the state word is then left unchanged.
    fn try_release_shared(&self, value: u32, arg: u32) -> u32 {
        let _ = (value, arg);
        unreachable!("aqs: a shared release on a policy without shared mode")
    }

    /// Decides an exclusive acquire of `arg` from `value`, as
    /// [`Policy::try_acquire_shared`] does; returns the value after it.
    /// An exclusive acquire never propagates.
    fn try_acquire_exclusive(&self, value: u32, arg: u32, others_queued: bool) -> Option<u32> {
        let _ = (value, arg, others_queued);
        None
    }

    /// Returns the value after an exclusive release of `arg`. May panic (for
    /// example on a release by nobody who holds); the state word is then left
    /// unchanged.
    fn try_release_exclusive(&self, value: u32, arg: u32) -> u32 {
        let _ = (value, arg);
        unreachable!("aqs: an exclusive release on a policy without exclusive mode")
    }

    /// Whether every release of `arg` (in either mode) adds exactly `arg` to
    /// the value *and*
    /// the policy guarantees that the sum never passes `u32::MAX` (a counter
    /// that bounds what is outstanding). The core then releases with one
    /// `fetch_add` instead of a load + CAS loop, so an uncontended release
    /// does not wait for the acquire's locked instruction to retire before
    /// it can compute its CAS. `try_release_shared` is then only a
    /// debug-build cross-check of the release hooks. Off by default.
    fn release_adds(&self) -> bool {
        false
    }

    /// Fair or barging; see [`Discipline`].
    fn discipline(&self) -> Discipline;

    /// Whether arriving shared acquires defer only to queued exclusive
    /// waiters, as a nonfair read lock's readers do so that writers are not
    /// starved (the JDK defers to a first waiter that is exclusive,
    /// `apparentlyFirstQueuedIsExclusive`; we look past shared waiters
    /// already woken ahead of it, see `RawSync::exclusive_queued`). The
    /// shared hook's `others_queued` then says whether an exclusive waiter
    /// is next in line, which costs a look only while someone is queued.
    /// Off by default.
    fn shared_arrivals_defer_to_exclusive(&self) -> bool {
        false
    }

    /// Whether, with the value at `value`, arriving shared acquires defer to
    /// anyone queued after all, whatever
    /// [`shared_arrivals_defer_to_exclusive`](Policy::shared_arrivals_defer_to_exclusive)
    /// says: the shared hook's `others_queued` is then whether anyone is
    /// queued. For a value that is promised to the first waiter, whoever
    /// that is (a read-write lock's hand-off, W2): a look at the first node
    /// could find a waiter that is leaving and miss the one behind it. Off
    /// by default.
    fn shared_arrivals_defer_to_any(&self, value: u32) -> bool {
        let _ = value;
        false
    }

    /// Whether an arrival in `mode` that found `value` may spin before it
    /// queues (barging policies only; see `Discipline::arrival_spins`).
    /// A write lock's arrival that finds readers inside gains nothing by
    /// spinning unless arriving readers defer to it: a queued writer's do,
    /// and so do a claimant's (W4 in `rwlock.rs`, which spins before it
    /// gets here).
    /// On by default.
    fn arrival_may_spin(&self, mode: Mode, value: u32) -> bool {
        let _ = (mode, value);
        true
    }

    /// Whether a release that changed the value from `before` to `after`
    /// may let a waiter in, and so must go through the head. A latch's
    /// count-down that leaves the count above zero lets nobody in, nor does
    /// a read unlock from a value that admitted reads to one with readers
    /// still inside (W5 in `rwlock.rs`). On by default.
    fn release_may_admit(&self, before: u32, after: u32) -> bool {
        let _ = (before, after);
        true
    }

    /// Whether a release (or a give-back, O3, or a change through
    /// [`RawSync::update_value_releasing`](super::RawSync::update_value_releasing))
    /// that left the value at `after` must wake the one thread that may
    /// sleep aside, outside the queue, on the synchronizer's first key aside
    /// ([`RawSync::park_aside`](super::RawSync::park_aside)): a read-write
    /// lock's claimant waiting for the last reader to leave (W4 in
    /// `rwlock.rs`). Asked after every such RMW, queue or not, so it must be
    /// a test of `after` alone. Off by default.
    fn release_wakes_aside(&self, after: u32) -> bool {
        let _ = after;
        false
    }

    /// The flag of the crowd aside that a release (a give-back, O3, or a
    /// change through [`RawSync::update_value_releasing`](super::RawSync::update_value_releasing))
    /// that left the value at `after` must clear, waking every thread
    /// asleep in the crowd ([`RawSync::park_crowd`](super::RawSync::park_crowd));
    /// 0 for none. The crowd is a read-write lock's reads that a writer
    /// turned away (W6 in `rwlock.rs`). Asked after every such RMW, queue or
    /// not, so it must be a test of `after` alone. Never, by default.
    fn release_wakes_crowd(&self, after: u32) -> u32 {
        let _ = after;
        0
    }

    /// Whether a multi-unit release wakes every waiter it could serve, not
    /// only the first, letting them take value out of turn through
    /// [`Policy::try_acquire_out_of_turn`] (`wake_ahead`). Off by
    /// default.
    fn out_of_turn(&self) -> bool {
        false
    }

    /// Decides an acquire of `arg` from `value` by a woken waiter that is not
    /// first in line. `ahead` is at least the sum of the `arg`s of the live
    /// waiters queued in front of it (it may over-count, never under-count):
    /// a FIFO policy must leave them that much; a barging one may ignore it.
    /// Only called when [`Policy::out_of_turn`] is true.
    fn try_acquire_out_of_turn(&self, value: u32, arg: u32, ahead: u32) -> Option<Acquired> {
        let _ = (value, arg, ahead);
        None
    }
}

/// Runs the acquire hook of `mode`.
#[inline]
pub(crate) fn try_acquire<P: Policy + ?Sized>(
    policy: &P,
    mode: Mode,
    value: u32,
    arg: u32,
    others_queued: bool,
) -> Option<Acquired> {
    match mode {
        Mode::Shared => policy.try_acquire_shared(value, arg, others_queued),
        Mode::Exclusive => policy
            .try_acquire_exclusive(value, arg, others_queued)
            .map(|value| Acquired {
                value,
                propagate: false,
            }),
    }
}

/// Runs the release hook of `mode`.
#[inline]
pub(crate) fn try_release<P: Policy + ?Sized>(policy: &P, mode: Mode, value: u32, arg: u32) -> u32 {
    match mode {
        Mode::Shared => policy.try_release_shared(value, arg),
        Mode::Exclusive => policy.try_release_exclusive(value, arg),
    }
}

/// How a synchronizer orders its waiters: the one place where fair and
/// barging differ inside the core.
///
/// | point | `Fifo` | `Barging` | where |
/// |---|---|---|---|
/// | arrival while others queue | the policy refuses (`others_queued`) | may take free value | the policy's hook |
/// | arrival spin | none: a fair arrival that spun outside the queue would race other arrivals | spins while nobody is queued; a read that defers to queued writers spins with others queued too | `acquire_slow` |
/// | armed bit (A1) | never set, cleared or read | published before every park; a release with the bit clear skips the queue | `release_shared`, `Waiter::step` |
/// | yield window | yields before parking ([`YIELD_WINDOW`](crate::spin::YIELD_WINDOW)) | parks (its waiters rarely park; yields bought nothing) | the blocking driver |
/// | second in line | spins while the first waiter wakes with its value there | parks | `Waiter::step` |
/// | wake-ahead after a `SIGNAL` | wakes every waiter the available value covers | only past the first when a release returned 2 or more, and no more than it returned | `do_release_shared` |
/// | first waiter already awake | the release wakes the next waiters its value covers | nothing more: arrivals take freed value | `do_release_shared` |
/// | head moved during a release | stops: the new head's takeover covers it (P3) | follows the new head (a speculative wake the spinning first waiter usually uses) | `do_release_shared` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discipline {
    /// Strict FIFO: while anyone is queued, value goes to the queue in order.
    Fifo,
    /// Arrivals may take value out of turn (nonfair).
    Barging,
}

impl Discipline {
    /// Whether arrivals may spin (retrying as arrivals) before queueing.
    #[inline]
    pub(crate) fn arrival_spins(self) -> bool {
        self == Discipline::Barging
    }

    /// Whether waiters publish the armed bit before parking (A1).
    #[inline]
    pub(crate) fn uses_armed_bit(self) -> bool {
        self == Discipline::Barging
    }

    /// Whether a release that returned state word `s` must go through the
    /// head: somebody is queued and, for a barging policy, may be asleep
    /// counting on it (the armed bit). While a barging queue's first waiter
    /// is awake, its own re-check covers this value and arrivals may take it
    /// anyway; a FIFO release always goes in, since with the first waiter
    /// awake its value is for the next one.
    #[inline]
    pub(crate) fn release_enters_queue(self, s: u64) -> bool {
        waiters_of(s) > 0 && (self == Discipline::Fifo || is_armed(s))
    }

    /// Whether a blocking waiter yields before it parks (`YIELD_WINDOW`).
    #[inline]
    pub(crate) fn yields_before_parking(self) -> bool {
        self == Discipline::Fifo
    }

    /// Whether a waiter second in line spins through its predecessor's
    /// wake-up.
    #[inline]
    pub(crate) fn spins_second_in_line(self) -> bool {
        self == Discipline::Fifo
    }

    /// After a release woke the first waiter through the head's `SIGNAL`:
    /// how far to wake further waiters, if at all.
    #[inline]
    pub(crate) fn wake_ahead_after_signal(self, wakes: Wakes) -> Option<WakeBudget> {
        match (self, wakes) {
            (Discipline::Fifo, Wakes::Ahead(_)) => Some(WakeBudget::Covered),
            (Discipline::Barging, Wakes::Ahead(units)) if units > 1 => {
                Some(WakeBudget::Released(units))
            }
            _ => None,
        }
    }

    /// Whether a release that found the first waiter already awake (no
    /// `SIGNAL` on the head) wakes the next waiters its value covers.
    #[inline]
    pub(crate) fn wakes_ahead_of_awake_first(self, wakes: Wakes) -> bool {
        self == Discipline::Fifo && matches!(wakes, Wakes::Ahead(_))
    }

    /// Whether a release goes on through a head that moved under it.
    #[inline]
    pub(crate) fn follows_moved_head(self) -> bool {
        self == Discipline::Barging
    }
}

/// Whom a pass through the head (`do_release_shared`) may wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wakes {
    /// The first waiter only: propagation by a new head, or a release under
    /// a policy without out-of-turn acquires.
    First,
    /// A release of this many units (at least 1) under a policy with
    /// out-of-turn acquires: waiters behind the first that the value covers
    /// may be woken too (`wake_ahead`).
    Ahead(u32),
}

impl Wakes {
    /// For a release of `units` under `policy`.
    #[inline]
    pub(crate) fn of_release<P: Policy + ?Sized>(policy: &P, units: u32) -> Wakes {
        if policy.out_of_turn() && units > 0 {
            Wakes::Ahead(units)
        } else {
            Wakes::First
        }
    }
}

/// How many waiters behind the first a wake-ahead may wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeBudget {
    /// Every waiter the available value covers (FIFO: value left with
    /// nobody woken for it would sit idle, since arrivals never take it).
    Covered,
    /// No more units than one release returned, the first waiter's need
    /// included (barging: arrivals may take whatever is left).
    Released(u32),
}
