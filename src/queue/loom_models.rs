//! Loom models of the queue core: acquire, release, propagation,
//! cancellation, close and node reclamation, each checked exhaustively within
//! a preemption bound, on the test policy (`test_policy.rs`) with a fair or
//! barging counting semaphore's rules.
//!
//! Run (what `scripts/loom.sh` does):
//!
//! ```text
//! RUSTFLAGS="--cfg aqs_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release --lib loom_models
//! ```
//!
//! Every model sets its own preemption bound (the comment above each test says
//! which and why it is enough); `LOOM_MAX_PREEMPTIONS` can only lower it, for
//! a quick smoke run. `scripts/loom-mutants.sh` shows that these models fail
//! on the planted bugs in `tests/mutants/`.
//!
//! Every model is small: at most three spawned threads, the main thread often
//! being a fourth participant. Timeouts are modelled inside the loom parking
//! shim (`park.rs`): a park with a deadline may time out at any moment, and
//! `deadline_passed` is always false, so a timed acquire reaches the cancel
//! path deterministically.
//!
//! What every model checks:
//! * no lost wake-up: a thread blocked forever is loom's "deadlock" failure;
//! * conservation at the end: the value is what was put in minus what was
//!   kept, and nobody is counted as waiting;
//! * no orphaned node: with nobody waiting, every queue node but the head is
//!   cancelled (`RawSync::live_nodes`);
//! * node reclamation: a node freed while another thread may still read it
//!   fails with a causality violation or "used after it was freed"
//!   (`node.rs`), and a node never freed is a loom leak.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::cell::UnsafeCell;
use loom::thread;

use super::node::Node;
use super::policy::Mode;
use super::state::{is_closed, value_of, waiters_of, ARMED};
use super::test_policy::Permits;
use super::RawSync;
use crate::loom::Ordering::{AcqRel, Acquire};

/// Runs `f` under loom with at most `bound` preemptions per execution
/// (lowered further by `LOOM_MAX_PREEMPTIONS` if that is set and smaller).
fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    let bound = builder.preemption_bound.map_or(bound, |env| env.min(bound));
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// The core and its policy: a semaphore without the public type's wrapping.
struct Sem {
    raw: RawSync,
    policy: Permits,
}

impl Sem {
    /// Blocks for `n`; false if closed.
    fn acquire(&self, n: u32) -> bool {
        self.raw.acquire_shared(&self.policy, n, None).is_ok()
    }

    /// One attempt at one unit, as an arrival.
    fn try_acquire(&self) -> bool {
        self.raw.try_acquire_shared(&self.policy, 1) == super::TryAcquire::Acquired
    }

    fn release(&self, n: u32) {
        self.raw.release_shared(&self.policy, n);
    }

    /// Acquires `n` and gives them back (a permit dropped at once).
    fn acquire_release(&self, n: u32) {
        assert!(self.acquire(n), "closed");
        self.release(n);
    }

    /// A timed acquire of one unit (it may time out at any moment under
    /// loom); gives back what it got.
    fn try_acquire_release_for(&self, timeout: Duration) {
        let deadline = Some(Instant::now() + timeout);
        if self.raw.acquire_shared(&self.policy, 1, deadline).is_ok() {
            self.release(1);
        }
    }
}

fn semaphore(fair: bool, permits: u32) -> Arc<Sem> {
    Arc::new(Sem {
        raw: RawSync::new(permits),
        policy: Permits { fair, adds: true },
    })
}

/// A fair semaphore whose waiters yield once before they park, as real
/// builds do early in every wait (`YIELD_WINDOW`). The other models leave
/// that off: a waiter that yields and looks again before it parks takes more
/// preemptions to catch asleep at the wrong moment, and three of the planted
/// bugs then slip past their models' bounds.
fn fair_yielding(permits: u32) -> Arc<Sem> {
    let mut raw = RawSync::new(permits);
    raw.loom_yields = true;
    Arc::new(Sem {
        raw,
        policy: Permits {
            fair: true,
            adds: true,
        },
    })
}

/// A fair semaphore whose reclamation gate closes at one retired node (R8):
/// every guard that leaves after retiring closes it.
fn gated(permits: u32) -> Arc<Sem> {
    let mut raw = RawSync::new(permits);
    raw.reclaim.limit = 1;
    Arc::new(Sem {
        raw,
        policy: Permits {
            fair: true,
            adds: true,
        },
    })
}

