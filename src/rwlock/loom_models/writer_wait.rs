//! Loom models of a writer's wait behind readers: its claim (W4), which
//! turns arriving readers away while it waits for the readers inside to
//! leave, asleep aside once its spin runs out, where the last read unlock
//! or a give-back must wake it, and which must wake any reader that queued
//! under it when it gives up; and the read unlocks that leave readers inside (W5), which wake no
//! queued writer, while a writer that leaves the queue still lets in the
//! reader behind it. Helpers are the parent module's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;

use super::{assert_free, spawn_writer};
#[cfg(feature = "async")]
use super::{until_waiting, Read};
use crate::loom::model::check;
use crate::queue;
#[cfg(feature = "async")]
use crate::rwlock::FREE;
use crate::rwlock::{RwCore, CLAIMED, PARKED};

/// Spawns a writer that takes the write lock once, untimed or with a
/// deadline (under loom a timed sleep may time out at any moment), and
/// unlocks if it got in. Returns the thread and a flag it sets once its
/// write has returned, so that a model can wait for "claimed, queued or
/// gone".
fn spawn_writer_timed(
    lock: &Arc<RwCore<false>>,
    timed: bool,
) -> (thread::JoinHandle<()>, Arc<AtomicBool>) {
    let (lock, done) = (Arc::clone(lock), Arc::new(AtomicBool::new(false)));
    let writer = {
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let deadline = timed.then(|| Instant::now() + Duration::from_secs(1));
            let wrote = lock.write(deadline);
            done.store(true, SeqCst);
            assert!(wrote || timed, "an untimed write gave up");
            if wrote {
                // SAFETY: this thread holds the write lock.
                unsafe { lock.unlock_write(false) };
            }
        })
    };
    (writer, done)
}

