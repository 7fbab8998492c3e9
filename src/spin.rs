//! Spinning and yielding before parking: the budgets and their constants.
//!
//! Both are wait *strategies*, never part of the protocol: the queue treats
//! a spin round as a re-check and a yield as a park that returns at once.
//! Under loom ([`crate::loom`]) the spin budget is zero (a spin only re-runs
//! queue code that loom already explores) and a yield window holds exactly
//! one yield.

use std::time::Duration;
#[cfg(not(aqs_loom))]
use std::time::Instant;

#[cfg(not(aqs_loom))]
use crate::loom::{AtomicU32, Ordering::Relaxed};

/// How many extra spin budgets a strict FIFO waiter second in line may use
/// while its predecessor, the first waiter, wakes with its value already
/// there. One budget is often shorter than a wake-up, and a second waiter
/// that parks there turns two threads over one fair permit into a convoy
/// that pays a full wake-up per permit (`docs/design.md`, "Spinning before
/// parking").
pub(crate) const SECOND_IN_LINE_RENEWALS: u32 = 3;

/// How long a strict FIFO waiter may give its CPU away with `yield_now`
/// where it would otherwise park, from the start of its wait and again after
/// each wake-up from a park. While other threads want the CPU (the permit
/// holders among them), a waiter that stays runnable catches its turn
/// without a sleep and a wake-up. A waiter yields at all only while its
/// queue turns over fast ([`Pace`]). The length and its measurements are in
/// `docs/design.md`, "Yielding before parking".
pub(crate) const YIELD_WINDOW: Duration = Duration::from_micros(50);

/// A queue whose waiters acquire more often than this, one after another,
/// is worth yielding for: its turns come faster than a sleep and a wake-up
/// would deliver them. It sits above the cost of a sleep and a wake-up, so a
/// fast queue whose waiters all happen to park (each turn then costs about
/// one wake-up) still reads as fast, and its waiters go back to yielding. A
/// queue that moves slower is held up by its holders (they sleep, or wait
/// on I/O), and a waiter's yields would only burn CPU: it parks at once.
#[cfg(not(aqs_loom))]
const FAST_TURN: Duration = Duration::from_micros(20);

/// The longest turn that [`Pace`] counts: a longer one counts as this
/// long. One stalled wait (a holder preempted) then cannot mark a fast queue
/// slow; three slow waits in a row do, and four fast ones undo it.
#[cfg(not(aqs_loom))]
const MAX_TURN: Duration = Duration::from_micros(40);

/// Bounded spinning before parking.
///
/// On std this is crossbeam's `Backoff`: exponentially longer busy-wait
/// rounds, then a few `yield_now`s (which let a preempted permit holder run on
/// an oversubscribed machine), then done. Under loom the budget is zero.
#[derive(Debug)]
pub(crate) struct Spin {
    #[cfg(not(aqs_loom))]
    backoff: crossbeam_utils::Backoff,
}

impl Spin {
    #[inline]
    pub(crate) fn new() -> Self {
        Spin {
            #[cfg(not(aqs_loom))]
            backoff: crossbeam_utils::Backoff::new(),
        }
    }

    /// Waits one round; returns `false` (without waiting) once the budget is spent.
    #[inline]
    pub(crate) fn spin(&self) -> bool {
        #[cfg(not(aqs_loom))]
        {
            if self.backoff.is_completed() {
                return false;
            }
            self.backoff.snooze();
            true
        }
        #[cfg(aqs_loom)]
        false
    }

    /// Whether [`Spin::spin_renewing`] would still wait, with `renewals`
    /// budgets in reserve (always `false` under loom): lets a caller skip the
    /// loads that decide whether to spin.
    #[inline]
    pub(crate) fn can_spin(&self, renewals: u32) -> bool {
        #[cfg(not(aqs_loom))]
        {
            renewals > 0 || !self.backoff.is_completed()
        }
        #[cfg(aqs_loom)]
        {
            let _ = renewals;
            false
        }
    }