fn assert_quiescent(sem: &Sem, permits: u32) {
    let s = sem.raw.state();
    assert_eq!(value_of(s), permits, "permits were lost or invented");
    assert_eq!(waiters_of(s), 0, "a waiter is still counted");
    assert_eq!(sem.raw.live_nodes(), 0, "a queue node outlived its waiter");
}

/// A critical section guarded by the permit: two holders at once, or a holder
/// that does not happen-after the previous one's release, is a loom
/// causality violation on this cell.
struct Guarded(UnsafeCell<usize>);

// SAFETY: accesses are supposed to be serialized by the semaphore; loom checks
// exactly that.
unsafe impl Sync for Guarded {}

impl Guarded {
    fn enter(&self) {
        // SAFETY: see above; a racing access is a loom failure, not UB.
        self.0.with_mut(|n| unsafe { *n += 1 });
    }
    fn total(&self) -> usize {
        // SAFETY: read after all threads were joined.
        self.0.with(|n| unsafe { *n })
    }
}

// ---------------------------------------------------------------------------
// Acquire vs release on one permit.

/// One permit, three contenders (two spawned threads and main) that each
/// acquire, touch the guarded cell, and release. Covers the queue's first use
/// (dummy head), arming, the re-check after arming (P1), waking a parked
/// waiter, a release racing a second enqueue, and the new head retiring the
/// old one (R1). Bound 2: one preemption makes a contender queue behind the
/// holder, a second places the release between a waiter's failed hook and its
/// arming/parking, the shape `no_recheck` needs (it deadlocks here).
fn one_permit_contenders(make: fn(u32) -> Arc<Sem>) {
    check(2, move || {
        let sem = make(1);
        let cell = Arc::new(Guarded(UnsafeCell::new(0)));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (sem, cell) = (Arc::clone(&sem), Arc::clone(&cell));
                thread::spawn(move || {
                    assert!(sem.acquire(1), "closed");
                    cell.enter();
                    sem.release(1);
                })
            })
            .collect();
        {
            assert!(sem.acquire(1), "closed");
            cell.enter();
            sem.release(1);
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(cell.total(), 3);
        assert_quiescent(&sem, 1);
    });
}

#[test]
fn acquire_release_one_permit_nonfair() {
    one_permit_contenders(|p| semaphore(false, p));
}

#[test]
fn acquire_release_one_permit_fair() {
    one_permit_contenders(|p| semaphore(true, p));
}

/// The same with the yield window: each waiter yields once, armed, in place
/// of its first park, and is then woken through its flag or parks.
#[test]
fn acquire_release_one_permit_fair_yielding() {
    one_permit_contenders(fair_yielding);
}

// ---------------------------------------------------------------------------
// Release vs release: propagation.

/// JDK-6801020: no permits, two threads blocked in `acquire()`, two single
/// releases racing (one of them on main). Both waiters must finish. Bound 1:
/// the lost wake-up needs one preemption only, the first woken waiter stopped
/// between its hook and `set_head` while the second release runs; every other
/// switch happens where a thread parks or exits, which costs no preemption.
/// Bound 1 is shown to be enough: `no_propagate` and the stale-tail bug below
/// both deadlock at bound 1 in about a second; bound 2 takes over 5 minutes.
fn racing_releases(fair: bool) {
    check(1, move || {
        let sem = semaphore(fair, 0);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let sem = Arc::clone(&sem);
                thread::spawn(move || assert!(sem.acquire(1), "closed"))
            })
            .collect();
        let releaser = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.release(1))
        };
        sem.release(1);
        releaser.join().unwrap();
        for w in waiters {
            w.join().unwrap();
        }
        assert_quiescent(&sem, 0);
    });
}

#[test]
fn propagation_jdk_6801020() {
    racing_releases(false);
}

/// The same model in fair mode. Named after the bug it caught: the JDK's
/// `h != tail` shortcut in `do_release_shared` let a new head read a stale
/// `tail` and skip the head-status RMW while its successor, having armed the
/// head after reading a stale head pointer, parked. Both this model and the
/// nonfair one fail within a second with loom's "deadlock" when the shortcut
/// is put back (checked by hand; the fix has no mutant switch).
#[test]
fn regression_stale_tail_in_do_release_shared() {
    racing_releases(true);
}

