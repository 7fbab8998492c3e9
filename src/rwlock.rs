//! Read-write locks: [`RawRwLock`] (writers may barge, readers defer to a
//! queued writer) and [`RawFairRwLock`] (strict FIFO), both modes of the
//! core in one queue, and the `lock_api` types over them.
//!
//! The value is the lock's free capacity, so that every acquire takes and
//! every release adds (the core's `release_adds`):
//!
//! | value (without `HANDOFF`, `CLAIMED`, `PARKED` and `READERS_ASIDE`) | meaning |
//! |---|---|
//! | `FREE` (2^27) | nobody holds the lock |
//! | `FREE - r`, 1 ≤ r ≤ `MAX_READERS` | `r` read holds (recursive ones count) |
//! | 0 | a writer holds it |
//!
//! A read takes 1 and a write takes all of `FREE`; their releases add the
//! same back. A queued batch of readers wakes together through shared
//! propagation, and the core stops propagation at the next queued writer.
//!
//! Invariants (cited as W1 to W6):
//!
//! * **W1, one writer or readers.** A write acquire needs the value at
//!   `FREE` and leaves 0; a read acquire needs at least 2 (not write-held,
//!   not saturated) and takes 1. So readers never reach 0, and a writer
//!   excludes everyone.
//! * **W2, a handed-off lock is the first waiter's.** `unlock_exclusive_fair`
//!   releases with `HANDOFF` (2^31) beside `FREE`. While it is set and
//!   anyone is queued, no arrival acquires, reads (recursive ones too)
//!   included, whoever sits first in the queue (a reader that timed out and
//!   is leaving may, with the writer it was handed to behind it); every
//!   acquire clears it. It is
//!   set by a writer's release, when the value is 0, or given back with
//!   what a first waiter took when a waker it woke panicked (O3 in
//!   `queue/mod.rs`), so it is never added twice, and the value without a
//!   claim's bits (W4) and the crowd's flag (W6) never passes
//!   `FREE | HANDOFF`.
//! * **W3, only holders unlock** (`lock_api`'s contract: unlocks are
//!   `unsafe`). Debug builds check the mode before changing anything.
//! * **W4, a claimed write is the claimant's.** A nonfair `write` (timed or
//!   not; a task's write never claims) that finds readers inside, no claim and
//!   no hand-off sets `CLAIMED` (2^30) beside the value, queue or not, and
//!   waits for the last reader to leave instead of queueing (parking_lot's
//!   writer bit): it spins, then sleeps aside, outside the queue
//!   (`RawSync::park_aside`), with `PARKED` (2^29) set beside the claim, and a
//!   release that empties the lock or restores a hand-off beside `PARKED`
//!   wakes it (`release_wakes_aside`). Both bits stay through a recursive read
//!   admitted under the claim. While the claim is set, no hook grants anything
//!   but a recursive read among readers already inside (arriving, or queued,
//!   where a recursive read keeps its policy): other reads, writes, arrivals
//!   and queued waiters alike refuse, and a release does not go through the
//!   queue (`release_may_admit`), since only the claimant may take the lock it
//!   frees. Only the claimant clears the bits: by taking the lock once the
//!   value is `FREE | CLAIMED` (with or without `PARKED`, and keeping the
//!   crowd's flag, W6), or, when its
//!   deadline passes first or it finds a hand-off restored, by one CAS that
//!   takes the lock if it is so by then and otherwise drops the claim. An
//!   untimed claimant never drops it otherwise. A dropped claim may admit
//!   waiters it turned away (readers queued under it, with readers still
//!   inside), and the releases meanwhile skipped the queue, so the drop goes
//!   through the queue as a release does (`RawSync::update_value_releasing`);
//!   after it, releases go through the queue again. So no queued waiter misses
//!   its wake-up. A give-back (O3 in `queue/mod.rs`) may restore a hand-off
//!   (W2) beside a claim; the claimant does not take the lock while it stands:
//!   the give-back wakes it if it sleeps (a reader inside may be queued behind
//!   the first waiter, reading recursively, so it must not sleep on), and its
//!   drop wakes the first waiter, whose hand-off it is. A claim passes queued
//!   waiters, as a nonfair writer's arrival does; the fair lock never claims.
//!   `is_locked` and `read_count` read a claimed lock by its holds alone.
//! * **W5, a read unlock that leaves readers inside wakes nobody.** A
//!   queued writer needs the value at `FREE`. A queued reader first in line
//!   (which the hook asks with `others_queued` false) is refused only by a
//!   write hold, a claim (W4) or the read limit. So a release from a value
//!   that admitted reads (at least 2 free, no claim, no hand-off) to one
//!   that still has readers inside and no hand-off lets no waiter in: it
//!   skips the queue (`release_may_admit`), as the JDK's read unlock wakes
//!   nobody until the read count reaches 0. That covers read unlocks and a
//!   reader's give-back (O3); both only add to the value and never touch
//!   its flags. A queued writer therefore sleeps until the last reader
//!   leaves, instead of waking at every read unlock to find readers still
//!   inside. Every release that can open the lock to a waiter still goes
//!   through as the discipline says (a write unlock, a downgrade, a dropped
//!   claim, a release from the read limit or with a hand-off pending, a
//!   give-back that restores one); a release under a claim skips the queue
//!   as W4 says.
//! * **W6, a read turned away by a writer waits aside and wakes with the
//!   others.** A nonfair read (timed or not; not a recursive one, not a
//!   task's) that finds the lock write-held or claimed (W4) does not queue:
//!   it spins, then sets `READERS_ASIDE` (2^28) beside the value, in a CAS
//!   that requires a writer still in, and sleeps in the crowd aside
//!   (`RawSync::park_crowd`) while a writer is in and the flag set (K2). Any
//!   release that leaves the value open to reads with the flag set (at least
//!   2 free and no claim: a write unlock, a downgrade, a dropped claim, a
//!   give-back) clears the flag and wakes the whole crowd at once
//!   (`release_wakes_crowd`), as parking_lot's write unlock wakes its
//!   readers together. Between its RMW and the clear, a writer may take the
//!   lock again; the crowd then wakes to find it held and waits again, so no
//!   reader sleeps through an open lock. Every take and release keeps the
//!   flag (an acquire's new value carries it, a release only adds), so only
//!   that clear removes it. A woken read that finds no writer in but is
//!   refused (a queued writer next, a hand-off) queues as before. A timed
//!   read that times out aside leaves the flag, so the flag says only that
//!   a reader may sleep there: it costs a later release one wake of nobody.
//!   Every other test reads the value without the flag (`free_of`), except
//!   the write's idle fast path (`try_take_idle`), which compares the whole
//!   value and so takes the hook's path when the flag is set. A crowd
//!   reader counts in `queue_length`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::queue::Acquired;
use crate::queue::{self, Discipline, Policy, RawSync, TryAcquire};

