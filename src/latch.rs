//! [`CountDownLatch`]: the JDK's one-shot gate, in shared mode on the core.
//!
//! The value is the count. A wait is a shared acquire that succeeds, taking
//! nothing, once the count is 0; a count-down is a release that lowers it.
//! Invariants (cited as L1 and L2):
//!
//! * **L1, the count only falls.** A count-down lowers a positive count by
//!   one and leaves 0 alone; nothing raises it. So once a waiter has seen 0,
//!   every later look sees 0.
//! * **L2, only the last count-down wakes.** A count-down that leaves the
//!   count above 0 lets nobody in and skips the queue
//!   (`Policy::release_may_admit`). The one that reaches 0 wakes the first
//!   waiter, whose acquire propagates (it leaves 0, so the next one may
//!   pass too), and so on through the queue: one count-down wakes everyone.

use std::fmt;
use std::time::{Duration, Instant};

use crate::queue::{self, Acquired, Discipline, Policy, RawSync, TryAcquire};

/// The latch's AQS hooks.
pub(crate) struct LatchPolicy;

impl Policy for LatchPolicy {
    /// Passes at 0, taking nothing, and lets the next waiter pass too (L1).
    #[inline]
    fn try_acquire_shared(&self, value: u32, _arg: u32, _others_queued: bool) -> Option<Acquired> {
        (value == 0).then_some(Acquired {
            value: 0,
            propagate: true,
        })
    }

    /// One count down, none below 0 (L1).
    #[inline]
    fn try_release_shared(&self, value: u32, _arg: u32) -> u32 {
        value.saturating_sub(1)
    }

    #[inline]
    fn discipline(&self) -> Discipline {
        Discipline::Fifo
    }

    /// L2.
    #[inline]
    fn release_may_admit(&self, _before: u32, after: u32) -> bool {
        after == 0
    }
}

/// A gate that opens when a count reaches zero: threads [`wait`] until
/// others have called [`count_down`] as many times as the count said. The
/// JDK's `CountDownLatch`.
///
/// The count only falls (it cannot be reset; make a new latch). The
/// count-down that reaches zero wakes every waiter, through the queue's
/// propagation: each woken waiter wakes the next.
///
/// | JDK `CountDownLatch` | `aqs` |
/// |---|---|
/// | `new CountDownLatch(count)` | [`CountDownLatch::new`] |
/// | `countDown()` | [`count_down`] |
/// | `getCount()` | [`count`] |
/// | `await()` | [`wait`] (no interruption: it returns only at zero) |
/// | `await(timeout, unit)` | [`wait_for`], [`wait_until`] |
///
/// # Size
///
/// 64 bytes: one core (the count, the waiter count, the queue's head and
/// tail, node reclamation, waiting statistics and the read look's cache).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
///
/// let ready = Arc::new(aqs::CountDownLatch::new(3));
/// let workers: Vec<_> = (0..3)
///     .map(|_| {
///         let ready = Arc::clone(&ready);
///         thread::spawn(move || ready.count_down())
///     })
///     .collect();
/// ready.wait(); // returns once all three have counted down
/// assert_eq!(ready.count(), 0);
/// # for w in workers { w.join().unwrap(); }
/// ```
///
/// [`wait`]: CountDownLatch::wait
/// [`wait_for`]: CountDownLatch::wait_for
/// [`wait_until`]: CountDownLatch::wait_until
/// [`count_down`]: CountDownLatch::count_down
/// [`count`]: CountDownLatch::count
pub struct CountDownLatch {
    sync: RawSync,
}

impl CountDownLatch {
    /// A latch that opens after `count` count-downs; at once if `count` is 0.
    ///
    /// # Panics
    ///
    /// If `count` is above `u32::MAX` (the count shares the core's 64-bit
    /// state word with the queue's fields).
    ///
    /// # Examples
    ///
    /// ```
    /// let open = aqs::CountDownLatch::new(0);
    /// open.wait(); // already open
    /// ```
    #[cfg(not(aqs_loom))]
    pub const fn new(count: usize) -> Self {
        assert!(
            count <= u32::MAX as usize,
            "aqs: a CountDownLatch's count is at most u32::MAX"
        );
        CountDownLatch {
            sync: RawSync::new(count as u32),
        }
    }

