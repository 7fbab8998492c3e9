//! Public behaviour of `aqs::Semaphore`: fairness, wake-ups, timeouts,
//! closing, bad input, memory ordering, and a conservation stress test.
//! Permit types (drop, forget, split, merge, owned) are in `tests/permits.rs`.
//!
//! Every test that applies to both policies runs its body for both through
//! [`both_modes`]. Every wait that should end is bounded by [`LONG`], so a lost
//! wake-up fails the test instead of hanging CI (waiters' own timeouts,
//! [`WAIT`], are longer still). Loops scale down under Miri.

// These tests run real threads and clocks; under `--cfg aqs_loom` the crate's
// atomics are loom's, which only work inside `loom::model` (the crate's
// `loom_models`).
#![cfg(not(aqs_loom))]

use std::any::Any;
use std::hint::black_box;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use aqs::{AcquireError, OwnedSemaphorePermit, Semaphore, SemaphorePermit, TryAcquireError};

/// The error a blocking acquire on a closed semaphore returns (it cannot be
/// built outside the crate).
fn closed_error() -> AcquireError {
    let sem = Semaphore::new(0);
    sem.close();
    sem.acquire().unwrap_err()
}

/// How long the test waits for something that is expected to happen soon
/// (a thread to finish, to queue, to report): past it, the test fails.
const LONG: Duration = Duration::from_secs(10);

/// The timeout of waiter threads' own timed acquires: only a backstop so no
/// thread blocks forever. It must be longer than [`LONG`]: a timed waiter
/// whose wake-up was lost still takes the permit when its deadline passes,
/// so with equal bounds a lost wake-up would look like a slow success.
const WAIT: Duration = Duration::from_secs(30);

/// How long to give a thread to do something it must NOT do (overtake,
/// acquire) before checking that it did not. A negative check, not a timing
/// assertion: a slow machine can only make it miss a bug, never fail.
const SETTLE: Duration = if cfg!(miri) {
    Duration::from_millis(5)
} else {
    Duration::from_millis(30)
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Nonfair,
    Fair,
}

impl Mode {
    fn sem(self, permits: usize) -> Semaphore {
        match self {
            Mode::Nonfair => Semaphore::new(permits),
            Mode::Fair => Semaphore::new_fair(permits),
        }
    }

    fn arc(self, permits: usize) -> Arc<Semaphore> {
        Arc::new(self.sem(permits))
    }
}

/// Runs `body` for a nonfair and then a fair semaphore. The mode is printed
/// first, so the captured output of a failing test names it.
fn both_modes(body: impl Fn(Mode)) {
    for mode in [Mode::Nonfair, Mode::Fair] {
        eprintln!("--- mode: {mode:?}");
        body(mode);
    }
}

/// A spawned thread whose [`join`](Bounded::join) gives up after [`LONG`].
struct Bounded<T> {
    handle: JoinHandle<T>,
    /// Disconnects when the thread's closure returns or unwinds.
    done: mpsc::Receiver<()>,
}

fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Bounded<T> {
    let (finished, done) = mpsc::channel::<()>();
    let handle = thread::spawn(move || {
        let _finished = finished; // dropped after `f`, also when it panics
        f()
    });
    Bounded { handle, done }
}

impl<T> Bounded<T> {
    /// Joins the thread, failing the test if it is still running after
    /// [`LONG`] (a lost wake-up) and re-raising its panic if it panicked.
    #[track_caller]
    fn join(self) -> T {
        match self.done.recv_timeout(LONG) {
            Err(RecvTimeoutError::Timeout) => {
                panic!("a thread was still blocked after {LONG:?}: lost wake-up?")
            }
            Ok(()) | Err(RecvTimeoutError::Disconnected) => self
                .handle
                .join()
                .unwrap_or_else(|payload| panic::resume_unwind(payload)),
        }
    }
}

/// Runs `f` on its own thread and returns its result, failing after [`LONG`]:
/// for timed and non-blocking calls that must return by themselves, so that a
/// broken timeout fails the test instead of hanging it.
#[track_caller]
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    spawn(f).join()
}

