//! Mutual exclusion on the queue core: [`RawMutex`] (barging) and
//! [`RawFairMutex`] (strict FIFO), the `lock_api` raw types behind
//! [`Mutex`], [`FairMutex`] and [`ReentrantMutex`].
//!
//! A mutex is the core in exclusive mode with a one-bit value; `lock_api`
//! supplies the guards, mapping, reentrancy and everything else typed.
//!
//! # Invariants
//!
//! * **M1, the value.** `UNLOCKED` (1) when free, 0 when held. `unlock_fair`
//!   sets `HANDOFF` (2) beside `UNLOCKED`, and a fair lock's claimant sets
//!   `CLAIMED` (4, M4); every acquire sets the value to 0, clearing all
//!   three.
//! * **M2, a handed-off lock is the first waiter's.** While `HANDOFF` is set
//!   and anyone is queued, no arrival takes the lock (`try_lock` included):
//!   only a queued waiter can, and the first one was woken by the release
//!   (or is awake). With nobody queued the bit is ignored. A claim (M4)
//!   comes first: a lock freed with both bits set is the claimant's, and the
//!   release wakes nobody.
//! * **M3, only the holder unlocks** (`lock_api`'s contract: `unlock` is
//!   `unsafe`). Debug builds check that the mutex was locked, before
//!   changing anything.
//! * **M4, a claimed turn is the claimant's.** A fair `lock` (or timed
//!   lock) that finds the lock held, nobody queued and no claim sets
//!   `CLAIMED` (in one CAS that also checks the queue is empty) and spins
//!   for the unlock instead of queueing. While `CLAIMED` is set no hook
//!   grants the lock (arrivals, `try_lock` and queued waiters alike), and
//!   an unlock does not go through the queue (`release_may_admit`), since
//!   only the claimant may take it. Only the claimant clears the bit: by
//!   taking the lock once it is free, or, when its spin budget or deadline
//!   runs out while the lock is still held, by dropping the claim (then it
//!   queues, or a timed lock past its deadline returns). Either way the
//!   next unlock sees no claim and goes through the queue, so no queued
//!   waiter misses its wake-up. Two threads that take turns thus hand the
//!   lock over by spinning, without sleeping; with others queued nobody
//!   claims, and the queue serves them in order. Order is arrival order
//!   except in three places, where the thread passed is one that is not
//!   counted in the queue: a claimant out of budget queues behind threads
//!   that queued while it spun; between its dropped claim and its count
//!   in the queue, a new arrival may claim; and an arrival that finds the
//!   lock free and about to be taken (claimed, or for the only queued
//!   thread) spins for the take and then claims, so a thread that queues
//!   meanwhile goes before it. `is_locked` reads a free lock with a claim
//!   on it as unlocked, though only the claimant can take it.

use std::fmt;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use crate::park::deadline_passed;
use crate::queue::{self, Bound, Discipline, Policy, RawSync, TryAcquire};
use crate::spin::PollSpin;

/// The value of a free mutex (M1).
pub(crate) const UNLOCKED: u32 = 1;
/// Set beside `UNLOCKED` by `unlock_fair`: the lock is the first waiter's
/// (M2).
const HANDOFF: u32 = 2;
/// Set by a fair lock's claimant: the next turn is its own (M4).
const CLAIMED: u32 = 4;

/// The mutex's AQS hooks; `FAIR` is the discipline.
pub(crate) struct MutexPolicy<const FAIR: bool>;

impl<const FAIR: bool> Policy for MutexPolicy<FAIR> {
    #[inline]
    fn try_acquire_exclusive(&self, value: u32, _arg: u32, others_queued: bool) -> Option<u32> {
        // Held, or free but claimed (M4).
        if value & (UNLOCKED | CLAIMED) != UNLOCKED
            || (others_queued && (FAIR || value & HANDOFF != 0))
        {
            return None;
        }
        Some(0)
    }

    /// Only a debug-build cross-check (`release_adds`): M3 is checked by the
    /// caller before the release.
    fn try_release_exclusive(&self, value: u32, arg: u32) -> u32 {
        value + arg
    }

    /// A release adds `UNLOCKED` (or `UNLOCKED | HANDOFF`) to a held lock's
    /// 0 (M1, M3).
    #[inline]
    fn release_adds(&self) -> bool {
        true
    }

