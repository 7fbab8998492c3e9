//! Async waiting on the same queue as threads (feature `async`).
//!
//! Every synchronizer's wait can be awaited: a task queues in the same FIFO
//! order as blocked threads, whichever kind came first, and a release wakes
//! whichever kind is next. A blocked thread parks its own thread; a task's
//! node holds its `Waker`. Nothing here depends on a runtime: the futures
//! run on any executor.
//!
//! | synchronizer | async wait | future |
//! |---|---|---|
//! | [`Semaphore`] | [`acquire_async`], [`acquire_many_async`] | [`Acquire`] |
//! | `Arc<Semaphore>` | [`acquire_owned_async`], [`acquire_many_owned_async`] | [`AcquireOwned`] |
//! | [`CountDownLatch`] | [`wait_async`] | [`LatchWait`] |
//! | [`Mutex`](crate::Mutex), [`FairMutex`](crate::FairMutex) | [`MutexAsync::lock_async`] | [`Lock`] |
//! | [`RwLock`](crate::RwLock), [`FairRwLock`](crate::FairRwLock) | [`RwLockAsync::read_async`], [`RwLockAsync::write_async`] | [`Read`], [`Write`] |
//!
//! The lock guards are `lock_api`'s, which cannot get inherent methods, so
//! the locks' async forms are extension traits on the `lock_api` types
//! ([`MutexAsync`], [`RwLockAsync`]), implemented for the crate's raw locks
//! only. The guards are `Send` (the raw types' `GuardMarker` is
//! `GuardSend`: unlocking needs no owner thread), so a task may hold one
//! across an `.await` on a multi-threaded runtime.
//!
//! # Cancel safety
//!
//! Every future here is cancel safe in the sense that matters for a queue:
//! dropping it loses nothing. A future dropped while queued leaves the
//! queue; one dropped after a release woke it passes the wake-up on to the
//! next waiter; and no future holds permits or a lock until it returns
//! `Ready`. What is lost is its place in the queue.
//!
//! There are no timed async forms: wrap the future in the runtime's timeout
//! (dropping it is the cancellation).
//!
//! # A future that is never polled again
//!
//! A queued future keeps its place until it is polled to completion or
//! dropped. One that is never polled again (kept alive by a reference
//! cycle, `mem::forget`ten after its first poll, or owned by an executor
//! that stopped polling) stays linked and counted: memory-safe, but in a
//! fair queue (`FairMutex`, `FairRwLock`, a fair `Semaphore`) every waiter
//! behind it then waits for good, and in a barging queue the value it was
//! woken for stays free for arrivals only. A task woken at the head of a
//! fair queue but not yet polled holds up the waiters behind it the same
//! way until it runs, exactly as a woken thread that has not run yet would.
//! tokio's `Semaphore` and `Mutex` behave the same (a woken `Acquire` that
//! is not polled keeps the permits assigned to it). The queue does not pass
//! over such a waiter after a bound: telling a slow executor from a dead one
//! would need a clock on every fair release, and passing over a live one
//! would break FIFO order. Drop futures you stop polling, or wrap them in
//! the runtime's timeout.
//!
//! # Panics in wakers
//!
//! The queue never runs a task's waker inside its own bookkeeping: a waker
//! that a release or an acquire takes is woken after that call is done with
//! the queue, and a panic in it (in `wake`, `clone` or `drop`) leaves every
//! synchronizer consistent and usable. The panic propagates to the call
//! that ran the waker: a release (an unlock, a permit's drop, `add_permits`,
//! `count_down`, `close`) completes first; an acquire that woke the waiters
//! behind it (propagation) gives back what it took, so the caller gets the
//! panic and not the hold; a [`Condvar`](crate::Condvar) wait takes its
//! mutex back first. Every other waker is still woken. A call made while
//! the thread is already unwinding drops such a panic instead (a second
//! panic would abort).
//!
//! [`Semaphore`]: crate::Semaphore
//! [`CountDownLatch`]: crate::CountDownLatch
//! [`acquire_async`]: crate::Semaphore::acquire_async
//! [`acquire_many_async`]: crate::Semaphore::acquire_many_async
//! [`acquire_owned_async`]: crate::Semaphore::acquire_owned_async
//! [`acquire_many_owned_async`]: crate::Semaphore::acquire_many_owned_async
//! [`wait_async`]: crate::CountDownLatch::wait_async

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use crate::queue::{Policy, QueuedAcquire};
use crate::{AcquireError, OwnedSemaphorePermit, Semaphore, SemaphorePermit};