/// The value of an unheld lock: a write takes all of it, a read one unit.
const FREE: u32 = 1 << 27;
/// Set beside the value by a read that a writer turned away, before it
/// sleeps in the crowd aside (W6).
const READERS_ASIDE: u32 = 1 << 28;
/// Set beside `CLAIMED` by a claimant that sleeps aside until the last
/// reader leaves (W4).
const PARKED: u32 = 1 << 29;
/// Set beside the value by a nonfair writer that waits for the readers
/// inside to leave (W4).
const CLAIMED: u32 = 1 << 30;
/// Set beside `FREE` by a fair write unlock (W2).
const HANDOFF: u32 = 1 << 31;
/// The value without its flags: `FREE` less the holds.
#[inline]
const fn free_of(value: u32) -> u32 {
    value & !(HANDOFF | CLAIMED | PARKED | READERS_ASIDE)
}
/// Whether a writer holds the lock or claims it (W4): what turns a read
/// aside (W6).
#[inline]
const fn writer_in(value: u32) -> bool {
    free_of(value) == 0 || value & CLAIMED != 0
}
/// The most read holds at once, recursive ones included: a read needs a
/// value of at least 2, so that readers never bring it to the writer's 0.
pub(crate) const MAX_READERS: u32 = FREE - 1;

/// The read-write lock's AQS hooks. `FAIR` is the discipline; a
/// `RECURSIVE` read is taken whenever no writer holds, queue or not.
pub(crate) struct RwPolicy<const FAIR: bool, const RECURSIVE: bool>;

