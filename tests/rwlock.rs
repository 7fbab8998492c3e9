//! Behaviour of `RwLock` and `FairRwLock` (and their raw types), in the
//! JSR-166 TCK's `ReentrantReadWriteLockTest` spirit: readers share and a
//! writer excludes, timed locks, FIFO order of the fair lock, readers
//! deferring to a queued writer, recursive reads, downgrade, the fair
//! unlock, a batch of readers woken together, and a writer that a stream of
//! readers cannot starve. Every blocking wait is bounded.

#![cfg(not(aqs_loom))]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex as StdMutex};
use std::thread;
use std::time::{Duration, Instant};

use aqs::{FairRwLock, RawFairRwLock, RawRwLock, RwLock};
use common::{join_bounded, wait_until, BOUND};

type Lock<R> = lock_api::RwLock<R, u64>;

/// The threads waiting: queued, or (the nonfair lock's reads a writer
/// turned away) asleep aside; `queue_length` counts both.
fn queued<R: Raw, T>(lock: &lock_api::RwLock<R, T>) -> usize {
    // SAFETY: only reads the raw lock's state.
    R::queue_length(unsafe { lock.raw() })
}

/// What the tests need of both raw types beyond `lock_api`.
trait Raw:
    lock_api::RawRwLockTimed<Duration = Duration, Instant = Instant>
    + lock_api::RawRwLockFair
    + lock_api::RawRwLockRecursive
    + lock_api::RawRwLockDowngrade
    + Send
    + Sync
    + 'static
{
    fn queue_length(&self) -> usize;
    fn read_count(&self) -> usize;
    /// Whether a writer waits: queued, or (the nonfair lock's writer
    /// thread) claiming the lock while the readers inside leave.
    fn writer_waits(&self) -> bool;
}

impl Raw for RawRwLock {
    fn queue_length(&self) -> usize {
        RawRwLock::queue_length(self)
    }
    fn read_count(&self) -> usize {
        RawRwLock::read_count(self)
    }
    fn writer_waits(&self) -> bool {
        self.queue_length() > 0 || format!("{self:?}").contains("write_claimed: true")
    }
}

impl Raw for RawFairRwLock {
    fn queue_length(&self) -> usize {
        RawFairRwLock::queue_length(self)
    }
    fn read_count(&self) -> usize {
        RawFairRwLock::read_count(self)
    }
    fn writer_waits(&self) -> bool {
        self.queue_length() > 0
    }
}

/// Both kinds, one test body.
macro_rules! both {
    ($body:ident) => {
        mod $body {
            #[test]
            fn nonfair() {
                super::$body::<aqs::RawRwLock>();
            }
            #[test]
            fn fair() {
                super::$body::<aqs::RawFairRwLock>();
            }
        }
    };
}

