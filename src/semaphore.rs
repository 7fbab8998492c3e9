//! Counting semaphores, fair and nonfair, on the queue core.
//!
//! # Invariants
//!
//! Besides the core's state word (`queue/mod.rs`), a semaphore keeps `total`: the
//! permits in existence, that is the available ones plus those held by live
//! permits (a forgotten permit's no longer count).
//!
//! * **S1.** `total <= MAX_PERMITS` (`u32::MAX`) at every point of its modification
//!   order: `new` checks it, `add_permits` raises it with a checked
//!   read-modify-write and panics, changing nothing, if it would pass.
//! * **S2.** `total` is raised *before* permits are added to the state word and
//!   lowered *after* they are gone for good (`forget`, `forget_permits`,
//!   `drain_permits`), every change an `AcqRel` RMW.
//! * **S3.** Hence a permit's return never overflows: `available + returned <=
//!   total <= MAX_PERMITS`. An `add_permits` whose increment comes after a
//!   forget's decrement in `total`'s order synchronizes with it (the
//!   decrement heads a release sequence the increment reads), so the
//!   forgotten permits' acquire happens-before, and therefore precedes in
//!   the state word's order, the permits that add put in; an increment
//!   whose add is not yet in the state word only over-counts. This is the
//!   promise `SemaphorePolicy::release_adds` makes to the core, which lets a permit's
//!   drop be a single `fetch_add` (and never panic).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{AcquireError, TryAcquireError};
use crate::loom::{
    AtomicU32,
    Ordering::{AcqRel, Acquire},
};
use crate::permit::{OwnedSemaphorePermit, SemaphorePermit};
use crate::queue::{self, AcquireFailed, Acquired, Discipline, Policy, RawSync, TryAcquire};

/// A counting semaphore: a number of permits that threads acquire and
/// release, blocking while too few are available.
///
/// Permits come back when the returned [`SemaphorePermit`] (or
/// [`OwnedSemaphorePermit`]) is dropped, including when its holder panics,
/// unless it is [forgotten](SemaphorePermit::forget).
/// [`add_permits`](Semaphore::add_permits) adds permits (Java's `release(n)`).
///
/// The API follows [tokio's `Semaphore`](https://docs.rs/tokio/latest/tokio/sync/struct.Semaphore.html)
/// where the two overlap, with blocking methods instead of `async` ones and
/// timed variants (`try_acquire_for`, `try_acquire_until`) in the style of
/// `std`.
///
/// # Fairness
///
/// * [`Semaphore::new`] makes a **nonfair** (barging) semaphore, like the
///   JDK's default: an arriving thread takes free permits even while others
///   are queued. Queued threads are still served in FIFO order among
///   themselves, and only the first of them competes with arrivals (waiters
///   woken together by one multi-permit release, below, take their permits
///   in whatever order they run). This is
///   much faster under contention, because a permit need not wait for a
///   sleeping thread to wake up; the price is that a waiter, above all one
///   that asks for many permits at once, can be overtaken indefinitely.
/// * [`Semaphore::new_fair`] makes a **fair** semaphore: strict FIFO across
///   all acquirers. While anyone is queued no call barges, `try_acquire`
///   included: it fails rather than jump the queue. (The JDK's untimed
///   `tryAcquire` barges even on a fair semaphore; this one does not, on
///   purpose, like tokio's.) A large request at the head of the queue holds
///   back smaller ones behind it, so large requests never starve.
///
/// In both modes one release of `k` permits ([`add_permits`](Self::add_permits)
/// or dropping a permit of `k`) wakes, in queue order, every queued waiter
/// that `k` permits can satisfy, all at once, so their wake-up latencies
/// overlap instead of adding up. On a fair semaphore a release of any size
/// wakes every waiter that *all* the available permits can satisfy after the
/// needs of the waiters in front of it, so that no available permit waits
/// without a waiter on its way to it. Each takes its permits as soon as it runs,
/// even before the waiters in front of it have; on a fair semaphore only from
/// what is left beyond the needs of every waiter still in front of it, so
/// nobody is overtaken for permits it is waiting for.
///
/// # Waiting
///
/// A thread that cannot take its permits at once joins the queue and sleeps
/// until a release can serve it (on a nonfair semaphore it first spins
/// briefly, while nobody is queued). On a fair semaphore whose queue turns
/// over fast (waiters acquiring less than about 20 µs apart), a queued
/// thread does not sleep at once: for up to 50 µs from the start of its
/// wait, and again after each wake-up, it gives its CPU away
/// ([`yield_now`](std::thread::yield_now)) and looks again. Under contention
/// its turn usually comes within that time, and a thread that stays runnable
/// needs no wake-up, which costs far more than a yield. Where permits are
/// held longer (across a sleep, a query or a request), the queue turns over
/// slowly and waiters sleep at once, so waiting costs no more CPU than on a
/// semaphore that never yields.
///
/// # Memory ordering
///
/// Releasing permits (dropping a permit or calling `add_permits`)
/// *happens-before* the acquire that obtains them: whatever a thread wrote
/// before giving permits back is visible to the thread that takes them.
///
/// # Closing
///
/// [`close`](Self::close) wakes every waiter with an error and makes every
/// later acquire fail. Permits still held may be dropped and `add_permits`
/// still works after closing; both only change the count.
///
/// # Examples
///
/// At most two workers in a section at once:
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
/// use aqs::Semaphore;
///
/// let sem = Arc::new(Semaphore::new(2));
/// let workers: Vec<_> = (0..4)
///     .map(|i| {
///         let sem = Arc::clone(&sem);
///         thread::spawn(move || {
///             let _permit = sem.acquire().expect("never closed");
///             // at most two threads run this at a time
///             i * 10
///         })
///     })
///     .collect();
/// let total: i32 = workers.into_iter().map(|w| w.join().unwrap()).sum();
/// assert_eq!(total, 60);
/// assert_eq!(sem.available_permits(), 2);
/// ```
///
/// A `static` semaphore (the constructors are `const`):
///
/// ```
/// use aqs::Semaphore;
///
/// static LIMIT: Semaphore = Semaphore::new(8);
///
/// let permit = LIMIT.try_acquire_many(3).unwrap();
/// assert_eq!(LIMIT.available_permits(), 5);
/// drop(permit);
/// assert_eq!(LIMIT.available_permits(), 8);
/// ```
pub struct Semaphore {
    raw: RawSync,
    policy: SemaphorePolicy,
    /// Permits in existence: available plus held (S1, S2). Only
    /// `add_permits` and the forgetting calls touch it, never acquire or
    /// release.
    total: AtomicU32,
}

