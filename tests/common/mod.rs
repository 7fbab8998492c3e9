//! Helpers shared by the lock tests: every blocking wait a test makes is
//! bounded by [`BOUND`], so a lost wake-up fails the test instead of hanging
//! it.

#![allow(dead_code)] // each test file uses its own subset

use std::thread;
use std::time::{Duration, Instant};

/// How long a wait that must succeed may take before the test fails.
pub const BOUND: Duration = Duration::from_secs(10);

/// Polls `cond` until it holds, failing the test after [`BOUND`].
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < BOUND, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Joins `t`, failing the test if it has not finished within [`BOUND`].
pub fn join_bounded<T: Send + 'static>(t: thread::JoinHandle<T>) -> T {
    let start = Instant::now();
    while !t.is_finished() {
        assert!(
            start.elapsed() < BOUND,
            "a thread did not finish: lost wake-up?"
        );
        thread::sleep(Duration::from_millis(1));
    }
    t.join().unwrap()
}
