//! Behaviour of `lock_all` and `try_lock_all_*`: all or nothing, one global
//! order (overlapping sets in opposite orders never deadlock), timeouts
//! that leave nothing held, and sets that name a lock twice. Every blocking
//! wait is bounded.

#![cfg(not(aqs_loom))]

mod common;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use aqs::{
    lock_all, try_lock_all_for, try_lock_all_until, FairMutex, FairRwLock, Mutex, RwLock, Write,
};
use common::join_bounded;

#[test]
fn guards_come_back_in_the_sets_order_and_drop_together() {
    let (a, b, c, d) = (
        Mutex::new(1),
        FairMutex::new(2),
        RwLock::new(3),
        FairRwLock::new(4),
    );
    let mut all = lock_all((&a, &b, Write(&c), Write(&d)));
    assert_eq!((*all.0, *all.1, *all.2, *all.3), (1, 2, 3, 4));
    *all.2 += 10;
    assert!(a.try_lock().is_none() && b.try_lock().is_none());
    assert!(c.try_read().is_none() && d.try_read().is_none());
    drop(all);
    assert!(a.try_lock().is_some() && b.try_lock().is_some());
    assert_eq!(*c.read(), 13);
    assert!(d.try_write().is_some());
}

#[test]
fn overlapping_sets_in_opposite_orders_never_deadlock() {
    let rounds = if cfg!(miri) { 20 } else { 5_000 };
    let locks = Arc::new([Mutex::new(0u64), Mutex::new(0), Mutex::new(0)]);
    let threads: Vec<_> = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]]
        .into_iter()
        .map(|order| {
            let locks = Arc::clone(&locks);
            thread::spawn(move || {
                for _ in 0..rounds {
                    let mut g = lock_all(order.map(|i| &locks[i]).to_vec());
                    for x in g.iter_mut() {
                        **x += 1;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        join_bounded(t);
    }
    for l in locks.iter() {
        assert_eq!(*l.lock(), 4 * rounds);
    }
}

#[test]
fn a_timeout_releases_every_lock_taken() {
    let (a, b, c) = (Mutex::new(()), FairMutex::new(()), RwLock::new(()));
    let held = c.read(); // the write side of `c` cannot be had
    let soon = Instant::now() + Duration::from_millis(10);
    assert!(try_lock_all_until((&a, &b, Write(&c)), soon).is_none());
    assert!(a.try_lock().is_some(), "a was released");
    assert!(b.try_lock().is_some(), "b was released");
    drop(held);
    assert!(try_lock_all_for((&a, &b, Write(&c)), Duration::from_secs(10)).is_some());
}

#[test]
fn a_lock_freed_before_the_deadline_is_taken() {
    let locks = Arc::new((Mutex::new(0), FairMutex::new(0)));
    let held = locks.1.lock();
    let taker = {
        let locks = Arc::clone(&locks);
        thread::spawn(move || {
            let got = try_lock_all_for((&locks.0, &locks.1), Duration::from_secs(10));
            got.map(|mut g| {
                *g.0 += 1;
                *g.1 += 1;
            })
            .is_some()
        })
    };
    thread::sleep(Duration::from_millis(5));
    drop(held);
    assert!(join_bounded(taker));
    assert_eq!((*locks.0.lock(), *locks.1.lock()), (1, 1));
}

#[test]
fn a_set_naming_one_lock_twice_panics_and_holds_nothing() {
    let a = Mutex::new(());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(lock_all((&a, &a)))));
    let message = *r
        .expect_err("a duplicate must panic")
        .downcast::<&str>()
        .unwrap();
    assert!(message.contains("names one lock twice"), "{message}");
    assert!(a.try_lock().is_some(), "nothing was taken");
}

#[test]
fn into_inner_gives_the_guards_back_one_by_one() {
    let (a, b) = (Mutex::new(1), Mutex::new(2));
    let (ga, gb) = lock_all((&a, &b)).into_inner();
    drop(gb);
    assert!(b.try_lock().is_some());
    assert!(a.try_lock().is_none());
    drop(ga);
}