/// Polls until exactly `n` threads are queued on `sem`; panics after [`LONG`].
#[track_caller]
fn wait_queued(sem: &Semaphore, n: usize) {
    // A watchdog, not a timing assertion: a lost wake-up fails here instead
    // of hanging the run.
    let give_up = Instant::now() + LONG;
    while sem.queue_length() != n {
        if Instant::now() >= give_up {
            panic!(
                "queue_length() stayed {} instead of {n} for {LONG:?}",
                sem.queue_length()
            );
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// An instant an hour ago, or now if the clock cannot go back that far
/// (`Instant - Duration` panics on underflow).
fn past() -> Instant {
    let now = Instant::now();
    now.checked_sub(Duration::from_secs(3600))
        .or_else(|| now.checked_sub(Duration::from_millis(1)))
        .unwrap_or(now)
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// Runs `f`, which must panic; returns its message.
#[track_caller]
fn expect_panic<R>(f: impl FnOnce() -> R) -> String {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(payload) => panic_message(payload),
    }
}

/// A non-blocking acquire under test; returns the permits it got.
type TryCall<'a> = &'a dyn Fn() -> Result<usize, TryAcquireError>;
/// A blocking acquire run by a waiter thread; returns the permits it got.
type BlockingWaiter = Box<dyn FnOnce(Arc<Semaphore>) -> Result<usize, AcquireError> + Send>;
/// A timed acquire run by a waiter thread; returns the permits it got.
type TimedWaiter = Box<dyn FnOnce(Arc<Semaphore>) -> Result<usize, TryAcquireError> + Send>;

fn is_no_permits<T>(r: Result<T, TryAcquireError>) -> bool {
    matches!(r, Err(TryAcquireError::NoPermits))
}

// ---------------------------------------------------------------------------
// Fairness and queue order
// ---------------------------------------------------------------------------

/// Nonfair: an arriving thread takes a free permit although a waiter for two
/// is queued. Fair: no call barges while anyone is queued, not even
/// `try_acquire` or a zero timeout; a real timed wait queues behind.
#[test]
fn arrivals_barge_past_queued_waiters_only_when_nonfair() {
    both_modes(|mode| {
        let sem = mode.arc(1);
        let big = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_many_for(2, WAIT).map(|p| p.num_permits()))
        };
        wait_queued(&sem, 1);
        assert_eq!(sem.available_permits(), 1);

        // In a thread: on a fair semaphore a zero timeout that wrongly queued
        // would wait behind the big waiter for good.
        let sem2 = Arc::clone(&sem);
        bounded(move || {
            let sem = sem2;
            let barge: [(&str, TryCall<'_>); 10] = [
                ("try_acquire", &|| {
                    sem.try_acquire().map(|p| p.num_permits())
                }),
                ("try_acquire_many", &|| {
                    sem.try_acquire_many(1).map(|p| p.num_permits())
                }),
                ("try_acquire_for(ZERO)", &|| {
                    sem.try_acquire_for(Duration::ZERO).map(|p| p.num_permits())
                }),
                ("try_acquire_until(past)", &|| {
                    sem.try_acquire_until(past()).map(|p| p.num_permits())
                }),
                ("try_acquire_many_for(ZERO)", &|| {
                    sem.try_acquire_many_for(1, Duration::ZERO)
                        .map(|p| p.num_permits())
                }),
                ("try_acquire_many_until(past)", &|| {
                    sem.try_acquire_many_until(1, past())
                        .map(|p| p.num_permits())
                }),
                ("try_acquire_owned", &|| {
                    Arc::clone(&sem)
                        .try_acquire_owned()
                        .map(|p| p.num_permits())
                }),
                ("try_acquire_many_owned", &|| {
                    Arc::clone(&sem)
                        .try_acquire_many_owned(1)
                        .map(|p| p.num_permits())
                }),
                ("try_acquire_owned_for(ZERO)", &|| {
                    Arc::clone(&sem)
                        .try_acquire_owned_for(Duration::ZERO)
                        .map(|p| p.num_permits())
                }),
                ("try_acquire_many_owned_until(past)", &|| {
                    Arc::clone(&sem)
                        .try_acquire_many_owned_until(1, past())
                        .map(|p| p.num_permits())
                }),
            ];
            for (name, call) in barge {
                // Each permit is dropped at once; the waiter (needs 2) stays queued.
                let got = call();
                match mode {
                    Mode::Nonfair => {
                        assert_eq!(got, Ok(1), "nonfair {name} must take the free permit")
                    }
                    Mode::Fair => {
                        assert_eq!(got, Err(TryAcquireError::NoPermits), "fair {name} barged")
                    }
                }
                assert_eq!(
                    (sem.available_permits(), sem.queue_length()),
                    (1, 1),
                    "after {name}"
                );
            }

            // A timed wait with a real timeout: barges on nonfair; on fair it
            // queues behind the big waiter and times out.
            let timeout = Duration::from_millis(20);
            let start = Instant::now();
            let got = sem.try_acquire_for(timeout).map(|p| p.num_permits());
            match mode {
                Mode::Nonfair => assert_eq!(got, Ok(1)),
                Mode::Fair => {
                    assert_eq!(got, Err(TryAcquireError::NoPermits));
                    assert!(start.elapsed() >= timeout, "gave up before its timeout");
                }
            }
            assert_eq!((sem.available_permits(), sem.queue_length()), (1, 1));
        });

        // On nonfair a barger can also keep the permit for good.
        if mode == Mode::Nonfair {
            sem.try_acquire().unwrap().forget();
            sem.add_permits(1);
        }
        sem.add_permits(1);
        assert_eq!(big.join(), Ok(2));
        assert_eq!((sem.available_permits(), sem.queue_length()), (2, 0));
        // With the queue empty the fair semaphore hands out permits again.
        assert_eq!(sem.try_acquire().map(|p| p.num_permits()), Ok(1));
    });
}

/// Queued waiters acquire in the order they queued (strict FIFO on fair;
/// FIFO among the queued ones on nonfair), whatever acquire method they use.
#[test]
fn queued_waiters_acquire_in_fifo_order() {
    let waiters = if cfg!(miri) { 4 } else { 8 };
    both_modes(|mode| {
        let sem = mode.arc(0);
        let order = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..waiters)
            .map(|i| {
                let (sem2, order) = (Arc::clone(&sem), Arc::clone(&order));
                let t = spawn(move || {
                    // Record the index while holding the only permit, so the
                    // record order is the acquire order.
                    let record = || order.lock().unwrap().push(i);
                    match i % 5 {
                        0 => sem2.try_acquire_for(WAIT).map(|_p| record()).unwrap(),
                        1 => sem2.acquire().map(|_p| record()).unwrap(),
                        2 => sem2.acquire_many(1).map(|_p| record()).unwrap(),
                        3 => Arc::clone(&sem2)
                            .acquire_owned()
                            .map(|_p| record())
                            .unwrap(),
                        _ => sem2
                            .try_acquire_many_until(1, Instant::now() + WAIT)
                            .map(|_p| record())
                            .unwrap(),
                    }
                });
                wait_queued(&sem, i + 1); // queue them one by one
                t
            })
            .collect();
        sem.add_permits(1);
        for t in threads {
            t.join();
        }
        assert_eq!(*order.lock().unwrap(), (0..waiters).collect::<Vec<_>>());
        assert_eq!((sem.available_permits(), sem.queue_length()), (1, 0));
    });
}

/// A big request at the head of the queue holds back a smaller one behind
/// it, even when the permits would satisfy the smaller one.
#[test]
fn big_request_at_the_head_holds_back_smaller_ones() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let (got, acquired) = mpsc::channel();
        let (release_w1, w1_may_release) = mpsc::channel::<()>();
        let w1 = {
            let (sem, got) = (Arc::clone(&sem), got.clone());
            spawn(move || {
                let permit = sem
                    .try_acquire_many_for(3, WAIT)
                    .expect("W1 (3 permits) timed out");
                got.send("W1").unwrap();
                w1_may_release.recv_timeout(LONG).unwrap();
                drop(permit);
            })
        };
        wait_queued(&sem, 1);
        let w2 = {
            let sem = Arc::clone(&sem);
            spawn(move || {
                let permit = sem.try_acquire_for(WAIT).expect("W2 (1 permit) timed out");
                got.send("W2").unwrap();
                drop(permit);
            })
        };
        wait_queued(&sem, 2);

        sem.add_permits(1);
        assert_eq!(
            acquired.recv_timeout(SETTLE),
            Err(RecvTimeoutError::Timeout),
            "W2 overtook W1"
        );
        assert_eq!((sem.available_permits(), sem.queue_length()), (1, 2));

        sem.add_permits(2);
        assert_eq!(acquired.recv_timeout(LONG), Ok("W1"));
        assert_eq!(
            acquired.recv_timeout(SETTLE),
            Err(RecvTimeoutError::Timeout),
            "W2 got a permit W1 holds"
        );
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 1));

        release_w1.send(()).unwrap();
        assert_eq!(acquired.recv_timeout(LONG), Ok("W2"));
        w1.join();
        w2.join();
        assert_eq!((sem.available_permits(), sem.queue_length()), (3, 0));
    });
}

