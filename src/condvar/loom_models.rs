//! Loom models of the condition queue on the mutex: a wait against
//! `notify_one`, a timed wait whose deadline races the notify, and
//! `notify_all` to two waiters, each with the notify made while holding the
//! mutex or after letting it go. No notify may be lost: one that found a
//! waiter wakes a waiter, which then re-acquires. And no notifier may use
//! the mutex once the waiters it notified could have returned (one waiter
//! under `notify_one`, two under `notify_all`), since their owner may then
//! drop it (N3). Run with `bash scripts/loom.sh`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loom::cell::UnsafeCell;
use loom::thread;

use crate::mutex::{Lock, UNLOCKED};
use crate::queue::{self, Condition, Waited};

/// Runs `f` under loom with at most `bound` preemptions per execution
/// (lowered further by `LOOM_MAX_PREEMPTIONS` if that is set and smaller).
fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    let bound = builder.preemption_bound.map_or(bound, |env| env.min(bound));
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// A mutex, a flag it guards, and a condition queue on it.
struct Shared<const FAIR: bool> {
    lock: Lock<FAIR>,
    /// Guarded by `lock`: a read or write without it is a loom causality
    /// violation.
    flag: UnsafeCell<bool>,
    cond: Condition,
}

// SAFETY: `flag` is only touched while `lock` is held; loom checks that.
unsafe impl<const FAIR: bool> Sync for Shared<FAIR> {}

impl<const FAIR: bool> Shared<FAIR> {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            lock: Lock::new(),
            flag: UnsafeCell::new(false),
            cond: Condition::new(),
        })
    }

    fn flag(&self) -> bool {
        // SAFETY: called with `lock` held.
        self.flag.with(|f| unsafe { *f })
    }

    fn set_flag(&self) {
        // SAFETY: called with `lock` held.
        self.flag.with_mut(|f| unsafe { *f = true });
    }

    /// Waits with the lock held; returns holding it again.
    fn wait(&self, deadline: Option<Instant>) -> Waited {
        // SAFETY: the caller holds `lock`, which outlives the call.
        let (waited, woke) = unsafe { self.cond.wait(self.lock.bound(), deadline) };
        assert!(woke.is_ok(), "no task waits in these models");
        waited
    }

    fn unlock(&self) {
        // SAFETY: the caller holds `lock`.
        unsafe { self.lock.unlock_with(UNLOCKED) };
    }

    fn assert_free(&self) {
        let s = self.lock.sync.state();
        assert_eq!(
            queue::value_of(s) & UNLOCKED,
            UNLOCKED,
            "the lock was left held"
        );
        assert_eq!(queue::waiters_of(s), 0, "a waiter is still counted");
        assert_eq!(
            self.lock.sync.live_nodes(),
            0,
            "a queue node outlived its waiter"
        );
    }
}

/// The classic handshake: a waiter waits while the flag is clear; main sets
/// it and notifies, holding the lock (`under_lock`) or after releasing it.
/// A notify that finds the waiter must wake it; one that comes first is
/// covered by the flag. Notifying after the unlock transfers the waiter to
/// a free lock, so the notifier must wake it itself. Bound 3 (under a
/// second): one preemption lets the waiter queue before the notify, one
/// more puts the notify between the transfer's arming and its re-check,
/// and a third a release between the two.
fn handshake<const FAIR: bool>(under_lock: bool) {
    check(3, move || {
        let s = Shared::<FAIR>::new();
        let waiter = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                s.lock.lock();
                while !s.flag() {
                    assert_eq!(s.wait(None), Waited::Notified);
                }
                s.unlock();
            })
        };
        s.lock.lock();
        s.set_flag();
        if under_lock {
            s.cond.notify_one();
            s.unlock();
        } else {
            s.unlock();
            s.cond.notify_one();
        }
        waiter.join().unwrap();
        s.assert_free();
    });
}

#[test]
fn notify_one_under_lock_nonfair() {
    handshake::<false>(true);
}

#[test]
fn notify_one_after_unlock_nonfair() {
    handshake::<false>(false);
}

#[test]
fn notify_one_after_unlock_fair() {
    handshake::<true>(false);
}

/// A timed wait whose deadline races the notify (under loom the park may
/// time out at any moment). Whatever the order, the waiter returns holding
/// the lock, and a notify that found it reports it notified: a notify is
/// never lost to a timeout. Bound 3, as `handshake`.
#[test]
fn timed_wait_races_notify() {
    check(3, || {
        let s = Shared::<false>::new();
        let waiter = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                s.lock.lock();
                let waited = if s.flag() {
                    None
                } else {
                    Some(s.wait(Some(Instant::now() + Duration::from_secs(1))))
                };
                // Holding the lock again, whatever happened.
                let flag = s.flag();
                s.unlock();
                (waited, flag)
            })
        };
        s.lock.lock();
        s.set_flag();
        let found = s.cond.notify_one();
        s.unlock();
        let (waited, _) = waiter.join().unwrap();
        if found {
            assert_eq!(
                waited,
                Some(Waited::Notified),
                "a notify that found a waiter was lost"
            );
        }
        s.assert_free();
    });
}