/// The semaphore's AQS hooks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SemaphorePolicy {
    fair: bool,
}

impl Policy for SemaphorePolicy {
    #[inline]
    fn try_acquire_shared(&self, value: u32, arg: u32, others_queued: bool) -> Option<Acquired> {
        if self.fair && others_queued {
            return None;
        }
        let left = value.checked_sub(arg)?;
        Some(Acquired {
            value: left,
            propagate: left > 0,
        })
    }

    #[inline]
    fn discipline(&self) -> Discipline {
        if self.fair {
            Discipline::Fifo
        } else {
            Discipline::Barging
        }
    }

    fn out_of_turn(&self) -> bool {
        true
    }

    fn try_acquire_out_of_turn(&self, value: u32, arg: u32, ahead: u32) -> Option<Acquired> {
        // FIFO: never take what a waiter in front still needs.
        let reserve = if self.fair { ahead } else { 0 };
        let left = value.checked_sub(arg)?;
        (left >= reserve).then_some(Acquired {
            value: left,
            propagate: left > 0,
        })
    }

    /// Only a debug-build cross-check (`release_adds`).
    fn try_release_shared(&self, value: u32, arg: u32) -> u32 {
        value
            .checked_add(arg)
            .expect("aqs: more permits returned than exist (S3 broken)")
    }

