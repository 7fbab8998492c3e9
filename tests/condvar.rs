//! Behaviour of `Condvar` with `Mutex` and `FairMutex`, in the JSR-166
//! TCK's `ReentrantLockTest` condition cases' spirit: await/signal,
//! signalAll, timed awaits, "signal wakes the longest waiter", re-acquiring
//! before returning, and a second mutex refused. Every blocking wait is
//! bounded, so a lost wake-up fails a test instead of hanging it.

// These tests run real threads and clocks; under `--cfg aqs_loom` the crate's
// atomics are loom's, which only work inside `loom::model` (the crate's
// `loom_models`).
#![cfg(not(aqs_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use aqs::{Condvar, FairMutex, Mutex};

/// How long a wait that must succeed may take before the test fails.
const BOUND: Duration = Duration::from_secs(10);

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

/// Waits (bounded) until `n` threads have said, under the mutex, that they
/// wait: a waiter is on the condition queue before it releases the mutex.
fn until_waiting<R: lock_api::RawMutex>(m: &lock_api::Mutex<R, State>, n: usize) {
    let start = Instant::now();
    while m.lock().waiting < n {
        assert!(start.elapsed() < BOUND, "waiters did not start");
        thread::sleep(Duration::from_millis(1));
    }
}

#[derive(Default)]
struct State {
    waiting: usize,
    go: usize,
    woke: Vec<usize>,
}

/// `wait` returns once notified, holding the mutex again.
fn handshake<R: aqs::CondvarMutex + Send + Sync + 'static>() {
    let pair = Arc::new((lock_api::Mutex::<R, bool>::new(false), Condvar::new()));
    let waiter = {
        let pair = Arc::clone(&pair);
        thread::spawn(move || {
            let (m, c) = &*pair;
            let mut ready = m.lock();
            c.wait_while(&mut ready, |r| !*r);
            assert!(*ready);
        })
    };
    thread::sleep(Duration::from_millis(10));
    let (m, c) = &*pair;
    *m.lock() = true;
    c.notify_one();
    join_bounded(waiter);
}

#[test]
fn wait_returns_after_notify_with_mutex() {
    handshake::<aqs::RawMutex>();
}

#[test]
fn wait_returns_after_notify_with_fair_mutex() {
    handshake::<aqs::RawFairMutex>();
}

#[test]
fn notify_counts_the_waiters_it_reached() {
    let cond = Condvar::new();
    assert!(!cond.notify_one());
    assert_eq!(cond.notify_all(), 0);
    let pair = Arc::new((Mutex::new(State::default()), Condvar::new()));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let pair = Arc::clone(&pair);
            thread::spawn(move || {
                let (m, c) = &*pair;
                let mut s = m.lock();
                s.waiting += 1;
                c.wait_while(&mut s, |s| s.go == 0);
            })
        })
        .collect();
    let (m, c) = &*pair;
    until_waiting(m, 3);
    {
        let mut s = m.lock();
        s.go = 1;
        assert!(c.notify_one());
        assert_eq!(c.notify_all(), 2);
        assert_eq!(c.notify_all(), 0);
    }
    for w in waiters {
        join_bounded(w);
    }
}

/// `notify_one` wakes the longest waiter (the TCK's "signal wakes the
/// longest waiter"), so three notifies wake three waiters in arrival order.
fn notify_one_wakes_in_arrival_order<R: aqs::CondvarMutex + Send + Sync + 'static>() {
    let pair = Arc::new((
        lock_api::Mutex::<R, State>::new(State::default()),
        Condvar::new(),
    ));
    let mut waiters = Vec::new();
    for i in 0..3 {
        let shared = Arc::clone(&pair);
        waiters.push(thread::spawn(move || {
            let (m, c) = &*shared;
            let mut s = m.lock();
            s.waiting += 1;
            c.wait(&mut s);
            s.woke.push(i);
        }));
        until_waiting(&pair.0, i + 1);
    }
    let (m, c) = &*pair;
    for n in 1..=3 {
        assert!(c.notify_one());
        let start = Instant::now();
        while m.lock().woke.len() < n {
            assert!(start.elapsed() < BOUND, "a notified waiter did not return");
            thread::sleep(Duration::from_millis(1));
        }
    }
    for w in waiters {
        join_bounded(w);
    }
    assert_eq!(m.lock().woke, vec![0, 1, 2]);
}

#[test]
fn notify_one_wakes_the_longest_waiter_mutex() {
    notify_one_wakes_in_arrival_order::<aqs::RawMutex>();
}

