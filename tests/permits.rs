//! Public behaviour of `SemaphorePermit` and `OwnedSemaphorePermit`: permits
//! go back on drop (also when the holder panics), `forget` keeps them,
//! `split` and `merge` move them without losing any.

// These tests run real threads and clocks; under `--cfg aqs_loom` the crate's
// atomics are loom's, which only work inside `loom::model` (the crate's
// `loom_models`).
#![cfg(not(aqs_loom))]

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use aqs::{OwnedSemaphorePermit, Semaphore};

/// The bound on every wait that is expected to end.
const LONG: Duration = Duration::from_secs(10);

/// A nonfair and a fair semaphore with `permits` permits each.
fn both(permits: usize) -> [Arc<Semaphore>; 2] {
    [
        Arc::new(Semaphore::new(permits)),
        Arc::new(Semaphore::new_fair(permits)),
    ]
}

/// Joins `handle`, failing the test if the thread has not finished after
/// [`LONG`]; `done` must disconnect when the thread ends.
#[track_caller]
fn join_bounded<T>(handle: JoinHandle<T>, done: mpsc::Receiver<()>) -> thread::Result<T> {
    match done.recv_timeout(LONG) {
        Err(RecvTimeoutError::Timeout) => panic!("a thread was still running after {LONG:?}"),
        Ok(()) | Err(RecvTimeoutError::Disconnected) => handle.join(),
    }
}

/// Runs `f` on a new thread and returns how it ended (bounded by [`LONG`]).
fn run_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> thread::Result<T> {
    let (finished, done) = mpsc::channel::<()>();
    let handle = thread::spawn(move || {
        let _finished = finished; // dropped after `f`, also when it panics
        f()
    });
    join_bounded(handle, done)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn dropping_a_permit_returns_it() {
    for sem in both(3) {
        let one = sem.try_acquire().unwrap();
        let two = sem.try_acquire_many(2).unwrap();
        assert_eq!((one.num_permits(), two.num_permits()), (1, 2));
        assert_eq!(sem.available_permits(), 0);
        drop(two);
        assert_eq!(sem.available_permits(), 2);
        drop(one);
        assert_eq!(sem.available_permits(), 3);

        let owned = Arc::clone(&sem).try_acquire_many_owned(3).unwrap();
        assert_eq!((owned.num_permits(), sem.available_permits()), (3, 0));
        drop(owned);
        assert_eq!(sem.available_permits(), 3);
    }
}

#[test]
fn permit_returns_when_its_holder_panics() {
    for sem in both(3) {
        // Unwinding on this thread.
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            let _permit = sem.try_acquire_many(2).unwrap();
            let _owned = Arc::clone(&sem).try_acquire_owned().unwrap();
            assert_eq!(sem.available_permits(), 0);
            panic!("holder panics");
        }));
        assert_eq!(panic_message(&*result.unwrap_err()), "holder panics");
        assert_eq!(sem.available_permits(), 3);

        // A thread that dies holding permits of both kinds.
        let sem2 = Arc::clone(&sem);
        let result = run_thread(move || {
            let _owned = Arc::clone(&sem2).try_acquire_many_owned(2).unwrap();
            let _permit = sem2.try_acquire().unwrap();
            panic!("thread panics");
        });
        assert_eq!(panic_message(&*result.unwrap_err()), "thread panics");
        assert_eq!(sem.available_permits(), 3);
    }
}

#[test]
fn forget_keeps_the_permits_from_returning() {
    for sem in both(4) {
        sem.try_acquire_many(2).unwrap().forget();
        assert_eq!(sem.available_permits(), 2);
        Arc::clone(&sem).try_acquire_owned().unwrap().forget();
        assert_eq!(sem.available_permits(), 1);
        sem.add_permits(3);
        assert_eq!(sem.available_permits(), 4);
    }
}

