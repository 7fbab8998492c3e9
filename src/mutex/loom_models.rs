//! Loom models of the mutex (the core's own models are in
//! `queue/loom_models.rs`): exclusive mode with three contenders, the
//! `unlock_fair` hand-off against a barging arrival, a timed lock that
//! gives up while an unlock races it, and a fair lock's claimed turn (M4)
//! against a queued waiter and an arrival, and never past a queued waiter. Run with `bash scripts/loom.sh`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;

use super::{Lock, CLAIMED, HANDOFF, UNLOCKED};
use crate::queue;

/// Runs `f` under loom with at most `bound` preemptions per execution
/// (lowered further by `LOOM_MAX_PREEMPTIONS` if that is set and smaller).
fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    let bound = builder.preemption_bound.map_or(bound, |env| env.min(bound));
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// A cell the lock guards: two holders at once, or a holder that does not
/// happen-after the previous one's unlock, is a loom causality violation.
struct Guarded(UnsafeCell<usize>);

// SAFETY: accesses are supposed to be serialized by the lock; loom checks
// exactly that.
unsafe impl Sync for Guarded {}

impl Guarded {
    fn enter(&self) {
        // SAFETY: see above; a racing access is a loom failure, not UB.
        self.0.with_mut(|n| unsafe { *n += 1 });
    }
    fn total(&self) -> usize {
        // SAFETY: read after all threads were joined.
        self.0.with(|n| unsafe { *n })
    }
}

fn assert_free<const FAIR: bool>(lock: &Lock<FAIR>) {
    let s = lock.sync.state();
    assert_eq!(
        queue::value_of(s) & UNLOCKED,
        UNLOCKED,
        "the lock was left held"
    );
    assert_eq!(
        queue::value_of(s) & CLAIMED,
        0,
        "a claim outlived its claimant"
    );
    assert_eq!(queue::waiters_of(s), 0, "a waiter is still counted");
    assert_eq!(
        lock.sync.live_nodes(),
        0,
        "a queue node outlived its waiter"
    );
}

/// Three contenders (two spawned threads and main) lock, touch the guarded
/// cell and unlock. Covers exclusive mode's arrival, queueing, arming, the
/// re-check after arming and the hand-off to a parked waiter. Bound 2, as
/// the semaphore's one-permit model: one preemption queues a contender
/// behind the holder, a second places the unlock between a waiter's failed
/// hook and its park.
fn three_contenders<const FAIR: bool>() {
    contenders::<FAIR>(false);
}

/// Two spawned threads and main lock, touch the guarded cell and unlock;
/// with `main_first`, main takes the lock before it spawns them.
fn contenders<const FAIR: bool>(main_first: bool) {
    check(2, move || {
        let lock = Arc::new(Lock::<FAIR>::new());
        let cell = Arc::new(Guarded(UnsafeCell::new(0)));
        if main_first {
            lock.lock();
        }
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (lock, cell) = (Arc::clone(&lock), Arc::clone(&cell));
                thread::spawn(move || {
                    lock.lock();
                    cell.enter();
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock_with(UNLOCKED) };
                })
            })
            .collect();
        if !main_first {
            lock.lock();
        }
        cell.enter();
        // SAFETY: main holds the lock.
        unsafe { lock.unlock_with(UNLOCKED) };
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(cell.total(), 3);
        assert_free(&lock);
    });
}

#[test]
fn exclusive_three_contenders_nonfair() {
    three_contenders::<false>();
}

#[test]
fn exclusive_three_contenders_fair() {
    three_contenders::<true>();
}

/// Spawns `first`, which locks, records in `had` that it held the lock and
/// unlocks, and returns once it is counted as queued behind main's hold
/// (the yields cost no preemption).
fn queue_first<const FAIR: bool>(
    lock: &Arc<Lock<FAIR>>,
    had: &Arc<AtomicBool>,
) -> thread::JoinHandle<()> {
    let first = {
        let (lock, had) = (Arc::clone(lock), Arc::clone(had));
        thread::spawn(move || {
            lock.lock();
            had.store(true, SeqCst);
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock_with(UNLOCKED) };
        })
    };
    while queue::waiters_of(lock.sync.state()) == 0 {
        thread::yield_now();
    }
    first
}

/// `unlock_fair` on the barging mutex: main holds, `first` queues, main
/// unlocks fairly while `barger` tries once to take the lock. The barger
/// may only get it after `first` has had it: the hand-off keeps arrivals
/// out while anyone is queued (M2). Bound 2: one preemption lets the barger
/// run between the unlock and the first waiter's acquire, one more between
/// the first waiter's failed hook and its park.
#[test]
fn unlock_fair_hands_off_past_a_barger() {
    check(2, || {
        let lock = Arc::new(Lock::<false>::new());
        let first_had_it = Arc::new(AtomicBool::new(false));
        lock.lock();
        // Unlock only once `first` is counted.
        let first = queue_first(&lock, &first_had_it);
        let barger = {
            let (lock, had) = (Arc::clone(&lock), Arc::clone(&first_had_it));
            thread::spawn(move || {
                if lock.try_lock() {
                    assert!(had.load(SeqCst), "a barger took a lock handed to a waiter");
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock_with(UNLOCKED) };
                }
            })
        };
        // SAFETY: main holds the lock.
        unsafe { lock.unlock_with(UNLOCKED | HANDOFF) };
        first.join().unwrap();
        barger.join().unwrap();
        assert_free(&lock);
    });
}

