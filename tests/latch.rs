//! Behaviour of `CountDownLatch`, in the JSR-166 TCK's `CountDownLatchTest`
//! spirit: the count, `count_down` at zero, waits that return at zero, timed
//! waits that time out, and one count-down that releases every waiter.
//! Every blocking wait is bounded.

#![cfg(not(aqs_loom))]

mod common;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use aqs::CountDownLatch;
use common::{join_bounded, wait_until, BOUND};

#[test]
fn count_falls_to_zero_and_stays() {
    let latch = CountDownLatch::new(2);
    assert_eq!(latch.count(), 2);
    latch.count_down();
    assert_eq!(latch.count(), 1);
    latch.count_down();
    assert_eq!(latch.count(), 0);
    latch.count_down(); // a no-op at zero
    assert_eq!(latch.count(), 0);
}

#[test]
fn a_zero_latch_is_open() {
    let latch = CountDownLatch::new(0);
    latch.wait();
    assert!(latch.wait_for(Duration::ZERO));
    assert!(
        latch.wait_until(Instant::now() - Duration::from_millis(1)),
        "open beats a past deadline"
    );
}

#[test]
fn timed_waits_time_out_while_the_count_is_positive() {
    let latch = CountDownLatch::new(1);
    assert!(!latch.wait_for(Duration::from_millis(5)));
    assert!(!latch.wait_until(Instant::now() + Duration::from_millis(5)));
    assert_eq!(latch.queue_length(), 0, "timed-out waiters left the queue");
    latch.count_down();
    assert!(latch.wait_for(Duration::from_millis(5)));
}

#[test]
fn wait_returns_after_the_count_downs_of_other_threads() {
    let latch = Arc::new(CountDownLatch::new(2));
    let waiter = {
        let latch = Arc::clone(&latch);
        thread::spawn(move || latch.wait_for(BOUND))
    };
    wait_until("the waiter queues", || latch.queue_length() == 1);
    latch.count_down();
    assert!(!waiter.is_finished() || latch.count() == 0);
    latch.count_down();
    assert!(join_bounded(waiter), "the waiter saw zero");
}

#[test]
fn the_last_count_down_releases_every_waiter() {
    let n = if cfg!(miri) { 3 } else { 16 };
    let latch = Arc::new(CountDownLatch::new(1));
    let waiters: Vec<_> = (0..n)
        .map(|i| {
            let latch = Arc::clone(&latch);
            thread::spawn(move || {
                if i % 2 == 0 {
                    latch.wait();
                    true
                } else {
                    latch.wait_for(BOUND)
                }
            })
        })
        .collect();
    wait_until("every waiter queues", || latch.queue_length() == n);
    latch.count_down();
    for w in waiters {
        assert!(join_bounded(w));
    }
    assert_eq!(latch.queue_length(), 0);
}

#[test]
fn timed_waiters_mixed_with_a_count_down_lose_nothing() {
    let rounds = if cfg!(miri) { 3 } else { 200 };
    for _ in 0..rounds {
        let latch = Arc::new(CountDownLatch::new(1));
        let short = {
            let latch = Arc::clone(&latch);
            thread::spawn(move || latch.wait_for(Duration::from_micros(50)))
        };
        let long = {
            let latch = Arc::clone(&latch);
            thread::spawn(move || latch.wait_for(BOUND))
        };
        latch.count_down();
        let _ = join_bounded(short);
        assert!(
            join_bounded(long),
            "the untimed waiter missed the count-down"
        );
    }
}

#[test]
fn size_debug_and_static() {
    static READY: CountDownLatch = CountDownLatch::new(0);
    READY.wait();
    assert_eq!(std::mem::size_of::<CountDownLatch>(), 64);
    assert_eq!(
        format!("{:?}", CountDownLatch::new(3)),
        "CountDownLatch { count: 3, queued: 0 }"
    );
}

#[test]
#[cfg(target_pointer_width = "64")]
#[should_panic(expected = "at most u32::MAX")]
fn a_count_above_u32_max_panics() {
    let _ = CountDownLatch::new(u32::MAX as usize + 1);
}