#[test]
fn split_moves_permits_and_refuses_more_than_held() {
    for sem in both(5) {
        let mut permit = sem.try_acquire_many(3).unwrap();
        assert!(permit.split(4).is_none());
        assert!(permit.split(usize::MAX).is_none());
        assert_eq!(
            (permit.num_permits(), sem.available_permits()),
            (3, 2),
            "a refused split changed something"
        );

        let part = permit.split(2).unwrap();
        assert_eq!((permit.num_permits(), part.num_permits()), (1, 2));
        let empty = permit.split(0).unwrap();
        assert_eq!(empty.num_permits(), 0);
        drop(part);
        assert_eq!(sem.available_permits(), 4);
        let rest = permit.split(1).unwrap();
        assert_eq!(permit.num_permits(), 0);
        drop(permit);
        drop(empty);
        assert_eq!(sem.available_permits(), 4);
        drop(rest);
        assert_eq!(sem.available_permits(), 5);

        let mut owned = Arc::clone(&sem).try_acquire_many_owned(3).unwrap();
        assert!(owned.split(4).is_none());
        assert_eq!((owned.num_permits(), sem.available_permits()), (3, 2));
        let part = owned.split(2).unwrap();
        assert!(Arc::ptr_eq(part.semaphore(), &sem));
        assert_eq!((owned.num_permits(), part.num_permits()), (1, 2));
        drop(owned);
        assert_eq!(sem.available_permits(), 3);
        drop(part);
        assert_eq!(sem.available_permits(), 5);
    }
}

#[test]
fn merge_combines_permits_of_one_semaphore() {
    for sem in both(4) {
        let mut a = sem.try_acquire().unwrap();
        a.merge(sem.try_acquire_many(2).unwrap());
        assert_eq!((a.num_permits(), sem.available_permits()), (3, 1));
        drop(a);
        assert_eq!(sem.available_permits(), 4);

        let mut a = Arc::clone(&sem).try_acquire_owned().unwrap();
        a.merge(Arc::clone(&sem).try_acquire_many_owned(3).unwrap());
        assert_eq!((a.num_permits(), sem.available_permits()), (4, 0));
        drop(a);
        assert_eq!(sem.available_permits(), 4);
    }
}

#[test]
#[should_panic(expected = "different semaphores")]
fn merging_permits_of_different_semaphores_panics() {
    let (x, y) = (Semaphore::new(1), Semaphore::new(1));
    let mut a = x.try_acquire().unwrap();
    a.merge(y.try_acquire().unwrap());
}

#[test]
#[should_panic(expected = "different semaphores")]
fn merging_owned_permits_of_different_semaphores_panics() {
    let (x, y) = (
        Arc::new(Semaphore::new(1)),
        Arc::new(Semaphore::new_fair(1)),
    );
    let mut a = x.try_acquire_owned().unwrap();
    a.merge(y.try_acquire_owned().unwrap());
}

/// Even two semaphores that look the same are different semaphores.
#[test]
#[should_panic(expected = "different semaphores")]
fn merging_permits_of_equal_looking_semaphores_panics() {
    let x = Arc::new(Semaphore::new(2));
    let y = Arc::new(Semaphore::new(2));
    let mut a = Arc::clone(&x).try_acquire_owned().unwrap();
    a.merge(y.try_acquire_owned().unwrap());
}

/// A refused merge loses no permits: `self` keeps its own, and `other` goes
/// back to its semaphore as it unwinds.
#[test]
fn refused_merge_loses_no_permits() {
    let (x, y) = (Semaphore::new(3), Semaphore::new_fair(3));
    let mut a = x.try_acquire_many(2).unwrap();
    let result = panic::catch_unwind(AssertUnwindSafe(|| a.merge(y.try_acquire().unwrap())));
    assert!(panic_message(&*result.unwrap_err()).contains("different semaphores"));
    assert_eq!(
        (
            a.num_permits(),
            x.available_permits(),
            y.available_permits()
        ),
        (2, 1, 3)
    );
    drop(a);
    assert_eq!(x.available_permits(), 3);

    let (x, y) = (
        Arc::new(Semaphore::new_fair(3)),
        Arc::new(Semaphore::new(3)),
    );
    let mut a = Arc::clone(&x).try_acquire_many_owned(2).unwrap();
    let other = Arc::clone(&y).try_acquire_owned().unwrap();
    let result = panic::catch_unwind(AssertUnwindSafe(|| a.merge(other)));
    assert!(panic_message(&*result.unwrap_err()).contains("different semaphores"));
    assert_eq!(
        (
            a.num_permits(),
            x.available_permits(),
            y.available_permits()
        ),
        (2, 1, 3)
    );
    drop(a);
    assert_eq!(x.available_permits(), 3);
}