/// Writers increment, readers check the value is never seen half-written
/// (two words that a writer changes together): no lost update, no torn read.
fn writers_exclude_and_readers_see_whole_writes<R: Raw>() {
    let (writers, readers, rounds) = if cfg!(miri) {
        (2, 2, 20)
    } else {
        (4, 4, 2_000)
    };
    let lock = Arc::new(lock_api::RwLock::<R, (u64, u64)>::new((0, 0)));
    let threads: Vec<_> = (0..writers + readers)
        .map(|i| {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                for _ in 0..rounds {
                    if i < writers {
                        let mut g = lock.write();
                        let v = g.0;
                        std::hint::black_box(&v);
                        *g = (v + 1, v + 1);
                    } else {
                        let g = lock.read();
                        assert_eq!(g.0, g.1, "a read saw a write half done");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        join_bounded(t);
    }
    assert_eq!(*lock.read(), (writers * rounds, writers * rounds));
    assert!(!lock.is_locked());
}
both!(writers_exclude_and_readers_see_whole_writes);

/// Readers share: two threads hold read locks at once (each waits, inside,
/// for the other); a writer cannot get in meanwhile.
fn readers_share_and_exclude_writers<R: Raw>() {
    let lock = Arc::new(Lock::<R>::new(0));
    let both_in = Arc::new(Barrier::new(2));
    let other = {
        let (lock, both_in) = (Arc::clone(&lock), Arc::clone(&both_in));
        thread::spawn(move || {
            let _r = lock.read();
            both_in.wait();
            both_in.wait();
        })
    };
    let r = lock.read();
    both_in.wait();
    // SAFETY: reads the state only.
    assert_eq!(unsafe { lock.raw() }.read_count(), 2);
    assert!(lock.try_write().is_none(), "a writer got in beside readers");
    assert!(lock.try_write_for(Duration::from_millis(5)).is_none());
    both_in.wait();
    drop(r);
    join_bounded(other);
    assert!(lock.try_write().is_some());
}
both!(readers_share_and_exclude_writers);

/// A held write lock keeps readers and writers out, also with timeouts;
/// after the unlock both get in.
fn writer_excludes_everyone<R: Raw>() {
    let lock = Arc::new(Lock::<R>::new(0));
    let w = lock.write();
    let probe = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            (
                lock.try_read().is_none(),
                lock.try_write().is_none(),
                lock.try_read_for(Duration::from_millis(5)).is_none(),
                lock.try_write_until(Instant::now() + Duration::from_millis(5))
                    .is_none(),
            )
        })
    };
    assert_eq!(join_bounded(probe), (true, true, true, true));
    assert!(lock.is_locked_exclusive());
    drop(w);
    assert!(lock.try_read().is_some());
    assert!(lock.try_write().is_some());
    assert_eq!(queued(&lock), 0, "timed-out waiters left the queue");
}
both!(writer_excludes_everyone);

/// Readers arriving while a writer waits (first in line, or claiming the
/// nonfair lock) queue and come after it, in both kinds; the recursive read
/// does not (a reader that already holds cannot deadlock behind the writer
/// that waits for it).
fn arriving_readers_defer_to_a_queued_writer<R: Raw>() {
    let lock = Arc::new(Lock::<R>::new(0));
    let r = lock.read();
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.write() += 1)
    };
    // SAFETY: only reads the raw lock's state.
    wait_until("the writer waits", || unsafe { lock.raw() }.writer_waits());
    let ahead = queued(&lock);
    let reader_in = Arc::new(AtomicBool::new(false));
    let reader = {
        let (lock, reader_in) = (Arc::clone(&lock), Arc::clone(&reader_in));
        thread::spawn(move || {
            let g = lock.read();
            reader_in.store(true, SeqCst);
            *g
        })
    };
    wait_until("the reader waits", || queued(&lock) == ahead + 1);
    assert!(!reader_in.load(SeqCst), "a reader passed a queued writer");
    assert!(lock.try_read().is_none(), "try_read passed a queued writer");
    let again = lock.read_recursive();
    assert_eq!(*again, 0);
    drop(again);
    drop(r);
    join_bounded(writer);
    assert_eq!(join_bounded(reader), 1, "the reader came after the writer");
}
both!(arriving_readers_defer_to_a_queued_writer);

