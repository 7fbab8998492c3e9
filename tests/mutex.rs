//! Behaviour of `Mutex`, `FairMutex` and `ReentrantMutex` (and their raw
//! types), in the JSR-166 TCK's `ReentrantLockTest` spirit: mutual
//! exclusion, FIFO order of the fair lock, timed locks, `unlock_fair`,
//! reentrancy, and the raw types' size and misuse checks. Every blocking
//! wait is bounded, so a lost wake-up fails a test instead of hanging it.

// These tests run real threads and clocks; under `--cfg aqs_loom` the crate's
// atomics are loom's, which only work inside `loom::model` (the crate's
// `loom_models`).
#![cfg(not(aqs_loom))]

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use aqs::{FairMutex, Mutex, RawFairMutex, RawMutex, ReentrantMutex};
use lock_api::{RawMutex as _, RawMutexFair as _, RawMutexTimed as _};

/// How long a wait that must succeed may take before the test fails.
const BOUND: Duration = Duration::from_secs(10);

/// Waits (bounded) until `n` threads are queued on `raw`.
fn until_queued(what: &str, n: usize, queued: impl Fn() -> usize) {
    wait_until(what, || queued() >= n);
}

/// Polls `cond` until it holds, failing the test after `BOUND`.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < BOUND, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Joins `t`, failing the test if it has not finished within `BOUND`.
fn join_bounded<T: Send + 'static>(t: thread::JoinHandle<T>) -> T {
    let start = Instant::now();
    while !t.is_finished() {
        assert!(
            start.elapsed() < BOUND,
            "a thread did not finish: lost wake-up?"
        );
        thread::sleep(Duration::from_millis(1));
    }
    t.join().unwrap()
}

/// Many threads increment a plain counter under the lock: no update is lost.
fn counts_every_increment<R: lock_api::RawMutex + Send + Sync + 'static>() {
    let (n, rounds) = if cfg!(miri) { (3, 20) } else { (8, 2_000) };
    let lock = Arc::new(lock_api::Mutex::<R, u64>::new(0));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                for _ in 0..rounds {
                    let mut g = lock.lock();
                    // A read and a write apart: a second holder would lose one.
                    let v = *g;
                    std::hint::black_box(&v);
                    *g = v + 1;
                }
            })
        })
        .collect();
    for t in threads {
        join_bounded(t);
    }
    assert_eq!(*lock.lock(), n * rounds);
    assert!(!lock.is_locked());
}

#[test]
fn mutex_excludes() {
    counts_every_increment::<RawMutex>();
}

#[test]
fn fair_mutex_excludes() {
    counts_every_increment::<RawFairMutex>();
}

#[test]
fn try_lock_fails_while_held_and_succeeds_after() {
    let m = Mutex::new(1);
    let g = m.lock();
    assert!(m.try_lock().is_none());
    assert!(m.is_locked());
    drop(g);
    assert_eq!(*m.try_lock().expect("free"), 1);
    assert!(!m.is_locked());
}

#[test]
fn statics_are_usable() {
    static PLAIN: Mutex<u32> = Mutex::new(0);
    static FAIR: FairMutex<u32> = FairMutex::new(0);
    *PLAIN.lock() += 1;
    *FAIR.lock() += 2;
    assert_eq!((*PLAIN.lock(), *FAIR.lock()), (1, 2));
}

/// The fair lock serves waiters in the order they queued (`testFairLock`
/// style): each waiter queues only after the one before is counted.
#[test]
fn fair_mutex_serves_waiters_in_arrival_order() {
    let lock = Arc::new(FairMutex::new(Vec::new()));
    let held = lock.lock();
    let mut threads = Vec::new();
    for i in 0..5 {
        let waiter = Arc::clone(&lock);
        threads.push(thread::spawn(move || waiter.lock().push(i)));
        // SAFETY: only reads the raw mutex's state.
        let raw = unsafe { lock.raw() };
        until_queued("the waiter is queued", i + 1, || raw.queue_length());
    }
    drop(held);
    for t in threads {
        join_bounded(t);
    }
    assert_eq!(*lock.lock(), vec![0, 1, 2, 3, 4]);
}

