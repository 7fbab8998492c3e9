//! Condition variables on the queue core, for [`Mutex`](crate::Mutex) and
//! [`FairMutex`](crate::FairMutex) guards alike.
//!
//! The loom build has no `lock_api` impls (see `lib.rs`), so it has no
//! public `Condvar` either: its models drive the condition queue directly
//! (`loom_models`).
#![cfg_attr(aqs_loom, allow(unused_imports))]

use std::fmt;
use std::time::{Duration, Instant};

use crate::mutex::sealed::Sealed;
use crate::queue::{Condition, Waited};

/// The raw mutexes a [`Condvar`] can wait with: [`RawMutex`](crate::RawMutex)
/// and [`RawFairMutex`](crate::RawFairMutex). Sealed: other crates cannot
/// implement it.
///
/// # Examples
///
/// ```
/// /// Waits until the value is set, on either kind of mutex.
/// fn wait_set<R: aqs::CondvarMutex>(m: &lock_api::Mutex<R, bool>, c: &aqs::Condvar) {
///     let mut set = m.lock();
///     c.wait_while(&mut set, |set| !*set);
/// }
/// wait_set(&aqs::Mutex::new(true), &aqs::Condvar::new());
/// wait_set(&aqs::FairMutex::new(true), &aqs::Condvar::new());
/// ```
#[cfg(not(aqs_loom))]
pub trait CondvarMutex: Sealed + lock_api::RawMutex {}

#[cfg(not(aqs_loom))]
impl CondvarMutex for crate::RawMutex {}
#[cfg(not(aqs_loom))]
impl CondvarMutex for crate::RawFairMutex {}

/// Whether a timed wait ended because its time ran out.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let (m, c) = (aqs::Mutex::new(()), aqs::Condvar::new());
/// let mut g = m.lock();
/// assert!(c.wait_for(&mut g, Duration::from_millis(1)).timed_out());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// Whether the wait timed out (for `wait_while_*`: and the condition
    /// still held).
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// A condition variable: threads wait, releasing a mutex, until another
/// thread notifies them; the JDK's `Condition`, in `parking_lot`'s API.
///
/// It works with the guards of both [`Mutex`](crate::Mutex) and
/// [`FairMutex`](crate::FairMutex), one mutex at a time: while threads wait
/// on it, every wait must use the same mutex.
///
/// # Behaviour
///
/// * **Notified waiters join the lock's queue; they are not woken to fight
///   for it.** A notify moves the waiter's node to the mutex's wait queue,
///   as the JDK's `ConditionObject` transfers it, and the waiter sleeps on
///   until the lock reaches it in queue order. `notify_all` on a hundred
///   waiters wakes none of them while the notifier holds the lock, and then
///   one at a time as the lock passes: no herd.
/// * **A waiter re-acquires the mutex before it returns**, also after a
///   timeout.
/// * **No spurious wake-ups.** `wait` returns only once a notify has reached
///   this waiter; `wait_for` and `wait_until` also when their time runs out.
///   A notify that returned `true` (or counted a waiter) always reaches a
///   waiter, even one whose time runs out at that moment: that waiter
///   returns as notified. Still, check the state the condition stands for
///   (`wait_while`): a notify says something changed, not what.
///
/// | JDK `Condition` | `aqs` |
/// |---|---|
/// | `lock.newCondition()` | [`Condvar::new`], used with the lock's guard |
/// | `await()` | [`wait`](Condvar::wait) |
/// | `awaitNanos(n)`, `await(time, unit)` | [`wait_for`](Condvar::wait_for) |
/// | `awaitUntil(date)` | [`wait_until`](Condvar::wait_until) |
/// | `signal()` / `signalAll()` | [`notify_one`](Condvar::notify_one) / [`notify_all`](Condvar::notify_all) |
/// | `awaitUninterruptibly()` | `wait` (threads are not interrupted in Rust) |
///
/// # Panics
///
/// A wait panics, changing nothing, if other threads are waiting with a
/// different mutex.
///
/// A wait also panics if a task waiting for the mutex (feature `async`)
/// has a waker that panics when the wait's release or re-acquire wakes it.
/// The wait then gives up at once, as if timed out, takes the mutex back
/// (as the guard says) and leaves nothing on the condition queue; every
/// other waiter is still woken. If a notify had already reached it, the
/// wait passes that notify on to the next waiter. A `wait_while`
/// condition that panics leaves the mutex held and the condition queue as
/// it was too.
///
/// # Size
///
/// 72 bytes: the condition queue (a `std` mutex over a deque of waiters)
/// and which mutex its waiters use.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
///
/// let pair = Arc::new((aqs::Mutex::new(false), aqs::Condvar::new()));
/// let pair2 = Arc::clone(&pair);
/// thread::spawn(move || {
///     let (ready, cond) = &*pair2;
///     *ready.lock() = true;
///     cond.notify_one();
/// });
/// let (ready, cond) = &*pair;
/// let mut ready = ready.lock();
/// cond.wait_while(&mut ready, |ready| !*ready);
/// assert!(*ready);
/// ```
#[cfg(not(aqs_loom))]
pub struct Condvar {
    cond: Condition,
}

