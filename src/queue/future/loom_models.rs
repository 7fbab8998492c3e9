//! Loom models of async waiters (feature `async`) on the core, with the
//! test policy: a task and a thread racing for one permit, a future dropped
//! after a release woke it, a waker replaced while a release wakes the old
//! one, and a propagation batch that mixes a task and a thread. Tasks run
//! under `loom::future::block_on`, whose waker unparks a loom thread, so a
//! lost wake-up is loom's deadlock. Run with `bash scripts/loom.sh`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use loom::thread;

use super::QueuedAcquire;
use crate::loom::model::check;
use crate::queue::policy::Mode;
use crate::queue::state::{value_of, waiters_of};
use crate::queue::test_policy::Permits;
use crate::queue::RawSync;

struct Sem {
    raw: RawSync,
    policy: Permits,
}

fn semaphore(fair: bool, permits: u32) -> Arc<Sem> {
    Arc::new(Sem {
        raw: RawSync::new(permits),
        policy: Permits { fair, adds: true },
    })
}

/// An acquire of one unit as a future.
struct Acquire<'a> {
    sem: &'a Sem,
    queued: QueuedAcquire<'a>,
}

impl<'a> Acquire<'a> {
    fn new(sem: &'a Sem) -> Self {
        Acquire {
            sem,
            queued: QueuedAcquire::new(&sem.raw, Mode::Shared, 1),
        }
    }
}

impl Future for Acquire<'_> {
    type Output = bool;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.get_mut();
        this.queued
            .poll_acquire(&this.sem.policy, cx)
            .map(|r| r.is_ok())
    }
}

fn assert_quiescent(sem: &Sem, permits: u32) {
    let s = sem.raw.state();
    assert_eq!(value_of(s), permits, "permits were lost or invented");
    assert_eq!(waiters_of(s), 0, "a waiter is still counted");
    assert_eq!(sem.raw.live_nodes(), 0, "a queue node outlived its waiter");
}

/// Polls `f` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(f).poll(&mut cx)
}

/// Main holds the one permit; a thread and a task (on its own thread) wait
/// for it, in either order; main releases. Both get the permit in turn and
/// give it back. Bound 2, as the core's one-permit model.
fn task_and_thread_race(fair: bool) {
    check(2, move || {
        let sem = semaphore(fair, 0);
        let thread = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                assert!(sem.raw.acquire_shared(&sem.policy, 1, None).is_ok());
                sem.raw.release_shared(&sem.policy, 1);
            })
        };
        let task = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                assert!(loom::future::block_on(Acquire::new(&sem)));
                sem.raw.release_shared(&sem.policy, 1);
            })
        };
        sem.raw.release_shared(&sem.policy, 1);
        thread.join().unwrap();
        task.join().unwrap();
        assert_quiescent(&sem, 1);
    });
}

#[test]
fn task_and_thread_race_for_one_permit_fair() {
    task_and_thread_race(true);
}

#[test]
fn task_and_thread_race_for_one_permit_nonfair() {
    task_and_thread_race(false);
}

/// A future queues (polled once, pending), a thread queues behind it, and
/// main releases one permit, which wakes the future; main then drops the
/// future without polling it. The wake-up must pass on to the thread (F3),
/// or it sleeps for good: loom's deadlock. Bound 2.
#[test]
fn dropped_signalled_future_passes_the_wake_on() {
    check(2, || {
        let sem = semaphore(true, 0);
        let mut fut = Acquire::new(&sem);
        assert!(poll_once(&mut fut).is_pending());
        let thread = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                assert!(sem.raw.acquire_shared(&sem.policy, 1, None).is_ok());
                sem.raw.release_shared(&sem.policy, 1);
            })
        };
        while waiters_of(sem.raw.state()) < 2 {
            thread::yield_now();
        }
        sem.raw.release_shared(&sem.policy, 1);
        drop(fut);
        thread.join().unwrap();
        assert_quiescent(&sem, 1);
    });
}