/// A fair lock's claimed turn (M4): main holds; `a` and `b` lock. Whichever
/// arrives first while main holds and nobody is queued claims the next turn
/// (under loom its spin budget is zero: it looks once, then takes the lock
/// if main has unlocked, or drops the claim and queues); the other queues
/// behind the claim, or claims after it. main unlocks, possibly between
/// the claimant's look and its give-up, when the unlock has skipped the
/// queue for the claim: the give-up must then take the lock, or the queued
/// waiter sleeps for good (loom's deadlock). Whoever takes a claimed lock
/// but the claimant trips the claimant's check. Bound 2: one preemption
/// places the unlock inside the claimant's window, one more lets the other
/// thread queue and park inside it.
#[test]
fn claimed_turn_against_a_queued_waiter_fair() {
    contenders::<true>(true);
}

/// A claimed turn against `try_lock` (M4): main holds; `claimant` locks,
/// and claims when it arrives while main holds (its one look may find the
/// lock still held, and then it drops the claim and queues); main unlocks
/// while `arrival` tries once. The arrival may not take a lock freed with
/// a claim on it: the claimant's check says so. Bound 2, as
/// `unlock_fair_hands_off_past_a_barger`.
#[test]
fn claimed_turn_refuses_an_arrival_fair() {
    check(2, || {
        let lock = Arc::new(Lock::<true>::new());
        lock.lock();
        let claimant = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                lock.lock();
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock_with(UNLOCKED) };
            })
        };
        // Unlock only once the claimant claimed or queued (yields cost no
        // preemption).
        while queue::value_of(lock.sync.state()) & CLAIMED == 0
            && queue::waiters_of(lock.sync.state()) == 0
        {
            thread::yield_now();
        }
        let arrival = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                if lock.try_lock() {
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock_with(UNLOCKED) };
                }
            })
        };
        // SAFETY: main holds the lock.
        unsafe { lock.unlock_with(UNLOCKED) };
        claimant.join().unwrap();
        arrival.join().unwrap();
        assert_free(&lock);
    });
}

/// No claim past a queued waiter (M4): main holds; `first` queues; then
/// `second` locks. With `first` counted, `second` may not claim (the claim's
/// CAS checks the queue is empty), so it queues behind `first` and gets the
/// lock only after it. Bound 2: one preemption places main's unlock
/// before or inside `second`'s arrival, one more between `first`'s wake-up
/// and its take.
#[test]
fn claim_waits_behind_a_queued_waiter_fair() {
    check(2, || {
        let lock = Arc::new(Lock::<true>::new());
        let first_had_it = Arc::new(AtomicBool::new(false));
        lock.lock();
        // Let `second` arrive only once `first` is counted.
        let first = queue_first(&lock, &first_had_it);
        let second = {
            let (lock, had) = (Arc::clone(&lock), Arc::clone(&first_had_it));
            thread::spawn(move || {
                lock.lock();
                assert!(had.load(SeqCst), "a claimant passed a queued waiter");
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock_with(UNLOCKED) };
            })
        };
        // SAFETY: main holds the lock.
        unsafe { lock.unlock_with(UNLOCKED) };
        first.join().unwrap();
        second.join().unwrap();
        assert_free(&lock);
    });
}

/// A timed lock that gives up while an unlock races it: main holds; `timed`
/// waits with a deadline (under loom it may time out at any moment) and
/// `untimed` waits without one; main unlocks. Whoever gets the lock unlocks
/// it, the untimed waiter always gets it, and the timed waiter's departure
/// passes on any wake-up aimed at it. Bound 2, as `cancel_races_release`.
fn timed_lock_races_unlock<const FAIR: bool>() {
    check(2, || {
        let lock = Arc::new(Lock::<FAIR>::new());
        lock.lock();
        let timed = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                if lock.try_lock_until(Instant::now() + Duration::from_secs(1)) {
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock_with(UNLOCKED) };
                }
            })
        };
        let untimed = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                lock.lock();
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock_with(UNLOCKED) };
            })
        };
        // SAFETY: main holds the lock.
        unsafe { lock.unlock_with(UNLOCKED) };
        timed.join().unwrap();
        untimed.join().unwrap();
        assert_free(&lock);
    });
}

#[test]
fn timed_lock_races_unlock_nonfair() {
    timed_lock_races_unlock::<false>();
}

#[test]
fn timed_lock_races_unlock_fair() {
    timed_lock_races_unlock::<true>();
}

/// An async lock (feature `async`) queues behind main's hold, polled once
/// and left pending; a thread queues behind it; main unlocks, which wakes
/// the future's task; main drops the future without polling it. The
/// wake-up must pass on to the thread (F3), or it sleeps for good: loom's
/// deadlock. Bound 2, as the semaphore's model of the same.
#[cfg(feature = "async")]
fn dropped_signalled_lock_future<const FAIR: bool>() {
    use std::task::{Context, Waker};

    use super::MutexPolicy;
    use crate::queue::{Mode, QueuedAcquire};

    check(2, || {
        let lock = Arc::new(Lock::<FAIR>::new());
        lock.lock();
        let mut fut = QueuedAcquire::new(&lock.sync, Mode::Exclusive, 1);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.poll_acquire(&MutexPolicy::<FAIR>, &mut cx).is_pending());
        let thread = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                lock.lock();
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock_with(UNLOCKED) };
            })
        };
        while queue::waiters_of(lock.sync.state()) < 2 {
            thread::yield_now();
        }
        // SAFETY: main holds the lock.
        unsafe { lock.unlock_with(UNLOCKED) };
        drop(fut);
        thread.join().unwrap();
        assert_free(&lock);
    });
}

#[cfg(feature = "async")]
#[test]
fn dropped_signalled_lock_future_passes_the_wake_on_fair() {
    dropped_signalled_lock_future::<true>();
}

#[cfg(feature = "async")]
#[test]
fn dropped_signalled_lock_future_passes_the_wake_on_nonfair() {
    dropped_signalled_lock_future::<false>();
}
