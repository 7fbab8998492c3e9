//! The nonfair lock's waits outside the queue, both on the lock's keys
//! aside (K3 in `park.rs`): a writer's claim on the readers inside, which
//! it spins and then sleeps out (W4), and the reads a writer turns away,
//! which spin and then sleep in the crowd until a release opens reads
//! again (W6). The invariants are `rwlock.rs`'s.

use std::time::Instant;

use super::{free_of, writer_in, RwCore, RwPolicy, CLAIMED, FREE, HANDOFF, PARKED, READERS_ASIDE};
use crate::park::{deadline_passed, Parked};
use crate::queue::{self, TryAcquire};
use crate::spin::{PollSpin, Spin};

impl<const FAIR: bool> RwCore<FAIR> {
    /// A nonfair read's wait (W6): while a writer holds or claims the lock,
    /// spin, then sleep in the crowd aside until a release opens reads
    /// again, and try again; refused for another reason (a writer queued
    /// next, a hand-off), queue. Returns `false`, holding nothing, once
    /// `deadline` passed.
    ///
    /// # Panics
    ///
    /// If the read count reached its limit meanwhile, as `read` does
    /// before it waits.
    #[inline(never)]
    pub(super) fn read_aside(&self, deadline: Option<Instant>) -> bool {
        let policy = &RwPolicy::<FAIR, false>;
        loop {
            let spin = Spin::new();
            loop {
                if self.sync.try_acquire_shared(policy, 1) == TryAcquire::Acquired {
                    return true;
                }
                if !writer_in(queue::value_of(self.sync.state())) {
                    self.check_read_limit();
                    return self.sync.acquire_shared(policy, 1, deadline).is_ok();
                }
                if deadline.is_some_and(deadline_passed) {
                    return false;
                }
                if !spin.spin() {
                    break;
                }
            }
            // K2: a release that opens reads after this CAS sees the flag and
            // wakes us; one before it fails the CAS, or the park's check.
            let flagged = self
                .sync
                .fetch_update_value(|value| writer_in(value).then_some(value | READERS_ASIDE));
            if flagged.is_ok() {
                let parked = self.sync.park_crowd(
                    |value| writer_in(value) && value & READERS_ASIDE != 0,
                    deadline,
                );
                if parked == Parked::TimedOut {
                    return false;
                }
            }
        }
    }

    /// A nonfair writer's wait for the readers inside to leave (W4): claim
    /// the lock, queue or not, spin briefly, then sleep aside with the
    /// claim kept until the last reader leaves, and take the lock. Returns
    /// `false`, holding and claiming nothing, if no reader was inside, or
    /// the lock was claimed or handed off already (the caller goes the
    /// usual way); or once `deadline` passed with readers still inside, or
    /// a give-back restored a hand-off beside the claim (O3), either of
    /// which drops the claim (the caller queues).
    #[inline(never)]
    pub(super) fn claim_write(&self, deadline: Option<Instant>) -> bool {
        if self
            .sync
            .fetch_update_value(|value| {
                let free = free_of(value);
                (value & (CLAIMED | HANDOFF) == 0 && free != 0 && free != FREE)
                    .then_some(value | CLAIMED)
            })
            .is_err()
        {
            return false;
        }
        let spin = PollSpin::new();
        loop {
            // A free lock with nothing but our claim on it (and the crowd's
            // flag, which stays: W6) is ours; one with a hand-off restored
            // beside the claim (a give-back, O3) is the first waiter's.
            if self
                .sync
                .fetch_update_value(|value| {
                    (value & !READERS_ASIDE == FREE | CLAIMED).then_some(value & READERS_ASIDE)
                })
                .is_ok()
            {
                return true;
            }
            if deadline.is_some_and(deadline_passed) {
                return self.drop_claim();
            }
            if !spin.spin() {
                break;
            }
        }
        // The readers stay: sleep aside until the last one leaves. `PARKED`
        // asks its release to wake us (`release_wakes_aside`); it is set
        // only beside our claim, and the claimant alone clears it.
        loop {
            let looked = self.sync.fetch_update_value(|value| {
                if value & !(PARKED | READERS_ASIDE) == FREE | CLAIMED {
                    Some(value & READERS_ASIDE)
                } else if value & HANDOFF == 0 {
                    Some(value | PARKED)
                } else {
                    None // the first waiter's: drop the claim
                }
            });
            match looked {
                Ok(old) if old & !(PARKED | READERS_ASIDE) == FREE | CLAIMED => return true,
                Ok(_) => {}
                Err(_) => break,
            }
            // K2: a release that empties the lock or restores a hand-off
            // after this check wakes us; one before it fails the check.
            let parked = self.sync.park_aside(
                |value| free_of(value) != FREE && value & HANDOFF == 0,
                deadline,
            );
            if parked == Parked::TimedOut {
                break;
            }
        }
        self.drop_claim()
    }

    /// The claimant's give-up (W4): take the lock if it came free
    /// meanwhile, else drop the claim (`PARKED` with it), in one CAS; returns
    /// whether it took. A dropped claim may admit waiters that it turned
    /// away (readers queued under it, or the one a restored hand-off is
    /// for), and their releases skipped the queue, so the drop goes through
    /// the queue as a release does; and it wakes the reads it turned aside
    /// (W6: `release_wakes_crowd`, asked by `update_value_releasing`).
    fn drop_claim(&self) -> bool {
        let took = |value: u32| value & !(PARKED | READERS_ASIDE) == FREE | CLAIMED;
        let old = self
            .sync
            .update_value_releasing(&RwPolicy::<FAIR, false>, |value| {
                if took(value) {
                    (value & READERS_ASIDE, false)
                } else {
                    (value & !(CLAIMED | PARKED), true)
                }
            });
        assert!(
            old & CLAIMED != 0,
            "aqs: a claimed write was taken by another"
        );
        took(old)
    }
}