/// The future of [`Semaphore::acquire_async`] and
/// [`Semaphore::acquire_many_async`]: resolves to a permit, or to
/// [`AcquireError`] if the semaphore is closed first.
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a> {
    /// `None` for a request of zero permits, answered without the queue.
    queued: Option<QueuedAcquire<'a>>,
    sem: &'a Semaphore,
    n: u32,
}

impl<'a> Acquire<'a> {
    pub(crate) fn new(sem: &'a Semaphore, n: u32) -> Self {
        Acquire {
            queued: (n > 0).then(|| QueuedAcquire::new(sem.core(), crate::queue::Mode::Shared, n)),
            sem,
            n,
        }
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<SemaphorePermit<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(queued) = &mut this.queued else {
            return Poll::Ready(if this.sem.is_closed() {
                Err(AcquireError(()))
            } else {
                Ok(SemaphorePermit::new(this.sem, 0))
            });
        };
        let taken = ready!(queued.poll_acquire(this.sem.policy(), cx));
        Poll::Ready(match taken {
            Ok(()) => Ok(SemaphorePermit::new(this.sem, this.n)),
            Err(_) => Err(AcquireError(())),
        })
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.n)
            .finish_non_exhaustive()
    }
}

/// The future of [`Semaphore::acquire_owned_async`] and
/// [`Semaphore::acquire_many_owned_async`]: resolves to an owning permit,
/// or to [`AcquireError`] if the semaphore is closed first.
#[must_use = "futures do nothing unless polled"]
pub struct AcquireOwned {
    // Declared before `sem`, so dropped first: it borrows from `sem`'s
    // allocation.
    queued: Option<QueuedAcquire<'static>>,
    sem: Arc<Semaphore>,
    n: u32,
}

impl AcquireOwned {
    pub(crate) fn new(sem: Arc<Semaphore>, n: u32) -> Self {
        // SAFETY: the `Arc` is held by this future until after `queued` is
        // dropped (field order), and an `Arc`'s value never moves, so the
        // core outlives every use of this reference.
        let core: &'static crate::queue::RawSync = unsafe { &*(sem.core() as *const _) };
        AcquireOwned {
            queued: (n > 0).then(|| QueuedAcquire::new(core, crate::queue::Mode::Shared, n)),
            sem,
            n,
        }
    }
}

impl Future for AcquireOwned {
    type Output = Result<OwnedSemaphorePermit, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(queued) = &mut this.queued else {
            return Poll::Ready(if this.sem.is_closed() {
                Err(AcquireError(()))
            } else {
                Ok(OwnedSemaphorePermit::new(Arc::clone(&this.sem), 0))
            });
        };
        let taken = ready!(queued.poll_acquire(this.sem.policy(), cx));
        Poll::Ready(match taken {
            Ok(()) => Ok(OwnedSemaphorePermit::new(Arc::clone(&this.sem), this.n)),
            Err(_) => Err(AcquireError(())),
        })
    }
}

impl fmt::Debug for AcquireOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireOwned")
            .field("permits", &self.n)
            .finish_non_exhaustive()
    }
}

/// The future of [`CountDownLatch::wait_async`](crate::CountDownLatch::wait_async):
/// resolves once the count is zero.
#[must_use = "futures do nothing unless polled"]
pub struct LatchWait<'a> {
    queued: QueuedAcquire<'a>,
    policy: &'static (dyn Policy + Sync),
}

impl<'a> LatchWait<'a> {
    pub(crate) fn new(queued: QueuedAcquire<'a>, policy: &'static (dyn Policy + Sync)) -> Self {
        LatchWait { queued, policy }
    }
}

impl Future for LatchWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let opened = ready!(this.queued.poll_acquire(this.policy, cx));
        debug_assert!(opened.is_ok(), "a latch is never closed");
        Poll::Ready(())
    }
}

impl fmt::Debug for LatchWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatchWait").finish_non_exhaustive()
    }
}

