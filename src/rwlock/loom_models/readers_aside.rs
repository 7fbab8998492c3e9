//! Loom models of the reads that a writer turns aside (W6): they sleep in
//! the crowd aside with `READERS_ASIDE` set, and the release that opens
//! reads again (a write unlock, a dropped claim; the downgrade is the
//! parent's `downgrade_while_readers_queue_nonfair`) clears it and wakes
//! them all. Each model's planted bugs are named above it. Helpers are the
//! parent module's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;

use super::{assert_free, until_waiting};
use crate::loom::model::{check, Guarded};
use crate::queue;
use crate::rwlock::{RwCore, CLAIMED, READERS_ASIDE};

/// Spawns a thread that reads once, untimed, and unlocks; with `cell`, it
/// reads the guarded cell inside. Returns the thread and a flag it sets
/// once its read has returned.
fn spawn_reader(
    lock: &Arc<RwCore<false>>,
    cell: Option<&Arc<Guarded>>,
) -> (thread::JoinHandle<()>, Arc<AtomicBool>) {
    let (lock, done) = (Arc::clone(lock), Arc::new(AtomicBool::new(false)));
    let cell = cell.map(Arc::clone);
    let reader = {
        let done = Arc::clone(&done);
        thread::spawn(move || {
            assert!(lock.read(None));
            done.store(true, SeqCst);
            if let Some(cell) = cell {
                cell.read();
            }
            // SAFETY: this thread holds a read lock.
            unsafe { lock.unlock_read() };
        })
    };
    (reader, done)
}

/// A write unlock wakes the whole crowd: main holds the write lock; two
/// readers arrive, are turned away and sleep aside (main waits until both
/// count there). Main unlocks: both must get in. A wake of one leaves the
/// other asleep with the flag gone (a loom deadlock). Bound 1: both have
/// set the flag, so the unlock races the second reader's park and its
/// check. The planted bug
/// `crowd_wakes_one` fails here.
#[test]
fn write_unlock_wakes_the_whole_crowd_nonfair() {
    check(1, || {
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.write(None));
        let readers = [spawn_reader(&lock, None), spawn_reader(&lock, None)];
        until_waiting(&lock, 2);
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        for (reader, _) in readers {
            reader.join().unwrap();
        }
        assert_free(&lock);
    });
}

/// No release slips between a read's flag and its sleep (K2, W6): main
/// holds the write lock; a reader arrives, and once it has set the flag a
/// second thread arrives too, a writer or (`second_writes` false) another
/// reader. Main unlocks, so its release may come between the reader's flag
/// and its park's check, or after the park; and the second thread may take
/// the lock between main's release and its clear of the flag, or after it,
/// while the reader checks. Whatever the order, the reader must read (a
/// guarded cell the writers write, so an overlap is a causality
/// violation). (A release before the flag fails the flag's CAS, as the
/// other models' readers find.) The second thread starts after the flag,
/// because its queue steps under main's yields would multiply the model
/// past minutes. Bound 3: the reader stopped before its check, main inside
/// its release, the second thread inside its hold. The planted bugs
/// `crowd_parks_without_the_flag` (the park's check ignores the flag),
/// `crowd_woken_before_the_clear` (the release wakes, then clears) and
/// `write_take_drops_the_crowd` (a write's take clears the flag) fail the
/// writer's model, `read_take_drops_the_crowd` (a read's take clears it)
/// the reader's.
fn crowd_misses_no_release(second_writes: bool) {
    check(3, move || {
        let lock = Arc::new(RwCore::<false>::new());
        let cell = Arc::new(Guarded::new());
        assert!(lock.write(None));
        let (reader, _) = spawn_reader(&lock, Some(&cell));
        // Yields cost no preemption.
        while queue::value_of(lock.sync.state()) & READERS_ASIDE == 0 {
            thread::yield_now();
        }
        let second = if second_writes {
            let (lock, cell) = (Arc::clone(&lock), Arc::clone(&cell));
            thread::spawn(move || {
                assert!(lock.write(None));
                cell.enter();
                // SAFETY: this thread holds the write lock.
                unsafe { lock.unlock_write(false) };
            })
        } else {
            spawn_reader(&lock, Some(&cell)).0
        };
        // SAFETY: main holds the write lock.
        unsafe { lock.unlock_write(false) };
        reader.join().unwrap();
        second.join().unwrap();
        assert_eq!(cell.total(), usize::from(second_writes));
        assert_free(&lock);
    });
}