/// One release of k permits wakes every queued waiter k permits can satisfy
/// (propagation), and no more: by `add_permits` and by dropping a permit.
#[test]
fn one_release_wakes_every_waiter_it_can_satisfy() {
    both_modes(|mode| {
        for by_drop in [false, true] {
            eprintln!("release by dropping a permit: {by_drop}");
            let sem = mode.arc(if by_drop { 3 } else { 0 });
            let held = if by_drop {
                Some(Arc::clone(&sem).try_acquire_many_owned(3).unwrap())
            } else {
                None
            };
            let (tx, rx) = mpsc::channel();
            let waiters: Vec<_> = (0..4)
                .map(|i| {
                    let (sem2, tx) = (Arc::clone(&sem), tx.clone());
                    let t = spawn(move || {
                        sem2.try_acquire_for(WAIT)
                            .expect("waiter timed out")
                            .forget();
                        tx.send(i).unwrap();
                    });
                    wait_queued(&sem, i + 1);
                    t
                })
                .collect();

            match held {
                Some(permit) => drop(permit),
                None => sem.add_permits(3),
            }
            let mut first: Vec<_> = (0..3)
                .map(|_| rx.recv_timeout(LONG).expect("a satisfiable waiter slept"))
                .collect();
            first.sort_unstable();
            assert_eq!(
                first,
                [0, 1, 2],
                "the first three in queue order must be served"
            );
            assert_eq!(
                rx.recv_timeout(SETTLE),
                Err(RecvTimeoutError::Timeout),
                "a fourth waiter acquired"
            );
            assert_eq!((sem.available_permits(), sem.queue_length()), (0, 1));

            sem.add_permits(1);
            assert_eq!(rx.recv_timeout(LONG), Ok(3));
            for w in waiters {
                w.join();
            }
            assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
        }
    });
}

/// Propagation with mixed sizes: waiters for 1, 2 and 2 permits, one release
/// of 3 serves the first two; the third stays queued.
#[test]
fn propagation_stops_at_the_first_waiter_that_does_not_fit() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let (tx, rx) = mpsc::channel();
        let sizes = [1, 2, 2];
        let waiters: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let (sem2, tx) = (Arc::clone(&sem), tx.clone());
                let t = spawn(move || {
                    sem2.try_acquire_many_for(n, WAIT)
                        .expect("waiter timed out")
                        .forget();
                    tx.send(i).unwrap();
                });
                wait_queued(&sem, i + 1);
                t
            })
            .collect();
        sem.add_permits(3);
        let mut first = [
            rx.recv_timeout(LONG).unwrap(),
            rx.recv_timeout(LONG).unwrap(),
        ];
        first.sort_unstable();
        assert_eq!(first, [0, 1]);
        assert_eq!(rx.recv_timeout(SETTLE), Err(RecvTimeoutError::Timeout));
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 1));
        sem.add_permits(1);
        assert_eq!(
            rx.recv_timeout(SETTLE),
            Err(RecvTimeoutError::Timeout),
            "a 2-permit waiter took 1"
        );
        sem.add_permits(1);
        assert_eq!(rx.recv_timeout(LONG), Ok(2));
        for w in waiters {
            w.join();
        }
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
    });
}

/// Two releases of one permit each, close together, with two waiters queued:
/// both waiters must acquire. This is the JDK-6801020 race: the first waiter
/// takes the first permit with none left (so it would not propagate) while
/// the second release finds the old head already signalled; without the
/// PROPAGATE mark the second waiter would sleep with a permit available.
/// Timing-dependent: it only sometimes reaches the window (loom covers it).
#[test]
fn two_close_releases_wake_two_waiters() {
    let rounds = if cfg!(miri) { 3 } else { 100 };
    both_modes(|mode| {
        for round in 0..rounds {
            let sem = mode.arc(0);
            let waiters: Vec<_> = (0..2)
                .map(|i| {
                    let sem2 = Arc::clone(&sem);
                    let t = spawn(move || sem2.try_acquire_for(WAIT).map(|p| p.forget()));
                    wait_queued(&sem, i + 1);
                    t
                })
                .collect();
            let second = {
                let sem = Arc::clone(&sem);
                spawn(move || {
                    // Release the second permit a varying moment after the
                    // first, around when the first waiter wakes up.
                    let delay = Duration::from_micros((round % 10) as u64 * 10);
                    let until = Instant::now() + delay;
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    sem.add_permits(1);
                })
            };
            sem.add_permits(1);
            second.join();
            for (i, w) in waiters.into_iter().enumerate() {
                assert_eq!(
                    w.join(),
                    Ok(()),
                    "round {round}: waiter {i} missed its permit"
                );
            }
            assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
        }
    });
}

// ---------------------------------------------------------------------------
// Timed waits
// ---------------------------------------------------------------------------

#[test]
fn timed_wait_gives_up_after_its_deadline_and_leaves_the_queue() {
    // In a thread, so a timeout that never fires fails instead of hanging.
    both_modes(|mode| {
        bounded(move || {
            let sem = mode.sem(0);
            let timeout = Duration::from_millis(20);
            let start = Instant::now();
            assert_eq!(
                sem.try_acquire_for(timeout).unwrap_err(),
                TryAcquireError::NoPermits
            );
            assert!(start.elapsed() >= timeout, "gave up before its timeout");
            assert_eq!(sem.queue_length(), 0);
            assert!(!sem.has_queued_threads());

            // A timed request for more than is free takes nothing.
            sem.add_permits(1);
            let deadline = Instant::now() + timeout;
            assert_eq!(
                sem.try_acquire_many_until(2, deadline).unwrap_err(),
                TryAcquireError::NoPermits
            );
            assert!(Instant::now() >= deadline, "gave up before its deadline");
            assert_eq!((sem.available_permits(), sem.queue_length()), (1, 0));

            // The semaphore still works.
            assert_eq!(sem.try_acquire_for(WAIT).map(|p| p.num_permits()), Ok(1));
        })
    });
}