    /// [`Spin::spin`], but a spent budget is first renewed from `renewals`
    /// (one taken per renewal) while any are left.
    #[inline]
    pub(crate) fn spin_renewing(&self, renewals: &mut u32) -> bool {
        #[cfg(not(aqs_loom))]
        if *renewals > 0 && self.backoff.is_completed() {
            *renewals -= 1;
            self.backoff.reset();
        }
        #[cfg(aqs_loom)]
        let _ = renewals;
        self.spin()
    }

    /// Restores the full budget.
    #[inline]
    pub(crate) fn reset(&self) {
        #[cfg(not(aqs_loom))]
        self.backoff.reset();
    }
}

/// How many single-pause rounds [`PollSpin`] waits: about as many pauses as
/// [`Spin`]'s busy-wait rounds add up to.
#[cfg(not(aqs_loom))]
const POLL_SPINS: u32 = 128;

/// Bounded spinning that looks again after every pause, for a wait whose
/// end is one store by a running thread (a fair mutex's claimed turn: the
/// holder's unlock, M4 in `mutex.rs`). [`Spin`]'s rounds grow to 64 pauses,
/// so a waiter there can notice the store a round late, which is longer
/// than the section it waits out. Under loom the budget is one round, a
/// yield: a model then explores a waiter that looks twice (the second look
/// after other threads ran), as well as one that gives up after one look,
/// as [`YieldWindow`] does.
#[derive(Debug)]
pub(crate) struct PollSpin {
    #[cfg(not(aqs_loom))]
    left: std::cell::Cell<u32>,
    /// Whether the one round of a loom budget is spent.
    #[cfg(aqs_loom)]
    spent: std::cell::Cell<bool>,
}

impl PollSpin {
    #[inline]
    pub(crate) fn new() -> Self {
        PollSpin {
            #[cfg(not(aqs_loom))]
            left: std::cell::Cell::new(POLL_SPINS),
            #[cfg(aqs_loom)]
            spent: std::cell::Cell::new(false),
        }
    }

    /// Pauses once; returns `false` (without pausing) once the budget is
    /// spent.
    #[inline]
    pub(crate) fn spin(&self) -> bool {
        #[cfg(not(aqs_loom))]
        {
            let left = self.left.get();
            if left == 0 {
                return false;
            }
            self.left.set(left - 1);
            std::hint::spin_loop();
            true
        }
        #[cfg(aqs_loom)]
        {
            if self.spent.replace(true) {
                return false;
            }
            loom::thread::yield_now();
            true
        }
    }
}

/// Yielding instead of parking, for a bounded time from the start of a wait.
///
/// On std the window is a span of wall-clock time that opens at the first
/// [`YieldWindow::yield_now`] and closes `length` later. Under loom, where
/// time does not pass, it holds exactly one yield: a model then explores a
/// waiter that gives its CPU away once and re-checks, as well as one that
/// parks, without multiplying the state space by a count of rounds.
#[derive(Debug)]
pub(crate) struct YieldWindow {
    #[cfg(not(aqs_loom))]
    length: Duration,
    /// When the window opened (`None`: not yet).
    #[cfg(not(aqs_loom))]
    opened: Option<Instant>,
    /// Whether the one yield of a loom window is spent.
    #[cfg(aqs_loom)]
    spent: bool,
}

impl YieldWindow {
    /// A window of `length`, opened by its first use.
    #[inline]
    pub(crate) fn new(length: Duration) -> Self {
        #[cfg(not(aqs_loom))]
        {
            YieldWindow {
                length,
                opened: None,
            }
        }
        #[cfg(aqs_loom)]
        {
            let _ = length;
            YieldWindow { spent: false }
        }
    }

    /// Yields the CPU once and returns `true` if the window is open (opening
    /// it on first use); returns `false` without yielding once it has closed.
    #[inline]
    pub(crate) fn yield_now(&mut self) -> bool {
        #[cfg(not(aqs_loom))]
        {
            let now = Instant::now();
            let opened = *self.opened.get_or_insert(now);
            if now.duration_since(opened) >= self.length {
                return false;
            }
            std::thread::yield_now();
            true
        }
        #[cfg(aqs_loom)]
        {
            if self.spent {
                return false;
            }
            self.spent = true;
            loom::thread::yield_now();
            true
        }
    }