#[test]
fn notify_one_wakes_the_longest_waiter_fair_mutex() {
    notify_one_wakes_in_arrival_order::<aqs::RawFairMutex>();
}

#[test]
fn notify_all_wakes_every_waiter() {
    let pair = Arc::new((FairMutex::new(State::default()), Condvar::new()));
    let waiters: Vec<_> = (0..8)
        .map(|i| {
            let pair = Arc::clone(&pair);
            thread::spawn(move || {
                let (m, c) = &*pair;
                let mut s = m.lock();
                s.waiting += 1;
                c.wait_while(&mut s, |s| s.go == 0);
                s.woke.push(i);
            })
        })
        .collect();
    let (m, c) = &*pair;
    until_waiting(m, 8);
    {
        let mut s = m.lock();
        s.go = 1;
        assert_eq!(c.notify_all(), 8);
    }
    for w in waiters {
        join_bounded(w);
    }
    assert_eq!(m.lock().woke.len(), 8);
}

/// A timed wait that times out takes the mutex back before it returns: it
/// cannot return while another thread holds it.
#[test]
fn timed_out_wait_reacquires_before_returning() {
    let shared = Arc::new((
        Mutex::new(State::default()),
        Condvar::new(),
        AtomicBool::new(false),
    ));
    let waiter = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || {
            let (m, c, main_holds) = &*shared;
            let mut s = m.lock();
            s.waiting += 1;
            let r = c.wait_for(&mut s, Duration::from_millis(20));
            assert!(r.timed_out());
            assert!(
                !main_holds.load(SeqCst),
                "returned while another thread held the mutex"
            );
            s.woke.push(0);
        })
    };
    let (m, _, main_holds) = &*shared;
    until_waiting(m, 1);
    {
        let _held = m.lock();
        main_holds.store(true, SeqCst);
        thread::sleep(Duration::from_millis(60)); // past the waiter's deadline
        main_holds.store(false, SeqCst);
    }
    join_bounded(waiter);
    assert_eq!(m.lock().woke, vec![0]);
}

#[test]
fn wait_until_a_past_deadline_times_out_holding_the_mutex() {
    let m = Mutex::new(5);
    let c = Condvar::new();
    let mut g = m.lock();
    assert!(c.wait_until(&mut g, Instant::now()).timed_out());
    assert!(c.wait_for(&mut g, Duration::ZERO).timed_out());
    *g += 1;
    assert!(
        m.try_lock().is_none(),
        "the guard no longer holds the mutex"
    );
    drop(g);
    assert_eq!(*m.lock(), 6);
}

#[test]
fn wait_while_for_reports_a_condition_that_still_holds() {
    let m = FairMutex::new(0);
    let c = Condvar::new();
    let mut g = m.lock();
    assert!(
        !c.wait_while_for(&mut g, |v| *v != 0, BOUND).timed_out(),
        "already false"
    );
    assert!(c
        .wait_while_for(&mut g, |v| *v == 0, Duration::from_millis(5))
        .timed_out());
}

/// While threads wait with one mutex, a wait with another panics and
/// changes nothing: the caller still holds its own mutex, and the first
/// waiter is still notified.
#[test]
fn a_second_mutex_panics_and_loses_nothing() {
    let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
    let first = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || {
            let (m, c) = &*shared;
            let mut s = m.lock();
            s.waiting += 1;
            c.wait_while(&mut s, |s| s.go == 0);
        })
    };
    let (m, c) = &*shared;
    until_waiting(m, 1);
    let other = Mutex::new(0);
    let mut g = other.lock();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| c.wait(&mut g)));
    let message = caught
        .expect_err("no panic")
        .downcast::<&str>()
        .map(|s| s.to_string());
    assert!(message.is_ok_and(|m| m.contains("two different mutexes")));
    *g += 1; // still held
    drop(g);
    m.lock().go = 1;
    assert!(c.notify_one(), "the first waiter was lost");
    join_bounded(first);
}

#[test]
fn a_static_condvar_works() {
    static M: Mutex<bool> = Mutex::new(false);
    static C: Condvar = Condvar::new();
    let t = thread::spawn(|| {
        *M.lock() = true;
        C.notify_all();
    });
    let mut g = M.lock();
    let r = C.wait_while_for(&mut g, |v| !*v, BOUND);
    assert!(!r.timed_out());
    drop(g);
    join_bounded(t);
}

#[test]
fn condvar_is_72_bytes_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Condvar>();
    assert_eq!(std::mem::size_of::<Condvar>(), 72);
}