/// The owned timed variants wait like the borrowed ones: a release wakes them
/// with a permit that then travels to another thread, and their timeout ends
/// the wait with `NoPermits` and an empty queue.
#[test]
fn owned_timed_waits_are_woken_and_time_out() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let one = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_owned_for(WAIT))
        };
        wait_queued(&sem, 1);
        let two = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_many_owned_until(2, Instant::now() + WAIT))
        };
        wait_queued(&sem, 2);
        sem.add_permits(3);
        let one = one.join().expect("owned waiter for 1 not served");
        let two = two.join().expect("owned waiter for 2 not served");
        assert_eq!((one.num_permits(), two.num_permits()), (1, 2));
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
        // The permits outlive the waiting threads and go back from a third.
        spawn(move || drop((one, two))).join();
        assert_eq!(sem.available_permits(), 3);

        let t = {
            let sem = Arc::clone(&sem);
            spawn(move || {
                let _all = sem.try_acquire_many(3).unwrap();
                let timeout = Duration::from_millis(20);
                let start = Instant::now();
                assert!(is_no_permits(
                    Arc::clone(&sem).try_acquire_owned_for(timeout)
                ));
                assert!(start.elapsed() >= timeout, "gave up before its timeout");
                let deadline = Instant::now() + timeout;
                assert!(is_no_permits(
                    Arc::clone(&sem).try_acquire_owned_until(deadline)
                ));
                assert!(Instant::now() >= deadline, "gave up before its deadline");
                assert!(is_no_permits(
                    Arc::clone(&sem).try_acquire_many_owned_for(1, timeout)
                ));
                assert_eq!(sem.queue_length(), 0);
            })
        };
        t.join();
        assert_eq!((sem.available_permits(), sem.queue_length()), (3, 0));
    });
}

/// A waiter that times out in the middle of the queue unlinks itself without
/// cutting off the waiters behind it.
#[test]
fn timed_out_waiter_in_the_middle_does_not_break_the_queue() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let waiter = |timeout: Duration| {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_for(timeout).map(|p| p.forget()))
        };
        let first = waiter(WAIT);
        wait_queued(&sem, 1);
        // Long enough to be still queued when the third thread queues.
        let middle = waiter(Duration::from_millis(250));
        wait_queued(&sem, 2);
        let last = waiter(WAIT);
        wait_queued(&sem, 3);
        assert_eq!(middle.join(), Err(TryAcquireError::NoPermits));
        assert_eq!(sem.queue_length(), 2);
        sem.add_permits(2);
        assert_eq!(first.join(), Ok(()));
        assert_eq!(last.join(), Ok(()));
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
    });
}

/// A moment near `deadline` that moves with `round`: from 40 µs before it
/// to 140 µs after, where a timed waiter's wake-up races the release.
fn around(deadline: Instant, round: usize) -> Instant {
    let early = deadline
        .checked_sub(Duration::from_micros(40))
        .unwrap_or(deadline);
    early + Duration::from_micros((round % 10) as u64 * 20)
}

/// Yields until `at`: closer to `at` than `sleep` when racing a deadline.
fn spin_until(at: Instant) {
    while Instant::now() < at {
        thread::yield_now();
    }
}

/// A permit released right at a timed waiter's deadline is either taken by
/// it or left available: never swallowed by the cancelled node.
#[test]
fn permit_released_at_the_deadline_is_never_swallowed() {
    let rounds = if cfg!(miri) { 4 } else { 200 };
    both_modes(|mode| {
        let mut taken = 0;
        for round in 0..rounds {
            let sem = mode.arc(0);
            let deadline = Instant::now() + Duration::from_micros(1000);
            let waiter = {
                let sem = Arc::clone(&sem);
                spawn(move || sem.try_acquire_until(deadline).map(|p| p.forget()).is_ok())
            };
            spin_until(around(deadline, round));
            sem.add_permits(1);
            let got = waiter.join();
            taken += usize::from(got);
            assert_eq!(
                sem.queue_length(),
                0,
                "round {round}: the waiter stayed counted"
            );
            assert_eq!(
                sem.available_permits(),
                usize::from(!got),
                "round {round}: waiter got it: {got}"
            );
        }
        eprintln!("the timed waiter won {taken} of {rounds} races");
    });
}

/// Same race with a second waiter queued behind the timed one: a permit
/// released to the timed waiter as it gives up is passed to the next waiter.
#[test]
fn permit_released_to_a_timing_out_waiter_passes_to_the_next() {
    let rounds = if cfg!(miri) { 4 } else { 120 };
    both_modes(|mode| {
        let mut passed_on = 0;
        for round in 0..rounds {
            let sem = mode.arc(0);
            let deadline = Instant::now() + Duration::from_micros(2000);
            let timed = {
                let sem = Arc::clone(&sem);
                spawn(move || sem.try_acquire_until(deadline).map(|p| p.forget()).is_ok())
            };
            // Usually both queue before the deadline, the timed waiter first;
            // if not, the round still checks conservation.
            while sem.queue_length() < 1 && Instant::now() < deadline {
                thread::yield_now();
            }
            let patient = {
                let sem = Arc::clone(&sem);
                spawn(move || sem.try_acquire_for(WAIT).map(|p| p.forget()).is_ok())
            };
            spin_until(around(deadline, round));
            sem.add_permits(1);
            if timed.join() {
                sem.add_permits(1); // the patient waiter needs its own
            } else {
                passed_on += 1;
            }
            assert!(
                patient.join(),
                "round {round}: the permit was lost; the patient waiter timed out"
            );
            assert_eq!(
                (sem.available_permits(), sem.queue_length()),
                (0, 0),
                "round {round}"
            );
        }
        eprintln!("the permit went to the patient waiter in {passed_on} of {rounds} rounds");
    });
}

/// `Duration::ZERO` and deadlines in the past take free permits and
/// otherwise fail at once, without queueing.
#[test]
fn zero_timeout_and_past_deadline_take_free_permits_or_fail_at_once() {
    both_modes(|mode| {
        let sem = mode.arc(3);
        assert_eq!(
            sem.try_acquire_for(Duration::ZERO).map(|p| p.num_permits()),
            Ok(1)
        );
        assert_eq!(
            sem.try_acquire_until(past()).map(|p| p.num_permits()),
            Ok(1)
        );
        assert_eq!(
            sem.try_acquire_many_for(2, Duration::ZERO)
                .map(|p| p.num_permits()),
            Ok(2)
        );
        assert_eq!(
            sem.try_acquire_many_until(3, past())
                .map(|p| p.num_permits()),
            Ok(3)
        );

        sem.forget_permits(2);
        let t = {
            let sem = Arc::clone(&sem);
            // In a thread: a bug that made these wait forever must not hang.
            spawn(move || {
                assert!(is_no_permits(sem.try_acquire_many_for(2, Duration::ZERO)));
                assert!(is_no_permits(sem.try_acquire_many_until(2, past())));
                assert!(is_no_permits(sem.try_acquire_many_until(2, Instant::now())));
                let _one = sem.try_acquire_for(Duration::ZERO).unwrap();
                assert!(is_no_permits(sem.try_acquire_for(Duration::ZERO)));
                assert!(is_no_permits(sem.try_acquire_until(past())));
            })
        };
        t.join();
        assert_eq!((sem.available_permits(), sem.queue_length()), (1, 0));
    });
}