    /// A lock freed with a claim on it is the claimant's (M4): nobody in
    /// the queue needs waking.
    #[inline]
    fn release_may_admit(&self, _before: u32, after: u32) -> bool {
        after & CLAIMED == 0
    }

    #[inline]
    fn discipline(&self) -> Discipline {
        if FAIR {
            Discipline::Fifo
        } else {
            Discipline::Barging
        }
    }
}

/// The lock of both raw types, generic over the discipline.
pub(crate) struct Lock<const FAIR: bool> {
    pub(crate) sync: RawSync,
}

/// What a `Condvar` needs of a raw mutex; sealed (`CondvarMutex`).
pub(crate) mod sealed {
    use crate::queue::Bound;

    /// The condition queue's view of a raw mutex.
    pub trait Sealed {
        /// The mutex's core, policy and full release and re-acquire.
        fn bound(&self) -> Bound;
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn unlock_of_unlocked() -> ! {
    panic!("aqs: a mutex was unlocked while it was not locked (lock_api's `unlock` contract)")
}

impl<const FAIR: bool> Lock<FAIR> {
    #[cfg(not(aqs_loom))]
    const fn new() -> Self {
        Lock {
            sync: RawSync::new(UNLOCKED),
        }
    }

    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        Lock {
            sync: RawSync::new(UNLOCKED),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) {
        // What the hook grants an arrival at an idle lock (M1).
        if self.sync.try_take_idle(UNLOCKED, 0) {
            return;
        }
        if FAIR && self.claim_turn(None) {
            return;
        }
        let locked = self.sync.acquire_exclusive(&MutexPolicy::<FAIR>, 1, None);
        debug_assert!(locked.is_ok(), "a mutex is never closed");
    }

    /// A fair arrival's wait for a held lock that nobody is queued for
    /// (M4): claim the next turn, spin until the holder unlocks and take
    /// it. Returns `false`, holding nothing and claiming nothing, if the
    /// lock was not held or others were queued or claiming (the caller
    /// queues as usual), or once the spin budget or `deadline` ran out
    /// with the lock still held (the claim dropped, the caller queues
    /// behind whoever queued meanwhile).
    #[inline(never)]
    fn claim_turn(&self, deadline: Option<Instant>) -> bool {
        let spin = PollSpin::new();
        while self
            .sync
            .update_value_unqueued(|value| {
                (value & (UNLOCKED | CLAIMED) == 0).then_some(value | CLAIMED)
            })
            .is_err()
        {
            // The lock is free and one thread is about to take it, with
            // nobody after it: the claimant (nobody queued), or the one
            // queued thread. Wait for the take, then claim the turn after.
            let s = self.sync.state();
            let value = queue::value_of(s);
            let next_is_taking = value & UNLOCKED != 0
                && match queue::waiters_of(s) {
                    0 => value & CLAIMED != 0,
                    1 => value & CLAIMED == 0,
                    _ => false,
                };
            if !next_is_taking || deadline.is_some_and(deadline_passed) || !spin.spin() {
                return false;
            }
        }
        let spin = PollSpin::new();
        loop {
            // Take the lock once it is free: it is ours (M4).
            if let Ok(old) = self
                .sync
                .fetch_update_value(|value| (value & UNLOCKED != 0).then_some(0))
            {
                assert!(
                    old & CLAIMED != 0,
                    "aqs: a claimed turn was taken by another"
                );
                return true;
            }
            if deadline.is_some_and(deadline_passed) || !spin.spin() {
                break;
            }
        }
        // Out of budget: take the lock if it came free meanwhile, else drop
        // the claim, in one CAS (M4: with the claim gone, the unlock goes
        // through the queue).
        let old = self
            .sync
            .fetch_update_value(|value| {
                Some(if value & UNLOCKED != 0 {
                    0
                } else {
                    value & !CLAIMED
                })
            })
            .unwrap_or_else(|_| unreachable!("the update always succeeds"));
        assert!(
            old & CLAIMED != 0,
            "aqs: a claimed turn was taken by another"
        );
        old & UNLOCKED != 0
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.sync.try_take_idle(UNLOCKED, 0)
            || self.sync.try_acquire_exclusive(&MutexPolicy::<FAIR>, 1) == TryAcquire::Acquired
    }

