//! The mutexes under test, each a lock over a `u64` behind
//! [`MutexContender`], and the condition variables that go with them,
//! behind [`CondvarContender`].

use std::ops::DerefMut;
use std::sync::PoisonError;

use parking_lot::lock_api;

/// What every mutex under test offers: a lock over one `u64`; the guard
/// unlocks on drop.
pub trait MutexContender: Send + Sync + 'static {
    /// The name in benchmark ids, the JSON lines and the report.
    const NAME: &'static str;

    /// A held lock, with access to the value.
    type Guard<'a>: DerefMut<Target = u64>
    where
        Self: 'a;

    /// An unlocked mutex holding `value`.
    fn new(value: u64) -> Self;
    /// Blocks until the lock is this thread's.
    fn lock(&self) -> Self::Guard<'_>;
}

/// The contender's name of a `lock_api` raw mutex: every `lock_api::Mutex`
/// over one is a [`MutexContender`].
pub trait RawName {
    /// As [`MutexContender::NAME`].
    const NAME: &'static str;
}

impl<R> MutexContender for lock_api::Mutex<R, u64>
where
    R: lock_api::RawMutex + RawName + Send + Sync + 'static,
{
    const NAME: &'static str = R::NAME;
    type Guard<'a> = lock_api::MutexGuard<'a, R, u64>;

    fn new(value: u64) -> Self {
        lock_api::Mutex::new(value)
    }
    #[inline]
    fn lock(&self) -> Self::Guard<'_> {
        lock_api::Mutex::lock(self)
    }
}

impl MutexContender for std::sync::Mutex<u64> {
    const NAME: &'static str = "std";
    type Guard<'a> = std::sync::MutexGuard<'a, u64>;

    fn new(value: u64) -> Self {
        std::sync::Mutex::new(value)
    }
    #[inline]
    fn lock(&self) -> Self::Guard<'_> {
        std::sync::Mutex::lock(self).unwrap_or_else(PoisonError::into_inner)
    }
}

/// `aqs::Mutex`: barging.
impl RawName for aqs::RawMutex {
    const NAME: &'static str = "aqs";
}
/// `aqs::FairMutex`: strict FIFO.
impl RawName for aqs::RawFairMutex {
    const NAME: &'static str = "aqs-fair";
}
/// `parking_lot::Mutex`: barging, eventually fair (a fair unlock about every
/// 0.5 ms).
impl RawName for parking_lot::RawMutex {
    const NAME: &'static str = "parking_lot";
}
/// `parking_lot::FairMutex`: its `Mutex` with `unlock_fair` on every
/// unlock.
impl RawName for parking_lot::RawFairMutex {
    const NAME: &'static str = "parking_lot-fair";
}

/// `aqs::Mutex` over the protected word.
pub type AqsMutex = aqs::Mutex<u64>;
/// `aqs::FairMutex` over the protected word.
pub type AqsFairMutex = aqs::FairMutex<u64>;
/// `parking_lot::Mutex` over the protected word.
pub type PlMutex = parking_lot::Mutex<u64>;
/// `parking_lot::FairMutex` over the protected word.
pub type PlFairMutex = parking_lot::FairMutex<u64>;
/// `std::sync::Mutex` over the protected word.
pub type StdMutex = std::sync::Mutex<u64>;

/// Calls `$f::<M>(args)` for every mutex contender `M`, in the report's
/// order.
#[macro_export]
macro_rules! each_mutex {
    ($f:ident($($arg:expr),*)) => {{
        $f::<$crate::AqsMutex>($($arg),*);
        $f::<$crate::AqsFairMutex>($($arg),*);
        $f::<$crate::PlMutex>($($arg),*);
        $f::<$crate::PlFairMutex>($($arg),*);
        $f::<$crate::StdMutex>($($arg),*);
    }};
}

/// A condition variable that works with the guards of `M`. Its cells carry
/// `M`'s name: each mutex is measured with its own crate's condvar.
pub trait CondvarContender<M: MutexContender>: Send + Sync + 'static {
    /// A condition variable nobody waits on.
    fn new() -> Self;
    /// Unlocks, blocks until notified (or spuriously), and locks again.
    fn wait<'a>(&self, guard: M::Guard<'a>) -> M::Guard<'a>;
    /// Wakes one waiter, if any.
    fn notify_one(&self);
    /// Wakes every waiter.
    fn notify_all(&self);
}

/// Makes `$cv` a [`CondvarContender`] of the mutex `$m`, `wait` taking the
/// guard by value and giving it back.
macro_rules! condvar {
    ($cv:ty, $m:ty, wait: |$c:ident, $g:pat_param| $wait:expr) => {
        impl CondvarContender<$m> for $cv {
            fn new() -> Self {
                <$cv>::new()
            }
            #[inline]
            fn wait<'a>(
                &self,
                $g: <$m as MutexContender>::Guard<'a>,
            ) -> <$m as MutexContender>::Guard<'a> {
                let $c = self;
                $wait
            }
            #[inline]
            fn notify_one(&self) {
                <$cv>::notify_one(self);
            }
            #[inline]
            fn notify_all(&self) {
                <$cv>::notify_all(self);
            }
        }
    };
}

condvar!(aqs::Condvar, AqsMutex, wait: |c, mut g| {
    c.wait(&mut g);
    g
});
condvar!(aqs::Condvar, AqsFairMutex, wait: |c, mut g| {
    c.wait(&mut g);
    g
});
condvar!(parking_lot::Condvar, PlMutex, wait: |c, mut g| {
    c.wait(&mut g);
    g
});
condvar!(std::sync::Condvar, StdMutex, wait: |c, g| c
    .wait(g)
    .unwrap_or_else(PoisonError::into_inner));

/// Calls `$f::<M, C>(args)` for every mutex `M` with a condition variable
/// `C`, in the report's order. A new pair is one `condvar!` line and one
/// line here.
#[macro_export]
macro_rules! each_condvar {
    ($f:ident($($arg:expr),*)) => {{
        $f::<$crate::AqsMutex, ::aqs::Condvar>($($arg),*);
        $f::<$crate::AqsFairMutex, ::aqs::Condvar>($($arg),*);
        $f::<$crate::PlMutex, ::parking_lot::Condvar>($($arg),*);
        $f::<$crate::StdMutex, ::std::sync::Condvar>($($arg),*);
    }};
}