/// `Duration::MAX` (and a far deadline) must not overflow: such a waiter is
/// woken by `add_permits`, and by `close` with `Closed`.
#[test]
fn duration_max_waits_without_overflow() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let one = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_for(Duration::MAX).map(|p| p.forget()))
        };
        wait_queued(&sem, 1);
        let two = {
            let sem = Arc::clone(&sem);
            spawn(move || {
                sem.try_acquire_many_for(2, Duration::MAX)
                    .map(|p| p.forget())
            })
        };
        wait_queued(&sem, 2);
        sem.add_permits(3);
        assert_eq!(one.join(), Ok(()));
        assert_eq!(two.join(), Ok(()));
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));

        // Closing wakes a `Duration::MAX` waiter, and one with a far deadline.
        let mut waiters = vec![{
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_for(Duration::MAX).map(|p| p.forget()))
        }];
        wait_queued(&sem, 1);
        if let Some(far) = Instant::now().checked_add(Duration::from_secs(100 * 365 * 24 * 3600)) {
            let sem2 = Arc::clone(&sem);
            waiters.push(spawn(move || {
                sem2.try_acquire_until(far).map(|p| p.forget())
            }));
            wait_queued(&sem, 2);
        }
        sem.close();
        for w in waiters {
            assert_eq!(w.join(), Err(TryAcquireError::Closed));
        }
        assert_eq!(sem.queue_length(), 0);
    });
}

// ---------------------------------------------------------------------------
// Closing
// ---------------------------------------------------------------------------

/// `close` wakes every waiter: blocking ones with `AcquireError`, timed ones
/// with `TryAcquireError::Closed`.
#[test]
fn close_wakes_every_waiter_with_an_error() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let blocking: Vec<BlockingWaiter> = vec![
            Box::new(|s| s.acquire_many(2).map(|p| p.num_permits())),
            Box::new(|s| s.acquire().map(|p| p.num_permits())),
            Box::new(|s| s.acquire_many_owned(2).map(|p| p.num_permits())),
            Box::new(|s| s.acquire_owned().map(|p| p.num_permits())),
        ];
        let timed: Vec<TimedWaiter> = vec![
            Box::new(|s| s.try_acquire_for(WAIT).map(|p| p.num_permits())),
            Box::new(|s| s.try_acquire_many_for(2, WAIT).map(|p| p.num_permits())),
            Box::new(|s| {
                s.try_acquire_until(Instant::now() + WAIT)
                    .map(|p| p.num_permits())
            }),
            Box::new(|s| {
                s.try_acquire_many_until(3, Instant::now() + WAIT)
                    .map(|p| p.num_permits())
            }),
            Box::new(|s| s.try_acquire_owned_for(WAIT).map(|p| p.num_permits())),
            Box::new(|s| {
                s.try_acquire_many_owned_until(2, Instant::now() + WAIT)
                    .map(|p| p.num_permits())
            }),
        ];
        let mut queued = 0;
        let blocking: Vec<_> = blocking
            .into_iter()
            .map(|f| {
                let sem2 = Arc::clone(&sem);
                let t = spawn(move || f(sem2));
                queued += 1;
                wait_queued(&sem, queued);
                t
            })
            .collect();
        let timed: Vec<_> = timed
            .into_iter()
            .map(|f| {
                let sem2 = Arc::clone(&sem);
                let t = spawn(move || f(sem2));
                queued += 1;
                wait_queued(&sem, queued);
                t
            })
            .collect();
        assert!(!sem.is_closed());
        sem.close();
        assert!(sem.is_closed());
        for t in blocking {
            assert_eq!(t.join(), Err(closed_error()));
        }
        for t in timed {
            assert_eq!(t.join(), Err(TryAcquireError::Closed));
        }
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
        assert!(!sem.has_queued_threads());
    });
}

/// After `close`, every acquire fails (even with permits free), while held
/// permits still go back and `add_permits` still counts, without panicking.
#[test]
fn closed_semaphore_refuses_acquires_but_still_counts_permits() {
    both_modes(|mode| {
        let sem = mode.arc(4);
        let held = sem.try_acquire_many(2).unwrap();
        let owned = Arc::clone(&sem).try_acquire_owned().unwrap();
        sem.close();
        assert!(sem.is_closed());
        sem.add_permits(3);
        assert_eq!(sem.available_permits(), 4);

        let t = {
            let sem = Arc::clone(&sem);
            // In a thread, so a blocking acquire that wrongly waits cannot hang.
            spawn(move || {
                let closed = TryAcquireError::Closed;
                assert_eq!(sem.acquire().unwrap_err(), closed_error());
                assert_eq!(sem.acquire_many(2).unwrap_err(), closed_error());
                assert_eq!(
                    Arc::clone(&sem).acquire_owned().unwrap_err(),
                    closed_error()
                );
                assert_eq!(
                    Arc::clone(&sem).acquire_many_owned(2).unwrap_err(),
                    closed_error()
                );
                assert_eq!(sem.try_acquire().unwrap_err(), closed);
                assert_eq!(sem.try_acquire_many(2).unwrap_err(), closed);
                assert_eq!(Arc::clone(&sem).try_acquire_owned().unwrap_err(), closed);
                assert_eq!(
                    Arc::clone(&sem).try_acquire_many_owned(2).unwrap_err(),
                    closed
                );
                assert_eq!(sem.try_acquire_for(Duration::ZERO).unwrap_err(), closed);
                assert_eq!(sem.try_acquire_for(WAIT).unwrap_err(), closed);
                assert_eq!(sem.try_acquire_until(past()).unwrap_err(), closed);
                assert_eq!(sem.try_acquire_many_for(2, WAIT).unwrap_err(), closed);
                assert_eq!(
                    sem.try_acquire_many_until(2, Instant::now() + WAIT)
                        .unwrap_err(),
                    closed
                );
            })
        };
        t.join();

        drop(held);
        drop(owned);
        assert_eq!(sem.available_permits(), 7);
        sem.close(); // twice: nothing more
        assert!(sem.is_closed());
        assert_eq!(sem.forget_permits(2), 2);
        assert_eq!(sem.drain_permits(), 5);
        assert!(format!("{sem:?}").contains("closed: true"), "{sem:?}");
    });
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[test]
#[cfg(target_pointer_width = "64")]
#[should_panic(expected = "exceed Semaphore::MAX_PERMITS")]
fn new_with_more_than_max_permits_panics() {
    let _ = Semaphore::new(black_box(Semaphore::MAX_PERMITS + 1));
}

#[test]
#[cfg(target_pointer_width = "64")]
#[should_panic(expected = "exceed Semaphore::MAX_PERMITS")]
fn new_fair_with_more_than_max_permits_panics() {
    let _ = Semaphore::new_fair(black_box(usize::MAX));
}

#[test]
fn max_permits_is_usable() {
    both_modes(|mode| {
        let sem = mode.sem(Semaphore::MAX_PERMITS);
        assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
        let all = sem.try_acquire_many(Semaphore::MAX_PERMITS).unwrap();
        assert_eq!(all.num_permits(), Semaphore::MAX_PERMITS);
        assert_eq!(sem.available_permits(), 0);
        drop(all);
        assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
    });
}

/// `add_permits` past `MAX_PERMITS` panics with a clear message and leaves
/// the semaphore (and a queued waiter) as it was.
#[test]
fn add_permits_past_max_panics_and_changes_nothing() {
    const MAX: usize = Semaphore::MAX_PERMITS;
    both_modes(|mode| {
        let sem = mode.arc(MAX - 1);
        // A waiter for MAX permits queues, so the panic happens with a queue.
        let waiter = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_many_for(MAX, WAIT).map(|p| p.num_permits()))
        };
        wait_queued(&sem, 1);

        let msg = expect_panic(|| sem.add_permits(2));
        assert!(msg.contains("MAX_PERMITS"), "unclear message: {msg}");
        assert_eq!((sem.available_permits(), sem.queue_length()), (MAX - 1, 1));
        #[cfg(target_pointer_width = "64")]
        {
            let msg = expect_panic(|| sem.add_permits(MAX + 1));
            assert!(
                msg.contains("add_permits") && msg.contains("MAX_PERMITS"),
                "unclear message: {msg}"
            );
            assert_eq!((sem.available_permits(), sem.queue_length()), (MAX - 1, 1));
        }

        sem.add_permits(1);
        assert_eq!(waiter.join(), Ok(MAX));
        assert_eq!((sem.available_permits(), sem.queue_length()), (MAX, 0));
        let msg = expect_panic(|| sem.add_permits(1));
        assert!(msg.contains("MAX_PERMITS"), "unclear message: {msg}");
        assert_eq!(sem.available_permits(), MAX);
        sem.add_permits(0); // adding nothing at the limit is fine
        assert_eq!(sem.available_permits(), MAX);
    });
}

