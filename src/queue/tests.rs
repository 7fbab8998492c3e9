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
    let deadline = Instant::now() + Duration::from_millis(5);
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