#[test]
fn crowd_misses_no_release_nonfair() {
    crowd_misses_no_release(true);
}

#[test]
fn crowd_misses_no_release_to_a_read_nonfair() {
    crowd_misses_no_release(false);
}

/// How the claimant in `claim_wakes_the_reads_it_turned_aside` waits, and
/// when main unlocks.
#[derive(Clone, Copy, PartialEq)]
enum Claimant {
    /// Untimed: it takes the lock once main unlocks.
    Untimed,
    /// Timed, and main, once the reader is aside, holds its read until the
    /// claim returns: the claimant drops its claim with main inside.
    TimedDrops,
    /// Timed, and main unlocks at once: the claimant may give up on a lock
    /// that came free, and take it in the give-up's CAS.
    TimedMayTake,
}

/// The reads a claim turns aside (W4, W6): main reads; a writer claims
/// (untimed, or timed: under loom a timed sleep may time out at any
/// moment); a reader arrives while the claim stands and sleeps aside.
/// Every take of the claimant (its spin's, its sleep's, or its give-up's on
/// a lock that came free) must keep the flag, so that its unlock wakes the
/// reader. A claim dropped with main still inside opens reads, so once it
/// has returned, the flag must be clear (the drop woke the crowd; the
/// reader cannot set it again while no writer is in). When the claim was
/// gone before the reader flagged, there is nothing to check. Bound 2: the
/// reader's flag and park against the claimant's take or drop. The planted
/// bugs `claim_take_drops_the_crowd` (the untimed model),
/// `dropped_claim_leaves_the_crowd_asleep` (`TimedDrops`) and
/// `claim_give_up_take_drops_the_crowd` (`TimedMayTake`) fail here.
fn claim_wakes_the_reads_it_turned_aside(claimant: Claimant) {
    check(2, move || {
        let timed = claimant != Claimant::Untimed;
        let lock = Arc::new(RwCore::<false>::new());
        assert!(lock.read(None));
        // The claim alone (`claim_write`): a write whose claim drops then
        // queues, which the claim models in `writer_wait` cover.
        let (writer, written) = {
            let (lock, written) = (Arc::clone(&lock), Arc::new(AtomicBool::new(false)));
            let thread = {
                let written = Arc::clone(&written);
                thread::spawn(move || {
                    let deadline = timed.then(|| Instant::now() + Duration::from_secs(1));
                    let took = lock.claim_write(deadline);
                    written.store(true, SeqCst);
                    assert!(took || timed, "an untimed claim gave up");
                    if took {
                        // SAFETY: this thread holds the write lock.
                        unsafe { lock.unlock_write(false) };
                    }
                })
            };
            (thread, written)
        };
        // Yields cost no preemption.
        while queue::value_of(lock.sync.state()) & CLAIMED == 0
            && queue::waiters_of(lock.sync.state()) == 0
            && !written.load(SeqCst)
        {
            thread::yield_now();
        }
        let (reader, read) = spawn_reader(&lock, None);
        let aside = loop {
            if lock.sync.crowd_len() > 0 {
                break true; // it flagged under the claim
            }
            if read.load(SeqCst) || queue::value_of(lock.sync.state()) & CLAIMED == 0 {
                break false;
            }
            thread::yield_now();
        };
        if aside && claimant == Claimant::TimedDrops {
            while !written.load(SeqCst) {
                thread::yield_now();
            }
            assert_eq!(
                queue::value_of(lock.sync.state()) & READERS_ASIDE,
                0,
                "a dropped claim left the reads it turned aside asleep"
            );
        }
        // SAFETY: main holds its read.
        unsafe { lock.unlock_read() };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_free(&lock);
    });
}

#[test]
fn claim_wakes_the_reads_it_turned_aside_nonfair() {
    claim_wakes_the_reads_it_turned_aside(Claimant::Untimed);
}

#[test]
fn claim_wakes_the_reads_it_turned_aside_timed_nonfair() {
    claim_wakes_the_reads_it_turned_aside(Claimant::TimedDrops);
}

#[test]
fn claim_wakes_the_reads_it_turned_aside_timed_unlocked_early_nonfair() {
    claim_wakes_the_reads_it_turned_aside(Claimant::TimedMayTake);
}