/// A request for more than `MAX_PERMITS` could never be satisfied: every
/// variant panics at once (naming itself) instead of blocking.
#[test]
#[cfg(target_pointer_width = "64")]
fn requests_above_max_permits_panic_at_once() {
    const TOO_MANY: usize = Semaphore::MAX_PERMITS + 1;
    both_modes(|mode| {
        let sem = mode.arc(0);
        let t = {
            let sem = Arc::clone(&sem);
            // In a thread: if a variant blocked instead, `join` fails.
            spawn(move || {
                let calls: [(&str, &dyn Fn()); 8] = [
                    ("acquire_many", &|| drop(sem.acquire_many(TOO_MANY))),
                    ("try_acquire_many", &|| drop(sem.try_acquire_many(TOO_MANY))),
                    ("try_acquire_many_for", &|| {
                        drop(sem.try_acquire_many_for(TOO_MANY, WAIT))
                    }),
                    ("try_acquire_many_until", &|| {
                        drop(sem.try_acquire_many_until(TOO_MANY, Instant::now() + WAIT))
                    }),
                    ("acquire_many_owned", &|| {
                        drop(Arc::clone(&sem).acquire_many_owned(TOO_MANY))
                    }),
                    ("try_acquire_many_owned", &|| {
                        drop(Arc::clone(&sem).try_acquire_many_owned(TOO_MANY))
                    }),
                    ("try_acquire_many_owned_for", &|| {
                        drop(Arc::clone(&sem).try_acquire_many_owned_for(TOO_MANY, WAIT))
                    }),
                    ("try_acquire_many_owned_until", &|| {
                        drop(
                            Arc::clone(&sem)
                                .try_acquire_many_owned_until(TOO_MANY, Instant::now() + WAIT),
                        )
                    }),
                ];
                for (name, call) in calls {
                    let msg = expect_panic(call);
                    assert!(
                        msg.contains(name) && msg.contains("MAX_PERMITS"),
                        "{name}: unclear message: {msg}"
                    );
                }
            })
        };
        t.join();
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
    });
}

/// `acquire_many(0)` and friends return a zero-permit permit at once, even on
/// a fair semaphore with a waiter queued, and fail once closed.
#[test]
fn zero_permit_requests_never_wait_but_fail_when_closed() {
    both_modes(|mode| {
        let sem = mode.arc(0);
        let waiter = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_for(WAIT).map(|p| p.num_permits()))
        };
        wait_queued(&sem, 1);

        let zero = {
            let sem = Arc::clone(&sem);
            // In a thread: a zero request that queued would never return.
            spawn(move || {
                assert_eq!(sem.acquire_many(0).unwrap().num_permits(), 0);
                assert_eq!(sem.try_acquire_many(0).unwrap().num_permits(), 0);
                assert_eq!(
                    sem.try_acquire_many_for(0, Duration::ZERO)
                        .unwrap()
                        .num_permits(),
                    0
                );
                assert_eq!(sem.try_acquire_many_for(0, WAIT).unwrap().num_permits(), 0);
                assert_eq!(
                    sem.try_acquire_many_until(0, past()).unwrap().num_permits(),
                    0
                );
                assert_eq!(
                    Arc::clone(&sem)
                        .acquire_many_owned(0)
                        .unwrap()
                        .num_permits(),
                    0
                );
                assert_eq!(
                    Arc::clone(&sem)
                        .try_acquire_many_owned(0)
                        .unwrap()
                        .num_permits(),
                    0
                );
                assert_eq!(
                    Arc::clone(&sem)
                        .try_acquire_many_owned_for(0, WAIT)
                        .unwrap()
                        .num_permits(),
                    0
                );
                assert_eq!(
                    Arc::clone(&sem)
                        .try_acquire_many_owned_until(0, past())
                        .unwrap()
                        .num_permits(),
                    0
                );
            })
        };
        zero.join();
        // Dropping zero-permit permits changed nothing.
        assert_eq!((sem.available_permits(), sem.queue_length()), (0, 1));

        sem.close();
        assert_eq!(waiter.join(), Err(TryAcquireError::Closed));
        let zero = {
            let sem = Arc::clone(&sem);
            spawn(move || {
                assert_eq!(sem.acquire_many(0).unwrap_err(), closed_error());
                assert_eq!(
                    sem.try_acquire_many(0).unwrap_err(),
                    TryAcquireError::Closed
                );
                assert_eq!(
                    sem.try_acquire_many_for(0, WAIT).unwrap_err(),
                    TryAcquireError::Closed
                );
                assert_eq!(
                    sem.try_acquire_many_until(0, past()).unwrap_err(),
                    TryAcquireError::Closed
                );
                assert_eq!(
                    Arc::clone(&sem).acquire_many_owned(0).unwrap_err(),
                    closed_error()
                );
                assert_eq!(
                    Arc::clone(&sem).try_acquire_many_owned(0).unwrap_err(),
                    TryAcquireError::Closed
                );
                assert_eq!(
                    Arc::clone(&sem)
                        .try_acquire_many_owned_for(0, WAIT)
                        .unwrap_err(),
                    TryAcquireError::Closed
                );
                assert_eq!(
                    Arc::clone(&sem)
                        .try_acquire_many_owned_until(0, past())
                        .unwrap_err(),
                    TryAcquireError::Closed
                );
            })
        };
        zero.join();
    });
}

