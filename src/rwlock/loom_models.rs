//! Loom models of the read-write locks: both of the queue's modes in one
//! queue. A writer against readers; a batch of readers queued behind a
//! writer, woken together by its unlock; a downgrade while readers queue; a
//! timed write that gives up during a hand-off; a reader arriving while
//! a writer waits, first or behind a woken reader; and the cache of that
//! arrival's look at the queue, against each change that must end it (V1 in
//! `queue/look.rs`). The writer's claim and the read unlocks it waits for
//! (W4, W5) are in `writer_wait`, the reads a writer turns aside (W6) in
//! `readers_aside`. Run with `bash scripts/loom.sh`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::thread;

use super::{RwCore, FREE};
use crate::loom::model::{check, Guarded};
use crate::queue;

mod readers_aside;
mod writer_wait;

/// A nonfair read acquire as a future, for the models that hold a queued
/// reader still (woken or leaving) at a chosen moment.
#[cfg(feature = "async")]
struct Read<'a>(queue::QueuedAcquire<'a>);

#[cfg(feature = "async")]
impl std::future::Future for Read<'_> {
    type Output = bool;
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<bool> {
        let policy = super::RwPolicy::<false, false>;
        self.get_mut()
            .0
            .poll_acquire(&policy, cx)
            .map(|r| r.is_ok())
    }
}

fn assert_free<const FAIR: bool>(lock: &RwCore<FAIR>) {
    let s = lock.sync.state();
    assert_eq!(queue::value_of(s), FREE, "the lock was left held");
    assert_eq!(queue::waiters_of(s), 0, "a waiter is still counted");
    assert_eq!(
        lock.sync.live_nodes(),
        0,
        "a queue node outlived its waiter"
    );
}

/// Waits (yielding, which costs no preemption) until `n` threads wait:
/// queued, or (a nonfair read that a writer turned away: W6) in the crowd
/// aside, counted from just before its park's check.
fn until_waiting<const FAIR: bool>(lock: &RwCore<FAIR>, n: u32) {
    while queue::waiters_of(lock.sync.state()) + lock.sync.crowd_len() < n {
        thread::yield_now();
    }
}

/// Spawns a thread that takes the write lock once, untimed, and unlocks.
fn spawn_writer<const FAIR: bool>(lock: &Arc<RwCore<FAIR>>) -> thread::JoinHandle<()> {
    let lock = Arc::clone(lock);
    thread::spawn(move || {
        assert!(lock.write(None));
        // SAFETY: this thread holds the write lock.
        unsafe { lock.unlock_write(false) };
    })
}

/// Spawns a thread that takes the write lock once through the queue, as a
/// writer that finds the lock claimed already (or a task's write) does: it
/// never claims (W4), so while readers are inside it queues, and models of
/// a reader's look at a queued writer can wait for it there.
fn spawn_queued_writer<const FAIR: bool>(lock: &Arc<RwCore<FAIR>>) -> thread::JoinHandle<()> {
    let lock = Arc::clone(lock);
    thread::spawn(move || {
        assert!(lock
            .sync
            .acquire_exclusive(&super::RwPolicy::<FAIR, false>, FREE, None)
            .is_ok());
        // SAFETY: this thread holds the write lock.
        unsafe { lock.unlock_write(false) };
    })
}

#[cfg(feature = "async")]
impl<'a> Read<'a> {
    /// A nonfair read queued on `lock`: polled once, it must wait.
    fn queued(lock: &'a RwCore<false>) -> Self {
        let mut read = Read(queue::QueuedAcquire::new(
            &lock.sync,
            queue::Mode::Shared,
            1,
        ));
        assert!(read.poll_once().is_pending(), "a queued read got in");
        read
    }

    /// Polls once, with a waker that does nothing.
    fn poll_once(&mut self) -> std::task::Poll<bool> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        std::future::Future::poll(std::pin::Pin::new(self), &mut cx)
    }
}