/// A claimed write (W4): main reads; a writer arrives, finds main inside,
/// claims the lock and looks for the readers to leave (under loom its spin
/// budget is one yield; then it sleeps aside, claim kept). Main waits until
/// the writer has claimed, queued or given up, and tries to read: while the
/// claim stands it must not get in. The claim is set once and never comes
/// back once dropped, so a read that got in with the claim still set after
/// it passed it. Then main unlocks: with the claim standing its release
/// skips the queue and must wake the claimant aside, which takes the lock.
/// A timed writer may also time out asleep: it drops the claim (taking the
/// lock if it is free by then) and queues, where the release wakes it, or
/// times out again and leaves. Bound 2: one preemption keeps the claimant
/// from looking while main reads, one more places main's unlock inside the
/// claimant's sleep or give-up. The planted bugs `write_claim_ignored`
/// (reads ignore the claim), `fast_read_passes_claim` (the read fast path
/// ignores it) and `claim_unlock_wakes_nobody` (the last read unlock does
/// not wake the claimant) fail the untimed model,
/// `write_claim_kept` (the give-up leaves the claim set) the timed one.
fn claimed_write_refuses_arriving_readers(timed: bool) {
    check(2, move || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.read(None));
        let (writer, done) = spawn_writer_timed(&lock, timed);
        // Yields cost no preemption.
        let claimed = loop {
            let s = lock.sync.state();
            if queue::value_of(s) & CLAIMED != 0 {
                break true;
            }
            if queue::waiters_of(s) > 0 || done.load(SeqCst) {
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

#[test]
fn claimed_write_refuses_arriving_readers_nonfair() {
    claimed_write_refuses_arriving_readers(false);
}

#[test]
fn claimed_write_refuses_arriving_readers_timed_nonfair() {
    claimed_write_refuses_arriving_readers(true);
}

/// A claimant asleep aside and a recursive read (W4): main reads; an
/// untimed writer claims, runs out of spin and sleeps aside. Main waits
/// until it has marked the lock `PARKED`, then reads again, recursively,
/// which a claim admits among readers inside, and unlocks both reads. The
/// recursive read must keep `PARKED`, and the last unlock must wake the
/// claimant, which takes the lock; otherwise it sleeps for good (a loom
/// deadlock). Bound 2: the recursive read and the unlocks against the
/// claimant's mark, its `validate` and its sleep. The planted bugs
/// `claim_unlock_wakes_nobody` and `recursive_read_clears_parked` fail
/// here.
#[test]
fn parked_claimant_wakes_at_the_last_read_unlock_nonfair() {
    check(2, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.read(None));
        let writer = spawn_writer(&lock);
        // Yields cost no preemption.
        while queue::value_of(lock.sync.state()) & PARKED == 0 {
            thread::yield_now();
        }
        assert!(
            lock.try_read_recursive(),
            "a claim admits a recursive read among readers"
        );
        assert_ne!(
            queue::value_of(lock.sync.state()) & PARKED,
            0,
            "a recursive read cleared the claimant's mark"
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

/// The waker of a reader queued second (B): the first time it runs, inside
/// the first reader's (A's) acquire, it takes a read of its own if asked,
/// lets the writer go to claim the lock, waits until the claimant sleeps
/// aside, and panics, so that A gives back what it took (O3). Later wakes
/// do nothing.
#[cfg(feature = "async")]
struct ClaimThenPanic {
    lock: Arc<RwCore<false>>,
    go: Arc<AtomicBool>,
    reads_first: bool,
    first: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "async")]
impl std::task::Wake for ClaimThenPanic {
    fn wake(self: std::sync::Arc<Self>) {
        if self.first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            if self.reads_first {
                assert!(self.lock.try_read(), "a read beside a woken reader");
            }
            self.go.store(true, SeqCst);
            while queue::value_of(self.lock.sync.state()) & PARKED == 0 {
                thread::yield_now();
            }
            panic!("loom model: a waker panics");
        }
    }
}

/// A give-back under a sleeping claim (W4, O3): main holds the write lock;
/// reader A (a task main polls) queues, then reader B, whose waker panics.
/// Main unlocks and polls A, which takes a read and wakes B; B's waker lets
/// a writer claim the lock behind A and waits until it sleeps aside, then
/// panics, so A gives its read back. With `handoff` false (a nonfair
/// unlock) the give-back empties the lock: it must wake the claimant, which
/// takes it. With `handoff` true (a fair unlock, so A took a hand-off) B's
/// waker first takes a read of its own, and the give-back restores the
/// hand-off beside the claim with that read still inside: it must wake the
/// claimant, which must drop its claim, and the drop must wake B, first in
/// line, whose hand-off it is. Either way a claimant left asleep is a loom
/// deadlock. Bound 1: the give-back against the claimant's `validate`. The
/// planted bugs `give_back_wakes_nobody_aside` (the give-back skips the
/// wake) and `handoff_leaves_claimant_asleep` (a restored hand-off wakes no
/// claimant) fail here.
#[cfg(feature = "async")]
fn give_back_wakes_a_sleeping_claimant(handoff: bool) {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::task::{Context, Waker};
    check(1, move || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.write(None));
        let mut a = Read::queued(&lock);
        let go = Arc::new(AtomicBool::new(false));
        let b_waker = Waker::from(std::sync::Arc::new(ClaimThenPanic {
            lock: Arc::clone(&lock),
            go: Arc::clone(&go),
            reads_first: handoff,
            first: std::sync::atomic::AtomicBool::new(true),
        }));
        let mut b = Read(queue::QueuedAcquire::new(
            &lock.sync,
            queue::Mode::Shared,
            1,
        ));
        let polled = std::future::Future::poll(
            std::pin::Pin::new(&mut b),
            &mut Context::from_waker(&b_waker),
        );
        assert!(polled.is_pending(), "a read got in past a write");
        let writer = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                // Yields cost no preemption.
                while !go.load(SeqCst) {
                    thread::yield_now();
                }
                assert!(lock.write(None));
                // SAFETY: this thread holds the write lock.
                unsafe { lock.unlock_write(false) };
            })
        };
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(handoff) };
        let a_polled = catch_unwind(AssertUnwindSafe(|| a.poll_once()));
        assert!(a_polled.is_err(), "B's waker panics inside A's acquire");
        drop(a);
        if handoff {
            assert!(loom::future::block_on(b), "B reads once the claim drops");
            // SAFETY: main holds B's read and the one B's waker took.
            unsafe {
                lock.unlock_read();
                lock.unlock_read();
            }
            writer.join().unwrap();
        } else {
            writer.join().unwrap();
            assert!(loom::future::block_on(b), "B reads after the writer");
            // SAFETY: main holds B's read.
            unsafe { lock.unlock_read() };
        }
        assert_free(&lock);
    });
}

#[cfg(feature = "async")]
#[test]
fn give_back_wakes_a_sleeping_claimant_nonfair() {
    give_back_wakes_a_sleeping_claimant(false);
}

#[cfg(feature = "async")]
#[test]
fn give_back_restoring_a_hand_off_wakes_a_sleeping_claimant_nonfair() {
    give_back_wakes_a_sleeping_claimant(true);
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

/// A claim dropped with a reader queued under it (W4): main reads; a timed
/// writer arrives and claims; a reader (a task that main polls) arrives
/// while the claim stands, is turned away and queues first. The writer
/// times out asleep aside (which loom may make it do at any moment), drops
/// its claim with main still inside and queues behind the reader, or times
/// out there too and leaves. The reader could read now, and no release
/// will come through the queue before main's unlock, so the drop itself
/// must wake it: once the writer is queued or gone, the reader's waker must
/// have run. Then the reader reads, main unlocks, and the writer follows,
/// unless it timed out. When the reader came after the drop (it got in, or
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
        let (writer, done) = spawn_writer_timed(&lock, true);
        // Yields cost no preemption.
        while queue::value_of(lock.sync.state()) & CLAIMED == 0
            && queue::waiters_of(lock.sync.state()) == 0
            && !done.load(SeqCst)
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
            while queue::waiters_of(lock.sync.state()) < 2 && !done.load(SeqCst) {
                thread::yield_now();
            }
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
        until_waiting(&lock, 2);
        drop(write);
        // Main still reads: the reader gets in beside it, or nobody wakes it.
        reader.join().unwrap();
        // SAFETY: main holds its read.
        unsafe { lock.unlock_read() };
        assert_free(&lock);
    });
}