/// `add_permits(2)` with two queued waiters. The release wakes the first and,
/// since two permits serve both, wakes the second ahead of its turn
/// (`wake_ahead`); the second may take its permit out of turn and leave the
/// queue like a cancelled waiter, or wait for the first to propagate
/// (`propagate` is true: a permit is left). Bound 2: main's release may race
/// the enqueues (1) and the first waiter's propagation or the second's
/// out-of-turn exit (2), which also covers a releaser holding the old head
/// while the head moves (R1 under a stale reader).
fn add_permits_two_waiters(make: fn(u32) -> Arc<Sem>) {
    check(2, move || {
        let sem = make(0);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let sem = Arc::clone(&sem);
                thread::spawn(move || assert!(sem.acquire(1), "closed"))
            })
            .collect();
        sem.release(2);
        for w in waiters {
            w.join().unwrap();
        }
        assert_quiescent(&sem, 0);
    });
}

#[test]
fn add_permits_wakes_two_waiters() {
    add_permits_two_waiters(|p| semaphore(false, p));
}

/// In fair mode the woken-ahead waiter is often woken a second time (by the
/// first waiter's propagation) before it has consumed the first wake-up:
/// the double wake-up that needs the wake flag to be set with an RMW (the
/// `wake_store` mutant deadlocks here).
#[test]
fn add_permits_wakes_two_waiters_fair() {
    add_permits_two_waiters(|p| semaphore(true, p));
}

/// The same with the yield window: a waiter woken ahead while it yields
/// consumes its flag and takes its permit out of turn, walking the queue.
/// The `yield_unguarded` mutant, which goes on after the yield without
/// re-entering its reclamation guard, reads a node that another thread
/// frees.
#[test]
fn add_permits_wakes_two_waiters_fair_yielding() {
    add_permits_two_waiters(fair_yielding);
}

/// R8: the same with the reclamation gate at its smallest limit, one node:
/// a leave that adds a retirement while another guard is inside closes it
/// (a last reader frees at once), so every later entry
/// (a waiter's step, the releaser's wake-up, the new head's propagation)
/// backs out and waits at the gate until the last reader frees, and a
/// leaver that looked last may lose its CAS to such a back-out and park its
/// batch in `spare`. Nothing may be freed early, lost (a loom leak), or
/// left waiting at a gate that nobody opens (a deadlock, or loom's branch
/// limit for a spinning thread).
#[test]
fn reclamation_gate_closes_and_opens() {
    add_permits_two_waiters(gated);
}

/// R8 again, at a limit of one node, with three contenders over one permit
/// (two spawned threads and main): guards that enter while another one is
/// inside and then find the gate closed, back-outs that are the last reader
/// and free, and the freed nodes' readers (a releaser holding the old head,
/// a new head retiring its predecessor) all under the gate.
#[test]
fn reclamation_gate_with_three_contenders() {
    one_permit_contenders(gated);
}

/// The reclamation scheme alone, with the queue out of the way: three
/// guards (two spawned threads and main), each retiring a node of its own
/// and reading the list's head as it does (a freed head is a loom failure).
/// Bound 2 lets a leaver that looked last lose its CAS to an entry and park
/// its batch (`stash`), and a later freer take the list and the parked batch
/// together (`Batch::join`). Nothing may be freed early or lost, and once
/// all have left nothing may linger (the leave that frees looks again).
/// (At a gate limit of one node the same model runs past loom's branch
/// limit: arrivals spin at the gate while a freer finishes, and every spin
/// is a branch. The semaphore models above cover the gate.)
#[test]
fn guards_retire_and_leave() {
    check(2, || {
        let raw = Arc::new(RawSync::new(0));
        let round = |raw: &RawSync| {
            let guard = raw.reclaim.enter();
            let node = Node::alloc(1, Mode::Shared);
            // SAFETY: never published: unreachable, and retired once (R4).
            unsafe { raw.reclaim.retire(node, &guard) };
            drop(guard);
        };
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let raw = Arc::clone(&raw);
                thread::spawn(move || round(&raw))
            })
            .collect();
        round(&raw);
        for t in threads {
            t.join().unwrap();
        }
        assert!(
            raw.reclaim.retired_is_empty(),
            "retired nodes lingered after every guard had left"
        );
    });
}

