//! Unit tests of the core on the test policy (`test_policy.rs`), barging
//! (`COUNT`) and strict FIFO (`FIFO`).

use super::node::{Node, CANCELLED};
use super::policy::{Mode, Policy};
use super::state::{value_of, waiters_of, ARMED};
use super::test_policy::{COUNT, FIFO};
use super::*;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The queue as a list of statuses from head to tail.
fn queue_statuses(sync: &RawSync) -> Vec<i32> {
    let guard = sync.reclaim.enter();
    let mut out = Vec::new();
    let mut t = sync.tail.load(Acquire);
    while !t.is_null() {
        // SAFETY: R5: loaded from `tail` or a `prev` link inside the guard.
        let n = unsafe { guard.node(t) };
        out.push(n.status.load(Acquire));
        t = n.prev.load(Acquire);
    }
    out.reverse();
    out
}

/// `n` nodes of need 1 linked and counted by the test thread, which
/// stands in for their owners (nobody parks on them, so a wake-up only
/// sets the node's flag, which the test can read).
fn queue_of(sync: &RawSync, n: usize) -> Vec<*mut Node> {
    let guard = sync.reclaim.enter();
    (0..n)
        .map(|_| sync.add_waiter(Mode::Shared, 1, &guard))
        .collect()
}

/// A core holding 2 units with four queued waiters (`queue_of`), its
/// head armed if `armed` (with the armed bit for a barging policy), after
/// one release of `n` under `policy`.
fn four_waiters_after_release<P: Policy>(
    policy: &P,
    armed: bool,
    n: u32,
) -> (RawSync, Vec<*mut Node>) {
    let sync = RawSync::new(2);
    let nodes = queue_of(&sync, 4);
    if armed {
        let guard = sync.reclaim.enter();
        assert!(
            sync.arm(sync.head.load(Acquire), &guard),
            "the dummy head can be armed"
        );
        if policy.discipline().uses_armed_bit() {
            sync.state.fetch_or(ARMED, AcqRel);
        }
    }
    sync.release_shared(policy, n);
    (sync, nodes)
}

/// Which of `nodes` have their wake flag set.
fn woken(nodes: &[*mut Node]) -> Vec<bool> {
    let flag = |&n: &*mut Node| {
        // SAFETY: R4: the nodes stay linked, so nobody retires them, until
        // their core is dropped.
        unsafe { Node::get(n) }.wake.load(Acquire) != 0
    };
    nodes.iter().map(flag).collect()
}

/// Bounded wait for a condition that another thread makes true.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..20_000 {
        if cond() {
            return;
        }
        thread::sleep(Duration::from_micros(500));
    }
    panic!("timed out waiting until {what}");
}

fn settled(sync: &RawSync) {
    assert_eq!(sync.reclaim.readers(), 0, "a guard was leaked");
    assert!(
        sync.reclaim.retired_is_empty(),
        "retired nodes were not freed after quiescence"
    );
}

#[test]
fn uncontended_use_never_creates_the_queue() {
    let sync = RawSync::new(2);
    assert_eq!(sync.try_acquire_shared(&COUNT, 2), TryAcquire::Acquired);
    assert_eq!(sync.try_acquire_shared(&COUNT, 1), TryAcquire::Failed);
    sync.release_shared(&COUNT, 2);
    assert_eq!(value_of(sync.state()), 2);
    assert!(
        queue_statuses(&sync).is_empty(),
        "the fast path touched the queue"
    );
}

#[test]
fn queued_acquire_leaves_only_the_new_head() {
    let sync = Arc::new(RawSync::new(0));
    let waiter = {
        let sync = Arc::clone(&sync);
        thread::spawn(move || sync.acquire_shared(&COUNT, 1, None))
    };
    wait_until("the waiter is queued", || waiters_of(sync.state()) == 1);
    sync.release_shared(&COUNT, 1);
    assert_eq!(waiter.join().unwrap(), Ok(()));
    assert_eq!(
        queue_statuses(&sync).len(),
        1,
        "the old head was not unlinked"
    );
    assert_eq!(waiters_of(sync.state()), 0);
    settled(&sync);
}