impl<const FAIR: bool, const RECURSIVE: bool> Policy for RwPolicy<FAIR, RECURSIVE> {
    /// `others_queued` is, for the nonfair lock, whether a writer is
    /// queued next in line (`shared_arrivals_defer_to_exclusive`).
    #[inline]
    fn try_acquire_shared(&self, value: u32, _arg: u32, others_queued: bool) -> Option<Acquired> {
        let free = free_of(value);
        let claimed = value & CLAIMED != 0;
        // W2: a handed-off lock is the first waiter's, recursive reads
        // included (`others_queued` is then whether anyone is queued). W4:
        // a claimed lock refuses reads, except recursive ones among readers.
        if free < 2
            || (others_queued && (!RECURSIVE || value & HANDOFF != 0))
            || (claimed && (!RECURSIVE || free == FREE))
        {
            return None;
        }
        Some(Acquired {
            // W4: the claim's bits stay, `PARKED` too: the claimant
            // sleeps until the last of these readers leaves. W6: the
            // crowd's flag stays too.
            value: (free - 1) | (value & (CLAIMED | PARKED | READERS_ASIDE)),
            propagate: free > 2 && !claimed, // another read fits after this one
        })
    }

    #[inline]
    fn try_release_shared(&self, value: u32, arg: u32) -> u32 {
        value + arg
    }

    #[inline]
    fn try_acquire_exclusive(&self, value: u32, _arg: u32, others_queued: bool) -> Option<u32> {
        let handed_off = value & HANDOFF != 0;
        // W4: a claimed lock is only the claimant's, and it takes it itself.
        if value & !(HANDOFF | READERS_ASIDE) != FREE || (others_queued && (FAIR || handed_off)) {
            return None;
        }
        // W6: the crowd's flag stays; this write's unlock wakes it.
        Some(value & READERS_ASIDE)
    }

    #[inline]
    fn try_release_exclusive(&self, value: u32, arg: u32) -> u32 {
        value + arg
    }

    /// Every release adds back what its acquire took (W1, W2).
    #[inline]
    fn release_adds(&self) -> bool {
        true
    }

    #[inline]
    fn discipline(&self) -> Discipline {
        if FAIR {
            Discipline::Fifo
        } else {
            Discipline::Barging
        }
    }

    /// A writer that finds readers inside and cannot claim (W4: the fair
    /// lock, a lock claimed or handed off already, or a claimant that gave
    /// its claim up; a task's write never spins) queues at once: until it
    /// is queued, arriving readers do not defer to it, so its
    /// spin would only watch new readers come in (and a spin's late yields
    /// would hand the CPU to them).
    #[inline]
    fn arrival_may_spin(&self, mode: queue::Mode, value: u32) -> bool {
        let free = free_of(value);
        mode == queue::Mode::Shared || free == 0 || free == FREE
    }

    /// A FIFO read defers to anyone queued (the hook refuses on
    /// `others_queued`); a nonfair one only to a queued writer next in
    /// line, including one behind readers already woken (not one behind a
    /// reader nobody has woken: that reader's batch goes first anyway).
    #[inline]
    fn shared_arrivals_defer_to_exclusive(&self) -> bool {
        !FAIR && !RECURSIVE
    }

    /// W2: while a hand-off is pending, an arriving read defers to anyone
    /// queued, not only to a writer seen first in line: the first node may
    /// be a reader that timed out and is leaving, with the writer the
    /// lock was handed to behind it.
    #[inline]
    fn shared_arrivals_defer_to_any(&self, value: u32) -> bool {
        value & HANDOFF != 0
    }

    /// W4: a lock freed with a claim on it is the claimant's. W5: a read
    /// unlock that leaves readers inside admits nobody.
    #[inline]
    fn release_may_admit(&self, before: u32, after: u32) -> bool {
        let reads_were_open = free_of(before) >= 2 && before & (CLAIMED | HANDOFF) == 0;
        after & CLAIMED == 0 && (free_of(after) == FREE || after & HANDOFF != 0 || !reads_were_open)
    }

    /// W4: a sleeping claimant wakes when the last reader leaves (it takes
    /// the lock) or when a give-back restores a hand-off beside its claim
    /// (it drops the claim for the first waiter).
    #[inline]
    fn release_wakes_aside(&self, after: u32) -> bool {
        !FAIR && after & PARKED != 0 && (free_of(after) == FREE || after & HANDOFF != 0)
    }