/// The fair lock serves readers and writers in arrival order: W R R W R,
/// queued behind a held write lock, enter as W, {R R}, W, R.
#[test]
fn fair_lock_serves_in_arrival_order() {
    let lock = Arc::new(FairRwLock::new(()));
    let order = Arc::new(StdMutex::new(Vec::new()));
    let held = lock.write();
    let mut threads = Vec::new();
    for (i, writer) in [true, false, false, true, false].into_iter().enumerate() {
        let (l, order) = (Arc::clone(&lock), Arc::clone(&order));
        threads.push(thread::spawn(move || {
            if writer {
                let _g = l.write();
                order.lock().unwrap().push(format!("W{i}"));
            } else {
                let _g = l.read();
                order.lock().unwrap().push(format!("R{i}"));
            }
        }));
        wait_until("the thread queues", || queued(&lock) == i + 1);
    }
    drop(held);
    for t in threads {
        join_bounded(t);
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(order[0], "W0");
    let mut batch = order[1..3].to_vec();
    batch.sort();
    assert_eq!(batch, ["R1", "R2"], "{order:?}");
    assert_eq!(&order[3..], ["W3", "R4"], "{order:?}");
}

/// Spawns `n` readers that each read, wait inside until all `n` hold the
/// lock at once, and return the value they read.
fn readers_that_meet_inside<R: Raw>(lock: &Arc<Lock<R>>, n: usize) -> Vec<thread::JoinHandle<u64>> {
    let inside = Arc::new(Barrier::new(n));
    (0..n)
        .map(|_| {
            let (lock, inside) = (Arc::clone(lock), Arc::clone(&inside));
            thread::spawn(move || {
                let seen = *lock.read();
                inside.wait(); // every reader holds at once
                seen
            })
        })
        .collect()
}

/// A write unlock wakes every reader waiting behind it as one batch (the
/// fair lock's queued readers, the nonfair lock's readers aside): all are
/// inside together (each waits, inside, for all the others).
fn readers_queued_behind_a_writer_wake_together<R: Raw>() {
    let n = if cfg!(miri) { 3 } else { 6 };
    let lock = Arc::new(Lock::<R>::new(0));
    let w = lock.write();
    let readers = readers_that_meet_inside(&lock, n);
    wait_until("every reader waits", || queued(&lock) == n);
    drop(w);
    for r in readers {
        join_bounded(r);
    }
    assert!(!lock.is_locked());
}
both!(readers_queued_behind_a_writer_wake_together);

/// The nonfair lock's readers that a writer turns away wait aside, not in
/// the queue, and count in `queue_length`; a writer that queues meanwhile
/// goes first, and then the readers come in together.
#[test]
fn readers_turned_away_wait_aside_behind_a_queued_writer() {
    let n = if cfg!(miri) { 3 } else { 4 };
    let lock = Arc::new(Lock::<RawRwLock>::new(0));
    let w = lock.write();
    let readers = readers_that_meet_inside(&lock, n);
    // SAFETY: reads the state only.
    let shown = || format!("{:?}", unsafe { lock.raw() });
    wait_until("every reader waits aside", || {
        shown().contains(&format!("queued: 0, waiting_aside: {n}"))
    });
    assert_eq!(queued(&lock), n);
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.write() = 1)
    };
    wait_until("the writer queues", || {
        shown().contains(&format!("queued: 1, waiting_aside: {n}"))
    });
    drop(w);
    join_bounded(writer);
    for r in readers {
        assert_eq!(join_bounded(r), 1, "a reader passed the queued writer");
    }
    assert!(!lock.is_locked());
    assert_eq!(queued(&lock), 0);
}

/// Downgrade: the write lock becomes a read lock with no gap; queued readers
/// come in beside it, writers stay out until it is dropped.
fn downgrade_lets_readers_in_and_keeps_writers_out<R: Raw>() {
    let lock = Arc::new(Lock::<R>::new(0));
    let mut w = lock.write();
    *w = 7;
    let reader = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.read())
    };
    wait_until("the reader waits", || queued(&lock) == 1);
    let r = lock_api::RwLockWriteGuard::downgrade(w);
    assert_eq!(
        join_bounded(reader),
        7,
        "the queued reader came in beside the downgraded lock"
    );
    assert!(lock.try_write().is_none());
    assert_eq!(*r, 7);
    drop(r);
    assert!(lock.try_write().is_some());
}
both!(downgrade_lets_readers_in_and_keeps_writers_out);