    /// S3: `available + returned <= total <= u32::MAX`.
    #[inline]
    fn release_adds(&self) -> bool {
        true
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn add_overflow(total: u32, n: u32) -> ! {
    panic!(
        "aqs::Semaphore::add_permits: adding {n} permits to the {total} in existence (available or held) \
         would exceed Semaphore::MAX_PERMITS ({})",
        Semaphore::MAX_PERMITS
    )
}

#[cold]
#[inline(never)]
#[track_caller]
fn too_many(method: &str, n: usize) -> ! {
    panic!(
        "aqs::Semaphore::{method}: {n} permits exceed Semaphore::MAX_PERMITS ({})",
        Semaphore::MAX_PERMITS
    )
}

/// Checks a permit count against `MAX_PERMITS`.
#[inline]
#[track_caller]
fn checked(method: &str, n: usize) -> u32 {
    if n > Semaphore::MAX_PERMITS {
        too_many(method, n)
    }
    n as u32
}

impl Semaphore {
    /// The largest number of permits a semaphore can hold, and the largest
    /// number one call can ask for: `u32::MAX` (4 294 967 295).
    pub const MAX_PERMITS: usize = u32::MAX as usize;

    /// Creates a nonfair (barging) semaphore with `permits` permits.
    ///
    /// See [Fairness](Semaphore#fairness). Usable in a `static`.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    #[cfg(not(aqs_loom))]
    pub const fn new(permits: usize) -> Self {
        assert!(
            permits <= Self::MAX_PERMITS,
            "aqs::Semaphore::new: permits exceed Semaphore::MAX_PERMITS"
        );
        Self::with_fairness(permits, false)
    }

    /// Creates a fair (strict FIFO) semaphore with `permits` permits.
    ///
    /// See [Fairness](Semaphore#fairness). Usable in a `static`.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::{Semaphore, TryAcquireError};
    ///
    /// let sem = Semaphore::new_fair(1);
    /// assert!(sem.is_fair());
    /// let permit = sem.try_acquire().unwrap();
    /// assert_eq!(sem.try_acquire().unwrap_err(), TryAcquireError::NoPermits);
    /// drop(permit);
    /// assert!(sem.try_acquire().is_ok());
    /// ```
    #[cfg(not(aqs_loom))]
    pub const fn new_fair(permits: usize) -> Self {
        assert!(
            permits <= Self::MAX_PERMITS,
            "aqs::Semaphore::new_fair: permits exceed Semaphore::MAX_PERMITS"
        );
        Self::with_fairness(permits, true)
    }

    /// The constructors check `permits` first, so their panics name them.
    #[cfg(not(aqs_loom))]
    const fn with_fairness(permits: usize, fair: bool) -> Self {
        Semaphore {
            raw: RawSync::new(permits as u32),
            policy: SemaphorePolicy { fair },
            total: AtomicU32::new(permits as u32),
        }
    }

    /// Creates a nonfair semaphore (loom build: not `const`).
    #[cfg(aqs_loom)]
    pub fn new(permits: usize) -> Self {
        Self::with_fairness(permits, false)
    }

    /// Creates a fair semaphore (loom build: not `const`).
    #[cfg(aqs_loom)]
    pub fn new_fair(permits: usize) -> Self {
        Self::with_fairness(permits, true)
    }

    #[cfg(aqs_loom)]
    fn with_fairness(permits: usize, fair: bool) -> Self {
        assert!(
            permits <= Self::MAX_PERMITS,
            "aqs::Semaphore::new: permits exceed Semaphore::MAX_PERMITS"
        );
        Semaphore {
            raw: RawSync::new(permits as u32),
            policy: SemaphorePolicy { fair },
            total: AtomicU32::new(permits as u32),
        }
    }

    /// Whether this semaphore is fair (made by [`Semaphore::new_fair`]).
    pub fn is_fair(&self) -> bool {
        self.policy.fair
    }

    /// Acquires one permit, blocking until one is available.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed, before or during the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(1);
    /// let permit = sem.acquire().unwrap();
    /// assert_eq!(permit.num_permits(), 1);
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    #[inline]
    pub fn acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.acquire_many(1)
    }

    /// Acquires `n` permits at once, blocking until they are available.
    ///
    /// `n == 0` returns a permit of zero permits at once (unless closed).
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed, before or during the wait.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`] (such a request could never
    /// be satisfied; it panics at once rather than block forever).
    #[inline]
    #[track_caller]
    pub fn acquire_many(&self, n: usize) -> Result<SemaphorePermit<'_>, AcquireError> {
        let n = checked("acquire_many", n);
        match self.acquire_raw(n, None) {
            Ok(()) => Ok(SemaphorePermit::new(self, n)),
            Err(_) => Err(AcquireError(())),
        }
    }

    /// Acquires one permit if one is available now (and, on a fair
    /// semaphore, nobody is queued).
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::Closed`] if closed, [`TryAcquireError::NoPermits`]
    /// otherwise.
    #[inline]
    pub fn try_acquire(&self) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_many(1)
    }

    /// Acquires `n` permits if they are available now (and, on a fair
    /// semaphore, nobody is queued).
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::Closed`] if closed, [`TryAcquireError::NoPermits`]
    /// otherwise.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[inline]
    #[track_caller]
    pub fn try_acquire_many(&self, n: usize) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        let n = checked("try_acquire_many", n);
        self.try_acquire_raw(n)
            .map(|()| SemaphorePermit::new(self, n))
    }

    /// Acquires one permit, waiting at most `timeout`.
    ///
    /// `Duration::ZERO` still takes a permit that is free now (and that
    /// fairness allows); `Duration::MAX` waits without a deadline.
    ///
    /// # Errors
    ///
    /// [`TryAcquireError::NoPermits`] when the time runs out (the waiter has
    /// then left the queue, and a permit released to it at that moment is
    /// passed on, never lost); [`TryAcquireError::Closed`] if closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use aqs::{Semaphore, TryAcquireError};
    ///
    /// let sem = Semaphore::new(0);
    /// let err = sem.try_acquire_for(Duration::from_millis(10)).unwrap_err();
    /// assert_eq!(err, TryAcquireError::NoPermits);
    /// ```
    pub fn try_acquire_for(
        &self,
        timeout: Duration,
    ) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_many_for(1, timeout)
    }

    /// Acquires one permit, waiting until `deadline` at the latest.
    ///
    /// A deadline in the past still takes a permit that is free now.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    pub fn try_acquire_until(
        &self,
        deadline: Instant,
    ) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        self.try_acquire_many_until(1, deadline)
    }

    /// Acquires `n` permits, waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn try_acquire_many_for(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        let n = checked("try_acquire_many_for", n);
        // An unrepresentable deadline (`Duration::MAX`) means "no deadline".
        let deadline = Instant::now().checked_add(timeout);
        self.timed_raw(n, deadline)
            .map(|()| SemaphorePermit::new(self, n))
    }

    /// Acquires `n` permits, waiting until `deadline` at the latest.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn try_acquire_many_until(
        &self,
        n: usize,
        deadline: Instant,
    ) -> Result<SemaphorePermit<'_>, TryAcquireError> {
        let n = checked("try_acquire_many_until", n);
        self.timed_raw(n, Some(deadline))
            .map(|()| SemaphorePermit::new(self, n))
    }

    /// Acquires one permit, returning a permit that owns an `Arc` of the
    /// semaphore (so it can move into another thread or a struct).
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed, before or during the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use aqs::Semaphore;
    ///
    /// let sem = Arc::new(Semaphore::new(1));
    /// let permit = Arc::clone(&sem).acquire_owned().unwrap();
    /// thread::spawn(move || drop(permit)).join().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        self.acquire_many_owned(1)
    }

    /// Acquires `n` permits, returning an owning permit.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed, before or during the wait.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn acquire_many_owned(
        self: Arc<Self>,
        n: usize,
    ) -> Result<OwnedSemaphorePermit, AcquireError> {
        let n = checked("acquire_many_owned", n);
        match self.acquire_raw(n, None) {
            Ok(()) => Ok(OwnedSemaphorePermit::new(self, n)),
            Err(_) => Err(AcquireError(())),
        }
    }

    /// Acquires one permit without blocking the thread: the future resolves
    /// once a permit is the task's. Tasks and threads share one queue; on a
    /// fair semaphore they are served in arrival order, whichever kind
    /// each is. The future runs on any executor. tokio's `acquire`.
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed, before or during the
    /// wait.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it resolves leaves the queue
    /// (its place is lost), passes on a wake-up it was given, and holds no
    /// permit. To wait with a timeout, wrap it in the runtime's timeout.
    /// A queued future that is never polled again and never dropped keeps
    /// its place: on a fair semaphore everyone behind it waits for good
    /// (as with tokio; see [the `future` module](crate::future)).
    ///
    /// # Panics
    ///
    /// If polled after it resolved. If a task waker that its poll wakes
    /// (a waiter behind it, by propagation) or drops (its own) panics: the
    /// permits it took are given back first, and every other waiter is
    /// still woken.
    ///
    /// # Examples
    ///
    /// ```
    /// let sem = aqs::Semaphore::new_fair(1);
    /// futures_executor::block_on(async {
    ///     let permit = sem.acquire_async().await.unwrap();
    ///     assert_eq!(sem.available_permits(), 0);
    ///     drop(permit);
    /// });
    /// ```
    ///
    /// | tokio `Semaphore` | `aqs::Semaphore` |
    /// |---|---|
    /// | `acquire().await` | `acquire_async().await` |
    /// | `acquire_many(n).await` | `acquire_many_async(n).await` |
    /// | `acquire_owned().await` | `acquire_owned_async().await` |
    /// | `acquire_many_owned(n).await` | `acquire_many_owned_async(n).await` |
    /// | `try_acquire*` | `try_acquire*` (no future needed) |
    #[cfg(all(feature = "async", not(aqs_loom)))]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn acquire_async(&self) -> crate::future::Acquire<'_> {
        crate::future::Acquire::new(self, 1)
    }

    /// Acquires `n` permits at once without blocking the thread, as
    /// [`acquire_async`](Self::acquire_async). `n == 0` resolves at once
    /// (unless closed).
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed first.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`], when called.
    ///
    /// # Cancel safety
    ///
    /// As [`acquire_async`](Self::acquire_async): a dropped future holds
    /// none of the `n` permits.
    ///
    /// # Examples
    ///
    /// ```
    /// let sem = aqs::Semaphore::new(3);
    /// let permit = futures_executor::block_on(sem.acquire_many_async(2)).unwrap();
    /// assert_eq!(permit.num_permits(), 2);
    /// ```
    #[cfg(all(feature = "async", not(aqs_loom)))]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    #[track_caller]
    pub fn acquire_many_async(&self, n: usize) -> crate::future::Acquire<'_> {
        crate::future::Acquire::new(self, checked("acquire_many_async", n))
    }

    /// Acquires one permit without blocking the thread, returning an owning
    /// permit, as [`acquire_async`](Self::acquire_async).
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed first.
    ///
    /// # Cancel safety
    ///
    /// As [`acquire_async`](Self::acquire_async).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let sem = Arc::new(aqs::Semaphore::new(1));
    /// let permit = futures_executor::block_on(Arc::clone(&sem).acquire_owned_async()).unwrap();
    /// std::thread::spawn(move || drop(permit)).join().unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    #[cfg(all(feature = "async", not(aqs_loom)))]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn acquire_owned_async(self: Arc<Self>) -> crate::future::AcquireOwned {
        crate::future::AcquireOwned::new(self, 1)
    }

    /// Acquires `n` permits without blocking the thread, returning an
    /// owning permit, as [`acquire_async`](Self::acquire_async).
    ///
    /// # Errors
    ///
    /// [`AcquireError`] if the semaphore is closed first.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`], when called.
    ///
    /// # Cancel safety
    ///
    /// As [`acquire_async`](Self::acquire_async).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let sem = Arc::new(aqs::Semaphore::new(4));
    /// let permit = futures_executor::block_on(sem.clone().acquire_many_owned_async(4)).unwrap();
    /// assert_eq!(permit.num_permits(), 4);
    /// ```
    #[cfg(all(feature = "async", not(aqs_loom)))]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    #[track_caller]
    pub fn acquire_many_owned_async(self: Arc<Self>, n: usize) -> crate::future::AcquireOwned {
        let n = checked("acquire_many_owned_async", n);
        crate::future::AcquireOwned::new(self, n)
    }

    /// Acquires one permit now if possible, returning an owning permit.
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.try_acquire_many_owned(1)
    }

    /// Acquires `n` permits now if possible, returning an owning permit.
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn try_acquire_many_owned(
        self: Arc<Self>,
        n: usize,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        let n = checked("try_acquire_many_owned", n);
        self.try_acquire_raw(n)?;
        Ok(OwnedSemaphorePermit::new(self, n))
    }

    /// Acquires one permit, waiting at most `timeout`, and returns an owning
    /// permit: the timed form of [`acquire_owned`](Self::acquire_owned).
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::thread;
    /// use std::time::Duration;
    /// use aqs::Semaphore;
    ///
    /// let sem = Arc::new(Semaphore::new(1));
    /// let worker = {
    ///     let sem = Arc::clone(&sem);
    ///     thread::spawn(move || {
    ///         // The permit moves with the job; it is returned when the job ends.
    ///         let permit = sem.try_acquire_owned_for(Duration::from_secs(5))?;
    ///         Ok::<_, aqs::TryAcquireError>(permit.num_permits())
    ///     })
    /// };
    /// assert_eq!(worker.join().unwrap(), Ok(1));
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn try_acquire_owned_for(
        self: Arc<Self>,
        timeout: Duration,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.try_acquire_many_owned_for(1, timeout)
    }

    /// Acquires one permit, waiting until `deadline` at the latest, and
    /// returns an owning permit.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    pub fn try_acquire_owned_until(
        self: Arc<Self>,
        deadline: Instant,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        self.try_acquire_many_owned_until(1, deadline)
    }

    /// Acquires `n` permits, waiting at most `timeout`, and returns an owning
    /// permit.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn try_acquire_many_owned_for(
        self: Arc<Self>,
        n: usize,
        timeout: Duration,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        let n = checked("try_acquire_many_owned_for", n);
        // An unrepresentable deadline (`Duration::MAX`) means "no deadline".
        self.timed_raw(n, Instant::now().checked_add(timeout))?;
        Ok(OwnedSemaphorePermit::new(self, n))
    }

    /// Acquires `n` permits, waiting until `deadline` at the latest, and
    /// returns an owning permit.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_for`](Self::try_acquire_for).
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    #[track_caller]
    pub fn try_acquire_many_owned_until(
        self: Arc<Self>,
        n: usize,
        deadline: Instant,
    ) -> Result<OwnedSemaphorePermit, TryAcquireError> {
        let n = checked("try_acquire_many_owned_until", n);
        self.timed_raw(n, Some(deadline))?;
        Ok(OwnedSemaphorePermit::new(self, n))
    }

    /// Adds `n` permits, waking every queued waiter they can satisfy.
    ///
    /// This is Java's `release(n)`; it works on a closed semaphore too.
    ///
    /// # Panics
    ///
    /// If the permits in existence, available ones plus those held by
    /// permits that were not forgotten, would exceed
    /// [`Semaphore::MAX_PERMITS`]; the semaphore is then left unchanged. (This
    /// counts held permits so that giving them back can never overflow.)
    ///
    /// Also if a queued task's waker panics when woken: the permits are
    /// added and every other waiter woken first. Dropping a permit, or
    /// unlocking any lock of the crate, panics only that way.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(0);
    /// sem.add_permits(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        if n > Self::MAX_PERMITS {
            too_many("add_permits", n)
        }
        if n == 0 {
            return;
        }
        let n = n as u32;
        // Invariant 2: raise `total` first, with a checked RMW.
        if let Err(total) = self
            .total
            .fetch_update(AcqRel, Acquire, |total| total.checked_add(n))
        {
            add_overflow(total, n)
        }
        self.release(n);
    }

    /// Takes up to `n` available permits away for good; returns how many.
    ///
    /// Never blocks and never wakes anyone.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(5);
    /// assert_eq!(sem.forget_permits(3), 3);
    /// assert_eq!(sem.forget_permits(3), 2);
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    pub fn forget_permits(&self, n: usize) -> usize {
        let take = |value: u32| value.min(u32::try_from(n).unwrap_or(u32::MAX));
        match self
            .raw
            .fetch_update_value(|value| Some(value - take(value)))
        {
            Ok(old) => {
                self.forgotten(take(old));
                take(old) as usize
            }
            Err(_) => unreachable!("the update always succeeds"),
        }
    }

    /// Takes every available permit away for good; returns how many.
    pub fn drain_permits(&self) -> usize {
        match self.raw.fetch_update_value(|_| Some(0)) {
            Ok(old) => {
                self.forgotten(old);
                old as usize
            }
            Err(_) => unreachable!("the update always succeeds"),
        }
    }

    /// The number of permits available now (a snapshot).
    pub fn available_permits(&self) -> usize {
        queue::value_of(self.raw.state()) as usize
    }

    /// Closes the semaphore: wakes every queued acquirer with an error, and
    /// makes every later acquire fail.
    ///
    /// Permits still held can be dropped, and `add_permits` still works; both
    /// only change the count. Closing twice does nothing more.
    ///
    /// # Panics
    ///
    /// If a queued task's waker panics when woken; the semaphore is closed
    /// and every other waiter woken first.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(1);
    /// let held = sem.acquire().unwrap();
    /// sem.close();
    /// assert!(sem.acquire().is_err());
    /// drop(held);
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn close(&self) {
        self.raw.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        queue::is_closed(self.raw.state())
    }

    /// Whether any thread is queued waiting for permits (a snapshot).
    pub fn has_queued_threads(&self) -> bool {
        self.queue_length() > 0
    }

    /// The number of threads queued waiting for permits (a snapshot; threads
    /// that are in the middle of joining or leaving may or may not count).
    pub fn queue_length(&self) -> usize {
        queue::waiters_of(self.raw.state()) as usize
    }

    /// The core, for the async futures.
    #[cfg(all(feature = "async", not(aqs_loom)))]
    pub(crate) fn core(&self) -> &RawSync {
        &self.raw
    }

    /// The policy, for the async futures.
    #[cfg(all(feature = "async", not(aqs_loom)))]
    pub(crate) fn policy(&self) -> &SemaphorePolicy {
        &self.policy
    }

    /// Returns `n` permits (a permit's drop, or `add_permits` after raising
    /// `total`). Never panics (S3).
    #[inline]
    pub(crate) fn release(&self, n: u32) {
        self.raw.release_shared(&self.policy, n);
    }

    /// Records that `n` permits are gone for good (S2: after they
    /// left the state word or their permit was forgotten).
    pub(crate) fn forgotten(&self, n: u32) {
        if n > 0 {
            self.total.fetch_sub(n, AcqRel);
        }
    }

    #[inline]
    fn acquire_raw(&self, n: u32, deadline: Option<Instant>) -> Result<(), AcquireFailed> {
        if n == 0 {
            return if self.is_closed() {
                Err(AcquireFailed::Closed)
            } else {
                Ok(())
            };
        }
        self.raw.acquire_shared(&self.policy, n, deadline)
    }

    #[inline]
    fn try_acquire_raw(&self, n: u32) -> Result<(), TryAcquireError> {
        if n == 0 {
            return if self.is_closed() {
                Err(TryAcquireError::Closed)
            } else {
                Ok(())
            };
        }
        match self.raw.try_acquire_shared(&self.policy, n) {
            TryAcquire::Acquired => Ok(()),
            TryAcquire::Failed => Err(TryAcquireError::NoPermits),
            TryAcquire::Closed => Err(TryAcquireError::Closed),
        }
    }

    fn timed_raw(&self, n: u32, deadline: Option<Instant>) -> Result<(), TryAcquireError> {
        match self.acquire_raw(n, deadline) {
            Ok(()) => Ok(()),
            Err(AcquireFailed::Closed) => Err(TryAcquireError::Closed),
            Err(AcquireFailed::TimedOut) => Err(TryAcquireError::NoPermits),
        }
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.raw.state();
        f.debug_struct("Semaphore")
            .field("permits", &queue::value_of(state))
            .field("fair", &self.policy.fair)
            .field("queued", &queue::waiters_of(state))
            .field("closed", &queue::is_closed(state))
            .finish()
    }
}