#[cfg(not(aqs_loom))]
impl Condvar {
    /// A condition variable with no waiters. Usable in a `static`.
    pub const fn new() -> Self {
        Condvar {
            cond: Condition::new(),
        }
    }

    fn wait_raw<R: CondvarMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
    ) -> Waited {
        let mutex = lock_api::MutexGuard::mutex(guard);
        // SAFETY: the guard proves this thread holds the mutex, which the
        // guard borrows for longer than this call; `wait` releases it and
        // takes it back before returning, so the guard is valid again.
        let (waited, woke) = unsafe { self.cond.wait(mutex.raw().bound(), deadline) };
        // O3: the mutex is held again and our node is off the condition
        // queue: now a task waker's panic may reach our caller.
        crate::queue::propagate(woke);
        waited
    }

    /// Releases the guard's mutex and waits until notified, then re-acquires
    /// the mutex.
    ///
    /// # Panics
    ///
    /// If other threads are waiting with a different mutex; nothing changes.
    pub fn wait<R: CondvarMutex, T: ?Sized>(&self, guard: &mut lock_api::MutexGuard<'_, R, T>) {
        self.wait_raw(guard, None);
    }

    /// As [`wait`](Self::wait), until `deadline` at the latest.
    ///
    /// # Panics
    ///
    /// If other threads are waiting with a different mutex; nothing changes.
    pub fn wait_until<R: CondvarMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        WaitTimeoutResult(self.wait_raw(guard, Some(deadline)) == Waited::TimedOut)
    }

    /// As [`wait`](Self::wait), for `timeout` at most (a timeout past the
    /// clock's end waits without one).
    ///
    /// # Panics
    ///
    /// If other threads are waiting with a different mutex; nothing changes.
    pub fn wait_for<R: CondvarMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        let deadline = Instant::now().checked_add(timeout);
        WaitTimeoutResult(self.wait_raw(guard, deadline) == Waited::TimedOut)
    }

    /// Waits while `condition` holds for the protected value: returns at
    /// once if it does not, and after each notify checks again.
    ///
    /// # Panics
    ///
    /// If other threads are waiting with a different mutex; nothing changes.
    pub fn wait_while<R: CondvarMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) {
        while condition(&mut *guard) {
            self.wait(guard);
        }
    }

    /// As [`wait_while`](Self::wait_while), until `deadline` at the latest;
    /// timed out if the deadline passed with `condition` still true.
    ///
    /// # Panics
    ///
    /// If other threads are waiting with a different mutex; nothing changes.
    pub fn wait_while_until<R: CondvarMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        while condition(&mut *guard) {
            if self.wait_until(guard, deadline).timed_out() {
                return WaitTimeoutResult(condition(&mut *guard));
            }
        }
        WaitTimeoutResult(false)
    }

    /// As [`wait_while`](Self::wait_while), for `timeout` at most.
    ///
    /// # Panics
    ///
    /// If other threads are waiting with a different mutex; nothing changes.
    pub fn wait_while_for<R: CondvarMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        condition: impl FnMut(&mut T) -> bool,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_while_until(guard, condition, deadline),
            None => {
                self.wait_while(guard, condition);
                WaitTimeoutResult(false)
            }
        }
    }

    /// Moves the longest-waiting thread to the mutex's queue; returns whether
    /// there was one. It runs once it holds the mutex.
    ///
    /// # Examples
    ///
    /// ```
    /// let cond = aqs::Condvar::new();
    /// assert!(!cond.notify_one(), "nobody waits");
    /// ```
    pub fn notify_one(&self) -> bool {
        self.cond.notify_one()
    }

    /// Moves every waiting thread to the mutex's queue, in the order they
    /// began waiting; returns how many.
    ///
    /// # Examples
    ///
    /// ```
    /// let cond = aqs::Condvar::new();
    /// assert_eq!(cond.notify_all(), 0);
    /// ```
    pub fn notify_all(&self) -> usize {
        self.cond.notify_all()
    }
}

#[cfg(not(aqs_loom))]
impl Default for Condvar {
    fn default() -> Self {
        Condvar::new()
    }
}

#[cfg(not(aqs_loom))]
impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

#[cfg(all(test, aqs_loom))]
mod loom_models;