/// A raw lock's queued acquire, resolving once the lock (or a read of it)
/// is the caller's; the guard futures ([`Lock`], [`Read`], [`Write`]) wrap
/// it. Dropping it before it resolves takes nothing.
#[must_use = "futures do nothing unless polled"]
pub struct RawAcquire<'a> {
    queued: QueuedAcquire<'a>,
    policy: &'static (dyn Policy + Sync),
}

impl<'a> RawAcquire<'a> {
    pub(crate) fn new(queued: QueuedAcquire<'a>, policy: &'static (dyn Policy + Sync)) -> Self {
        RawAcquire { queued, policy }
    }
}

impl Future for RawAcquire<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let taken = ready!(this.queued.poll_acquire(this.policy, cx));
        debug_assert!(taken.is_ok(), "a lock is never closed");
        Poll::Ready(())
    }
}

impl fmt::Debug for RawAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawAcquire").finish_non_exhaustive()
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A raw mutex whose lock can be awaited: [`RawMutex`](crate::RawMutex)
/// and [`RawFairMutex`](crate::RawFairMutex). Sealed.
pub trait AsyncRawMutex: lock_api::RawMutex + sealed::Sealed {
    /// A future that resolves once this thread's task holds the lock; the
    /// caller must unlock it. Use [`MutexAsync::lock_async`] instead.
    #[doc(hidden)]
    fn lock_future(&self) -> RawAcquire<'_>;
}

/// A raw read-write lock whose reads and writes can be awaited:
/// [`RawRwLock`](crate::RawRwLock) and [`RawFairRwLock`](crate::RawFairRwLock).
/// Sealed.
pub trait AsyncRawRwLock: lock_api::RawRwLock + sealed::Sealed {
    /// A future that resolves once the caller holds a read; the caller must
    /// unlock it. Use [`RwLockAsync::read_async`] instead.
    ///
    /// # Panics
    ///
    /// As `lock_shared`: if the read count is at its limit.
    #[doc(hidden)]
    fn read_future(&self) -> RawAcquire<'_>;

    /// A future that resolves once the caller holds the write lock; the
    /// caller must unlock it. Use [`RwLockAsync::write_async`] instead.
    #[doc(hidden)]
    fn write_future(&self) -> RawAcquire<'_>;
}

impl sealed::Sealed for crate::RawMutex {}
impl sealed::Sealed for crate::RawFairMutex {}
impl sealed::Sealed for crate::RawRwLock {}
impl sealed::Sealed for crate::RawFairRwLock {}

/// `lock_async` for [`Mutex`](crate::Mutex) and
/// [`FairMutex`](crate::FairMutex).
///
/// # Examples
///
/// ```
/// use aqs::MutexAsync as _;
///
/// let m = aqs::FairMutex::new(1);
/// let guard = futures_executor::block_on(m.lock_async());
/// assert_eq!(*guard, 1);
/// ```
pub trait MutexAsync<R: AsyncRawMutex, T: ?Sized> {
    /// Waits, without blocking the thread, until the lock is this task's,
    /// in the same queue and order as threads that call `lock`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a future dropped before it resolves holds nothing, and
    /// passes on a wake-up it was given (it loses its place in the queue).
    /// A queued future that is never polled again and never dropped keeps
    /// its place: on a fair lock everyone behind it waits for good (as with
    /// tokio; see [the module docs](crate::future)).
    ///
    /// # Panics
    ///
    /// If a task waker that its poll wakes (a waiter behind it) or drops
    /// (its own) panics: the lock is given back first, and every other
    /// waiter is still woken.
    fn lock_async(&self) -> Lock<'_, R, T>;
}

impl<R: AsyncRawMutex, T: ?Sized> MutexAsync<R, T> for lock_api::Mutex<R, T> {
    fn lock_async(&self) -> Lock<'_, R, T> {
        // SAFETY: the raw lock is only locked through the future, whose
        // completion makes the guard that unlocks it.
        let raw = unsafe { self.raw() }.lock_future();
        Lock { raw, mutex: self }
    }
}

/// The future of [`MutexAsync::lock_async`]: resolves to the guard.
#[must_use = "futures do nothing unless polled"]
pub struct Lock<'a, R: AsyncRawMutex, T: ?Sized> {
    raw: RawAcquire<'a>,
    mutex: &'a lock_api::Mutex<R, T>,
}