/// The end of the look's models: a writer waits behind `first`, a woken
/// reader that has not run yet, and main holds `held` reads of its own. An
/// arriving read must defer to the writer; then `first` gets in, main
/// unlocks every read, and the writer follows.
#[cfg(feature = "async")]
fn defer_then_drain(
    lock: &RwCore<false>,
    mut first: Read<'_>,
    held: usize,
    writer: thread::JoinHandle<()>,
) {
    assert!(!lock.try_read(), "a reader passed a queued writer");
    assert_eq!(
        first.poll_once(),
        std::task::Poll::Ready(true),
        "the woken reader is first and the lock is free"
    );
    for _ in 0..=held {
        // SAFETY: main holds `held` reads, and the one `first` took.
        unsafe { lock.unlock_read() };
    }
    writer.join().unwrap();
    assert_free(lock);
}

/// Two readers and a writer (main) take the lock once each: the writer's
/// write overlaps no read (W1), and every read after it happens-after it.
/// Covers both modes' arrivals, queueing behind each other and the wake-up
/// across modes. Bound 2, as the mutex's three contenders.
fn writer_against_readers<const FAIR: bool>() {
    check(2, || {
        let lock = Arc::new(RwCore::<FAIR>::new());
        let cell = Arc::new(Guarded::new());
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (lock, cell) = (Arc::clone(&lock), Arc::clone(&cell));
                thread::spawn(move || {
                    assert!(lock.read(None));
                    cell.read();
                    // SAFETY: this thread holds a read lock.
                    unsafe { lock.unlock_read() };
                })
            })
            .collect();
        assert!(lock.write(None));
        cell.enter();
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(cell.total(), 1);
        assert_free(&lock);
    });
}

#[test]
fn writer_against_readers_nonfair() {
    writer_against_readers::<false>();
}

#[test]
fn writer_against_readers_fair() {
    writer_against_readers::<true>();
}

/// Main holds the write lock; two readers queue, then a writer behind
/// them. Main's unlock must let both readers in (the first reader's acquire
/// propagates to the second), and the writer after them, never beside a
/// reader: the readers read the guarded cell and the writer writes it, so
/// an overlap is a causality violation, and a lost propagation leaves a
/// reader asleep (loom's deadlock). That the batch is inside at once is the
/// behaviour tests' business (a barrier inside the read lock). In the
/// nonfair twin the readers wait aside instead of queueing (W6): main's
/// unlock wakes them together, they find the writer queued first and queue
/// behind it, and its unlock wakes their batch. Bound 1: the queue order is
/// set up by waiting on the count, and one preemption places the unlock
/// against a waiter's arming.
fn readers_batch_behind_a_writer<const FAIR: bool>() {
    check(1, || {
        let lock = Arc::new(RwCore::<FAIR>::new());
        let cell = Arc::new(Guarded::new());
        assert!(lock.write(None));
        let mut threads = Vec::new();
        for i in 0..2 {
            until_waiting(&lock, i);
            let (lock, cell) = (Arc::clone(&lock), Arc::clone(&cell));
            threads.push(thread::spawn(move || {
                assert!(lock.read(None));
                cell.read();
                // SAFETY: this thread holds a read lock.
                unsafe { lock.unlock_read() };
            }));
        }
        until_waiting(&lock, 2);
        threads.push({
            let (lock, cell) = (Arc::clone(&lock), Arc::clone(&cell));
            thread::spawn(move || {
                assert!(lock.write(None));
                cell.enter();
                // SAFETY: this thread holds the write lock.
                unsafe { lock.unlock_write(false) };
            })
        });
        until_waiting(&lock, 3);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(cell.total(), 1);
        assert_free(&lock);
    });
}

#[test]
fn readers_batch_behind_a_writer_nonfair() {
    readers_batch_behind_a_writer::<false>();
}

#[test]
fn readers_batch_behind_a_writer_fair() {
    readers_batch_behind_a_writer::<true>();
}

