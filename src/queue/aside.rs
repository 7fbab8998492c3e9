//! Waiting aside: threads that a policy lets sleep outside the queue, on
//! the synchronizer's own keys (K3 in `park.rs`), and the releases that
//! wake them. Two kinds, both the read-write lock's (`rwlock.rs`):
//!
//! * **the one aside** (`park_aside`): at most one thread, woken alone when
//!   a release's value answers [`Policy::release_wakes_aside`]: the
//!   nonfair lock's claimant waiting for the last reader to leave (W4);
//! * **the crowd aside** (`park_crowd`): any number of threads, woken all
//!   at once when a release's value carries a flag that
//!   [`Policy::release_wakes_crowd`] names: the nonfair lock's reads that
//!   a writer turned away (W6). The flag lives in the value, so a release
//!   learns from its own RMW whether anyone may sleep there.
//!
//! Every change that can open the value to them asks both hooks after its
//! RMW (`wake_aside_after`): a release, a give-back (O3) and a change
//! through `update_value_releasing`. They run after the RMW, so a sleeper's
//! `validate` (under the key's bucket lock) or its next look sees the new
//! value (K2). No outside code runs here (O1): the unparks only wake
//! threads.

use super::policy::Policy;
use super::state::value_of;
use super::RawSync;
use crate::loom::{AtomicU16, Ordering::*};
use crate::park::{unpark_all, unpark_one};

impl RawSync {
    /// Parks the calling thread aside, outside the queue, on this
    /// synchronizer's first key aside (K3 in `park.rs`), unless `validate` (given
    /// the value, read under the key's bucket lock: K2) returns `false`;
    /// until a release whose policy asks for it
    /// ([`Policy::release_wakes_aside`]) wakes it, or until `deadline`.
    /// At most one thread may sleep aside at a time (the policy's own
    /// invariant says which: W4 in `rwlock.rs`); wake-ups may be spurious.
    pub(crate) fn park_aside(
        &self,
        validate: impl FnOnce(u32) -> bool,
        deadline: Option<std::time::Instant>,
    ) -> crate::park::Parked {
        crate::park::park(
            self.aside_key(),
            || validate(value_of(self.state.load(Acquire))),
            deadline,
        )
    }

    /// Parks the calling thread in the crowd aside, outside the queue, on
    /// this synchronizer's second key (K3 in `park.rs`), unless `validate`
    /// (given the value, read under the key's bucket lock: K2) returns
    /// `false`; until a release whose policy names the crowd's flag in its
    /// value ([`Policy::release_wakes_crowd`]) clears it and wakes the whole
    /// crowd, or until `deadline`. Any number of threads may sleep there. The
    /// caller sets the flag before it parks and `validate` tests it, so a
    /// release that clears it first fails the check (K2). Wake-ups may be
    /// spurious. Counted while it parks ([`RawSync::crowd_len`]).
    pub(crate) fn park_crowd(
        &self,
        validate: impl FnOnce(u32) -> bool,
        deadline: Option<std::time::Instant>,
    ) -> crate::park::Parked {
        let counted = self.crowd.enter();
        let parked = crate::park::park(
            self.crowd_key(),
            || validate(value_of(self.state.load(Acquire))),
            deadline,
        );
        self.crowd.leave(counted);
        parked
    }

    /// Asks the policy whether a release (or a give-back, or a change
    /// through `update_value_releasing`) that left the value at `after`
    /// must wake the thread aside or the crowd aside, and wakes them. Runs
    /// after the release's RMW, so that a sleeper's `validate` or its next
    /// look sees the new value (K2).
    #[inline]
    pub(super) fn wake_aside_after<P: Policy + ?Sized>(&self, policy: &P, after: u32) {
        if policy.release_wakes_aside(after) {
            self.unpark_aside();
        }
        let flag = policy.release_wakes_crowd(after);
        if flag != 0 {
            self.wake_crowd(flag);
        }
    }

    /// Wakes the thread parked aside, if there is one.
    #[cold]
    #[inline(never)]
    fn unpark_aside(&self) {
        unpark_one(self.aside_key());
    }

    /// Clears the crowd's `flag` and, if this call cleared it, wakes every
    /// thread in the crowd aside. Of two releases that both saw the flag,
    /// one clears it and wakes; a sleeper that set it again after the first
    /// clear parked after it, so the flag is its own wake request, and the
    /// second release's wake is for that one (or nobody).
    #[cold]
    #[inline(never)]
    fn wake_crowd(&self, flag: u32) {
        if self
            .fetch_update_value(|value| (value & flag != 0).then_some(value & !flag))
            .is_ok()
        {
            unpark_all(self.crowd_key());
        }
    }

    /// K3: one past this synchronizer's address, for the one thread aside.
    /// Odd, so no node's key (nodes are aligned), and inside this
    /// synchronizer's own bytes, so no other object's address either.
    fn aside_key(&self) -> usize {
        self as *const Self as usize + 1
    }

    /// K3: three past this synchronizer's address, for the crowd aside;
    /// odd and inside its own bytes, as `aside_key`.
    fn crowd_key(&self) -> usize {
        self as *const Self as usize + 3
    }

    /// How many threads are in the crowd aside now (a snapshot, up to
    /// `u16::MAX`): they count from just before their park's check until
    /// it returns.
    pub(crate) fn crowd_len(&self) -> u32 {
        self.crowd.get()
    }
}

/// How many threads sleep in the crowd aside, for `queue_length` (and
/// the models' waits) alone: no protocol step reads it, so its updates are
/// relaxed, and it stops at `u16::MAX` (two bytes fit beside `RawSync`'s
/// other fields in its 64).
pub(crate) struct CrowdCount {
    threads: AtomicU16,
}

impl CrowdCount {
    /// Nobody in the crowd.
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new() -> Self {
        CrowdCount {
            threads: AtomicU16::new(0),
        }
    }

    /// Nobody in the crowd (loom's atomics have no `const fn new`).
    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        CrowdCount {
            threads: AtomicU16::new(0),
        }
    }

    /// Counts the caller in, unless the count is full; returns whether it
    /// counted, for [`CrowdCount::leave`].
    #[inline]
    fn enter(&self) -> bool {
        self.threads
            .fetch_update(Relaxed, Relaxed, |n| n.checked_add(1))
            .is_ok()
    }

    /// Counts the caller out, if [`CrowdCount::enter`] counted it in.
    #[inline]
    fn leave(&self, counted: bool) {
        if counted {
            self.threads.fetch_sub(1, Relaxed);
        }
    }

    fn get(&self) -> u32 {
        u32::from(self.threads.load(Relaxed))
    }
}