/// `add_permits` counts held permits against `MAX_PERMITS`, so that giving
/// them back can never overflow: with every permit held, adding one more
/// panics and changes nothing, and the held permits still come back.
#[test]
fn add_permits_counts_held_permits_so_a_drop_never_overflows() {
    const MAX: usize = Semaphore::MAX_PERMITS;
    for sem in both(MAX) {
        let all = sem.try_acquire_many(MAX - 1).unwrap();
        let owned = Arc::clone(&sem).try_acquire_owned().unwrap();
        assert_eq!(sem.available_permits(), 0);
        let result = panic::catch_unwind(AssertUnwindSafe(|| sem.add_permits(1)));
        assert!(panic_message(&*result.unwrap_err()).contains("MAX_PERMITS"));
        assert_eq!(
            sem.available_permits(),
            0,
            "the refused add changed the count"
        );
        drop(all);
        drop(owned);
        assert_eq!(sem.available_permits(), MAX);
        // Forgotten permits no longer count: after forgetting two, two fit.
        sem.try_acquire_many(2).unwrap().forget();
        sem.add_permits(2);
        assert_eq!(sem.available_permits(), MAX);
        let result = panic::catch_unwind(AssertUnwindSafe(|| sem.add_permits(1)));
        assert!(result.is_err(), "a full semaphore took one more permit");
        // So do permits taken by forget_permits and drain_permits.
        assert_eq!(sem.forget_permits(3), 3);
        sem.add_permits(3);
        assert_eq!(sem.drain_permits(), MAX);
        sem.add_permits(MAX);
        assert_eq!(sem.available_permits(), MAX);
    }
}

/// Merging permits of one semaphore never overflows: they can never hold
/// more than `MAX_PERMITS` between them.
#[test]
fn merging_every_permit_of_a_full_semaphore() {
    const MAX: usize = Semaphore::MAX_PERMITS;
    for sem in both(MAX) {
        let mut all = sem.try_acquire_many(MAX - 1).unwrap();
        all.merge(sem.try_acquire().unwrap());
        assert_eq!((all.num_permits(), sem.available_permits()), (MAX, 0));
        drop(all);
        assert_eq!(sem.available_permits(), MAX);
    }
}

#[test]
fn owned_permit_knows_its_semaphore_and_returns_from_another_thread() {
    for sem in both(3) {
        let owned = Arc::clone(&sem).try_acquire_many_owned(2).unwrap();
        assert!(Arc::ptr_eq(owned.semaphore(), &sem));
        let other = Arc::new(Semaphore::new(2));
        assert!(!Arc::ptr_eq(owned.semaphore(), &other));
        assert_eq!(sem.available_permits(), 1);

        let moved = run_thread(move || {
            let n = owned.num_permits();
            drop(owned);
            n
        });
        assert_eq!(moved.unwrap(), 2);
        assert_eq!(sem.available_permits(), 3);

        // The permit keeps the semaphore alive after every other handle is gone.
        let permit = Arc::clone(&sem).try_acquire_owned().unwrap();
        let weak = Arc::downgrade(&sem);
        drop(sem);
        assert_eq!(permit.semaphore().available_permits(), 2);
        let sem = Arc::clone(permit.semaphore());
        drop(permit);
        assert_eq!(sem.available_permits(), 3);
        drop(sem);
        assert!(
            weak.upgrade().is_none(),
            "the last permit did not release the semaphore"
        );
    }
}

#[test]
fn owned_permit_is_static_and_permits_are_send_and_sync() {
    fn send_sync_static<T: Send + Sync + 'static>(_: &T) {}
    fn send_sync<T: Send + Sync>(_: &T) {}
    let sem = Arc::new(Semaphore::new(2));
    let owned: OwnedSemaphorePermit = Arc::clone(&sem).try_acquire_owned().unwrap();
    send_sync_static(&owned);
    let borrowed = sem.try_acquire().unwrap();
    send_sync(&borrowed);
    // A borrowed permit can be shared with and moved into scoped threads.
    thread::scope(|s| {
        let shared = &borrowed;
        s.spawn(move || assert_eq!(shared.num_permits(), 1))
            .join()
            .unwrap();
    });
    thread::scope(|s| {
        s.spawn(move || drop(borrowed)).join().unwrap();
    });
    assert_eq!(sem.available_permits(), 1);
    drop(owned);
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn permits_are_debug() {
    let sem = Arc::new(Semaphore::new(4));
    let borrowed = sem.try_acquire_many(3).unwrap();
    let owned = Arc::clone(&sem).try_acquire_owned().unwrap();
    let b = format!("{borrowed:?}");
    let o = format!("{owned:?}");
    assert!(
        b.starts_with("SemaphorePermit") && b.contains("permits: 3") && b.contains("Semaphore {"),
        "{b}"
    );
    assert!(
        o.starts_with("OwnedSemaphorePermit")
            && o.contains("permits: 1")
            && o.contains("Semaphore {"),
        "{o}"
    );
}
