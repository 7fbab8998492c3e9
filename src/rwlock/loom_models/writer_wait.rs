//! Loom models of a writer's wait behind readers: its claim (W4), which
//! turns arriving readers away while it waits for the readers inside to
//! leave and must wake any reader that queued under it when it runs out;
//! and the read unlocks that leave readers inside (W5), which wake no
//! queued writer, while a writer that leaves the queue still lets in the
//! reader behind it. Helpers are the parent module's.

use std::sync::Arc;

use loom::thread;

use super::{assert_free, spawn_writer};
#[cfg(feature = "async")]
use super::{until_queued, Read};
use crate::loom::model::check;
use crate::queue;
#[cfg(feature = "async")]
use crate::rwlock::FREE;
use crate::rwlock::{RwCore, CLAIMED};

/// A claimed write (W4): main reads; a writer arrives, finds main inside,
/// claims the lock and looks for the readers to leave (under loom its
/// budget is one yield; then it drops the claim and queues). Main waits
/// until the writer has claimed or queued and tries to read: while the
/// claim stands it must not get in. The claim is set once and never comes
/// back once dropped, so a read that got in with the claim still set after
/// it passed it. Then main unlocks: with the claim standing its release
/// skips the queue and the claimant takes the lock; with the claim dropped
/// the release goes through the queue and wakes the queued writer, or the
/// claimant took the lock in the CAS that dropped the claim. Bound 2: one
/// preemption keeps the claimant from looking while main reads, one more
/// places main's unlock inside the claimant's give-up. The planted bugs
/// `write_claim_ignored` (reads ignore the claim) and `write_claim_kept`
/// (the give-up leaves the claim set) fail here.
#[test]
fn claimed_write_refuses_arriving_readers_nonfair() {
    check(2, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.read(None));
        let writer = spawn_writer(&lock);
        // Yields cost no preemption.
        let claimed = loop {
            let s = lock.sync.state();
            if queue::value_of(s) & CLAIMED != 0 {
                break true;
            }
            if queue::waiters_of(s) > 0 {
                break false;
            }
            thread::yield_now();
        };
        if lock.try_read() {
            assert!(
                !claimed || queue::value_of(lock.sync.state()) & CLAIMED == 0,
                "a reader passed a claimed writer"
            );
            // SAFETY: main holds the read it just took.
            unsafe { lock.unlock_read() };
        }
        // SAFETY: main holds its first read.
        unsafe { lock.unlock_read() };
        writer.join().unwrap();
        assert_free(&lock);
    });
}

/// Counts its wakes (a plain std atomic: test bookkeeping that loom need
/// not model).
#[cfg(feature = "async")]
#[derive(Default)]
struct Wakes(std::sync::atomic::AtomicUsize);

#[cfg(feature = "async")]
impl std::task::Wake for Wakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A claim dropped with a reader queued under it (W4): main reads; a writer
/// arrives and claims; a reader (a task that main polls) arrives while the
/// claim stands, is turned away and queues first. The writer, out of
/// budget (one look, a yield, one more look under loom), drops its claim
/// with main still inside and queues behind the reader. The reader could
/// read now, and no release will come through the queue before main's
/// unlock, so the drop itself must wake it: once the writer is queued, the
/// reader's waker must have run. Then the reader reads, main unlocks, and
/// the writer follows. When the reader came after the drop (it got in, or
/// queued behind the writer), there is nothing to check. Bound 2: one
/// preemption lets main's poll in while the claim stands, one more places
/// the drop against the reader's arming. The planted bug
/// `write_claim_drop_wakes_nobody` fails here.
#[cfg(feature = "async")]
#[test]
fn dropped_claim_wakes_a_reader_queued_under_it_nonfair() {
    use std::task::{Context, Poll, Waker};
    check(2, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.read(None));
        let writer = spawn_writer(&lock);
        // Yields cost no preemption.
        while queue::value_of(lock.sync.state()) & CLAIMED == 0
            && queue::waiters_of(lock.sync.state()) == 0
        {
            thread::yield_now();
        }
        let wakes = std::sync::Arc::new(Wakes::default());
        let waker = Waker::from(std::sync::Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let mut read = Read(queue::QueuedAcquire::new(
            &lock.sync,
            queue::Mode::Shared,
            1,
        ));
        let mut poll =
            |read: &mut Read<'_>| std::future::Future::poll(std::pin::Pin::new(read), &mut cx);
        let mut reading = poll(&mut read).is_ready();
        if !reading && queue::value_of(lock.sync.state()) & CLAIMED != 0 {
            // The reader queued under the claim: first, the writer not yet
            // queued at all.
            until_queued(&lock, 2);
            assert!(
                wakes.0.load(std::sync::atomic::Ordering::SeqCst) > 0,
                "a dropped claim left a reader queued under it asleep"
            );
            assert_eq!(poll(&mut read), Poll::Ready(true));
            reading = true;
        }
        // SAFETY: main holds a read.
        unsafe { lock.unlock_read() };
        // Otherwise the reader is first or behind the writer: it gets in
        // after main's unlock, or after the writer's turn.
        while !reading {
            reading = poll(&mut read).is_ready();
            if !reading {
                thread::yield_now();
            }
        }
        // SAFETY: the reader's read.
        unsafe { lock.unlock_read() };
        writer.join().unwrap();
        assert_free(&lock);
    });
}