impl<'a, R: AsyncRawMutex, T: ?Sized> Future for Lock<'a, R, T> {
    type Output = lock_api::MutexGuard<'a, R, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        ready!(Pin::new(&mut this.raw).poll(cx));
        // SAFETY: the raw future resolved: the lock is ours.
        Poll::Ready(unsafe { this.mutex.make_guard_unchecked() })
    }
}

impl<R: AsyncRawMutex, T: ?Sized> fmt::Debug for Lock<'_, R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").finish_non_exhaustive()
    }
}

/// `read_async` and `write_async` for [`RwLock`](crate::RwLock) and
/// [`FairRwLock`](crate::FairRwLock).
///
/// # Examples
///
/// ```
/// use aqs::RwLockAsync as _;
///
/// let lock = aqs::RwLock::new(5);
/// futures_executor::block_on(async {
///     *lock.write_async().await += 1;
///     assert_eq!(*lock.read_async().await, 6);
/// });
/// ```
pub trait RwLockAsync<R: AsyncRawRwLock, T: ?Sized> {
    /// Waits, without blocking the thread, for a read, in the same queue
    /// as threads that call `read`. A task's read always waits in the
    /// queue; a nonfair lock's thread that a writer turns away waits
    /// aside instead (see [`RawRwLock`](crate::RawRwLock)'s `# Fairness`).
    ///
    /// # Panics
    ///
    /// If the read count is at its limit (see
    /// [`RawRwLock`](crate::RawRwLock)'s `# Limits`).
    ///
    /// # Cancel safety
    ///
    /// As [`MutexAsync::lock_async`].
    fn read_async(&self) -> Read<'_, R, T>;

    /// Waits, without blocking the thread, for the write lock.
    ///
    /// # Cancel safety
    ///
    /// As [`MutexAsync::lock_async`].
    fn write_async(&self) -> Write<'_, R, T>;
}

impl<R: AsyncRawRwLock, T: ?Sized> RwLockAsync<R, T> for lock_api::RwLock<R, T> {
    fn read_async(&self) -> Read<'_, R, T> {
        // SAFETY: only locked through the future, whose completion makes
        // the guard that unlocks it.
        let raw = unsafe { self.raw() }.read_future();
        Read { raw, lock: self }
    }

    fn write_async(&self) -> Write<'_, R, T> {
        // SAFETY: as above.
        let raw = unsafe { self.raw() }.write_future();
        Write { raw, lock: self }
    }
}

/// The future of [`RwLockAsync::read_async`]: resolves to a read guard.
#[must_use = "futures do nothing unless polled"]
pub struct Read<'a, R: AsyncRawRwLock, T: ?Sized> {
    raw: RawAcquire<'a>,
    lock: &'a lock_api::RwLock<R, T>,
}

impl<'a, R: AsyncRawRwLock, T: ?Sized> Future for Read<'a, R, T> {
    type Output = lock_api::RwLockReadGuard<'a, R, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        ready!(Pin::new(&mut this.raw).poll(cx));
        // SAFETY: the raw future resolved: a read is ours.
        Poll::Ready(unsafe { this.lock.make_read_guard_unchecked() })
    }
}

impl<R: AsyncRawRwLock, T: ?Sized> fmt::Debug for Read<'_, R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Read").finish_non_exhaustive()
    }
}

/// The future of [`RwLockAsync::write_async`]: resolves to the write guard.
#[must_use = "futures do nothing unless polled"]
pub struct Write<'a, R: AsyncRawRwLock, T: ?Sized> {
    raw: RawAcquire<'a>,
    lock: &'a lock_api::RwLock<R, T>,
}

impl<'a, R: AsyncRawRwLock, T: ?Sized> Future for Write<'a, R, T> {
    type Output = lock_api::RwLockWriteGuard<'a, R, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        ready!(Pin::new(&mut this.raw).poll(cx));
        // SAFETY: the raw future resolved: the write lock is ours.
        Poll::Ready(unsafe { this.lock.make_write_guard_unchecked() })
    }
}

impl<R: AsyncRawRwLock, T: ?Sized> fmt::Debug for Write<'_, R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Write").finish_non_exhaustive()
    }
}
