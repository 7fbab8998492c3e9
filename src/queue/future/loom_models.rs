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
/// F2). Bound 2.
#[test]
fn waker_replaced_while_a_release_wakes() {
    check(2, || {
        let sem = semaphore(true, 0);
        let mut fut = Acquire::new(&sem);
        assert!(poll_once(&mut fut).is_pending());
        let releaser = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.raw.release_shared(&sem.policy, 1))
        };
        assert!(loom::future::block_on(&mut fut));
        drop(fut);
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
