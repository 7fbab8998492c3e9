//! The read-write locks under test, each a lock over a `u64` behind
//! [`RwLockContender`], and the per-thread xorshift that decides whether an
//! operation reads or writes.

use std::ops::{Deref, DerefMut};
use std::sync::PoisonError;

use parking_lot::lock_api;

/// What every read-write lock under test offers: a lock over one `u64`; the
/// guards unlock on drop.
pub trait RwLockContender: Send + Sync + 'static {
    /// The name in benchmark ids, the JSON lines and the report.
    const NAME: &'static str;

    /// A held read lock, with shared access to the value.
    type ReadGuard<'a>: Deref<Target = u64>
    where
        Self: 'a;
    /// A held write lock, with access to the value.
    type WriteGuard<'a>: DerefMut<Target = u64>
    where
        Self: 'a;

    /// An unlocked lock holding `value`.
    fn new(value: u64) -> Self;
    /// Blocks until this thread holds a read lock.
    fn read(&self) -> Self::ReadGuard<'_>;
    /// Blocks until this thread holds the write lock.
    fn write(&self) -> Self::WriteGuard<'_>;
}

/// The contender's name of a `lock_api` raw read-write lock: every
/// `lock_api::RwLock` over one is a [`RwLockContender`].
pub trait RawRwName {
    /// As [`RwLockContender::NAME`].
    const NAME: &'static str;
}

impl<R> RwLockContender for lock_api::RwLock<R, u64>
where
    R: lock_api::RawRwLock + RawRwName + Send + Sync + 'static,
{
    const NAME: &'static str = R::NAME;
    type ReadGuard<'a> = lock_api::RwLockReadGuard<'a, R, u64>;
    type WriteGuard<'a> = lock_api::RwLockWriteGuard<'a, R, u64>;

    fn new(value: u64) -> Self {
        lock_api::RwLock::new(value)
    }
    #[inline]
    fn read(&self) -> Self::ReadGuard<'_> {
        lock_api::RwLock::read(self)
    }
    #[inline]
    fn write(&self) -> Self::WriteGuard<'_> {
        lock_api::RwLock::write(self)
    }
}

impl RwLockContender for std::sync::RwLock<u64> {
    const NAME: &'static str = "std";
    type ReadGuard<'a> = std::sync::RwLockReadGuard<'a, u64>;
    type WriteGuard<'a> = std::sync::RwLockWriteGuard<'a, u64>;

    fn new(value: u64) -> Self {
        std::sync::RwLock::new(value)
    }
    #[inline]
    fn read(&self) -> Self::ReadGuard<'_> {
        std::sync::RwLock::read(self).unwrap_or_else(PoisonError::into_inner)
    }
    #[inline]
    fn write(&self) -> Self::WriteGuard<'_> {
        std::sync::RwLock::write(self).unwrap_or_else(PoisonError::into_inner)
    }
}

/// `aqs::RwLock`: writers may barge; arriving readers defer to a writer
/// first in the queue.
impl RawRwName for aqs::RawRwLock {
    const NAME: &'static str = "aqs";
}
/// `aqs::FairRwLock`: strict FIFO.
impl RawRwName for aqs::RawFairRwLock {
    const NAME: &'static str = "aqs-fair";
}
/// `parking_lot::RwLock`: task-fair with barging, eventually fair.
impl RawRwName for parking_lot::RawRwLock {
    const NAME: &'static str = "parking_lot";
}

/// `aqs::RwLock` over the protected word.
pub type AqsRwLock = aqs::RwLock<u64>;
/// `aqs::FairRwLock` over the protected word.
pub type AqsFairRwLock = aqs::FairRwLock<u64>;
/// `parking_lot::RwLock` over the protected word.
pub type PlRwLock = parking_lot::RwLock<u64>;
/// `std::sync::RwLock` over the protected word.
pub type StdRwLock = std::sync::RwLock<u64>;

/// Calls `$f::<L>(args)` for every read-write lock contender `L`, in the
/// report's order.
#[macro_export]
macro_rules! each_rwlock {
    ($f:ident($($arg:expr),*)) => {{
        $f::<$crate::AqsRwLock>($($arg),*);
        $f::<$crate::AqsFairRwLock>($($arg),*);
        $f::<$crate::PlRwLock>($($arg),*);
        $f::<$crate::StdRwLock>($($arg),*);
    }};
}

/// The seed of worker `i`'s xorshift; `RwLockBench.java` seeds its threads
/// the same way, so both languages draw the same sequence of reads and
/// writes.
pub fn xorshift_seed(i: usize) -> u64 {
    0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1) | 1
}

/// One step of Marsaglia's xorshift64 (13, 7, 17): the next state.
#[inline]
pub fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// Whether the operation drawn as `x` (a xorshift state) is a read, for a
/// workload of `read_percent`% reads: `x mod 100 < read_percent`, unsigned.
#[inline]
pub fn is_read(x: u64, read_percent: u32) -> bool {
    x % 100 < u64::from(read_percent)
}