// ---------------------------------------------------------------------------
// Memory ordering
// ---------------------------------------------------------------------------

/// Releasing permits happens-before the acquire that obtains them: data
/// published with only `Relaxed` operations before the release is seen
/// after the acquire, including through a heap object handed over by an
/// `AtomicPtr`.
///
/// This is a smoke test: on x86 even a broken ordering would usually pass.
/// Miri (whose data-race detector would flag the `Box` read below) and loom
/// and TSan runs are what actually check the ordering.
#[test]
fn release_happens_before_the_acquire_that_takes_the_permit() {
    let rounds = if cfg!(miri) { 4 } else { 100 };
    both_modes(|mode| {
        for round in 0..rounds {
            // Rounds alternate between releasing with `add_permits` and by
            // dropping a permit the writer held from the start.
            let by_drop = round % 4 >= 2;
            let sem = mode.arc(usize::from(by_drop));
            let writer_permit = if by_drop {
                Some(sem.try_acquire().unwrap())
            } else {
                None
            };
            let plain = Arc::new(AtomicUsize::new(0));
            let slot = Arc::new(AtomicPtr::<[usize; 4]>::new(ptr::null_mut()));
            let reader = {
                let (sem, plain, slot) = (Arc::clone(&sem), Arc::clone(&plain), Arc::clone(&slot));
                spawn(move || {
                    let _permit = sem.try_acquire_for(WAIT).expect("reader timed out");
                    let seen = plain.load(Relaxed);
                    let boxed = slot.swap(ptr::null_mut(), Relaxed);
                    assert!(
                        !boxed.is_null(),
                        "round {round}: the pointer store was not visible"
                    );
                    // SAFETY: the writer made the pointer with `Box::into_raw`
                    // and gave up ownership; we swapped it out, so we own it.
                    let data = unsafe { Box::from_raw(boxed) };
                    (seen, *data)
                })
            };
            // Half the rounds the reader is parked in the queue (slow path);
            // in the others it may arrive after the release (fast path).
            if round % 2 == 0 {
                wait_queued(&sem, 1);
            }
            plain.store(round + 1, Relaxed);
            slot.store(
                Box::into_raw(Box::new([round, round + 1, round + 2, round + 3])),
                Relaxed,
            );
            match writer_permit {
                Some(permit) => drop(permit),
                None => sem.add_permits(1),
            }
            let (seen, data) = reader.join();
            assert_eq!(
                seen,
                round + 1,
                "round {round}: a relaxed store before the release was not seen"
            );
            assert_eq!(data, [round, round + 1, round + 2, round + 3]);
        }
    });
}

// ---------------------------------------------------------------------------
// Smaller API surface
// ---------------------------------------------------------------------------

#[test]
fn types_are_send_sync_and_static() {
    fn send_sync<T: Send + Sync>() {}
    fn send_sync_static<T: Send + Sync + 'static>() {}
    fn error<E: std::error::Error + Send + Sync + Copy + 'static>() {}
    send_sync_static::<Semaphore>();
    send_sync::<SemaphorePermit<'_>>();
    send_sync_static::<OwnedSemaphorePermit>();
    send_sync_static::<Arc<Semaphore>>();
    error::<AcquireError>();
    error::<TryAcquireError>();
}

#[test]
fn every_public_type_is_debug() {
    let sem = Arc::new(Semaphore::new_fair(5));
    let permit = sem.try_acquire_many(2).unwrap();
    let owned = Arc::clone(&sem).try_acquire_owned().unwrap();
    let s = format!("{sem:?}");
    for field in ["permits: 2", "fair: true", "queued: 0", "closed: false"] {
        assert!(s.contains(field), "{s:?} lacks {field:?}");
    }
    let p = format!("{permit:?}");
    assert!(
        p.contains("SemaphorePermit") && p.contains("permits: 2"),
        "{p}"
    );
    let o = format!("{owned:?}");
    assert!(
        o.contains("OwnedSemaphorePermit") && o.contains("permits: 1"),
        "{o}"
    );
    assert!(format!("{:?}", Semaphore::new(0)).contains("fair: false"));
    assert_eq!(format!("{:?}", closed_error()), "AcquireError(())");
    assert_eq!(format!("{:?}", TryAcquireError::Closed), "Closed");
    assert_eq!(format!("{:?}", TryAcquireError::NoPermits), "NoPermits");
}

#[test]
fn errors_display_classify_and_convert() {
    assert_eq!(closed_error().to_string(), "semaphore closed");
    assert_eq!(TryAcquireError::Closed.to_string(), "semaphore closed");
    assert_eq!(
        TryAcquireError::NoPermits.to_string(),
        "no permits available"
    );
    assert!(TryAcquireError::Closed.is_closed() && !TryAcquireError::Closed.is_no_permits());
    assert!(TryAcquireError::NoPermits.is_no_permits() && !TryAcquireError::NoPermits.is_closed());
    assert_eq!(
        TryAcquireError::from(closed_error()),
        TryAcquireError::Closed
    );
    let via_question_mark = || -> Result<(), TryAcquireError> { Err(closed_error())? };
    assert_eq!(via_question_mark(), Err(TryAcquireError::Closed));
    let boxed: Box<dyn std::error::Error> = Box::new(TryAcquireError::NoPermits);
    assert_eq!(boxed.to_string(), "no permits available");
}

#[test]
fn default_is_an_empty_nonfair_semaphore() {
    let sem = Semaphore::default();
    assert!(!sem.is_fair());
    assert!(!sem.is_closed());
    assert_eq!((sem.available_permits(), sem.queue_length()), (0, 0));
    assert!(is_no_permits(sem.try_acquire()));
    assert!(!Semaphore::new(1).is_fair());
    assert!(Semaphore::new_fair(1).is_fair());
}