/// While a thread is queued on the fair lock, `try_lock` fails even at a
/// moment when the lock is free.
#[test]
fn fair_try_lock_never_overtakes_a_waiter() {
    let raw = Arc::new(RawFairMutex::INIT);
    raw.lock();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let raw = Arc::clone(&raw);
        thread::spawn(move || {
            raw.lock();
            rx.recv_timeout(BOUND).expect("told to unlock");
            // SAFETY: this thread holds the lock.
            unsafe { raw.unlock() };
        })
    };
    until_queued("the waiter is queued", 1, || raw.queue_length());
    // SAFETY: main holds the lock.
    unsafe { raw.unlock() };
    // The waiter holds the lock or is about to: nobody may take it first.
    assert!(
        !raw.try_lock(),
        "try_lock took the lock from a queued waiter"
    );
    tx.send(()).unwrap();
    join_bounded(waiter);
    assert!(raw.try_lock());
    // SAFETY: main holds the lock.
    unsafe { raw.unlock() };
}

/// `unlock_fair` on the barging lock hands it to the queued waiter: a
/// `try_lock` right after fails until the waiter has had it.
#[test]
fn unlock_fair_hands_the_lock_to_the_waiter() {
    for _ in 0..if cfg!(miri) { 2 } else { 20 } {
        let raw = Arc::new(RawMutex::INIT);
        let had = Arc::new(AtomicUsize::new(0));
        raw.lock();
        let waiter = {
            let (raw, had) = (Arc::clone(&raw), Arc::clone(&had));
            thread::spawn(move || {
                raw.lock();
                had.store(1, SeqCst);
                // SAFETY: this thread holds the lock.
                unsafe { raw.unlock() };
            })
        };
        until_queued("the waiter is queued", 1, || raw.queue_length());
        // SAFETY: main holds the lock.
        unsafe { raw.unlock_fair() };
        if raw.try_lock() {
            assert_eq!(
                had.load(SeqCst),
                1,
                "try_lock barged past a handed-off lock"
            );
            // SAFETY: main holds the lock.
            unsafe { raw.unlock() };
        }
        join_bounded(waiter);
    }
}

#[test]
fn timed_lock_times_out_while_held_and_succeeds_when_released() {
    let lock = Arc::new(Mutex::new(()));
    let (locked_tx, locked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            let held = lock.lock();
            locked_tx.send(()).unwrap();
            // Holds until told: the timed locks below must fail meanwhile.
            release_rx.recv_timeout(BOUND).expect("told to unlock");
            drop(held);
        })
    };
    locked_rx.recv_timeout(BOUND).expect("the holder locked");
    let start = Instant::now();
    assert!(lock.try_lock_for(Duration::from_millis(20)).is_none());
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert!(lock.try_lock_until(Instant::now()).is_none());
    release_tx.send(()).unwrap();
    assert!(
        lock.try_lock_for(BOUND).is_some(),
        "a released lock was not taken"
    );
    join_bounded(holder);
}

#[test]
fn timed_raw_lock_with_a_huge_timeout_waits_like_lock() {
    let raw = RawFairMutex::INIT;
    assert!(raw.try_lock_for(Duration::MAX));
    // SAFETY: main holds the lock.
    unsafe { raw.unlock() };
}

/// Waiters that time out leave the queue: the lock still reaches the
/// untimed waiter behind them, and nothing stays counted.
#[test]
fn timed_out_waiters_leave_the_queue_cleanly() {
    let lock = Arc::new(FairMutex::new(0));
    let held = lock.lock();
    let timed: Vec<_> = (0..4)
        .map(|i| {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                lock.try_lock_for(Duration::from_millis(10 + 5 * i))
                    .is_some()
            })
        })
        .collect();
    let untimed = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.lock() += 1)
    };
    for t in timed {
        assert!(!join_bounded(t), "a timed waiter got a lock that was held");
    }
    drop(held);
    join_bounded(untimed);
    assert_eq!(*lock.lock(), 1);
}

#[test]
fn reentrant_mutex_lets_its_holder_in_and_others_wait() {
    let lock = Arc::new(ReentrantMutex::new(Cell::new(0)));
    let outer = lock.lock();
    let inner = lock.lock();
    inner.set(1);
    let other = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            let g = lock.lock();
            g.set(g.get() + 10);
        })
    };
    thread::sleep(Duration::from_millis(20));
    drop(inner);
    assert_eq!(
        outer.get(),
        1,
        "another thread got in while the lock was held twice"
    );
    drop(outer);
    join_bounded(other);
    assert_eq!(lock.lock().get(), 11);
}