/// After an out-of-turn exit the queue must still work: two waiters take the
/// permits of one `add_permits(2)` and give them back, while main queues for
/// both (and gives them back too; if it barges first, the waiters get them
/// from main's return). Main may queue behind a node whose owner is leaving
/// out of turn, and must still be woken by the waiters' returns. Bound 1:
/// the exit follows the wake-ahead without a preemption, and one preemption
/// lets main enqueue while the leaving node is still linked.
#[test]
fn queue_after_out_of_turn_exit() {
    check(1, || {
        let sem = semaphore(false, 0);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let sem = Arc::clone(&sem);
                thread::spawn(move || sem.acquire_release(1))
            })
            .collect();
        sem.release(2);
        sem.acquire_release(2);
        for w in waiters {
            w.join().unwrap();
        }
        assert_quiescent(&sem, 2);
    });
}

/// `add_permits(2)` while the first of two waiters may time out at any moment:
/// the second, woken ahead of its turn, races the first's cancellation for
/// the head position (it may leave out of turn, become first, or be woken by
/// the cancel). Both return their permits, so two end available. Bound 2, as
/// for `cancel_races_release`.
fn out_of_turn_races_cancel(fair: bool) {
    timed_and_untimed_waiters(fair, 2);
}

#[test]
fn out_of_turn_races_cancel_nonfair() {
    out_of_turn_races_cancel(false);
}

#[test]
fn out_of_turn_races_cancel_fair() {
    out_of_turn_races_cancel(true);
}

// ---------------------------------------------------------------------------
// acquire_many at the head, smaller requests behind it.

/// One thread wants 2 permits, another 1; main adds 1 and then 2. Whoever is
/// first in the queue, both must end up served: the big request may sleep at
/// the head (head-of-line) until the second release, and a small one behind
/// or in front of it must still be woken. Bound 2, as for the propagation
/// models: the races are release vs the head's hook and release vs arming.
fn acquire_many_at_head(fair: bool) {
    check(2, move || {
        let sem = semaphore(fair, 0);
        let big = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(sem.acquire(2), "closed"))
        };
        let small = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(sem.acquire(1), "closed"))
        };
        sem.release(1);
        sem.release(2);
        big.join().unwrap();
        small.join().unwrap();
        assert_quiescent(&sem, 0);
    });
}

#[test]
fn acquire_many_at_head_nonfair() {
    acquire_many_at_head(false);
}

#[test]
fn acquire_many_at_head_fair() {
    acquire_many_at_head(true);
}

// ---------------------------------------------------------------------------
// Cancellation racing a release.

/// A timed waiter and an untimed one queue on an empty semaphore; main
/// releases one permit. The timed park may time out at any moment, including
/// just after the release chose it, so `cancel_acquire` must pass the wake-up
/// on; whoever gets the permit gives it back, so the untimed waiter always
/// finishes and the permit ends available. Covers a cancelled node skipped
/// (and retired, R2) by its successor and a cancelled tail unlinking itself
/// (R3). Bound 2: the timeout itself is a scheduling point, not a
/// preemption; one preemption puts the release between the timed waiter's
/// failed hook and its park, one more lets the untimed waiter arm around it.
#[test]
fn cancel_races_release() {
    timed_and_untimed_waiters(false, 1);
}

/// The body of `cancel_races_release` and `out_of_turn_races_cancel_*`: a
/// timed waiter (1 s) and an untimed one queue on an empty semaphore, main
/// adds `permits`, each waiter gives back what it got, and all `permits` end
/// available. Bound 2 (see the two tests).
fn timed_and_untimed_waiters(fair: bool, permits: u32) {
    check(2, move || {
        let sem = semaphore(fair, 0);
        let timed = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.try_acquire_release_for(Duration::from_secs(1)))
        };
        let untimed = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.acquire_release(1))
        };
        sem.release(permits);
        timed.join().unwrap();
        untimed.join().unwrap();
        assert_quiescent(&sem, permits);
    });
}