#[test]
fn available_forget_and_drain_permits() {
    both_modes(|mode| {
        let sem = mode.sem(5);
        assert_eq!(sem.available_permits(), 5);
        let held = sem.try_acquire_many(2).unwrap();
        assert_eq!(sem.available_permits(), 3);
        assert_eq!(sem.forget_permits(2), 2);
        assert_eq!(sem.forget_permits(5), 1, "takes only what is available");
        assert_eq!(sem.forget_permits(1), 0);
        assert_eq!(sem.available_permits(), 0);
        drop(held);
        assert_eq!(sem.available_permits(), 2);
        sem.add_permits(4);
        assert_eq!(sem.forget_permits(usize::MAX), 6);
        sem.add_permits(3);
        assert_eq!(sem.drain_permits(), 3);
        assert_eq!(sem.drain_permits(), 0);
        assert_eq!(sem.forget_permits(0), 0);
        assert_eq!(sem.available_permits(), 0);
    });
}

/// `forget_permits` and `drain_permits` never wake a waiter nor disturb the
/// queue.
#[test]
fn forget_and_drain_leave_waiters_queued() {
    both_modes(|mode| {
        let sem = mode.arc(1);
        let waiter = {
            let sem = Arc::clone(&sem);
            spawn(move || sem.try_acquire_many_for(2, WAIT).map(|p| p.num_permits()))
        };
        wait_queued(&sem, 1);
        assert_eq!(sem.drain_permits(), 1);
        assert_eq!(sem.queue_length(), 1);
        sem.add_permits(3);
        assert_eq!(waiter.join(), Ok(2));
        assert_eq!(
            (sem.available_permits(), sem.queue_length()),
            (3, 0),
            "the waiter's permit came back"
        );
    });
}

#[test]
fn queue_length_counts_queued_threads() {
    let n = if cfg!(miri) { 2 } else { 4 };
    both_modes(|mode| {
        let sem = mode.arc(0);
        assert!(!sem.has_queued_threads());
        let waiters: Vec<_> = (0..n)
            .map(|_| {
                let sem = Arc::clone(&sem);
                spawn(move || sem.acquire().map(|p| p.forget()))
            })
            .collect();
        wait_queued(&sem, n);
        assert!(sem.has_queued_threads());
        assert!(
            format!("{sem:?}").contains(&format!("queued: {n}")),
            "{sem:?}"
        );
        sem.add_permits(n - 1);
        wait_queued(&sem, 1);
        assert!(sem.has_queued_threads());
        sem.add_permits(1);
        for w in waiters {
            assert_eq!(w.join(), Ok(()));
        }
        assert_eq!(sem.queue_length(), 0);
        assert!(!sem.has_queued_threads());
    });
}

#[test]
fn static_semaphores_work() {
    static NONFAIR: Semaphore = Semaphore::new(2);
    static FAIR: Semaphore = Semaphore::new_fair(1);
    assert!(!NONFAIR.is_fair() && FAIR.is_fair());

    let held = FAIR.try_acquire().unwrap();
    let waiter = spawn(|| {
        let fair = FAIR.try_acquire_for(WAIT).map(|p| p.num_permits());
        let nonfair = NONFAIR
            .try_acquire_many_for(2, WAIT)
            .map(|p| p.num_permits());
        (fair, nonfair)
    });
    wait_queued(&FAIR, 1);
    drop(held);
    assert_eq!(waiter.join(), (Ok(1), Ok(2)));
    assert_eq!(
        (NONFAIR.available_permits(), FAIR.available_permits()),
        (2, 1)
    );
}

// ---------------------------------------------------------------------------
// Stress
// ---------------------------------------------------------------------------

/// Eight threads mixing every kind of acquire: never more than `PERMITS`
/// permits are held at once, and all come back at the end.
#[test]
fn stress_never_exceeds_the_limit_and_conserves_permits() {
    const PERMITS: usize = 3;
    let (threads, rounds) = if cfg!(miri) { (3, 10) } else { (8, 1500) };

    fn hold(held: &AtomicUsize, max: &AtomicUsize, n: usize) {
        let now = held.fetch_add(n, SeqCst) + n;
        assert!(
            now <= PERMITS,
            "{now} permits held at once (limit {PERMITS})"
        );
        max.fetch_max(now, Relaxed);
        thread::yield_now();
        held.fetch_sub(n, SeqCst);
    }

    both_modes(|mode| {
        let sem = mode.arc(PERMITS);
        let held = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (sem, held, max) = (Arc::clone(&sem), Arc::clone(&held), Arc::clone(&max));
                spawn(move || {
                    let hold = |n| hold(&held, &max, n);
                    let mut acquired = 0;
                    for i in 0..rounds {
                        match (t + i) % 6 {
                            0 => {
                                let p = sem.acquire().unwrap();
                                hold(p.num_permits());
                                acquired += 1;
                            }
                            1 => {
                                let p = sem.acquire_many(2).unwrap();
                                hold(p.num_permits());
                                acquired += 1;
                            }
                            2 => {
                                if let Ok(p) = sem.try_acquire() {
                                    hold(p.num_permits());
                                    acquired += 1;
                                }
                            }
                            3 => {
                                if let Ok(p) =
                                    sem.try_acquire_many_for(2, Duration::from_micros(200))
                                {
                                    hold(p.num_permits());
                                    acquired += 1;
                                }
                            }
                            4 => {
                                if let Ok(p) = sem.try_acquire_for(Duration::ZERO) {
                                    hold(p.num_permits());
                                    acquired += 1;
                                }
                            }
                            _ => {
                                let mut p = Arc::clone(&sem).acquire_many_owned(2).unwrap();
                                let half = p.split(1).unwrap();
                                hold(2);
                                drop(half);
                                drop(p);
                                acquired += 1;
                            }
                        }
                    }
                    acquired
                })
            })
            .collect();
        let acquired: usize = workers.into_iter().map(Bounded::join).sum();
        assert_eq!(held.load(SeqCst), 0);
        // Only rounds 0, 1 and 5 are owed a permit: they block until they
        // get one (and unwrap it). The others may fail, all of them under
        // Miri at times, whose clock runs with the instructions a spin
        // executes; so no count is asserted beyond that, and the bound above
        // and the conservation below are the test.
        assert!(max.load(SeqCst) >= 1, "nobody ever held a permit");
        assert_eq!(
            (sem.available_permits(), sem.queue_length()),
            (PERMITS, 0),
            "permits were lost or created"
        );
        eprintln!(
            "{acquired} acquisitions, at most {} permits held at once",
            max.load(SeqCst)
        );
    });
}