/// Main holds the write lock while a reader queues, then downgrades and,
/// still reading, joins the reader: the queued reader must get in beside
/// main's read (a downgrade wakes queued readers). A downgrade that skipped
/// the queue leaves the reader asleep and main waiting for it: loom's
/// deadlock (`downgrade_no_wake` fails the fair twin). In the nonfair twin the reader waits aside (W6), and the
/// downgrade must wake the crowd: `downgrade_leaves_the_crowd_asleep` fails
/// it. Bound 2.
fn downgrade_while_readers_queue<const FAIR: bool>() {
    check(2, || {
        let lock = Arc::new(RwCore::<FAIR>::new());
        assert!(lock.write(None));
        let reader = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                assert!(lock.read(None));
                // SAFETY: this thread holds a read lock.
                unsafe { lock.unlock_read() };
            })
        };
        until_waiting(&lock, 1);
        // SAFETY: main holds the write lock.
        unsafe { lock.downgrade() };
        // Main still reads: the reader finishes only if they share.
        reader.join().unwrap();
        // SAFETY: main holds a read lock.
        unsafe { lock.unlock_read() };
        assert_free(&lock);
    });
}

#[test]
fn downgrade_while_readers_queue_nonfair() {
    downgrade_while_readers_queue::<false>();
}

#[test]
fn downgrade_while_readers_queue_fair() {
    downgrade_while_readers_queue::<true>();
}

/// Main reads while a timed writer (it may time out at any moment under
/// loom) and an untimed reader arrive; main unlocks. When the writer is
/// queued first, the reader queues behind it (it defers to a writer first
/// in line), so the writer's departure must pass the wake-up on. Whatever
/// the writer does, the reader gets in, and nothing is left held or
/// queued. Bound 2, as the mutex's timed lock. (No waiting for the writer
/// to queue: it may time out before it ever does.)
fn timed_write_gives_up_during_hand_off<const FAIR: bool>() {
    check(2, || {
        let lock = Arc::new(RwCore::<FAIR>::new());
        assert!(lock.read(None));
        let writer = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                if lock.write(Some(Instant::now() + Duration::from_secs(1))) {
                    // SAFETY: this thread holds the write lock.
                    unsafe { lock.unlock_write(false) };
                }
            })
        };
        let reader = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                assert!(lock.read(None));
                // SAFETY: this thread holds a read lock.
                unsafe { lock.unlock_read() };
            })
        };
        // SAFETY: main holds a read lock.
        unsafe { lock.unlock_read() };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_free(&lock);
    });
}

#[test]
fn timed_write_gives_up_during_hand_off_nonfair() {
    timed_write_gives_up_during_hand_off::<false>();
}

#[test]
fn timed_write_gives_up_during_hand_off_fair() {
    timed_write_gives_up_during_hand_off::<true>();
}

/// Main reads; a writer queues first (one that does not claim: W4 has its
/// own models); an arriving reader must not pass it, in either mode (the
/// nonfair lock's readers defer to a writer first in line). Bound 0: the
/// arrangement is fixed; what is checked is the read fast path's test of
/// the queue and the arrival's look at it (planted bugs
/// `fast_read_passes_queue` and `reader_passes_writer` for the nonfair
/// lock, `fair_reader_barges` for the fair one).
fn arriving_reader_defers_to_a_queued_writer<const FAIR: bool>() {
    check(0, || {
        let lock = Arc::new(RwCore::<FAIR>::new());
        assert!(lock.read(None));
        let writer = spawn_queued_writer(&lock);
        until_waiting(&lock, 1);
        assert!(!lock.try_read(), "a reader passed a queued writer");
        assert!(
            lock.try_read_recursive(),
            "a recursive read never waits for a queued writer"
        );
        // SAFETY: main holds two reads.
        unsafe {
            lock.unlock_read();
            lock.unlock_read();
        }
        writer.join().unwrap();
        assert_free(&lock);
    });
}

#[test]
fn arriving_reader_defers_to_a_queued_writer_nonfair() {
    arriving_reader_defers_to_a_queued_writer::<false>();
}