    /// W6: the reads that a writer turned away wake once reads are open
    /// again: at least 2 free and no claim.
    #[inline]
    fn release_wakes_crowd(&self, after: u32) -> u32 {
        if !FAIR && after & READERS_ASIDE != 0 && after & CLAIMED == 0 && free_of(after) >= 2 {
            READERS_ASIDE
        } else {
            0
        }
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn bad_unlock(what: &str) -> ! {
    panic!("aqs: {what} (lock_api's `unlock` contract: only a holder unlocks)")
}

#[cold]
#[inline(never)]
#[track_caller]
fn too_many_readers() -> ! {
    panic!("aqs: a read lock was taken past its limit of {MAX_READERS} holds")
}

/// The lock of both raw types, generic over the discipline.
pub(crate) struct RwCore<const FAIR: bool> {
    pub(crate) sync: RawSync,
}

impl<const FAIR: bool> RwCore<FAIR> {
    /// A free lock. A nonfair one's reads look for a queued writer, so it
    /// keeps the look's version (V3 in `queue/look.rs`).
    #[cfg(not(aqs_loom))]
    const fn new() -> Self {
        RwCore {
            sync: RawSync::with_look(FREE, !FAIR),
        }
    }

    /// A free lock (loom's atomics have no `const fn new`).
    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        RwCore {
            sync: RawSync::with_look(FREE, !FAIR),
        }
    }

    /// A lock already held by `readers` readers; for tests of the limit.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) const fn with_readers(readers: u32) -> Self {
        RwCore {
            sync: RawSync::with_look(FREE - readers, !FAIR),
        }
    }

    fn value(&self) -> u32 {
        free_of(queue::value_of(self.sync.state()))
    }

    /// Panics, changing nothing, if the read count is at its limit: a read
    /// that queued there would wait for a reader to leave, which a recursive
    /// reader never does.
    #[inline]
    fn check_read_limit(&self) {
        if self.value() == 1 {
            too_many_readers();
        }
    }

    /// A read's fast path, small enough to inline into the caller. With
    /// nobody counted in the word, it takes only the policy's grants that
    /// take one unit and keep every flag: no writer holds or claims the lock
    /// (W1, W4), no hand-off is pending (W2; the policy would grant and clear
    /// it, which is left to the usual way), and the limit is not reached.
    /// Otherwise it returns the word it saw. (No idle-state CAS, as for
    /// writes: readers usually find other readers inside.)
    #[inline]
    fn try_read_unqueued(&self) -> Result<(), u64> {
        self.sync
            .try_take_one_unqueued(|value| value & (HANDOFF | CLAIMED) == 0 && free_of(value) >= 2)
    }

    #[inline]
    pub(crate) fn read(&self, deadline: Option<Instant>) -> bool {
        match self.try_read_unqueued() {
            Ok(()) => true,
            Err(seen) => self.read_slow(seen, deadline),
        }
    }

    /// A read whose fast path failed, from the word it saw: the arrival
    /// through the policy (which defers to a queued writer, or in the fair
    /// lock to anyone queued), then the wait.
    #[inline(never)]
    fn read_slow(&self, seen: u64, deadline: Option<Instant>) -> bool {
        let policy = &RwPolicy::<FAIR, false>;
        if self.sync.try_acquire_shared_from(policy, 1, seen) == TryAcquire::Acquired {
            return true;
        }
        self.check_read_limit();
        if !FAIR {
            return self.read_aside(deadline);
        }
        self.sync.acquire_shared(policy, 1, deadline).is_ok()
    }

    #[inline]
    fn try_read(&self) -> bool {
        let seen = match self.try_read_unqueued() {
            Ok(()) => return true,
            Err(seen) => seen,
        };
        let taken = self
            .sync
            .try_acquire_shared_from(&RwPolicy::<FAIR, false>, 1, seen);
        if taken != TryAcquire::Acquired {
            self.check_read_limit();
        }
        taken == TryAcquire::Acquired
    }

    #[inline]
    fn read_recursive(&self, deadline: Option<Instant>) -> bool {
        if self.sync.try_acquire_shared(&RwPolicy::<FAIR, true>, 1) == TryAcquire::Acquired {
            return true;
        }
        self.check_read_limit();
        // Queued, a recursive read is an ordinary one. It failed on a
        // writer holding the lock or a claim with no reader inside (W4), so
        // this thread holds no read; or on a pending hand-off (W2), which
        // the first waiter, woken by the fair unlock, takes.
        self.sync
            .acquire_shared(&RwPolicy::<FAIR, true>, 1, deadline)
            .is_ok()
    }