/// `unlock_exclusive_fair` hands the lock to the queued waiter: an arrival
/// cannot take it first, even on the nonfair lock.
fn fair_unlock_hands_off<R: Raw>() {
    let lock = Arc::new(Lock::<R>::new(0));
    let w = lock.write();
    let waiter = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            let mut g = lock.write();
            *g += 1;
            thread::sleep(Duration::from_millis(1));
        })
    };
    wait_until("the waiter queues", || queued(&lock) == 1);
    lock_api::RwLockWriteGuard::unlock_fair(w);
    // Until the waiter has taken it, arrivals fail; once it has, the value
    // shows its write.
    loop {
        if let Some(g) = lock.try_write() {
            assert_eq!(*g, 1, "an arrival took a lock handed to the waiter");
            break;
        }
        assert!(!waiter.is_finished() || lock.try_write().is_some());
        thread::yield_now();
    }
    join_bounded(waiter);
}
both!(fair_unlock_hands_off);

/// The arrangement two async tests share: the write lock held, a read
/// task queued behind it (polled once: pending), and a writer thread,
/// running `writer`, queued behind the task.
#[cfg(feature = "async")]
fn write_held_reader_task_then_writer<'a, R: Raw + aqs::future::AsyncRawRwLock>(
    lock: &'a Arc<Lock<R>>,
    writer: impl FnOnce(&Lock<R>) + Send + 'static,
) -> (
    lock_api::RwLockWriteGuard<'a, R, u64>,
    impl std::future::Future<Output = lock_api::RwLockReadGuard<'a, R, u64>> + Unpin + 'a,
    thread::JoinHandle<()>,
) {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Waker};

    use aqs::RwLockAsync;

    let w = lock.write();
    let mut read = lock.read_async();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut read).poll(&mut cx).is_pending());
    let writer = {
        let lock = Arc::clone(lock);
        thread::spawn(move || writer(&lock))
    };
    wait_until("the writer queues behind the reader", || {
        queued(&**lock) == 2
    });
    (w, read, writer)
}

/// W2 with a reader leaving from the front of the queue: a reader task
/// queues first and a writer thread behind it; the task's future is
/// dropped (its node stays first, cancelled, until the writer skips it)
/// and the lock is unlocked fair, a hand-off to the writer. An arriving
/// read must not take it, whichever the writer has done meanwhile: it
/// holds the lock until the arrival has looked.
#[cfg(feature = "async")]
fn hand_off_past_a_leaving_reader<R: Raw + aqs::future::AsyncRawRwLock>() {
    use std::sync::mpsc;

    for _ in 0..if cfg!(miri) { 2 } else { 50 } {
        let lock = Arc::new(Lock::<R>::new(0));
        let (looked, look) = mpsc::channel::<()>();
        let (w, read, writer) = write_held_reader_task_then_writer(&lock, move |lock| {
            let mut g = lock.write();
            *g += 1;
            look.recv_timeout(BOUND).expect("the arrival looked");
        });
        drop(read);
        lock_api::RwLockWriteGuard::unlock_fair(w);
        assert!(
            lock.try_read().is_none(),
            "an arriving reader took the lock handed to the queued writer"
        );
        looked.send(()).unwrap();
        join_bounded(writer);
        assert_eq!(*lock.try_read().expect("free"), 1);
    }
}

#[cfg(feature = "async")]
#[test]
fn hand_off_past_a_leaving_reader_nonfair() {
    hand_off_past_a_leaving_reader::<RawRwLock>();
}

#[cfg(feature = "async")]
#[test]
fn hand_off_past_a_leaving_reader_fair() {
    hand_off_past_a_leaving_reader::<RawFairRwLock>();
}

/// A reader that a release has woken but that has not run yet sits first
/// in the queue, a writer behind it: an arriving read defers to that writer
/// too. (Looking only at the first waiter, as the JDK does, lets arrivals
/// pass the writer for as long as the woken reader waits for a CPU: a
/// scheduler tick on a busy machine.) The woken reader is a task whose
/// future is not polled yet, which is the same state held still.
#[cfg(feature = "async")]
fn arriving_reader_defers_to_a_writer_behind_a_woken_reader<
    R: Raw + aqs::future::AsyncRawRwLock,
