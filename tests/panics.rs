//! Outside code that panics (O1 to O3 in `src/queue/mod.rs`): task wakers
//! that panic on `wake`, `wake_by_ref`, `clone` or `drop`, on every
//! synchronizer's async path, and `wait_while` conditions that panic. Each
//! test catches the panic where the documentation says it surfaces, then
//! checks that the synchronizer still serves every other waiter and that
//! nothing was lost or taken twice (a conservation check). Every blocking
//! wait is bounded.

#![cfg(all(feature = "async", not(aqs_loom)))]

mod common;

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::thread;
use std::time::Duration;

use aqs::{
    Condvar, CountDownLatch, FairMutex, FairRwLock, Mutex, MutexAsync, RwLock, RwLockAsync,
    Semaphore,
};
use common::{join_bounded, wait_until, BOUND};

/// Where a test waker panics.
#[derive(Default)]
struct Faults {
    wake: AtomicBool,
    wake_by_ref: AtomicBool,
    clone: AtomicBool,
    drop: AtomicBool,
    /// Wakes delivered (including those that then panicked).
    wakes: AtomicUsize,
}

impl Faults {
    /// Stops every fault, so that the test's own clean-up cannot panic.
    fn heal(&self) {
        for f in [&self.wake, &self.wake_by_ref, &self.clone, &self.drop] {
            f.store(false, SeqCst);
        }
    }
}