    #[inline]
    fn try_read_recursive(&self) -> bool {
        let taken = self.sync.try_acquire_shared(&RwPolicy::<FAIR, true>, 1);
        if taken != TryAcquire::Acquired {
            self.check_read_limit();
        }
        taken == TryAcquire::Acquired
    }

    #[inline]
    pub(crate) fn write(&self, deadline: Option<Instant>) -> bool {
        if self.sync.try_take_idle(FREE, 0) || (!FAIR && self.claim_write(deadline)) {
            return true;
        }
        self.sync
            .acquire_exclusive(&RwPolicy::<FAIR, false>, FREE, deadline)
            .is_ok()
    }

    #[inline]
    fn try_write(&self) -> bool {
        self.sync.try_take_idle(FREE, 0)
            || self
                .sync
                .try_acquire_exclusive(&RwPolicy::<FAIR, false>, FREE)
                == TryAcquire::Acquired
    }

    /// # Safety
    ///
    /// The caller holds a read lock (W3).
    #[inline]
    pub(crate) unsafe fn unlock_read(&self) {
        if cfg!(debug_assertions) {
            let v = self.value();
            if v == 0 || v == FREE {
                bad_unlock("a read lock was unlocked while no reader held it");
            }
        }
        self.sync.release_shared(&RwPolicy::<FAIR, false>, 1);
    }

    /// # Safety
    ///
    /// The caller holds the write lock (W3).
    #[inline]
    pub(crate) unsafe fn unlock_write(&self, fair: bool) {
        if cfg!(debug_assertions) && self.value() != 0 {
            bad_unlock("a write lock was unlocked while no writer held it");
        }
        let release = if fair { FREE | HANDOFF } else { FREE };
        self.sync
            .release_exclusive(&RwPolicy::<FAIR, false>, release);
    }

    /// Turns the caller's write lock into a read lock: adds back all but
    /// the one unit its read keeps, and wakes queued readers through the
    /// head (a writer first in line wakes, finds readers, and sleeps again).
    ///
    /// # Safety
    ///
    /// The caller holds the write lock (W3).
    #[inline]
    pub(crate) unsafe fn downgrade(&self) {
        if cfg!(debug_assertions) && self.value() != 0 {
            bad_unlock("a write lock was downgraded while no writer held it");
        }
        self.sync.release_shared(&RwPolicy::<FAIR, false>, FREE - 1);
    }

    fn is_locked(&self) -> bool {
        self.value() != FREE
    }

    fn is_locked_exclusive(&self) -> bool {
        self.value() == 0
    }

    /// Whether a nonfair writer has claimed the lock and waits for the
    /// readers inside to leave (W4); a snapshot.
    fn write_claimed(&self) -> bool {
        queue::value_of(self.sync.state()) & CLAIMED != 0
    }

    /// The read holds now (0 while a writer holds); a snapshot.
    fn readers(&self) -> u32 {
        match self.value() {
            0 => 0,
            v => FREE - v,
        }
    }
}

fn deadline_after(timeout: Duration) -> Option<Instant> {
    // A timeout past the clock's end waits without a deadline.
    Instant::now().checked_add(timeout)
}