#[test]
fn raw_types_are_56_bytes_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<RawMutex>();
    send_sync::<RawFairMutex>();
    send_sync::<Mutex<u8>>();
    send_sync::<FairMutex<u8>>();
    assert_eq!(std::mem::size_of::<RawMutex>(), 64);
    assert_eq!(std::mem::size_of::<RawFairMutex>(), 64);
}

#[test]
fn debug_shows_the_state() {
    let m = Mutex::new(5);
    let g = m.lock();
    // SAFETY: only reads the raw mutex's state.
    let raw = unsafe { m.raw() };
    assert!(format!("{raw:?}").contains("locked: true"));
    drop(g);
    assert!(format!("{raw:?}").contains("locked: false"));
}

/// Unlocking a raw mutex that is not locked breaks `lock_api`'s contract;
/// debug builds catch it before changing anything.
#[cfg(debug_assertions)]
#[test]
fn unlocking_an_unlocked_raw_mutex_panics_in_debug_builds() {
    let raw = RawMutex::INIT;
    // SAFETY: deliberately broken contract; the debug check panics before
    // the state word changes.
    let caught = std::panic::catch_unwind(|| unsafe { raw.unlock() });
    let message = caught
        .expect_err("no panic")
        .downcast::<&str>()
        .map(|s| s.to_string());
    assert!(message.is_ok_and(|m| m.contains("not locked")));
    assert!(raw.try_lock(), "the failed unlock changed the lock");
    // SAFETY: main holds the lock.
    unsafe { raw.unlock() };
}

mod sequences {
    //! Property tests: random single-thread sequences of lock operations on
    //! both raw mutexes, against a model that is one bool.
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::Config;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Lock,
        TryLock,
        TryLockFor(u8),
        Unlock,
        UnlockFair,
        Bump,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::Lock),
            Just(Op::TryLock),
            (0u8..3).prop_map(Op::TryLockFor),
            Just(Op::Unlock),
            Just(Op::UnlockFair),
            Just(Op::Bump),
        ]
    }

    /// Runs `ops` on `raw`; operations that would block forever (a lock
    /// while held) or break the contract (an unlock while free) are checked
    /// by their non-blocking form instead.
    fn run<R: lock_api::RawMutexFair + lock_api::RawMutexTimed<Duration = Duration>>(
        raw: &R,
        ops: &[Op],
    ) {
        let mut locked = false;
        for &op in ops {
            match op {
                Op::Lock if !locked => {
                    raw.lock();
                    locked = true;
                }
                Op::Lock | Op::TryLock => {
                    assert_eq!(raw.try_lock(), !locked, "{op:?}");
                    locked = true;
                }
                Op::TryLockFor(ms) => {
                    let got = raw.try_lock_for(Duration::from_millis(u64::from(ms)));
                    assert_eq!(got, !locked, "{op:?}");
                    locked = true;
                }
                Op::Unlock | Op::UnlockFair | Op::Bump if locked => {
                    // SAFETY: the model says this thread holds the lock.
                    unsafe {
                        match op {
                            Op::Unlock => raw.unlock(),
                            Op::UnlockFair => raw.unlock_fair(),
                            _ => raw.bump(),
                        }
                    }
                    locked = matches!(op, Op::Bump);
                }
                Op::Unlock | Op::UnlockFair | Op::Bump => {}
            }
            assert_eq!(raw.is_locked(), locked, "after {op:?}");
        }
        if locked {
            // SAFETY: the model says this thread holds the lock.
            unsafe { raw.unlock() };
        }
        assert!(!raw.is_locked());
    }

    proptest! {
        #![proptest_config(Config {
            cases: if cfg!(miri) { 4 } else { 256 },
            // No failure files: Miri's isolation has no current directory.
            failure_persistence: None,
            ..Config::default()
        })]

        #[test]
        fn raw_mutex_matches_the_model(ops in proptest::collection::vec(op(), 0..40)) {
            let raw = RawMutex::INIT;
            run(&raw, &ops);
        }

        #[test]
        fn raw_fair_mutex_matches_the_model(ops in proptest::collection::vec(op(), 0..40)) {
            let raw = RawFairMutex::INIT;
            run(&raw, &ops);
        }
    }
}