/// A future queues with a waker that does nothing; then a releaser thread
/// releases while main runs the future under `block_on`, whose first poll
/// registers a new waker. The release's wake must reach the new waker (or
/// the poll must see the wake flag), or `block_on` sleeps for good (AW2,
/// F2). Bound 2. The future is dropped only on success: on loom's deadlock
/// report its drop would run the queue's atomics during the unwind, and
/// loom aborts on that instead of reporting.
#[test]
fn waker_replaced_while_a_release_wakes() {
    check(2, || {
        let sem = semaphore(true, 0);
        let mut fut = std::mem::ManuallyDrop::new(Acquire::new(&sem));
        assert!(poll_once(&mut *fut).is_pending());
        let releaser = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.raw.release_shared(&sem.policy, 1))
        };
        assert!(loom::future::block_on(&mut *fut));
        drop(std::mem::ManuallyDrop::into_inner(fut));
        releaser.join().unwrap();
        sem.raw.release_shared(&sem.policy, 1);
        assert_quiescent(&sem, 1);
    });
}

/// A thread and a task both wait for one unit; one release of two must
/// serve both: the first one woken passes the rest on by propagation (or a
/// wake-ahead), whichever kind it is. Bound 1: the order of the two waiters
/// is left to loom, and one preemption places the release against a
/// waiter's arming.
#[test]
fn propagation_mixes_tasks_and_threads() {
    check(1, || {
        let sem = semaphore(true, 0);
        let thread = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(sem.raw.acquire_shared(&sem.policy, 1, None).is_ok()))
        };
        let task = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(loom::future::block_on(Acquire::new(&sem))))
        };
        while waiters_of(sem.raw.state()) < 2 {
            thread::yield_now();
        }
        sem.raw.release_shared(&sem.policy, 2);
        thread.join().unwrap();
        task.join().unwrap();
        assert_quiescent(&sem, 0);
    });
}

/// The same batch at bound 2, with no wait for both to queue: the release
/// of two units may come before, between or after the two arrivals, and
/// the preemptions left place it against a waiter's arming or the first
/// woken waiter's propagation. (Waiting with `yield_now` until both are
/// counted, as the bound-1 model does, lets loom run main's yields and the
/// task's spurious wake-ups against each other without end at bound 2.)
#[test]
fn propagation_mixes_tasks_and_threads_bound_2() {
    check(2, || {
        let sem = semaphore(true, 0);
        let thread = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(sem.raw.acquire_shared(&sem.policy, 1, None).is_ok()))
        };
        let task = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(loom::future::block_on(Acquire::new(&sem))))
        };
        sem.raw.release_shared(&sem.policy, 2);
        thread.join().unwrap();
        task.join().unwrap();
        assert_quiescent(&sem, 0);
    });
}

/// A waker that counts its wakes and panics on `wake` while `panics` is
/// set (plain std atomics: test bookkeeping that loom need not model).
#[derive(Default)]
struct Faulty {
    panics: std::sync::atomic::AtomicBool,
    wakes: std::sync::atomic::AtomicUsize,
}

impl std::task::Wake for Faulty {
    fn wake(self: Arc<Self>) {
        use std::sync::atomic::Ordering::SeqCst;
        self.wakes.fetch_add(1, SeqCst);
        if self.panics.load(SeqCst) {
            panic!("loom model: a waker panics");
        }
    }
}