macro_rules! raw_rwlock {
    ($(#[$doc:meta])* $name:ident, $fair:literal) => {
        $(#[$doc])*
        pub struct $name {
            lock: RwCore<$fair>,
        }

        // SAFETY: W1: the hooks let a writer in only at `FREE` and readers
        // only above 1, in the core's CAS, so a writer excludes everyone; the
        // core's AcqRel RMWs make each release happen-before the acquires
        // that use what it released. Guards may move between threads:
        // unlocking needs no owner thread.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawRwLock for $name {
            const INIT: Self = $name { lock: RwCore::new() };

            type GuardMarker = lock_api::GuardSend;

            #[inline]
            fn lock_shared(&self) {
                self.lock.read(None);
            }

            #[inline]
            fn try_lock_shared(&self) -> bool {
                self.lock.try_read()
            }

            #[inline]
            unsafe fn unlock_shared(&self) {
                // SAFETY: the caller holds a read lock (lock_api's contract).
                unsafe { self.lock.unlock_read() }
            }

            #[inline]
            fn lock_exclusive(&self) {
                self.lock.write(None);
            }

            #[inline]
            fn try_lock_exclusive(&self) -> bool {
                self.lock.try_write()
            }

            #[inline]
            unsafe fn unlock_exclusive(&self) {
                // SAFETY: the caller holds the write lock (lock_api's contract).
                unsafe { self.lock.unlock_write(false) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.lock.is_locked()
            }

            #[inline]
            fn is_locked_exclusive(&self) -> bool {
                self.lock.is_locked_exclusive()
            }
        }

        // SAFETY: as for `RawRwLock`; a read unlock never hands off (the
        // lock stays with other readers, or the release wakes the first
        // waiter), and a write unlock hands off with `HANDOFF` (W2).
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawRwLockFair for $name {
            #[inline]
            unsafe fn unlock_shared_fair(&self) {
                // SAFETY: the caller holds a read lock.
                unsafe { self.lock.unlock_read() }
            }

            #[inline]
            unsafe fn unlock_exclusive_fair(&self) {
                // SAFETY: the caller holds the write lock.
                unsafe { self.lock.unlock_write(true) }
            }
        }

        // SAFETY: the write lock becomes a read lock in one RMW, so nobody
        // takes the write lock in between.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawRwLockDowngrade for $name {
            #[inline]
            unsafe fn downgrade(&self) {
                // SAFETY: the caller holds the write lock.
                unsafe { self.lock.downgrade() }
            }
        }

        // SAFETY: as for `RawRwLock`; a recursive read is a read that
        // ignores the queue, never a write.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawRwLockRecursive for $name {
            #[inline]
            fn lock_shared_recursive(&self) {
                self.lock.read_recursive(None);
            }

            #[inline]
            fn try_lock_shared_recursive(&self) -> bool {
                self.lock.try_read_recursive()
            }
        }

        // SAFETY: as above; a timed recursive read that returns false has
        // left the queue and holds nothing.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawRwLockRecursiveTimed for $name {
            #[inline]
            fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
                self.lock.read_recursive(deadline_after(timeout))
            }

            #[inline]
            fn try_lock_shared_recursive_until(&self, deadline: Instant) -> bool {
                self.lock.read_recursive(Some(deadline))
            }
        }

        // SAFETY: as for `RawRwLock`; a timed lock that returns false has
        // left the queue and holds nothing.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawRwLockTimed for $name {
            type Duration = Duration;
            type Instant = Instant;

            #[inline]
            fn try_lock_shared_for(&self, timeout: Duration) -> bool {
                self.lock.read(deadline_after(timeout))
            }

            #[inline]
            fn try_lock_shared_until(&self, deadline: Instant) -> bool {
                self.lock.read(Some(deadline))
            }

            #[inline]
            fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
                self.lock.write(deadline_after(timeout))
            }

            #[inline]
            fn try_lock_exclusive_until(&self, deadline: Instant) -> bool {
                self.lock.write(Some(deadline))
            }
        }

        impl $name {
            /// How many threads wait, readers and writers (a snapshot): those
            /// queued, and the nonfair lock's readers that a writer turned
            /// away and that sleep until a release opens reads again (each
            /// counted from just before it parks until it returns, up to
            /// 65,535 of them). A nonfair writer that claims the lock from the
            /// readers inside is not counted, asleep or not; `Debug` shows
            /// its claim (`write_claimed`). The
            /// JDK's `getQueueLength()`; reach it through
            /// [`lock_api::RwLock::raw`].
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let lock = aqs::", stringify!($name), "::INIT;")]
            /// assert_eq!(lock.queue_length(), 0);
            /// # use lock_api::RawRwLock as _;
            /// ```
            pub fn queue_length(&self) -> usize {
                (queue::waiters_of(self.lock.sync.state()) + self.lock.sync.crowd_len()) as usize
            }

            /// How many read holds there are now, recursive ones counted
            /// (a snapshot; 0 while a writer holds). The JDK's
            /// `getReadLockCount()`.
            ///
            /// # Examples
            ///
            /// ```
            /// use lock_api::RawRwLock as _;
            ///
            #[doc = concat!("let lock = aqs::", stringify!($name), "::INIT;")]
            /// lock.lock_shared();
            /// assert_eq!(lock.read_count(), 1);
            /// // SAFETY: this thread holds a read lock.
            /// unsafe { lock.unlock_shared() };
            /// ```
            pub fn read_count(&self) -> usize {
                self.lock.readers() as usize
            }
        }

        #[cfg(all(feature = "async", not(aqs_loom)))]
        impl crate::future::AsyncRawRwLock for $name {
            fn read_future(&self) -> crate::future::RawAcquire<'_> {
                self.lock.check_read_limit();
                let queued = queue::QueuedAcquire::new(&self.lock.sync, queue::Mode::Shared, 1);
                crate::future::RawAcquire::new(queued, &RwPolicy::<$fair, false>)
            }

            fn write_future(&self) -> crate::future::RawAcquire<'_> {
                let queued =
                    queue::QueuedAcquire::new(&self.lock.sync, queue::Mode::Exclusive, FREE);
                crate::future::RawAcquire::new(queued, &RwPolicy::<$fair, false>)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("write_locked", &self.lock.is_locked_exclusive())
                    .field("readers", &self.lock.readers())
                    .field("write_claimed", &self.lock.write_claimed())
                    .field("queued", &queue::waiters_of(self.lock.sync.state()))
                    .field("waiting_aside", &self.lock.sync.crowd_len())
                    .finish()
            }
        }
    };
}