impl Default for Semaphore {
    /// A nonfair semaphore with no permits.
    fn default() -> Self {
        Semaphore::new(0)
    }
}

#[cfg(all(test, aqs_loom))]
mod loom_models;

#[cfg(all(test, not(aqs_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fair_out_of_turn_leaves_what_the_waiters_in_front_need() {
        let fair = SemaphorePolicy { fair: true };
        // 5 available, 4 needed in front: 1 may go out of turn.
        assert_eq!(
            fair.try_acquire_out_of_turn(5, 1, 4),
            Some(Acquired {
                value: 4,
                propagate: true
            })
        );
        // 5 needed in front: taking 1 would short one of them.
        assert_eq!(fair.try_acquire_out_of_turn(5, 1, 5), None);
        assert_eq!(fair.try_acquire_out_of_turn(0, 1, 0), None);
        assert_eq!(
            fair.try_acquire_out_of_turn(3, 3, 0),
            Some(Acquired {
                value: 0,
                propagate: false
            })
        );
    }

    #[test]
    fn nonfair_out_of_turn_barges_like_an_arrival() {
        let nonfair = SemaphorePolicy { fair: false };
        assert_eq!(
            nonfair.try_acquire_out_of_turn(1, 1, 10),
            Some(Acquired {
                value: 0,
                propagate: false
            })
        );
        assert_eq!(nonfair.try_acquire_out_of_turn(1, 2, 0), None);
    }
}