#[test]
fn timed_out_tail_unlinks_itself() {
    let sync = RawSync::new(0);
    // Long enough that the acquire queues before it passes, even on a busy
    // machine (a deadline already past at arrival returns before the queue
    // exists).
    let deadline = Instant::now() + Duration::from_millis(100);
    assert_eq!(
        sync.acquire_shared(&COUNT, 1, Some(deadline)),
        Err(AcquireFailed::TimedOut)
    );
    // Only the dummy head is left (it may keep the SIGNAL its departed
    // successor armed, as in the JDK: at most one wasted wake attempt).
    assert_eq!(
        queue_statuses(&sync).len(),
        1,
        "the cancelled tail is still linked"
    );
    assert_eq!(waiters_of(sync.state()), 0);
    settled(&sync);
}

#[test]
fn cancelled_middle_node_is_skipped_and_freed() {
    let sync = Arc::new(RawSync::new(0));
    let first = {
        let sync = Arc::clone(&sync);
        thread::spawn(move || sync.acquire_shared(&COUNT, 1, None))
    };
    wait_until("the first waiter is queued", || {
        waiters_of(sync.state()) == 1
    });
    let middle = {
        let sync = Arc::clone(&sync);
        thread::spawn(move || {
            sync.acquire_shared(&COUNT, 1, Some(Instant::now() + Duration::from_millis(200)))
        })
    };
    wait_until("the middle waiter is queued", || {
        waiters_of(sync.state()) == 2
    });
    let last = {
        let sync = Arc::clone(&sync);
        thread::spawn(move || sync.acquire_shared(&COUNT, 1, None))
    };
    wait_until("the last waiter is queued", || {
        waiters_of(sync.state()) == 3
    });
    assert_eq!(middle.join().unwrap(), Err(AcquireFailed::TimedOut));
    assert_eq!(waiters_of(sync.state()), 2);
    sync.release_shared(&COUNT, 2);
    assert_eq!(first.join().unwrap(), Ok(()));
    assert_eq!(last.join().unwrap(), Ok(()));
    assert_eq!(queue_statuses(&sync).len(), 1);
    assert_eq!(value_of(sync.state()), 0);
    settled(&sync);
}

/// One release of 6 wakes all 6 waiters at once (`wake_ahead`); those
/// that run before their turn take their unit out of turn and leave like
/// cancelled waiters. Whatever the order, everyone is served, nobody
/// stays counted, no live node is left behind, and every node is freed.
#[test]
fn batch_release_serves_everyone_and_leaves_no_live_node() {
    let sync = Arc::new(RawSync::new(0));
    for round in 0..20 {
        let waiters: Vec<_> = (0..6)
            .map(|_| {
                let sync = Arc::clone(&sync);
                thread::spawn(move || sync.acquire_shared(&COUNT, 1, None))
            })
            .collect();
        wait_until("all six are queued", || waiters_of(sync.state()) == 6);
        sync.release_shared(&COUNT, 6);
        for w in waiters {
            assert_eq!(w.join().unwrap(), Ok(()), "round {round}");
        }
        assert_eq!(
            (value_of(sync.state()), waiters_of(sync.state())),
            (0, 0),
            "round {round}"
        );
        assert_eq!(
            sync.live_nodes(),
            0,
            "round {round}: a node outlived its waiter"
        );
        settled(&sync);
    }
}

#[test]
fn wake_ahead_stops_at_the_first_waiter_the_release_cannot_serve() {
    // Queue: 1, 3, 1. A release of 2 serves the first; the second needs 3
    // of the 1 left, so the walk stops there, and the third (which 1
    // permit could serve) is not woken ahead of it.
    let sync = Arc::new(RawSync::new(0));
    let mut waiters = Vec::new();
    for (i, need) in [1, 3, 1].into_iter().enumerate() {
        let sync2 = Arc::clone(&sync);
        waiters.push(thread::spawn(move || {
            sync2.acquire_shared(&COUNT, need, None)
        }));
        wait_until("the waiter is queued", || {
            waiters_of(sync.state()) == i as u32 + 1
        });
    }
    sync.release_shared(&COUNT, 2);
    let first = waiters.remove(0);
    assert_eq!(first.join().unwrap(), Ok(()));
    wait_until("the first waiter is gone", || waiters_of(sync.state()) == 2);
    // Give the third waiter a chance to run if it was (wrongly) woken; a
    // nonfair out-of-turn take would leave the value at 0.
    thread::sleep(Duration::from_millis(20));
    assert_eq!((value_of(sync.state()), waiters_of(sync.state())), (1, 2));
    sync.release_shared(&COUNT, 3);
    for w in waiters {
        assert_eq!(w.join().unwrap(), Ok(()));
    }
    assert_eq!((value_of(sync.state()), waiters_of(sync.state())), (0, 0));
    assert_eq!(sync.live_nodes(), 0);
    settled(&sync);
}