>() {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    let lock = Arc::new(Lock::<R>::new(0));
    let (w, mut read, writer) =
        write_held_reader_task_then_writer(&lock, |lock| *lock.write() += 1);
    let mut cx = Context::from_waker(Waker::noop());
    drop(w); // wakes the reader task, which does not run yet
    assert!(
        lock.try_read().is_none(),
        "an arriving reader passed the writer queued behind a woken reader"
    );
    let Poll::Ready(g) = Pin::new(&mut read).poll(&mut cx) else {
        panic!("the woken reader is first and the lock is free");
    };
    assert_eq!(*g, 0, "the reader came before the writer");
    drop(g);
    join_bounded(writer);
    assert_eq!(*lock.try_read().expect("free"), 1);
}

#[cfg(feature = "async")]
#[test]
fn arriving_reader_defers_to_a_writer_behind_a_woken_reader_nonfair() {
    arriving_reader_defers_to_a_writer_behind_a_woken_reader::<RawRwLock>();
}

#[cfg(feature = "async")]
#[test]
fn arriving_reader_defers_to_a_writer_behind_a_woken_reader_fair() {
    arriving_reader_defers_to_a_writer_behind_a_woken_reader::<RawFairRwLock>();
}

/// Under a continuous stream of readers (always at least one inside), a
/// writer still gets the nonfair lock: readers arriving after it defer to
/// it. The wait is bounded; how long it takes is a benchmark's business.
#[test]
#[cfg_attr(
    miri,
    ignore = "a liveness test, long under Miri; the other tests cover memory safety"
)]
fn a_stream_of_readers_does_not_starve_a_writer() {
    let lock = Arc::new(RwLock::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (lock, stop) = (Arc::clone(&lock), Arc::clone(&stop));
            thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(SeqCst) {
                    let g = lock.read();
                    reads += *g + 1;
                    thread::sleep(Duration::from_micros(200));
                    drop(g);
                }
                reads
            })
        })
        .collect();
    wait_until("readers are reading", || lock.is_locked());
    let got = lock.try_write_for(BOUND);
    assert!(got.is_some(), "a writer starved behind a stream of readers");
    drop(got);
    stop.store(true, SeqCst);
    for r in readers {
        join_bounded(r);
    }
}

/// A nonfair writer that finds a reader inside claims the lock and sleeps
/// with the claim kept: an arriving reader waits. A timed writer whose
/// deadline passes gives the claim up, and the reader it turned away gets
/// in beside the first, with nothing left claimed; an untimed one takes the
/// lock when the last reader leaves, before that reader.
#[test]
fn a_claimant_that_times_out_lets_in_the_readers_it_turned_away() {
    let lock = Arc::new(RwLock::new(0u64));
    let r = lock.read();
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || lock.try_write_for(Duration::from_millis(500)).is_some())
    };
    // SAFETY: only reads the raw lock's state.
    wait_until("the writer claims", || unsafe { lock.raw() }.writer_waits());
    assert!(
        lock.try_read().is_none(),
        "a reader passed a claimed writer"
    );
    let reader = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.read())
    };
    assert!(!join_bounded(writer), "the writer got in past a read");
    assert_eq!(
        join_bounded(reader),
        0,
        "the reader got in beside the first"
    );
    // SAFETY: only reads the raw lock's state.
    let raw = unsafe { lock.raw() };
    assert!(!raw.writer_waits(), "a claim outlived its writer");
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.write() += 1)
    };
    // SAFETY: only reads the raw lock's state.
    wait_until("the writer claims", || unsafe { lock.raw() }.writer_waits());
    let reader = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.read())
    };
    wait_until("the reader waits", || queued(&lock) == 1);
    drop(r);
    join_bounded(writer);
    assert_eq!(join_bounded(reader), 1, "the reader came after the writer");
    assert!(lock.try_write().is_some(), "nothing was left held");
}