/// A cancelled node must leave no `next` hint behind once it is retired
/// (R2, R3): a thread that enters the queue code after the node was freed
/// and follows a stale hint reads freed memory. The other cancel models
/// release while the timed waiter may still be leaving, so in every
/// schedule they reach the free comes after the read; here main joins the
/// timed waiter first, so the release comes after its node was retired and
/// freed. A timed waiter and an untimed one queue on an empty fair
/// semaphore, in either order; the timed one times out (no permit is free
/// until main releases). Queued first, it is skipped and retired by the
/// untimed one, woken by its cancel (R2); queued second, it is the tail,
/// swings `tail` back and retires itself (R3). Main then releases two: the
/// release reads the head's `next` hint, and the untimed waiter, taking one
/// as the new head, reads its own to decide whether to propagate the
/// other. Bound 1: the schedules that read a freed node need none (main
/// blocks in the join, each waiter parks, the timeout fires, each exit is
/// a free switch); one more explores the arrivals against each other. Main
/// does not wait for both to be counted: a `yield_now` loop there lets
/// loom run it without end once the timed waiter has left.
#[test]
fn release_after_a_cancelled_node_is_freed() {
    check(1, || {
        let sem = semaphore(true, 0);
        let timed = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                let deadline = Some(Instant::now() + Duration::from_secs(1));
                assert!(
                    sem.raw.acquire_shared(&sem.policy, 1, deadline).is_err(),
                    "no permit was free"
                );
            })
        };
        let untimed = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.acquire_release(1))
        };
        timed.join().unwrap();
        sem.release(2);
        untimed.join().unwrap();
        assert_quiescent(&sem, 2);
    });
}

/// A timed waiter leaves while the node it armed takes over as head. `first`
/// queues and parks, a timed waiter queues behind it, arms it and times out,
/// and main adds 2 and queues too (behind the timed waiter, or behind `first`
/// once the timed waiter has unlinked itself as the tail). `first` takes one,
/// becomes head and propagates the other, consuming the `SIGNAL` that the
/// timed waiter set on it. Two stale reads each lose main's wake-up:
/// * P4 (`queue/mod.rs`): the leaving timed waiter reads `first` as armed and
///   not yet head and leaves the wake-up to it, while `first` reads the timed
///   waiter as live and wakes it instead of main (the `unlink_load` mutant);
/// * main, linked behind `first` after the timed waiter left, parks on the
///   consumed `SIGNAL` that the timed waiter set for itself
///   (`foreign_signal`).
///
/// `first` forgets its permit, so one ends available. Bound 2: one preemption
/// lets the waiters queue before main adds, one puts `first`'s takeover
/// between main's failed arrival and its enqueue; stale reads cost none.
fn timed_waiter_leaves_during_takeover(fair: bool) {
    check(2, move || {
        let sem = semaphore(fair, 0);
        let first = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || assert!(sem.acquire(1), "closed"))
        };
        let timed = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.try_acquire_release_for(Duration::from_secs(1)))
        };
        sem.release(2);
        sem.acquire_release(1);
        first.join().unwrap();
        timed.join().unwrap();
        assert_quiescent(&sem, 1);
    });
}

#[test]
fn timed_waiter_leaves_during_takeover_fair() {
    timed_waiter_leaves_during_takeover(true);
}

#[test]
fn timed_waiter_leaves_during_takeover_nonfair() {
    timed_waiter_leaves_during_takeover(false);
}

// ---------------------------------------------------------------------------
// Close racing queued acquires.

/// Two threads acquire on an empty semaphore while main closes it: every
/// acquire returns (with an error: no permit was ever added), none hangs, and
/// the queue is empty. Bound 2: close may land before, between or after the
/// enqueues and parks; the waiter's own closed re-check and close's walk from
/// the tail are the two sides, one preemption each.
#[test]
fn close_races_queued_acquires() {
    check(2, || {
        let sem = semaphore(false, 0);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let sem = Arc::clone(&sem);
                thread::spawn(move || !sem.acquire(1))
            })
            .collect();
        sem.raw.close();
        for w in waiters {
            assert!(
                w.join().unwrap(),
                "acquired from a semaphore that never had a permit"
            );
        }
        assert!(is_closed(sem.raw.state()));
        assert_quiescent(&sem, 0);
    });
}

// ---------------------------------------------------------------------------
// A stale armed bit.