/// A strict FIFO release wakes every waiter that the available value
/// covers, not only as many as it released. Here the first two waiters
/// have woken and cleared their flags but not yet taken their units (the
/// value holds 2 for them); a release of 1 that finds the first one awake
/// must wake the third. An earlier version charged its unit to the second
/// waiter (its flag was clear), and the unit then sat in the word with
/// nobody on the way to it: fair arrivals never take value from a queue.
#[test]
fn fifo_release_wakes_every_waiter_the_value_covers() {
    let (sync, nodes) = four_waiters_after_release(&FIFO, false, 1);
    assert_eq!(woken(&nodes), [false, true, true, false]);
    assert_eq!((value_of(sync.state()), waiters_of(sync.state())), (3, 4));
    settled(&sync);
}

/// The same when the release consumes the head's `SIGNAL` and wakes the
/// first waiter itself: the value it finds covers two more (released
/// earlier, with nobody woken for them), so it wakes them too.
#[test]
fn fifo_release_through_signal_wakes_the_covered_waiters_behind_the_first() {
    let (sync, nodes) = four_waiters_after_release(&FIFO, true, 1);
    assert_eq!(woken(&nodes), [true, true, true, false]);
    settled(&sync);
}

/// A barging release that wakes the first waiter spends only what it
/// released: arrivals may take the rest of the value.
#[test]
fn barging_release_wakes_only_what_it_released() {
    let (sync, nodes) = four_waiters_after_release(&COUNT, true, 2);
    assert_eq!(woken(&nodes), [true, true, false, false]);
    settled(&sync);
}

#[test]
fn close_wakes_every_waiter_and_empties_the_queue() {
    let sync = Arc::new(RawSync::new(0));
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let sync = Arc::clone(&sync);
            thread::spawn(move || sync.acquire_shared(&COUNT, 1, None))
        })
        .collect();
    wait_until("all four are queued", || waiters_of(sync.state()) == 4);
    sync.close();
    for w in waiters {
        assert_eq!(w.join().unwrap(), Err(AcquireFailed::Closed));
    }
    assert_eq!(waiters_of(sync.state()), 0);
    assert!(queue_statuses(&sync)
        .iter()
        .all(|&s| s == CANCELLED || s <= 0));
    settled(&sync);
}

/// R8's two stress tests end alike: every worker joins, the peak of
/// unfreed nodes stayed within `bound`, and nothing is left once all left.
fn bounded_after_join(
    workers: Vec<thread::JoinHandle<()>>,
    sync: &RawSync,
    peak: &std::sync::atomic::AtomicUsize,
    bound: usize,
) {
    for w in workers {
        w.join().unwrap();
    }
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        peak <= bound,
        "{peak} retired nodes were unfreed at once (bound {bound}; {} arrivals waited at the gate): \
         reclamation is not bounded",
        sync.reclaim.gate_waits()
    );
    assert_eq!(
        sync.reclaim.unfreed(),
        0,
        "nodes were left after the last guard"
    );
    settled(sync);
}