    /// A latch that opens after `count` count-downs (loom build).
    #[cfg(aqs_loom)]
    pub fn new(count: usize) -> Self {
        assert!(count <= u32::MAX as usize);
        CountDownLatch {
            sync: RawSync::new(count as u32),
        }
    }

    /// Lowers the count by one; the count-down that reaches zero wakes every
    /// waiter. At zero it does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// let latch = aqs::CountDownLatch::new(1);
    /// latch.count_down();
    /// latch.count_down(); // already open: nothing happens
    /// assert_eq!(latch.count(), 0);
    /// ```
    #[inline]
    pub fn count_down(&self) {
        if queue::value_of(self.sync.state()) != 0 {
            self.sync.release_shared(&LatchPolicy, 1);
        }
    }

    /// The count now (a snapshot, unless it is 0, which is final).
    ///
    /// # Examples
    ///
    /// ```
    /// let latch = aqs::CountDownLatch::new(2);
    /// latch.count_down();
    /// assert_eq!(latch.count(), 1);
    /// ```
    #[inline]
    pub fn count(&self) -> usize {
        queue::value_of(self.sync.state()) as usize
    }

    /// Blocks until the count is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let start = Arc::new(aqs::CountDownLatch::new(1));
    /// let runner = {
    ///     let start = Arc::clone(&start);
    ///     std::thread::spawn(move || {
    ///         start.wait();
    ///         "ran"
    ///     })
    /// };
    /// start.count_down(); // the starting gun
    /// assert_eq!(runner.join().unwrap(), "ran");
    /// ```
    #[inline]
    pub fn wait(&self) {
        let opened = self.wait_deadline(None);
        debug_assert!(opened, "an untimed wait returns only at zero");
    }

    /// Blocks until the count is zero or `timeout` has passed; returns
    /// whether the count reached zero. A timeout too large for the clock
    /// waits without one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let latch = aqs::CountDownLatch::new(1);
    /// assert!(!latch.wait_for(Duration::from_millis(1)));
    /// latch.count_down();
    /// assert!(latch.wait_for(Duration::from_millis(1)));
    /// ```
    #[inline]
    pub fn wait_for(&self, timeout: Duration) -> bool {
        self.wait_deadline(Instant::now().checked_add(timeout))
    }

    /// Blocks until the count is zero or `deadline` has passed; returns
    /// whether the count reached zero. Even past the deadline, a latch
    /// that is open answers true.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let latch = aqs::CountDownLatch::new(1);
    /// assert!(!latch.wait_until(Instant::now() + Duration::from_millis(1)));
    /// ```
    #[inline]
    pub fn wait_until(&self, deadline: Instant) -> bool {
        self.wait_deadline(Some(deadline))
    }

    fn wait_deadline(&self, deadline: Option<Instant>) -> bool {
        if self.sync.try_acquire_shared(&LatchPolicy, 1) == TryAcquire::Acquired {
            return true;
        }
        self.sync.acquire_shared(&LatchPolicy, 1, deadline).is_ok()
    }

    /// Waits, without blocking the thread, until the count is zero. Tasks
    /// and threads wait in one queue; the last count-down wakes both kinds.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future leaves the queue and changes
    /// nothing else. A queued future that is never polled again stays
    /// queued, harmlessly here (the latch's waiters do not wait on each
    /// other; see [the `future` module](crate::future)).
    ///
    /// # Panics
    ///
    /// If a task waker that its poll wakes (another waiter, by
    /// propagation) or drops (its own) panics; every other waiter is still
    /// woken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let ready = Arc::new(aqs::CountDownLatch::new(1));
    /// let opener = Arc::clone(&ready);
    /// std::thread::spawn(move || opener.count_down());
    /// futures_executor::block_on(ready.wait_async());
    /// assert_eq!(ready.count(), 0);
    /// ```
    #[cfg(all(feature = "async", not(aqs_loom)))]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn wait_async(&self) -> crate::future::LatchWait<'_> {
        let queued = queue::QueuedAcquire::new(&self.sync, queue::Mode::Shared, 1);
        crate::future::LatchWait::new(queued, &LatchPolicy)
    }

    /// How many threads wait (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(aqs::CountDownLatch::new(1).queue_length(), 0);
    /// ```
    pub fn queue_length(&self) -> usize {
        queue::waiters_of(self.sync.state()) as usize
    }
}

impl fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("count", &self.count())
            .field("queued", &self.queue_length())
            .finish()
    }
}

#[cfg(all(test, aqs_loom))]
mod loom_models;