/// `notify_all` to two waiters, made after the unlock: both are
/// transferred, one to a free lock, and both return. Bound 2 (5 s) found a
/// lost wake-up in the first version: a release through a transferred
/// node's new predecessor woke its owner before the transfer was done, and
/// the owner slept again (`claimed_wake_dropped`). Bound 3 passes too, in
/// 200 s, more than CI gives one model.
#[test]
fn notify_all_two_waiters() {
    check(2, || {
        let s = Shared::<true>::new();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    s.lock.lock();
                    while !s.flag() {
                        s.wait(None);
                    }
                    s.unlock();
                })
            })
            .collect();
        s.lock.lock();
        s.set_flag();
        s.unlock();
        s.cond.notify_all();
        for w in waiters {
            w.join().unwrap();
        }
        s.assert_free();
    });
}

/// A notify whose transfer links the waiter behind a timed sync waiter that
/// may give up at any moment: main holds the lock while `timed` queues with
/// a deadline, and notifies `waiter` before unlocking. The transfer may
/// skip and retire the leaving node (R2, on the owner's behalf) or arm it
/// and retry; the leaving node may wake the transferred one before the
/// transfer is done. Bound 2.
#[test]
fn transfer_behind_a_leaving_waiter() {
    check(2, || {
        let s = Shared::<false>::new();
        let waiter = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                s.lock.lock();
                while !s.flag() {
                    s.wait(None);
                }
                s.unlock();
            })
        };
        let timed = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                if s.lock
                    .try_lock_until(Instant::now() + Duration::from_secs(1))
                {
                    s.unlock();
                }
            })
        };
        s.lock.lock();
        s.set_flag();
        s.cond.notify_one();
        s.unlock();
        waiter.join().unwrap();
        timed.join().unwrap();
        s.assert_free();
    });
}

/// The notifier must be done with the mutex before the waiter can return:
/// `notify_one` borrows only the condition, so the waiter's owner may drop
/// the mutex as soon as `wait` returns. The waiter marks the mutex dropped
/// (`loom_drop`) right after its unlock; the notify comes after main's
/// unlock, and any use of the mutex by the transfer that could follow the
/// waiter's return is a causality violation. The wait is timed, so a
/// waiter whose deadline passes after the claim runs on as soon as it sees
/// `transferred`, without waiting for a wake-up. Bound 2.
#[test]
fn notifier_is_done_before_the_waiter_returns() {
    check(2, || {
        let s = Shared::<false>::new();
        let waiter = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                s.lock.lock();
                // One timed wait (a timeout may fire at any moment under
                // loom, so a loop of them would never end), then untimed.
                if !s.flag() {
                    s.wait(Some(Instant::now() + Duration::from_secs(1)));
                }
                while !s.flag() {
                    s.wait(None);
                }
                s.unlock();
                s.lock.sync.loom_drop();
            })
        };
        s.lock.lock();
        s.set_flag();
        s.unlock();
        s.cond.notify_one();
        waiter.join().unwrap();
    });
}

/// The notifier of a `notify_all` must be done with the mutex before the
/// last of its waiters returns: each later waiter borrows the mutex only
/// until it sees its own node transferred, so once both have returned the
/// owner may drop it. Two waiters, untimed; whichever returns second marks
/// the mutex dropped (`loom_drop`) right after its unlock, and main
/// notifies after its own unlock. A waiter released through its new
/// predecessor (the first waiter's unlock) can run before the notifier has
/// finished transferring it, so any use of the mutex by the transfer after
/// that waiter could return is a causality violation. Bound 2.
#[test]
fn notify_all_is_done_before_the_last_waiter_returns() {
    check(2, || {
        let s = Shared::<false>::new();
        let returned = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (s, returned) = (Arc::clone(&s), Arc::clone(&returned));
                thread::spawn(move || {
                    s.lock.lock();
                    while !s.flag() {
                        s.wait(None);
                    }
                    s.unlock();
                    if returned.fetch_add(1, std::sync::atomic::Ordering::AcqRel) == 1 {
                        s.lock.sync.loom_drop();
                    }
                })
            })
            .collect();
        s.lock.lock();
        s.set_flag();
        s.unlock();
        s.cond.notify_all();
        for w in waiters {
            w.join().unwrap();
        }
    });
}