#[test]
fn arriving_reader_defers_to_a_queued_writer_fair() {
    arriving_reader_defers_to_a_queued_writer::<true>();
}

/// W2 against arrivals: main holds the write lock; a reader queues first
/// (an async read, so that main can cancel it at a chosen moment), an
/// untimed writer behind it. Main drops the reader's future (it leaves: its
/// node stays first, cancelled, until the writer skips it) and unlocks
/// *fair*, a hand-off to the first live waiter, the writer; then it tries
/// to read. It must not get in: while the hand-off is pending and anyone is
/// queued, arrivals defer, even when the first node is a reader that is
/// leaving. The writer keeps the lock until main has looked, so no arrival
/// can ever succeed. Bound 1. The planted bug `handoff_first_look` lets a
/// read arrival defer only to a writer it sees first in line.
#[cfg(feature = "async")]
#[test]
fn handed_off_lock_refuses_arriving_readers_nonfair() {
    check(1, || {
        let lock = Arc::new(RwCore::<false>::new());
        let looked = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        assert!(lock.write(None));
        let read = Read::queued(&lock);
        let writer = {
            let (lock, looked) = (Arc::clone(&lock), Arc::clone(&looked));
            thread::spawn(move || {
                assert!(lock.write(None));
                while !looked.load(loom::sync::atomic::Ordering::Acquire) {
                    thread::yield_now();
                }
                // SAFETY: this thread holds the write lock.
                unsafe { lock.unlock_write(false) };
            })
        };
        until_waiting(&lock, 2);
        drop(read);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(true) };
        let passed = lock.try_read();
        looked.store(true, loom::sync::atomic::Ordering::Release);
        assert!(!passed, "a reader passed a queued writer");
        writer.join().unwrap();
        assert_free(&lock);
    });
}

/// A woken reader first, a writer behind it: main holds the write lock; a
/// reader queues first (an async read, so that it stays woken but not yet
/// run for as long as main likes: on a busy machine, a woken thread can
/// wait a scheduler tick for a CPU) and an untimed writer behind it. Main
/// tries to read once while it still writes: that look finds the reader
/// first with no wake-up pending and caches "no writer next" (V2 in
/// `queue/look.rs`). Main unlocks (nonfair), which wakes the reader, and
/// tries to read again: it must not get in ahead of the queued writer,
/// although the first queued waiter is a reader. Then the reader runs and
/// the writer follows. Bound 1. The planted bug `reader_first_look` lets a
/// read arrival look only at the first queued waiter, as the JDK's
/// `apparentlyFirstQueuedIsExclusive` does; `look_wake_no_bump` keeps the
/// cached answer across the wake-up (V1).
#[cfg(feature = "async")]
#[test]
fn arriving_reader_defers_to_a_writer_behind_a_woken_reader_nonfair() {
    check(1, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.write(None));
        let read = Read::queued(&lock);
        let writer = spawn_writer(&lock);
        until_waiting(&lock, 2);
        assert!(!lock.try_read(), "a reader got in beside a writer");
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        defer_then_drain(&lock, read, 0, writer);
    });
}

/// V1, a writer linked after a look: main holds the write lock; a reader
/// queues (an async read) and main unlocks (nonfair), which wakes it. The
/// reader has not run, nobody waits behind it, so main's read gets in, and
/// its look caches "no writer next". A writer (one that does not claim)
/// then queues behind the woken reader: main's next read must defer to it. Bound 1. The planted bug
/// `look_link_no_bump` links a writer without a bump, so the cached "no"
/// lets main pass it.
#[cfg(feature = "async")]
#[test]
fn arriving_reader_sees_a_writer_queued_after_its_last_look_nonfair() {
    check(1, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.write(None));
        let read = Read::queued(&lock);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        assert!(
            lock.try_read(),
            "a reader deferred with only a woken reader queued"
        );
        let writer = spawn_queued_writer(&lock);
        until_waiting(&lock, 2);
        defer_then_drain(&lock, read, 1, writer);
    });
}