/// Timed-out waiters of both modes leave the queue and hold nothing.
fn timed_out_waiters_leave_cleanly<R: Raw>() {
    let lock = Arc::new(Lock::<R>::new(0));
    let timeouts = Arc::new(AtomicUsize::new(0));
    let w = lock.write();
    let waiters: Vec<_> = (0..4)
        .map(|i| {
            let (lock, timeouts) = (Arc::clone(&lock), Arc::clone(&timeouts));
            thread::spawn(move || {
                let got = if i % 2 == 0 {
                    lock.try_read_for(Duration::from_millis(20)).is_some()
                } else {
                    lock.try_write_for(Duration::from_millis(20)).is_some()
                };
                if !got {
                    timeouts.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    for t in waiters {
        join_bounded(t);
    }
    assert_eq!(timeouts.load(SeqCst), 4);
    assert_eq!(queued(&lock), 0);
    drop(w);
    assert!(lock.try_write().is_some(), "nothing was left held");
}
both!(timed_out_waiters_leave_cleanly);

#[test]
fn statics_raw_sizes_and_debug() {
    static CONFIG: RwLock<u32> = RwLock::new(1);
    static FAIR: FairRwLock<u32> = FairRwLock::new(2);
    assert_eq!(*CONFIG.read() + *FAIR.read(), 3);
    assert_eq!(std::mem::size_of::<RawRwLock>(), 64);
    assert_eq!(std::mem::size_of::<RawFairRwLock>(), 64);
    fn send_sync<T: Send + Sync>() {}
    send_sync::<RawRwLock>();
    send_sync::<aqs::RwLockWriteGuard<'static, u32>>();
    send_sync::<aqs::FairRwLockReadGuard<'static, u32>>();
    let g = CONFIG.write();
    // SAFETY: reads the state only.
    let shown = format!("{:?}", unsafe { CONFIG.raw() });
    assert!(shown.contains("write_locked: true"), "{shown}");
    drop(g);
}

#[test]
#[cfg(debug_assertions)]
fn unlocking_an_unheld_raw_lock_panics_in_debug_builds() {
    use lock_api::{RawRwLock as _, RawRwLockFair as _};

    let raw = RawRwLock::INIT;
    // SAFETY: deliberately broken: the debug check panics before changing anything.
    let r = std::panic::catch_unwind(|| unsafe { raw.unlock_exclusive() });
    assert!(r.is_err());
    // SAFETY: as above.
    let r = std::panic::catch_unwind(|| unsafe { raw.unlock_shared_fair() });
    assert!(r.is_err());
    assert!(!raw.is_locked(), "the panics changed nothing");
    assert!(raw.try_lock_exclusive());
    // SAFETY: held.
    unsafe { raw.unlock_exclusive() };
}

/// Single-threaded sequences of every raw operation, against a model of
/// the lock (how many reads, whether written): each `try_` form succeeds
/// exactly when the model says it must, the blocking forms are used only
/// where they cannot block, and the observers agree with the model.
mod sequences {
    use std::time::Duration;

    use aqs::{RawFairRwLock, RawRwLock};
    use lock_api::RawRwLock as _;
    use proptest::prelude::*;
    use proptest::test_runner::Config;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Read,
        TryRead,
        ReadRecursive,
        TryReadFor(u8),
        Write,
        TryWrite,
        TryWriteFor(u8),
        UnlockRead,
        UnlockReadFair,
        UnlockWrite,
        UnlockWriteFair,
        Downgrade,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::Read),
            Just(Op::TryRead),
            Just(Op::ReadRecursive),
            (0u8..3).prop_map(Op::TryReadFor),
            Just(Op::Write),
            Just(Op::TryWrite),
            (0u8..3).prop_map(Op::TryWriteFor),
            Just(Op::UnlockRead),
            Just(Op::UnlockReadFair),
            Just(Op::UnlockWrite),
            Just(Op::UnlockWriteFair),
            Just(Op::Downgrade),
        ]
    }

    fn run<R>(raw: &R, ops: &[Op], read_count: impl Fn(&R) -> usize)
    where
        R: lock_api::RawRwLockTimed<Duration = Duration>
            + lock_api::RawRwLockFair
            + lock_api::RawRwLockRecursive
            + lock_api::RawRwLockDowngrade,
    {
        let (mut reads, mut written) = (0usize, false);
        for &op in ops {
            let ms = |n: u8| Duration::from_millis(u64::from(n));
            match op {
                Op::Read | Op::ReadRecursive if !written => {
                    if matches!(op, Op::Read) {
                        raw.lock_shared();
                    } else {
                        raw.lock_shared_recursive();
                    }
                    reads += 1;
                }
                Op::Read | Op::ReadRecursive | Op::TryRead => {
                    assert_eq!(raw.try_lock_shared(), !written, "{op:?}");
                    reads += usize::from(!written);
                }
                Op::TryReadFor(n) => {
                    assert_eq!(raw.try_lock_shared_for(ms(n)), !written, "{op:?}");
                    reads += usize::from(!written);
                }
                Op::Write if !written && reads == 0 => {
                    raw.lock_exclusive();
                    written = true;
                }
                Op::Write | Op::TryWrite => {
                    let free = !written && reads == 0;
                    assert_eq!(raw.try_lock_exclusive(), free, "{op:?}");
                    written |= free;
                }
                Op::TryWriteFor(n) => {
                    let free = !written && reads == 0;
                    assert_eq!(raw.try_lock_exclusive_for(ms(n)), free, "{op:?}");
                    written |= free;
                }
                Op::UnlockRead | Op::UnlockReadFair if reads > 0 => {
                    // SAFETY: the model says a read is held.
                    unsafe {
                        if matches!(op, Op::UnlockRead) {
                            raw.unlock_shared();
                        } else {
                            raw.unlock_shared_fair();
                        }
                    }
                    reads -= 1;
                }
                Op::UnlockWrite | Op::UnlockWriteFair if written => {
                    // SAFETY: the model says the write lock is held.
                    unsafe {
                        if matches!(op, Op::UnlockWrite) {
                            raw.unlock_exclusive();
                        } else {
                            raw.unlock_exclusive_fair();
                        }
                    }
                    written = false;
                }
                Op::Downgrade if written => {
                    // SAFETY: the model says the write lock is held.
                    unsafe { raw.downgrade() };
                    (written, reads) = (false, 1);
                }
                Op::UnlockRead
                | Op::UnlockReadFair
                | Op::UnlockWrite
                | Op::UnlockWriteFair
                | Op::Downgrade => {} // would break the contract
            }
            assert_eq!(raw.is_locked(), written || reads > 0, "after {op:?}");
            assert_eq!(raw.is_locked_exclusive(), written, "after {op:?}");
            assert_eq!(read_count(raw), reads, "after {op:?}");
        }
    }

    proptest! {
        #![proptest_config(Config {
            cases: if cfg!(miri) { 4 } else { 256 },
            // No failure files: Miri's isolation has no current directory.
            failure_persistence: None,
            ..Config::default()
        })]

        #[test]
        fn raw_rwlock_matches_the_model(ops in proptest::collection::vec(op(), 0..40)) {
            let raw = RawRwLock::INIT;
            run(&raw, &ops, RawRwLock::read_count);
        }

        #[test]
        fn raw_fair_rwlock_matches_the_model(ops in proptest::collection::vec(op(), 0..40)) {
            let raw = RawFairRwLock::INIT;
            run(&raw, &ops, RawFairRwLock::read_count);
        }
    }
}
