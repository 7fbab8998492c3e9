//! Loom models of the latch: the last count-down wakes every waiter through
//! propagation, also while a timed wait gives up. Run with
//! `bash scripts/loom.sh`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::thread;

use super::CountDownLatch;
use crate::loom::model::check;

/// Two waiters, one count-down by main: both must return (the first one's
/// acquire propagates to the second; a latch that woke only one leaves the
/// other asleep: loom's deadlock). Bound 2: one preemption between a
/// waiter's failed look and its park, one inside the count-down.
#[test]
fn last_count_down_wakes_two_waiters() {
    check(2, || {
        let latch = Arc::new(CountDownLatch::new(1));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let latch = Arc::clone(&latch);
                thread::spawn(move || latch.wait())
            })
            .collect();
        latch.count_down();
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(latch.count(), 0);
        assert_eq!(
            latch.sync.live_nodes(),
            0,
            "a queue node outlived its waiter"
        );
    });
}

/// The last count-down races a timed wait (which may time out at any moment
/// under loom) with an untimed waiter behind it: the untimed one always
/// returns, and a timed wait that reports `false` saw a count above zero,
/// so it ran before the count-down. Bound 1 (16 s): the timeout is a free
/// switch, and one preemption places the count-down against the leaving
/// waiter's unlink. Bound 2 also passes, in 200 s, which CI cannot give
/// one latch model; the core's `timed_waiter_leaves_during_takeover_*`
/// explore a timed shared waiter leaving during propagation at bound 2.
#[test]
fn last_count_down_races_a_timed_wait() {
    check(1, || {
        let latch = Arc::new(CountDownLatch::new(2));
        let timed = {
            let latch = Arc::clone(&latch);
            thread::spawn(move || latch.wait_until(Instant::now() + Duration::from_secs(1)))
        };
        let untimed = {
            let latch = Arc::clone(&latch);
            thread::spawn(move || latch.wait())
        };
        latch.count_down();
        latch.count_down();
        let _ = timed.join().unwrap();
        untimed.join().unwrap();
        assert_eq!(latch.count(), 0);
        assert_eq!(
            latch.sync.live_nodes(),
            0,
            "a queue node outlived its waiter"
        );
    });
}