/// R8: guards that overlap without a gap, for good. Eight threads pass a
/// baton round a ring, and each holds its guard, retiring nodes inside,
/// until the next one has entered its own, or has found the gate closed
/// (a real guard never waits for another thread at all: R6). Some guard is
/// open at nearly every instant, so a bare reader count (the scheme before
/// R8) never reaches zero and frees nothing until the ring stops: its peak is
/// every node retired, 80,000. With the gate, the backlog closes it, the
/// guards inside leave, the last one frees, and the unfreed nodes stay under
/// the limit plus what the guards inside at the closing retire.
#[test]
fn reclamation_is_bounded_under_overlapping_guards() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::{Condvar, Mutex};
    const THREADS: usize = 8;
    // Under Miri, enough turns (640 nodes) to close the gate once.
    const HANDOFFS: usize = if cfg!(miri) { 160 } else { 20_000 };
    const PER_GUARD: usize = 4;
    const BOUND: usize = reclaim::BACKLOG_LIMIT as usize + THREADS * PER_GUARD;
    const BOUND_WAIT: Duration = Duration::from_secs(10);
    /// Whose guard is to enter next, and how many guards have entered.
    struct Ring {
        turns: Mutex<(usize, usize)>,
        moved: Condvar,
    }
    impl Ring {
        fn wait(&self, what: &str, until: impl Fn(&(usize, usize)) -> bool) {
            let mut turns = self.turns.lock().unwrap();
            while !until(&turns) {
                let (t, timeout) = self
                    .moved
                    .wait_timeout(turns, Duration::from_millis(1))
                    .unwrap();
                turns = t;
                if timeout.timed_out() && !until(&turns) {
                    return; // the caller looks at the gate, then here again
                }
            }
            let _ = what;
        }
        fn set(&self, f: impl FnOnce(&mut (usize, usize))) {
            f(&mut self.turns.lock().unwrap());
            self.moved.notify_all();
        }
        fn get(&self) -> (usize, usize) {
            *self.turns.lock().unwrap()
        }
    }
    let sync = Arc::new(RawSync::new(0));
    let ring = Arc::new(Ring {
        turns: Mutex::new((0, 0)),
        moved: Condvar::new(),
    });
    let peak = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|me| {
            let (sync, ring, peak) = (Arc::clone(&sync), Arc::clone(&ring), Arc::clone(&peak));
            thread::spawn(move || {
                let mut t = me;
                while t < HANDOFFS {
                    let since = Instant::now();
                    while ring.get().0 != t {
                        assert!(since.elapsed() < BOUND_WAIT, "the ring stalled at turn {t}");
                        ring.wait("waiting for a turn", |&(turn, _)| turn == t);
                    }
                    let guard = sync.reclaim.enter();
                    ring.set(|r| r.1 = t + 1);
                    for _ in 0..PER_GUARD {
                        let node = Node::alloc(1, Mode::Shared);
                        // SAFETY: never published: unreachable, retired once.
                        unsafe { sync.reclaim.retire(node, &guard) };
                    }
                    peak.fetch_max(sync.reclaim.unfreed(), SeqCst);
                    ring.set(|r| r.0 = t + 1);
                    // Hold the guard until the next one is open, or is held
                    // at the gate (the last turn has no next).
                    let since = Instant::now();
                    while t + 1 < HANDOFFS && ring.get().1 <= t + 1 && !sync.reclaim.gate_closed() {
                        assert!(since.elapsed() < BOUND_WAIT, "the next guard never came");
                        ring.wait("waiting for the next guard", |&(_, entered)| {
                            entered > t + 1
                        });
                    }
                    drop(guard);
                    t += THREADS;
                }
            })
        })
        .collect();
    bounded_after_join(workers, &sync, &peak, BOUND);
}

/// R8 with no ring: eight threads enter, retire and leave as fast as they
/// can (on two CPUs a thread is often preempted inside its guard, which
/// holds every grace period back) for two seconds. The unfreed nodes stay
/// under the bound all along, and everything is freed once they stop.
#[test]
fn reclamation_is_bounded_in_a_free_for_all() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    const THREADS: usize = 8;
    const PER_GUARD: usize = 4;
    const BOUND: usize = reclaim::BACKLOG_LIMIT as usize + THREADS * PER_GUARD;
    let sync = Arc::new(RawSync::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    // Two seconds; under Miri, whose clock is virtual, 25 turns each.
    let until = Instant::now() + Duration::from_secs(2);
    let done = move |turn: usize| {
        if cfg!(miri) {
            turn == 25
        } else {
            Instant::now() >= until
        }
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (sync, peak) = (Arc::clone(&sync), Arc::clone(&peak));
            thread::spawn(move || {
                let mut turn = 0;
                while !done(turn) {
                    turn += 1;
                    let guard = sync.reclaim.enter();
                    for _ in 0..PER_GUARD {
                        let node = Node::alloc(1, Mode::Shared);
                        // SAFETY: never published: unreachable, retired once.
                        unsafe { sync.reclaim.retire(node, &guard) };
                    }
                    peak.fetch_max(sync.reclaim.unfreed(), SeqCst);
                    drop(guard);
                }
            })
        })
        .collect();
    bounded_after_join(workers, &sync, &peak, BOUND);
}