/// O1 to O3: task A queues, then task B, whose waker panics; a thread
/// releases two units while main polls A. Whoever wakes B (the releaser's
/// wake-ahead, or A's propagation) gets the panic only after its own
/// bookkeeping: A's poll then gives its unit back, and nothing is counted
/// twice or stranded. Afterwards B (woken) acquires, and the units and the
/// queue are whole. Bound 2. The planted bug `wake_inline` wakes inside the
/// step: A's poll unwinds with A half-acquired, and its drop then cancels a
/// node that heads the queue.
#[test]
fn wake_panics_mid_propagation() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::Ordering::SeqCst;
    check(2, || {
        let sem = semaphore(true, 0);
        let mut a = Acquire::new(&sem);
        let mut b = Acquire::new(&sem);
        let faulty = Arc::new(Faulty::default());
        faulty.panics.store(true, SeqCst);
        let b_waker = Waker::from(Arc::clone(&faulty));
        assert!(poll_once(&mut a).is_pending());
        assert!(Pin::new(&mut b)
            .poll(&mut Context::from_waker(&b_waker))
            .is_pending());
        let releaser = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                catch_unwind(AssertUnwindSafe(|| sem.raw.release_shared(&sem.policy, 2))).is_err()
            })
        };
        // A: polled until it acquires, or until its poll panics (then it
        // gave its unit back and is done).
        let mut a_holds = false;
        loop {
            match catch_unwind(AssertUnwindSafe(|| poll_once(&mut a))) {
                Ok(Poll::Ready(ok)) => {
                    a_holds = ok;
                    break;
                }
                Ok(Poll::Pending) => thread::yield_now(),
                Err(_) => break,
            }
        }
        let releaser_panicked = releaser.join().unwrap();
        // O3: a poll that panicked gave its unit back; B has not polled.
        let free = value_of(sem.raw.state());
        if free != 2 - u32::from(a_holds) {
            // Dropping a half-done future would run into the very bug
            // (a second cancel of a node that heads the queue): report it.
            std::mem::forget(a);
            std::mem::forget(b);
            panic!("permits were lost or invented: {free} free");
        }
        drop(a);
        while faulty.wakes.load(SeqCst) == 0 {
            thread::yield_now();
        }
        faulty.panics.store(false, SeqCst);
        let _ = releaser_panicked;
        // B was woken with a unit for it: it acquires.
        let b_ok = loop {
            if let Poll::Ready(ok) = poll_once(&mut b) {
                break ok;
            }
            thread::yield_now();
        };
        assert!(b_ok);
        drop(b);
        sem.raw.release_shared(&sem.policy, 1 + u32::from(a_holds));
        assert_quiescent(&sem, 2);
    });
}

/// `close` with a task and a thread queued: both are woken and fail, the
/// task through its waker (deferred to after close's walk, O1), and the
/// queue is empty. Bound 1: close comes after both are counted; one
/// preemption places it against a waiter's arming (bound 2 runs for more
/// than ten minutes). The planted bug `close_skips_tasks`
/// wakes only threads: the task sleeps for good (loom's deadlock).
#[test]
fn close_wakes_queued_tasks() {
    check(1, || {
        let sem = semaphore(true, 0);
        let thread = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(sem.raw.acquire_shared(&sem.policy, 1, None).is_err()))
        };
        let task = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(!loom::future::block_on(Acquire::new(&sem))))
        };
        while waiters_of(sem.raw.state()) < 2 {
            thread::yield_now();
        }
        sem.raw.close();
        thread.join().unwrap();
        task.join().unwrap();
        assert!(crate::queue::is_closed(sem.raw.state()));
        assert_quiescent(&sem, 0);
    });
}

/// A future queued on main is dropped by main while another thread's
/// release wakes it: the drop's take of its own waker (O2) and the
/// release's take race on the waker slot (AW1), and the wake-up must pass
/// on to a thread queued behind (F3). Bound 1. The planted bug
/// `owner_takes_unguarded` lets the owner empty its slot without the
/// slot's protocol: a loom causality violation with the releaser's take.
#[test]
fn future_dropped_while_another_thread_wakes_it() {
    check(1, || {
        let sem = semaphore(true, 0);
        let mut fut = Acquire::new(&sem);
        // A real waker in the slot: the one the race is about.
        let waker = Waker::from(Arc::new(Faulty::default()));
        assert!(Pin::new(&mut fut)
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        let behind = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                assert!(sem.raw.acquire_shared(&sem.policy, 1, None).is_ok());
                sem.raw.release_shared(&sem.policy, 1);
            })
        };
        while waiters_of(sem.raw.state()) < 2 {
            thread::yield_now();
        }
        let releaser = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.raw.release_shared(&sem.policy, 1))
        };
        drop(fut);
        releaser.join().unwrap();
        behind.join().unwrap();
        assert_quiescent(&sem, 1);
    });
}