raw_rwlock!(
    /// A read-write lock on the queue core whose writers may barge: the raw
    /// type of [`RwLock`], implementing `lock_api`'s `RawRwLock`,
    /// `RawRwLockTimed`, `RawRwLockDowngrade`, `RawRwLockRecursive`,
    /// `RawRwLockRecursiveTimed` and `RawRwLockFair`.
    ///
    /// # Fairness
    ///
    /// As the JDK's nonfair `ReentrantReadWriteLock`: an arriving writer
    /// takes a free lock even while others are queued, and an arriving
    /// reader joins the readers inside unless a writer is first in the
    /// queue, so a stream of readers cannot starve a writer. An arriving
    /// writer thread (not a task) that finds readers inside, and no other
    /// writer waiting that way, does not queue: it marks the lock claimed,
    /// which turns new readers away as a queued writer does, spins briefly
    /// for the readers inside to leave, and then sleeps until the last of
    /// them unlocks (parking_lot's writer does the same). A timed writer
    /// whose deadline passes first gives the claim up and returns, and only
    /// then do the readers it turned away get in. A reader thread's read
    /// (timed or not; not a task's, not a recursive one) that a writer
    /// holding or claiming the lock turns away does not queue either: it
    /// spins briefly, then sleeps aside until the writer's unlock (or a
    /// downgrade, or a dropped claim) wakes all such readers at once, as
    /// parking_lot's readers do. Readers aside hold no place in the queue:
    /// a writer that queues while they sleep goes first, and a reader that
    /// wakes to find a writer queued first queues behind it. Queued threads
    /// are served in FIFO order; readers queued together wake together. A
    /// recursive read (`read_recursive`) never waits behind a queued or
    /// claiming writer, so a thread that already reads cannot deadlock
    /// taking a second read.
    ///
    /// # Limits
    ///
    /// Read holds, recursive ones included, count up to 2^27 − 1
    /// (134,217,727); a read past that panics and changes nothing. The
    /// write lock is not reentrant. (The JDK kept 16 bits for each count
    /// until it widened its state to 64 bits; here the counts share the
    /// value's 32 bits: 27 for readers, one for the hand-off, two for a
    /// writer's claim and one for the reads waiting aside.)
    ///
    /// # Upgradable reads
    ///
    /// Not offered. An upgradable read is a third kind of hold, excluding
    /// writers and other upgradable readers but not readers; the queue has
    /// two modes, and a waiter that is neither would need its own
    /// propagation rules. Take the write lock, or read and re-check after
    /// taking the write lock.
    ///
    /// # Size
    ///
    /// 64 bytes, one core, as [`RawMutex`](crate::RawMutex).
    ///
    /// # Examples
    ///
    /// ```
    /// use lock_api::RawRwLock as _;
    ///
    /// let raw = aqs::RawRwLock::INIT;
    /// raw.lock_shared();
    /// assert!(raw.try_lock_shared());
    /// assert!(!raw.try_lock_exclusive());
    /// // SAFETY: this thread holds both read locks.
    /// unsafe { raw.unlock_shared(); raw.unlock_shared() };
    /// assert!(raw.try_lock_exclusive());
    /// # unsafe { raw.unlock_exclusive() };
    /// ```
    RawRwLock,
    false
);