/// W5: a read unlock that leaves readers inside wakes no queued writer.
/// Main holds two reads and queues a writer (a task main polls); a second
/// thread unlocks one of the reads, before the writer queues, while it
/// arms, or after. Main's read stays inside throughout, so no release can
/// let the writer in, and its waker must not run. Then main unlocks the
/// last read, which must wake it, and it writes. Bound 2. The planted bug
/// `read_unlock_wakes_writer` fails here.
#[cfg(feature = "async")]
fn read_unlock_with_readers_inside_wakes_nobody<const FAIR: bool>() {
    use std::task::{Context, Poll, Waker};
    check(2, || {
        let lock = Arc::new(RwCore::<FAIR>::new());
        assert!(lock.read(None) && lock.read(None));
        let reader = {
            let lock = Arc::clone(&lock);
            // SAFETY: main took two reads and hands one to this thread.
            thread::spawn(move || unsafe { lock.unlock_read() })
        };
        let wakes = std::sync::Arc::new(Wakes::default());
        let waker = Waker::from(std::sync::Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let mut write = queue::QueuedAcquire::new(&lock.sync, queue::Mode::Exclusive, FREE);
        let policy = crate::rwlock::RwPolicy::<FAIR, false>;
        assert!(
            write.poll_acquire(&policy, &mut cx).is_pending(),
            "a writer got in past main's read"
        );
        reader.join().unwrap();
        assert_eq!(
            wakes.0.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "a read unlock with a reader still inside woke the queued writer"
        );
        // SAFETY: main holds the last read.
        unsafe { lock.unlock_read() };
        assert!(
            wakes.0.load(std::sync::atomic::Ordering::SeqCst) > 0,
            "the last read unlock left the queued writer asleep"
        );
        assert_eq!(
            write.poll_acquire(&policy, &mut cx),
            Poll::Ready(Ok(())),
            "the woken writer finds the lock free"
        );
        // SAFETY: the write the task took.
        unsafe { lock.unlock_write(false) };
        drop(write);
        assert_free(&lock);
    });
}

#[cfg(feature = "async")]
#[test]
fn read_unlock_with_readers_inside_wakes_nobody_nonfair() {
    read_unlock_with_readers_inside_wakes_nobody::<false>();
}

#[cfg(feature = "async")]
#[test]
fn read_unlock_with_readers_inside_wakes_nobody_fair() {
    read_unlock_with_readers_inside_wakes_nobody::<true>();
}

/// W5 against a leaving writer: main reads; a writer (a task main polls)
/// queues; a reader thread arrives, defers to the queued writer and queues
/// behind it. Main drops the writer's future, which takes it out of the
/// queue: the reader behind it could read now, beside main, and must get
/// in while main still holds its read. No release comes meanwhile (and a
/// read unlock with a reader left inside would wake nobody, W5), so only
/// the leaving writer can let it in. Bound 2: one preemption places the
/// drop against the reader's arming, one more inside the leave.
#[cfg(feature = "async")]
#[test]
fn cancelled_writer_wakes_the_reader_behind_it_nonfair() {
    use std::task::{Context, Waker};
    check(2, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.read(None));
        let policy = crate::rwlock::RwPolicy::<false, false>;
        let mut cx = Context::from_waker(Waker::noop());
        let mut write = queue::QueuedAcquire::new(&lock.sync, queue::Mode::Exclusive, FREE);
        assert!(
            write.poll_acquire(&policy, &mut cx).is_pending(),
            "a writer got in past main's read"
        );
        let reader = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                assert!(lock.read(None));
                // SAFETY: this thread holds a read lock.
                unsafe { lock.unlock_read() };
            })
        };
        until_queued(&lock, 2);
        drop(write);
        // Main still reads: the reader gets in beside it, or nobody wakes it.
        reader.join().unwrap();
        // SAFETY: main holds its read.
        unsafe { lock.unlock_read() };
        assert_free(&lock);
    });
}