/// A waker over `Arc<Faults>` whose every operation may panic.
fn faulty(faults: &Arc<Faults>) -> Waker {
    fn raw(data: *const Faults) -> RawWaker {
        RawWaker::new(data.cast(), &VTABLE)
    }
    unsafe fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` came from `Arc::into_raw` below.
        let f = unsafe { &*data.cast::<Faults>() };
        if f.clone.load(SeqCst) {
            panic!("test waker: clone");
        }
        // SAFETY: as above; one more owner.
        unsafe { Arc::increment_strong_count(data.cast::<Faults>()) };
        raw(data.cast())
    }
    unsafe fn wake(data: *const ()) {
        // SAFETY: this waker owned one count; take it back.
        let f = unsafe { Arc::from_raw(data.cast::<Faults>()) };
        f.wakes.fetch_add(1, SeqCst);
        if f.wake.load(SeqCst) {
            panic!("test waker: wake");
        }
    }
    unsafe fn wake_by_ref(data: *const ()) {
        // SAFETY: borrowed for the call.
        let f = unsafe { &*data.cast::<Faults>() };
        f.wakes.fetch_add(1, SeqCst);
        if f.wake_by_ref.load(SeqCst) {
            panic!("test waker: wake_by_ref");
        }
    }
    unsafe fn drop(data: *const ()) {
        // SAFETY: this waker owned one count; take it back.
        let f = unsafe { Arc::from_raw(data.cast::<Faults>()) };
        if f.drop.load(SeqCst) {
            panic!("test waker: drop");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop);
    // SAFETY: the vtable keeps the `Arc` count as `RawWaker` requires.
    unsafe { Waker::from_raw(raw(Arc::into_raw(Arc::clone(faults)))) }
}

fn faults() -> Arc<Faults> {
    Arc::new(Faults::default())
}

/// A waker that never panics.
fn good() -> (Arc<Faults>, Waker) {
    let f = faults();
    let w = faulty(&f);
    (f, w)
}

fn poll_with<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// Runs `f`, expecting it to panic with the test waker's message.
#[track_caller]
fn expect_panic<R>(what: &str, f: impl FnOnce() -> R) {
    let caught = panic::catch_unwind(AssertUnwindSafe(f));
    let Err(payload) = caught else {
        panic!("{what}: expected a waker's panic, got none");
    };
    let msg = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("");
    assert!(
        msg.starts_with("test waker"),
        "{what}: unexpected panic {msg:?}"
    );
}

fn quiet_panics() {
    // The expected panics would print a message each; keep the output clean
    // (the test harness still reports real failures).
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let msg = info.payload().downcast_ref::<&str>().copied().unwrap_or("");
            if !msg.starts_with("test waker") {
                default(info);
            }
        }));
    });
}

/// The review's sequence on the read-write lock, both kinds: a reader task
/// that acquires and propagates to a reader task whose waker panics. The
/// first task's poll gets the panic and not the read hold; the second still
/// acquires; the lock ends free.
fn read_propagation_to_a_panicking_waker<R: aqs::future::AsyncRawRwLock>(
    lock: &lock_api::RwLock<R, u32>,
) {
    quiet_panics();
    let w = lock.write();
    let (a_faults, a_waker) = good();
    let b_faults = faults();
    b_faults.wake.store(true, SeqCst);
    let b_waker = faulty(&b_faults);
    let mut a = lock.read_async();
    let mut b = lock.read_async();
    assert!(poll_with(&mut a, &a_waker).is_pending());
    assert!(poll_with(&mut b, &b_waker).is_pending());
    drop(w);
    assert_eq!(
        a_faults.wakes.load(SeqCst),
        1,
        "the unlock wakes the first reader"
    );
    // A acquires, propagates to B, whose waker panics: A's poll panics.
    expect_panic("A's poll", || poll_with(&mut a, &a_waker));
    assert_eq!(b_faults.wakes.load(SeqCst), 1, "B was woken");
    drop(a); // done: no second cancel
    b_faults.heal();
    let (_, b_good) = good();
    let Poll::Ready(g) = poll_with(&mut b, &b_good) else {
        panic!("B was woken and the lock is free for readers: it must acquire");
    };
    assert_eq!(*g, 0);
    assert!(lock.try_write().is_none(), "B holds a read");
    drop(g);
    drop(b);
    // Conservation: every hold is back; a writer and two readers get in.
    *lock.try_write().expect("the lock is free") += 1;
    let r1 = lock.try_read().unwrap();
    let r2 = lock.try_read().unwrap();
    assert_eq!(*r1 + *r2, 2);
}

#[test]
fn rwlock_reader_whose_propagation_wakes_a_panicking_waker() {
    read_propagation_to_a_panicking_waker(&RwLock::new(0));
}

#[test]
fn fair_rwlock_reader_whose_propagation_wakes_a_panicking_waker() {
    read_propagation_to_a_panicking_waker(&FairRwLock::new(0));
}

/// A semaphore's release wakes a waker that panics: the release is done
/// (the permit is there), the releaser gets the panic, the woken task still
/// acquires when polled.
fn release_wakes_a_panicking_waker(sem: &Semaphore) {
    quiet_panics();
    let held = sem.acquire().unwrap();
    let f = faults();
    f.wake.store(true, SeqCst);
    let waker = faulty(&f);
    let mut fut = sem.acquire_async();
    assert!(poll_with(&mut fut, &waker).is_pending());
    expect_panic("the release", || drop(held));
    assert_eq!(f.wakes.load(SeqCst), 1);
    f.heal();
    let Poll::Ready(Ok(p)) = poll_with(&mut fut, &waker) else {
        panic!("woken with a permit free: must acquire");
    };
    assert_eq!(sem.available_permits(), 0);
    drop(p);
    drop(fut);
    assert_eq!(sem.available_permits(), 1);
    assert!(!sem.has_queued_threads());
}

#[test]
fn semaphore_release_that_wakes_a_panicking_waker() {
    release_wakes_a_panicking_waker(&Semaphore::new(1));
    release_wakes_a_panicking_waker(&Semaphore::new_fair(1));
}

/// A waker whose `clone` panics: the poll that registers it panics, the
/// future stays queued and consistent; polled again it acquires, dropped
/// instead it leaves no trace.
#[test]
fn waker_clone_panics_on_register() {
    quiet_panics();
    for fair in [false, true] {
        for drop_after in [false, true] {
            let sem = if fair {
                Semaphore::new_fair(1)
            } else {
                Semaphore::new(1)
            };
            let held = sem.acquire().unwrap();
            let f = faults();
            f.clone.store(true, SeqCst);
            let waker = faulty(&f);
            let mut fut = sem.acquire_async();
            expect_panic("register", || poll_with(&mut fut, &waker));
            assert!(sem.has_queued_threads(), "the future is still queued");
            // A second waiter behind it, that must not be stranded.
            let (g_faults, g_waker) = good();
            let mut behind = sem.acquire_async();
            assert!(poll_with(&mut behind, &g_waker).is_pending());
            f.heal();
            if drop_after {
                drop(fut);
                drop(held);
                wait_until("the waiter behind is woken", || {
                    g_faults.wakes.load(SeqCst) > 0
                });
                let Poll::Ready(Ok(p)) = poll_with(&mut behind, &g_waker) else {
                    panic!("the cancelled future passed its turn on");
                };
                drop(p);
            } else {
                drop(held);
                let Poll::Ready(Ok(p)) = poll_with(&mut fut, &waker) else {
                    panic!("the permit is free and the future is first");
                };
                drop(p);
                let Poll::Ready(Ok(p)) = poll_with(&mut behind, &g_waker) else {
                    panic!("the permit is free again");
                };
                drop(p);
                drop(fut);
            }
            drop(behind);
            assert_eq!(sem.available_permits(), 1);
            assert!(!sem.has_queued_threads());
        }
    }
}

/// A waker whose `drop` panics, dropped by the owner: when a new waker
/// replaces it in a poll (the future stays queued), and when a queued
/// future is dropped and takes its waker out of its node (the drop panics,
/// and the future has left the queue).
#[test]
fn waker_drop_panics_in_the_owners_poll() {
    quiet_panics();
    for fair in [false, true] {
        let sem = if fair {
            Semaphore::new_fair(1)
        } else {
            Semaphore::new(1)
        };
        // Replaced while queued.
        let held = sem.acquire().unwrap();
        let f = faults();
        let waker = faulty(&f);
        let mut fut = sem.acquire_async();
        assert!(poll_with(&mut fut, &waker).is_pending());
        let (_, other) = good();
        f.drop.store(true, SeqCst);
        expect_panic("replacing the waker", || poll_with(&mut fut, &other));
        f.heal();
        drop(waker);
        assert!(sem.has_queued_threads(), "still queued after the panic");
        drop(held);
        let Poll::Ready(Ok(p)) = poll_with(&mut fut, &other) else {
            panic!("first in line with the permit free");
        };
        drop(p);
        drop(fut);
        assert_eq!(sem.available_permits(), 1);

        // Taken out of the node when a queued future is dropped: the drop
        // panics, the future has left the queue, the waiter behind it is
        // served.
        let held = sem.acquire().unwrap();
        let f = faults();
        let waker = faulty(&f);
        let mut fut = sem.acquire_async();
        assert!(poll_with(&mut fut, &waker).is_pending());
        let (g, behind_waker) = good();
        let mut behind = sem.acquire_async();
        assert!(poll_with(&mut behind, &behind_waker).is_pending());
        f.drop.store(true, SeqCst);
        expect_panic("dropping the queued future", || drop(fut));
        f.heal();
        drop(waker);
        assert_eq!(sem.queue_length(), 1, "only the waiter behind is queued");
        drop(held);
        wait_until("the waiter behind is woken", || g.wakes.load(SeqCst) > 0);
        let Poll::Ready(Ok(p)) = poll_with(&mut behind, &behind_waker) else {
            panic!("first in line with the permit free");
        };
        drop(p);
        drop(behind);
        assert_eq!(sem.available_permits(), 1);
        assert!(!sem.has_queued_threads());
    }
}

/// `wake_by_ref` is never how the queue wakes a task (it takes the waker
/// and wakes it by value): a waker whose `wake_by_ref` panics works.
#[test]
fn waker_wake_by_ref_is_not_used_by_releases() {
    quiet_panics();
    let m = FairMutex::new(0);
    let g = m.lock();
    let f = faults();
    f.wake_by_ref.store(true, SeqCst);
    let waker = faulty(&f);
    let mut fut = m.lock_async();
    assert!(poll_with(&mut fut, &waker).is_pending());
    drop(g);
    assert_eq!(f.wakes.load(SeqCst), 1);
    let Poll::Ready(mut g) = poll_with(&mut fut, &waker) else {
        panic!("woken with the lock free");
    };
    *g += 1;
    drop(g);
    f.heal();
    assert_eq!(*m.lock(), 1);
}

/// Dropping a woken, queued future passes the wake-up on; when the next
/// waiter's waker panics, the drop panics, and that waiter still acquires.
#[test]
fn cancel_passes_the_wake_to_a_panicking_waker() {
    quiet_panics();
    let sem = Semaphore::new_fair(1);
    let held = sem.acquire().unwrap();
    let (_, a_waker) = good();
    let f = faults();
    f.wake.store(true, SeqCst);
    let b_waker = faulty(&f);
    let mut a = sem.acquire_async();
    let mut b = sem.acquire_async();
    assert!(poll_with(&mut a, &a_waker).is_pending());
    assert!(poll_with(&mut b, &b_waker).is_pending());
    drop(held); // wakes A
    expect_panic("dropping A", || drop(a));
    assert_eq!(f.wakes.load(SeqCst), 1, "the wake went on to B");
    f.heal();
    let Poll::Ready(Ok(p)) = poll_with(&mut b, &b_waker) else {
        panic!("B is first with the permit free");
    };
    drop(p);
    drop(b);
    assert_eq!(sem.available_permits(), 1);
    assert!(!sem.has_queued_threads());
}

/// `close` wakes every queued task, one of whose wakers panics: the closer
/// gets the panic, and every waiter was woken and fails with `Closed`.
#[test]
fn close_with_a_panicking_waker_wakes_everyone() {
    quiet_panics();
    let sem = Semaphore::new_fair(0);
    let mut futs = Vec::new();
    let mut fs = Vec::new();
    for i in 0..4 {
        let f = faults();
        f.wake.store(i == 1, SeqCst);
        let w = faulty(&f);
        let mut fut = sem.acquire_async();
        assert!(poll_with(&mut fut, &w).is_pending());
        futs.push((fut, w));
        fs.push(f);
    }
    expect_panic("close", || sem.close());
    for f in &fs {
        assert_eq!(f.wakes.load(SeqCst), 1, "every waiter is woken");
        f.heal();
    }
    for (mut fut, w) in futs {
        assert!(matches!(poll_with(&mut fut, &w), Poll::Ready(Err(_))));
    }
    assert!(!sem.has_queued_threads());
}

/// A blocking acquire whose propagation wakes a panicking task: whichever
/// call woke it (the releaser's wake-ahead or the thread's propagation)
/// panics, having completed or given back its part; the task still acquires,
/// and every permit is accounted for.
#[test]
fn thread_acquire_that_propagates_to_a_panicking_task() {
    quiet_panics();
    let sem = Arc::new(Semaphore::new_fair(0));
    let s = Arc::clone(&sem);
    let thread = thread::spawn(move || {
        panic::catch_unwind(AssertUnwindSafe(|| {
            s.try_acquire_for(BOUND).map(|p| p.forget()).is_ok()
        }))
    });
    wait_until("the thread queues", || sem.queue_length() == 1);
    let f = faults();
    f.wake.store(true, SeqCst);
    let waker = faulty(&f);
    let mut fut = sem.acquire_async();
    assert!(poll_with(&mut fut, &waker).is_pending());
    let releaser = panic::catch_unwind(AssertUnwindSafe(|| sem.add_permits(2)));
    let thread = join_bounded(thread);
    wait_until("the task is woken", || f.wakes.load(SeqCst) > 0);
    f.heal();
    let panics = usize::from(releaser.is_err()) + usize::from(thread.is_err());
    assert_eq!(
        panics, 1,
        "exactly the caller that invoked the waker panics"
    );
    let thread_holds = matches!(thread, Ok(true));
    let Poll::Ready(Ok(p)) = poll_with(&mut fut, &waker) else {
        panic!("woken with a permit for it");
    };
    drop(p);
    drop(fut);
    // The thread forgot its permit if it kept one; the rest are back.
    assert_eq!(sem.available_permits(), 2 - usize::from(thread_holds));
    assert!(!sem.has_queued_threads());
}

/// The latch's count-down wakes a panicking task: the count-down completes,
/// every other waiter is woken, and the latch is open.
#[test]
fn latch_count_down_wakes_a_panicking_task() {
    quiet_panics();
    let latch = CountDownLatch::new(1);
    let f = faults();
    f.wake.store(true, SeqCst);
    let bad = faulty(&f);
    let (g, good_waker) = good();
    let mut a = latch.wait_async();
    let mut b = latch.wait_async();
    assert!(poll_with(&mut a, &bad).is_pending());
    assert!(poll_with(&mut b, &good_waker).is_pending());
    // The count-down wakes the first task; whoever then wakes the second
    // (the count-down or the first task's poll) must not strand it.
    let counted = panic::catch_unwind(AssertUnwindSafe(|| latch.count_down()));
    f.heal();
    assert_eq!(latch.count(), 0);
    let first = panic::catch_unwind(AssertUnwindSafe(|| poll_with(&mut a, &bad)));
    assert_eq!(
        usize::from(counted.is_err()) + usize::from(first.is_err()),
        1,
        "one panic, where the waker was invoked"
    );
    if let Ok(p) = first {
        assert!(p.is_ready());
    }
    wait_until("the second task is woken", || g.wakes.load(SeqCst) > 0);
    assert!(poll_with(&mut b, &good_waker).is_ready());
    assert!(latch.wait_for(Duration::ZERO));
}

/// A condition wait whose release wakes a task (waiting for the mutex) whose
/// waker panics: the wait panics with the mutex held again and its node off
/// the condition queue; the guard stays valid, and the task still gets the
/// mutex afterwards.
#[test]
fn condvar_wait_whose_release_wakes_a_panicking_task() {
    quiet_panics();
    let m = Arc::new(Mutex::new(0u32));
    let c = Condvar::new();
    let mut g = m.lock();
    let f = faults();
    f.wake.store(true, SeqCst);
    let bad = faulty(&f);
    let mut task = m.lock_async();
    assert!(poll_with(&mut task, &bad).is_pending());
    expect_panic("the wait", || c.wait_for(&mut g, BOUND));
    assert!(m.is_locked(), "the guard holds the mutex again");
    *g += 1;
    assert!(!c.notify_one(), "the waiter left the condition queue");
    f.heal();
    drop(g);
    let (_, w) = good();
    let Poll::Ready(mut g) = poll_with(&mut task, &w) else {
        panic!("the task gets the mutex");
    };
    *g += 1;
    drop(g);
    drop(task);
    assert_eq!(*m.try_lock().expect("free"), 2);
}

/// As above on the fair mutex, where the woken task is first in line: the
/// wait's re-acquire waits for the task, polled by another thread, and
/// then panics holding the mutex.
#[test]
fn condvar_wait_on_a_fair_mutex_whose_release_wakes_a_panicking_task() {
    quiet_panics();
    let m = Arc::new(FairMutex::new(0u32));
    let c = Condvar::new();
    let mut g = m.lock();
    let f = faults();
    f.wake.store(true, SeqCst);
    let queued = Arc::new(AtomicBool::new(false));
    let (m2, f2, q2) = (Arc::clone(&m), Arc::clone(&f), Arc::clone(&queued));
    let poller = thread::spawn(move || {
        let bad = faulty(&f2);
        let mut task = m2.lock_async();
        assert!(poll_with(&mut task, &bad).is_pending());
        q2.store(true, SeqCst);
        // The wake panics in the waiter's thread; then poll again.
        wait_until("the task is woken", || f2.wakes.load(SeqCst) > 0);
        let (_, w) = good();
        let Poll::Ready(mut g) = poll_with(&mut task, &w) else {
            panic!("woken first in a FIFO queue with the mutex free");
        };
        *g += 10;
    });
    wait_until("the task queues", || queued.load(SeqCst));
    expect_panic("the wait", || c.wait_for(&mut g, BOUND));
    assert!(m.is_locked());
    assert_eq!(
        *g, 10,
        "the task ran in between, then the wait took it back"
    );
    *g += 1;
    assert_eq!(c.notify_all(), 0, "the waiter left the condition queue");
    drop(g);
    f.heal();
    join_bounded(poller);
    assert_eq!(*m.try_lock().expect("free"), 11);
}

/// A `wait_while` condition that panics: the mutex is held when the panic
/// leaves the wait (the guard then unlocks it as usual), and the condition
/// variable and the mutex go on serving.
#[test]
fn wait_while_condition_that_panics() {
    let m = Arc::new(FairMutex::new(0u32));
    let c = Arc::new(Condvar::new());
    let checked = Arc::new(AtomicBool::new(false));
    let (m2, c2, k2) = (Arc::clone(&m), Arc::clone(&c), Arc::clone(&checked));
    let t = thread::spawn(move || {
        let mut g = m2.lock();
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            c2.wait_while(&mut g, |v| {
                k2.store(true, SeqCst);
                assert!(*v < 1, "the condition panics once the value is set");
                true
            })
        }));
        assert!(caught.is_err());
        *g += 1; // the guard still holds the mutex
    });
    wait_until("the condition ran once", || checked.load(SeqCst));
    // The waiter releases the mutex only inside its wait: once we hold it,
    // the waiter is on the condition queue.
    let mut g = m.lock();
    *g = 1;
    assert_eq!(c.notify_all(), 1);
    drop(g);
    join_bounded(t);
    let mut g = m.lock();
    assert_eq!(*g, 2);
    assert!(!c.notify_one(), "nobody left on the condition queue");
    assert!(c.wait_for(&mut g, Duration::from_millis(1)).timed_out());
}

/// A reader that acquires a handed-off lock (a fair unlock) and propagates
/// to a task whose waker panics gives back exactly what it took, hand-off
/// included: an arriving reader still defers (W2), and the task behind gets
/// the lock.
#[test]
fn give_back_keeps_the_hand_off() {
    quiet_panics();
    let lock = RwLock::new(0u32);
    let w = lock.write();
    let (_, a_waker) = good();
    let f = faults();
    f.wake.store(true, SeqCst);
    let b_waker = faulty(&f);
    let mut a = lock.read_async();
    let mut b = lock.read_async();
    assert!(poll_with(&mut a, &a_waker).is_pending());
    assert!(poll_with(&mut b, &b_waker).is_pending());
    lock_api::RwLockWriteGuard::unlock_fair(w);
    expect_panic("A's poll", || poll_with(&mut a, &a_waker));
    drop(a);
    assert!(
        lock.try_read().is_none(),
        "the hand-off was lost: an arrival passed the queued reader"
    );
    f.heal();
    let Poll::Ready(g) = poll_with(&mut b, &b_waker) else {
        panic!("the reader first in line takes the handed-off lock");
    };
    drop(g);
    drop(b);
    assert!(lock.try_write().is_some());
}

/// `lock_all` and `try_lock_all_until` give back every lock they took when
/// an acquire panics (a task waker that a timed-out acquire's departure
/// wakes): no lock is left held by nobody.
#[test]
fn lock_all_gives_back_what_it_took_when_an_acquire_panics() {
    quiet_panics();
    let (mut a, mut b) = (
        Arc::new(FairMutex::new(0u32)),
        Arc::new(FairMutex::new(0u32)),
    );
    // `lock_all` takes locks in address order (G1): the thread must hold
    // `a` while it waits for `b`, so `a` is the one at the lower address.
    if Arc::as_ptr(&b) < Arc::as_ptr(&a) {
        std::mem::swap(&mut a, &mut b);
    }
    let held = b.lock();
    let thread = {
        let (a, b) = (Arc::clone(&a), Arc::clone(&b));
        thread::spawn(move || {
            panic::catch_unwind(AssertUnwindSafe(|| {
                aqs::try_lock_all_for((&*a, &*b), Duration::from_millis(200)).is_some()
            }))
        })
    };
    wait_until("the thread waits for b", || {
        // SAFETY: only reads the raw mutex's state.
        unsafe { b.raw() }.queue_length() == 1
    });
    assert!(a.is_locked(), "the thread holds a meanwhile");
    let f = faults();
    f.wake.store(true, SeqCst);
    let bad = faulty(&f);
    let mut task = b.lock_async();
    assert!(poll_with(&mut task, &bad).is_pending());
    // The thread times out; leaving b's queue, it wakes the task (first
    // behind it), whose waker panics in the thread.
    let result = join_bounded(thread);
    assert!(result.is_err(), "the panic reached the caller");
    assert!(!a.is_locked(), "a was given back");
    f.heal();
    drop(held);
    let (_, w) = good();
    let Poll::Ready(g) = poll_with(&mut task, &w) else {
        panic!("the task is first in line with b free");
    };
    drop(g);
    drop(task);
    assert!(aqs::try_lock_all_for((&*a, &*b), BOUND).is_some());
}

/// A queued future that is leaked (never polled again, never dropped)
/// keeps its task's waker; dropping the synchronizer then drops that waker,
/// once, after the queue is gone (O2), and panics nowhere.
#[test]
fn a_leaked_future_s_waker_is_dropped_with_the_synchronizer() {
    let f = faults();
    let waker = faulty(&f);
    let sem = Semaphore::new_fair(0);
    let mut fut = Box::pin(sem.acquire_async());
    assert!(fut
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    // Leaked as a user would leak it, but kept reachable from a static:
    // Miri's leak check ignores memory a static can still reach, so the
    // test leaks without failing it.
    static LEAKED: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
    LEAKED.store(Box::into_raw(Box::new(fut)).cast(), SeqCst);
    drop(waker);
    assert_eq!(Arc::strong_count(&f), 2, "the queued node holds the waker");
    drop(sem);
    assert_eq!(Arc::strong_count(&f), 1, "dropped with the synchronizer");
}