raw_rwlock!(
    /// A strict FIFO read-write lock on the queue core: the raw type of
    /// [`FairRwLock`], with the traits of [`RawRwLock`].
    ///
    /// # Fairness
    ///
    /// While anyone is queued, nobody takes the lock out of turn, the
    /// `try_` forms included: a reader arriving while a writer waits queues
    /// behind it, as with the JDK's `new ReentrantReadWriteLock(true)`.
    /// Readers queued together wake together, up to the next queued writer.
    /// Only a recursive read (`read_recursive`) passes the queue, and only
    /// while readers hold the lock, so that a thread that already reads
    /// cannot deadlock behind a writer waiting for it.
    ///
    /// # Limits and size
    ///
    /// As [`RawRwLock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lock_api::RawRwLock as _;
    ///
    /// let raw = aqs::RawFairRwLock::INIT;
    /// raw.lock_exclusive();
    /// assert!(raw.is_locked_exclusive());
    /// // SAFETY: this thread holds the write lock.
    /// unsafe { raw.unlock_exclusive() };
    /// assert!(!raw.is_locked());
    /// ```
    RawFairRwLock,
    true
);

/// A read-write lock whose writers may barge and whose readers defer to a
/// queued writer: `lock_api::RwLock` over [`RawRwLock`].
///
/// | JDK `ReentrantReadWriteLock` / Curator | `aqs` |
/// |---|---|
/// | `new ReentrantReadWriteLock()` | [`RwLock::new`](lock_api::RwLock::new) |
/// | `new ReentrantReadWriteLock(true)` | [`FairRwLock::new`](lock_api::RwLock::new) |
/// | `readLock().lock()` / `unlock()` | `read()` / dropping the guard |
/// | `writeLock().lock()` / `unlock()` | `write()` / dropping the guard |
/// | `readLock().tryLock()`, `tryLock(time, unit)` | `try_read()`, `try_read_for()`, `try_read_until()` |
/// | `writeLock().tryLock()`, `tryLock(time, unit)` | `try_write()`, `try_write_for()`, `try_write_until()` |
/// | a reentrant read | `read_recursive()` |
/// | write lock, then read lock, then unlock the write lock | [`RwLockWriteGuard::downgrade`](lock_api::RwLockWriteGuard::downgrade) |
/// | `isWriteLocked()`, `getReadLockCount()`, `getQueueLength()` | `is_locked_exclusive()`, [`RawRwLock::read_count`], [`RawRwLock::queue_length`] (through `raw()`) |
/// | Curator `InterProcessReadWriteLock`: `readLock()`, `writeLock()` | [`FairRwLock`]: `read()`, `write()` (Curator's is FIFO) |
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
///
/// static CONFIG: aqs::RwLock<Vec<String>> = aqs::RwLock::new(Vec::new());
///
/// CONFIG.write().push("debug=false".into());
/// let readers: Vec<_> = (0..4)
///     .map(|_| thread::spawn(|| CONFIG.read().len()))
///     .collect();
/// for r in readers {
///     assert_eq!(r.join().unwrap(), 1);
/// }
///
/// let shared = Arc::new(aqs::RwLock::new(0));
/// let w = shared.write();
/// assert!(shared.try_read().is_none());
/// let r = aqs::RwLockWriteGuard::downgrade(w); // keeps other writers out
/// assert_eq!(*r, 0);
/// ```
#[cfg(not(aqs_loom))]
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// The read guard of an [`RwLock`]; dropping it unlocks.
#[cfg(not(aqs_loom))]
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;

/// The write guard of an [`RwLock`]; dropping it unlocks.
#[cfg(not(aqs_loom))]
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;

/// A strict FIFO read-write lock: `lock_api::RwLock` over
/// [`RawFairRwLock`]; the JDK's `new ReentrantReadWriteLock(true)`.
///
/// # Examples
///
/// ```
/// static TABLE: aqs::FairRwLock<Vec<u32>> = aqs::FairRwLock::new(Vec::new());
///
/// TABLE.write().push(7);
/// assert_eq!(TABLE.read()[0], 7);
/// ```
#[cfg(not(aqs_loom))]
pub type FairRwLock<T> = lock_api::RwLock<RawFairRwLock, T>;

/// The read guard of a [`FairRwLock`]; dropping it unlocks.
#[cfg(not(aqs_loom))]
pub type FairRwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawFairRwLock, T>;

/// The write guard of a [`FairRwLock`]; dropping it unlocks.
#[cfg(not(aqs_loom))]
pub type FairRwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawFairRwLock, T>;

mod wait;

#[cfg(all(test, not(aqs_loom)))]
mod tests;

#[cfg(all(test, aqs_loom))]
mod loom_models;
