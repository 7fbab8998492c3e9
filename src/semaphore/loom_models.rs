//! Loom models of what the semaphore adds to the core (whose own models are
//! in `queue/loom_models.rs`): RAII permits, `add_permits` and `close` around
//! a queued acquire. Run with `bash scripts/loom.sh`.

use std::sync::Arc;

use loom::thread;

use super::Semaphore;
use crate::TryAcquireError;

/// Runs `f` under loom with at most `bound` preemptions per execution
/// (lowered further by `LOOM_MAX_PREEMPTIONS` if that is set and smaller).
fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    let bound = builder.preemption_bound.map_or(bound, |env| env.min(bound));
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// Main holds the only permit; a thread queues for it; another adds one
/// permit while main closes the semaphore and drops its permit. The waiter
/// gets a permit (and drops it) or the closed error, never hangs; every
/// permit ends available, and no queue node outlives its waiter. Bound 2:
/// one preemption lets the waiter queue before the close, one puts the
/// close between the release and the waiter's re-check.
fn close_races_drop_and_add(fair: bool) {
    check(2, move || {
        let sem = Arc::new(if fair {
            Semaphore::new_fair(1)
        } else {
            Semaphore::new(1)
        });
        let held = sem.try_acquire().expect("one permit is free");
        let waiter = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || match sem.acquire() {
                Ok(permit) => drop(permit),
                Err(e) => assert_eq!(TryAcquireError::from(e), TryAcquireError::Closed),
            })
        };
        let adder = {
            let sem = Arc::clone(&sem);
            thread::spawn(move || sem.add_permits(1))
        };
        sem.close();
        drop(held);
        waiter.join().unwrap();
        adder.join().unwrap();
        assert_eq!(sem.available_permits(), 2, "a permit was lost or invented");
        assert_eq!(sem.queue_length(), 0, "a waiter is still counted");
        assert_eq!(sem.raw.live_nodes(), 0, "a queue node outlived its waiter");
    });
}

#[test]
fn close_races_drop_and_add_fair() {
    close_races_drop_and_add(true);
}

#[test]
fn close_races_drop_and_add_nonfair() {
    close_races_drop_and_add(false);
}