/// V1, a reader made head: main holds the write lock; a reader queues (an
/// async read, A) and an untimed writer behind it. Main unlocks (nonfair),
/// which wakes A, and another thread tries to read while main polls A. If
/// it looks after A took its wake-up back and before A became head, it
/// finds A first with no wake-up pending, answers no and joins A's read;
/// that is the heuristic's window. Once A is head, the writer is next in
/// line, and main's read must defer. Bound 1. The planted bug
/// `look_head_no_bump` makes A head without a bump, so the other thread's
/// cached "no" outlives the window.
#[cfg(feature = "async")]
#[test]
fn arriving_reader_sees_a_writer_behind_a_new_head_nonfair() {
    use std::task::Poll;

    check(1, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.write(None));
        let mut a = Read::queued(&lock);
        let writer = spawn_writer(&lock);
        until_waiting(&lock, 2);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        // It keeps what it takes until main has looked: a read release
        // could wake A, whose wake-up would end any cached answer.
        let reader = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || lock.try_read())
        };
        assert_eq!(a.poll_once(), Poll::Ready(true));
        assert!(!lock.try_read(), "a reader passed a queued writer");
        // SAFETY: main holds the read A took.
        unsafe { lock.unlock_read() };
        if reader.join().unwrap() {
            // SAFETY: the reader's read, which it left to main.
            unsafe { lock.unlock_read() };
        }
        writer.join().unwrap();
        assert_free(&lock);
    });
}

/// The other side of the look: main holds the write lock; two readers queue
/// (async reads, A then B) and an untimed writer behind them. Main unlocks
/// (nonfair), which wakes A only; B waits for A's propagation. An arriving
/// read now joins the batch A heads instead of deferring to the writer:
/// the writer would wait for A and B anyway, and B has not been woken. Fails
/// if the look defers to a writer behind a reader nobody has woken. That
/// look cached "no writer next"; then B leaves (its future is dropped), and
/// the look now passes A (woken) and B (leaving) and finds the writer, so
/// main's next read must defer (V1; the planted bug `look_cancel_no_bump`
/// marks B cancelled without a bump). Then A runs and the writer follows,
/// after main's read. Bound 1.
#[cfg(feature = "async")]
#[test]
fn arriving_reader_joins_a_batch_nobody_has_woken_before_a_writer_nonfair() {
    check(1, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.write(None));
        let a = Read::queued(&lock);
        let b = Read::queued(&lock);
        let writer = spawn_writer(&lock);
        until_waiting(&lock, 3);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        assert!(
            lock.try_read(),
            "a reader deferred to a writer queued behind a reader nobody woke"
        );
        drop(b);
        defer_then_drain(&lock, a, 1, writer);
    });
}

/// W2 with readers only: main holds the write lock; two readers queue
/// (async reads, A then B); A leaves (its future is dropped: its node stays
/// first, cancelled) and main unlocks fair, a hand-off to the first live
/// waiter, B, which has not run yet. An arriving read must not take the
/// lock meanwhile: no writer is queued, so only W2 (while a hand-off is
/// pending, arrivals defer to anyone queued) keeps it out. One thread, so
/// bound 0. The planted bug `handoff_first_look` drops W2 for reads.
#[cfg(feature = "async")]
#[test]
fn handed_off_lock_refuses_arriving_readers_behind_a_leaving_reader() {
    use std::task::Poll;

    check(0, || {
        let lock = RwCore::<false>::new();
        assert!(lock.write(None));
        let a = Read::queued(&lock);
        let mut b = Read::queued(&lock);
        drop(a);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(true) };
        assert!(!lock.try_read(), "a barger took a lock handed to a waiter");
        assert_eq!(
            b.poll_once(),
            Poll::Ready(true),
            "the lock was handed to the live reader"
        );
        // SAFETY: main holds the read b took.
        unsafe { lock.unlock_read() };
        assert_free(&lock);
    });
}