/// A barging release that finds the armed bit set but no SIGNAL on the head
/// clears the bit (`disarm_stale`); a waiter that armed the head and
/// published the bit in between must still be woken. One nonfair permit,
/// held by main; the bit starts set with nobody asleep on it (a state real
/// runs reach: a waiter publishes it and its re-check then acquires). `v`
/// queues; `b` tries once to barge. The schedule that loses `v`: main's
/// release reads the bit and marks the head PROPAGATE; `b` takes the permit;
/// `v` fails, arms the head and publishes the bit; main clears it; `v`
/// re-checks, fails again and parks; `b`'s release sees no bit and skips the
/// queue. The `blind_disarm` mutant, which clears without re-reading the
/// head's status, deadlocks there in about two seconds. That schedule needs
/// two preemptions: `v` stopped after it is counted and before it arms, and
/// main stopped after its status RMW (main waits for the count and `b` holds
/// with a yield, which cost none). Bound 3 explores one more (30 to 60 s
/// in CI).
/// Only `b` may barge and only once: a second spinning thread lets loom
/// schedule two spinners against each other without end.
#[test]
fn stale_armed_bit_is_cleared_safely() {
    check(3, || {
        let sem = semaphore(false, 1);
        let cell = Arc::new(Guarded(UnsafeCell::new(0)));
        sem.raw.state.fetch_or(ARMED, AcqRel);
        assert!(sem.try_acquire());
        let v = {
            let (sem, cell) = (Arc::clone(&sem), Arc::clone(&cell));
            thread::spawn(move || {
                assert!(sem.acquire(1), "closed");
                cell.enter();
                sem.release(1);
            })
        };
        let b = {
            let (sem, cell) = (Arc::clone(&sem), Arc::clone(&cell));
            thread::spawn(move || {
                if !sem.try_acquire() {
                    return false;
                }
                cell.enter();
                // Holding: let `v` run through its arming and parking (a
                // yield costs no preemption).
                thread::yield_now();
                sem.release(1);
                true
            })
        };
        // Release only once `v` is counted (yields cost no preemption).
        while waiters_of(sem.raw.state()) == 0 {
            thread::yield_now();
        }
        sem.release(1);
        v.join().unwrap();
        let barged = b.join().unwrap();
        assert_eq!(cell.total(), 1 + usize::from(barged));
        assert_quiescent(&sem, 1);
    });
}

/// A release that consumed the head's SIGNAL clears the armed bit
/// (`disarm`); if the head moved meanwhile, the bit may stand for a SIGNAL
/// on the new head (A1). One nonfair permit, held by main; `a` and `b`
/// queue behind it and park, each arming its predecessor. Main releases,
/// and a stray unpark of the first waiter (K1: a late `unpark_one` on a
/// reused key) lets it run while main is between its status RMW and its
/// clear: it finds the permit free, takes it and becomes the head, whose
/// SIGNAL the second waiter set. Two things keep that waiter's wake-up:
/// `disarm` sets the bit back when the head moved, and a barging release
/// goes on through the moved head. The planted bug `disarm_no_rearm`
/// removes both, and the second waiter sleeps with the permit free. Each
/// waiter yields while it holds, so that its release can come after main's
/// clear without a preemption; the stray thread blocks on a channel until
/// both waiters are counted (a second thread spinning beside main would let
/// loom run the two against each other without end). Bound 1 (25 s): one
/// preemption stops main between its RMW and its clear.
#[test]
fn disarm_races_a_takeover() {
    check(1, || {
        let sem = semaphore(false, 1);
        assert!(sem.try_acquire());
        let waiter = || {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                assert!(sem.acquire(1), "closed");
                thread::yield_now();
                sem.release(1);
            })
        };
        let (a, b) = (waiter(), waiter());
        let (go, ready) = loom::sync::mpsc::channel::<()>();
        let stray = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                ready.recv().unwrap();
                let first = {
                    let guard = sem.raw.reclaim.enter();
                    let h = sem.raw.head.load(Acquire);
                    // SAFETY: R5: loaded from `head` inside the guard (both
                    // waiters are queued, so there is a head).
                    unsafe { guard.node(h) }.next.load(Acquire)
                };
                if !first.is_null() {
                    crate::park::unpark_one(first as usize);
                }
            })
        };
        while waiters_of(sem.raw.state()) < 2 {
            thread::yield_now();
        }
        go.send(()).unwrap();
        sem.release(1);
        a.join().unwrap();
        b.join().unwrap();
        stray.join().unwrap();
        assert_quiescent(&sem, 1);
    });
}