    /// Whether the current span has opened (always `false` under loom, where
    /// a window's one yield decides by itself).
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        #[cfg(not(aqs_loom))]
        {
            self.opened.is_some()
        }
        #[cfg(aqs_loom)]
        false
    }

    /// Closes the window's current span: the next use opens a new one.
    #[inline]
    pub(crate) fn reset(&mut self) {
        #[cfg(not(aqs_loom))]
        {
            self.opened = None;
        }
        #[cfg(aqs_loom)]
        {
            self.spent = false;
        }
    }
}

/// How fast a queue turns over: a running average of the time per turn
/// that waiters saw while they waited (a waiter's wait divided by the
/// waiters that were queued when it began, itself included). Averaging over
/// whole waits, not the gaps between acquisitions, keeps a slow queue whose
/// holders release in bursts from reading as fast. It decides whether a
/// waiter yields at all ([`FAST_TURN`]). A heuristic shared by all of a
/// synchronizer's waiters: its loads and stores are relaxed, and a lost
/// update only delays the average. Under loom it keeps nothing and always
/// reads as fast (the models choose their yields themselves).
#[derive(Debug)]
pub(crate) struct Pace {
    /// The running average, in ns per turn (at most `MAX_TURN`, so 32 bits
    /// hold it; the four bytes saved keep `RawSync` at 64).
    #[cfg(not(aqs_loom))]
    turn: AtomicU32,
}

impl Pace {
    /// A queue with no history: fast.
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new() -> Self {
        Pace {
            turn: AtomicU32::new(0),
        }
    }

    /// A queue with no history (loom: nothing to keep).
    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        Pace {}
    }

    /// Records a wait that ended in an acquire: it took `waited`, behind a
    /// queue of `turns` waiters (itself included) when it began.
    #[inline]
    pub(crate) fn turned(&self, waited: Duration, turns: u32) {
        #[cfg(not(aqs_loom))]
        {
            let per_turn = (waited / turns.max(1)).min(MAX_TURN).as_nanos() as u32;
            let turn = self.turn.load(Relaxed);
            // A running average over about four waits.
            self.turn.store(turn - turn / 4 + per_turn / 4, Relaxed);
        }
        #[cfg(aqs_loom)]
        let _ = (waited, turns);
    }

    /// Whether the queue turns over fast enough to yield for.
    #[inline]
    pub(crate) fn is_fast(&self) -> bool {
        #[cfg(not(aqs_loom))]
        {
            self.turn.load(Relaxed) < FAST_TURN.as_nanos() as u32
        }
        #[cfg(aqs_loom)]
        true
    }
}

#[cfg(all(test, not(aqs_loom)))]
mod tests {
    use super::{Pace, YieldWindow, FAST_TURN};
    use std::time::Duration;

    #[test]
    fn yield_window_yields_while_open_and_reopens_after_reset() {
        let mut open = YieldWindow::new(Duration::from_secs(3600));
        assert!(open.yield_now(), "a fresh window is open");
        let mut empty = YieldWindow::new(Duration::ZERO);
        assert!(!empty.yield_now(), "a window of no length never yields");
        empty.reset();
        assert!(!empty.yield_now(), "nor after a reset");
        open.reset();
        assert!(open.yield_now(), "a reset window opens again");
    }

    #[test]
    fn pace_reads_slow_after_slow_waits_and_fast_again_after_fast_ones() {
        let pace = Pace::new();
        assert!(pace.is_fast(), "a queue with no history is fast");
        // 12 waiters, 600 us: 50 us a turn.
        for _ in 0..3 {
            pace.turned(Duration::from_micros(600), 12);
        }
        assert!(!pace.is_fast(), "three slow waits in a row read as fast");
        // 14 waiters, 48 us: about 3 us a turn.
        for _ in 0..4 {
            pace.turned(Duration::from_micros(48), 14);
        }
        assert!(
            pace.is_fast(),
            "four fast waits did not bring the pace back"
        );
        // One stalled wait does not make a fast queue slow.
        pace.turned(Duration::from_secs(1), 1);
        assert!(pace.is_fast(), "one stall read as a slow queue");
        assert!(!FAST_TURN.is_zero());
    }
}