    #[inline]
    pub(crate) fn try_lock_until(&self, deadline: Instant) -> bool {
        if self.sync.try_take_idle(UNLOCKED, 0) || (FAIR && self.claim_turn(Some(deadline))) {
            return true;
        }
        self.sync
            .acquire_exclusive(&MutexPolicy::<FAIR>, 1, Some(deadline))
            .is_ok()
    }

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_until(deadline),
            None => {
                self.lock(); // a timeout past the clock's end: no deadline
                true
            }
        }
    }

    /// # Safety
    ///
    /// The caller holds the lock (M3).
    #[inline]
    pub(crate) unsafe fn unlock_with(&self, release: u32) {
        if cfg!(debug_assertions) && !self.is_locked() {
            unlock_of_unlocked();
        }
        self.sync.release_exclusive(&MutexPolicy::<FAIR>, release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        queue::value_of(self.sync.state()) & UNLOCKED == 0
    }

    /// The condition queue's view of this lock: a full release adds
    /// `UNLOCKED` (M1), a re-acquire takes it back.
    pub(crate) fn bound(&self) -> Bound {
        Bound {
            sync: &self.sync,
            policy: &MutexPolicy::<FAIR>,
            release: UNLOCKED,
            acquire: 1,
        }
    }
}

macro_rules! raw_mutex {
    ($(#[$doc:meta])* $name:ident, $fair:literal) => {
        $(#[$doc])*
        pub struct $name {
            lock: Lock<$fair>,
        }

        // SAFETY: `lock` succeeds only once the exclusive hook took the
        // value from `UNLOCKED` to 0 in the core's CAS, which no other
        // acquire does until a release (M1, M3); the core's AcqRel RMWs make
        // each release happen-before the next acquire. The guard may move
        // between threads: unlocking needs no owner thread.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawMutex for $name {
            const INIT: Self = $name { lock: Lock::new() };

            type GuardMarker = lock_api::GuardSend;

            #[inline]
            fn lock(&self) {
                self.lock.lock();
            }

            #[inline]
            fn try_lock(&self) -> bool {
                self.lock.try_lock()
            }

            #[inline]
            unsafe fn unlock(&self) {
                // SAFETY: the caller holds the lock (lock_api's contract, M3).
                unsafe { self.lock.unlock_with(UNLOCKED) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.lock.is_locked()
            }
        }

        // SAFETY: as for `RawMutex`; `unlock_fair` releases like `unlock`,
        // with the hand-off bit that keeps arrivals out (M2).
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawMutexFair for $name {
            #[inline]
            unsafe fn unlock_fair(&self) {
                // SAFETY: the caller holds the lock (lock_api's contract, M3).
                unsafe { self.lock.unlock_with(UNLOCKED | HANDOFF) }
            }
        }

        // SAFETY: as for `RawMutex`; a timed lock that returns false has
        // left the queue and holds nothing.
        #[cfg(not(aqs_loom))]
        unsafe impl lock_api::RawMutexTimed for $name {
            type Duration = Duration;
            type Instant = Instant;

            #[inline]
            fn try_lock_for(&self, timeout: Duration) -> bool {
                self.lock.try_lock_for(timeout)
            }

            #[inline]
            fn try_lock_until(&self, deadline: Instant) -> bool {
                self.lock.try_lock_until(deadline)
            }
        }

        impl $name {
            /// How many threads are queued waiting for the lock (a
            /// snapshot; threads in the middle of joining or leaving may or
            /// may not count). The JDK's `getQueueLength()`; reach it through
            /// [`lock_api::Mutex::raw`].
            ///
            /// # Examples
            ///
            /// ```
            /// let m = aqs::Mutex::new(());
            /// // SAFETY: only reads the raw mutex's state.
            /// assert_eq!(unsafe { m.raw() }.queue_length(), 0);
            /// ```
            pub fn queue_length(&self) -> usize {
                queue::waiters_of(self.lock.sync.state()) as usize
            }
        }

        impl sealed::Sealed for $name {
            fn bound(&self) -> Bound {
                self.lock.bound()
            }
        }

        #[cfg(all(feature = "async", not(aqs_loom)))]
        impl crate::future::AsyncRawMutex for $name {
            fn lock_future(&self) -> crate::future::RawAcquire<'_> {
                let queued = queue::QueuedAcquire::new(&self.lock.sync, queue::Mode::Exclusive, 1);
                crate::future::RawAcquire::new(queued, &MutexPolicy::<$fair>)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let state = self.lock.sync.state();
                f.debug_struct(stringify!($name))
                    .field("locked", &(queue::value_of(state) & UNLOCKED == 0))
                    .field("queued", &queue::waiters_of(state))
                    .finish()
            }
        }
    };
}

raw_mutex!(
    /// A barging mutex on the queue core: the raw type of [`Mutex`] and
    /// [`ReentrantMutex`], implementing `lock_api`'s `RawMutex`,
    /// `RawMutexFair` and `RawMutexTimed`.
    ///
    /// # Fairness
    ///
    /// An arriving thread takes a free lock even while others are queued
    /// (after a short spin while nobody is queued), as the JDK's nonfair
    /// `ReentrantLock` and `parking_lot`'s mutex do: a lock that is
    /// released and re-taken at once never waits for a wake-up. Queued
    /// threads are served in FIFO order among themselves. `unlock_fair`
    /// hands the lock to the first queued thread, which then takes it
    /// without competing.
    ///
    /// # Size
    ///
    /// 64 bytes, one [`RawSync`](crate) core: the state
    /// word (the lock bit, the waiter count and the queue's flags), the
    /// queue's head and tail, three words of node reclamation (a reader count
    /// with the backlog, a retired list and a spare batch), half a word of
    /// waiting statistics, and the cache of a read-write lock's look at the
    /// queue (a word, unused here, and a flag).
    /// `parking_lot`'s is 1 byte; the JDK's `ReentrantLock` is an object
    /// with the same head, tail and state.
    ///
    /// # Examples
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    ///
    /// let raw = aqs::RawMutex::INIT;
    /// raw.lock();
    /// assert!(!raw.try_lock());
    /// // SAFETY: this thread holds the lock.
    /// unsafe { raw.unlock() };
    /// assert!(raw.try_lock());
    /// # unsafe { raw.unlock() };
    /// ```
    RawMutex,
    false
);

raw_mutex!(
    /// A strict FIFO mutex on the queue core: the raw type of
    /// [`FairMutex`], implementing `lock_api`'s `RawMutex`, `RawMutexFair`
    /// and `RawMutexTimed`.
    ///
    /// # Fairness
    ///
    /// While anyone is queued, nobody takes the lock out of turn,
    /// `try_lock` included: the lock goes to queued threads in arrival order,
    /// as the JDK's `new ReentrantLock(true)` does (whose untimed `tryLock`
    /// does barge). Waiting threads yield briefly before they sleep while
    /// the queue turns over fast, as fair semaphore waiters do.
    ///
    /// A thread that finds the lock held and nobody queued does not queue
    /// at once: it claims the next turn and spins briefly (128 pauses, well
    /// under a microsecond to a few microseconds by CPU) for the unlock,
    /// and no other thread can take the lock before it. Two threads that
    /// take turns thus hand the lock over without sleeping. If the holder
    /// keeps the lock longer, the claimant drops its claim and queues,
    /// behind any thread that queued while it spun. A thread that arrives
    /// just as another is about to take the free lock (a claimant, or the
    /// only queued thread) waits for the take and then claims the turn
    /// after; a thread that queues meanwhile goes first. Only threads that
    /// have arrived count: a thread that unlocks and locks again before
    /// another has arrived takes the lock again. A claimant that the
    /// scheduler preempts just as the lock comes free leaves it idle until
    /// it runs again, as the next holder of a ticket lock would.
    ///
    /// # Size
    ///
    /// 64 bytes, as [`RawMutex`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    ///
    /// let raw = aqs::RawFairMutex::INIT;
    /// raw.lock();
    /// assert!(raw.is_locked());
    /// // SAFETY: this thread holds the lock.
    /// unsafe { raw.unlock() };
    /// assert!(!raw.is_locked());
    /// ```
    RawFairMutex,
    true
);

/// A thread identity for [`ReentrantMutex`]: the address of a thread-local,
/// distinct for every live thread.
///
/// # Examples
///
/// ```
/// use lock_api::GetThreadId as _;
///
/// let here = aqs::RawThreadId.nonzero_thread_id();
/// let there = std::thread::spawn(|| aqs::RawThreadId.nonzero_thread_id()).join().unwrap();
/// assert_eq!(here, aqs::RawThreadId.nonzero_thread_id());
/// assert_ne!(here, there);
/// ```
#[derive(Debug)]
pub struct RawThreadId;

// SAFETY: a thread-local's address is unique among live threads and stable
// for the thread's life, and is never 0.
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: Self = RawThreadId;

    fn nonzero_thread_id(&self) -> NonZeroUsize {
        thread_local!(static ID: u8 = const { 0 });
        ID.with(|id| {
            NonZeroUsize::new(id as *const u8 as usize).expect("a thread-local is never at 0")
        })
    }
}

/// A mutual exclusion lock that lets arrivals barge: `lock_api::Mutex`
/// over [`RawMutex`].
///
/// The JDK's nonfair `ReentrantLock` without reentrancy, in `parking_lot`'s
/// shape: `lock`, `try_lock`, `try_lock_for`/`_until`, and
/// [`MutexGuard::unlock_fair`](lock_api::MutexGuard::unlock_fair).
///
/// | JDK `ReentrantLock` / Curator | `aqs` |
/// |---|---|
/// | `new ReentrantLock()` | [`Mutex::new`](lock_api::Mutex::new) (not reentrant: [`ReentrantMutex`]) |
/// | `new ReentrantLock(true)`, Curator `InterProcessSemaphoreMutex` | [`FairMutex::new`](lock_api::Mutex::new) |
/// | `lock()` / `unlock()` | `lock()` / dropping the guard |
/// | `tryLock()` | `try_lock()` |
/// | `tryLock(time, unit)` | `try_lock_for(duration)`, `try_lock_until(instant)` |
/// | `isLocked()` | `is_locked()` |
/// | `hasQueuedThreads()`, `getQueueLength()` | [`RawMutex::queue_length`], through `raw()` |
/// | `newCondition()` | [`Condvar::new`](crate::Condvar::new), waited on with the guard |
/// | Curator `InterProcessSemaphoreMutex`: `acquire()`, `acquire(time, unit)`, `release()`, `isAcquiredInThisProcess()` | [`FairMutex`]: `lock()`, `try_lock_for()`, dropping the guard, `is_locked()` |
/// | Curator `InterProcessMutex` (reentrant): `acquire()`, `acquire(time, unit)`, `release()`, `isOwnedByCurrentThread()` | [`ReentrantMutex`]: `lock()`, `try_lock_for()`, dropping the guard, `is_owned_by_current_thread()` (barging; Curator's is FIFO) |
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
///
/// static HITS: aqs::Mutex<u64> = aqs::Mutex::new(0);
///
/// let threads: Vec<_> = (0..4)
///     .map(|_| thread::spawn(|| *HITS.lock() += 1))
///     .collect();
/// for t in threads {
///     t.join().unwrap();
/// }
/// assert_eq!(*HITS.lock(), 4);
///
/// let shared = Arc::new(aqs::Mutex::new(Vec::new()));
/// shared.lock().push(1);
/// assert_eq!(shared.try_lock_for(std::time::Duration::from_millis(10)).unwrap().len(), 1);
/// ```
#[cfg(not(aqs_loom))]
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;

/// The guard of a [`Mutex`]; dropping it unlocks.
#[cfg(not(aqs_loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;

/// A strict FIFO mutual exclusion lock: `lock_api::Mutex` over
/// [`RawFairMutex`]; the JDK's `new ReentrantLock(true)` without reentrancy.
///
/// # Examples
///
/// ```
/// static QUEUE: aqs::FairMutex<Vec<u32>> = aqs::FairMutex::new(Vec::new());
///
/// QUEUE.lock().push(7);
/// assert_eq!(QUEUE.lock().pop(), Some(7));
/// ```
#[cfg(not(aqs_loom))]
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;

/// The guard of a [`FairMutex`]; dropping it unlocks.
#[cfg(not(aqs_loom))]
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;

/// A lock that its holder may take again: `lock_api::ReentrantMutex` over
/// [`RawMutex`] and [`RawThreadId`]; the JDK's nonfair `ReentrantLock`.
/// Guards give shared access only (`&T`), as for every reentrant lock.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
///
/// let lock = aqs::ReentrantMutex::new(Cell::new(0));
/// let outer = lock.lock();
/// let inner = lock.lock(); // the same thread: no deadlock
/// inner.set(inner.get() + 1);
/// drop(inner);
/// assert_eq!(outer.get(), 1);
/// ```
#[cfg(not(aqs_loom))]
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;

/// The guard of a [`ReentrantMutex`]; dropping the last one unlocks.
#[cfg(not(aqs_loom))]
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

#[cfg(all(test, aqs_loom))]
mod loom_models;
