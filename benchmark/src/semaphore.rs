//! The semaphores under test, each behind [`Contender`]: `aqs` fair and
//! nonfair, tokio, async-lock, futures-intrusive fair and unfair, and a
//! Mutex + Condvar semaphore on std and on parking_lot.

use std::mem;

use futures_executor::block_on;

/// What every semaphore under test offers. A permit returns on drop.
pub trait Contender: Send + Sync + 'static {
    /// The name in benchmark ids, the JSON lines and the report.
    const NAME: &'static str;

    /// A held permit; dropping it gives the permits back.
    type Permit<'a>
    where
        Self: 'a;

    /// A semaphore holding `permits` permits.
    fn new(permits: usize) -> Self;
    /// Blocks until one permit is available.
    fn acquire(&self) -> Self::Permit<'_>;
    /// One permit if one is available now.
    fn try_acquire(&self) -> Option<Self::Permit<'_>>;
    /// Adds `n` permits, waking waiters.
    fn add_permits(&self, n: usize);

    /// Acquires one permit and keeps it: the permit is never returned.
    fn take(&self) {
        mem::forget(self.acquire());
    }
}

/// Calls `$f::<C>(args)` for every contender `C`, in the report's order.
#[macro_export]
macro_rules! each_contender {
    ($f:ident($($arg:expr),*)) => {{
        $f::<$crate::AqsNonfair>($($arg),*);
        $f::<$crate::AqsFair>($($arg),*);
        $f::<$crate::Tokio>($($arg),*);
        $f::<$crate::AsyncLock>($($arg),*);
        $f::<$crate::FiFair>($($arg),*);
        $f::<$crate::FiUnfair>($($arg),*);
        $f::<$crate::StdCondvar>($($arg),*);
        $f::<$crate::PlCondvar>($($arg),*);
    }};
}

/// A contender that wraps a semaphore: its type, name, permit and calls.
macro_rules! contender {
    (
        $(#[$doc:meta])* $ty:ident($inner:ty) = $name:literal;
        type Permit<$lt:lifetime> = $permit:ty;
        new($p:ident) = $new:expr;
        acquire($s:ident) = $acquire:expr;
        try_acquire($t:ident) = $try_acquire:expr;
        add_permits($a:ident, $n:ident) = $add:expr;
    ) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $ty($inner);

        impl Contender for $ty {
            const NAME: &'static str = $name;
            type Permit<$lt> = $permit;

            fn new($p: usize) -> Self {
                $ty($new)
            }
            #[inline]
            fn acquire(&self) -> Self::Permit<'_> {
                let $s = &self.0;
                $acquire
            }
            #[inline]
            fn try_acquire(&self) -> Option<Self::Permit<'_>> {
                let $t = &self.0;
                $try_acquire
            }
            #[inline]
            fn add_permits(&self, $n: usize) {
                let $a = &self.0;
                $add
            }
        }
    };
}

contender! {
    /// `aqs::Semaphore::new`: barging.
    AqsNonfair(aqs::Semaphore) = "aqs-nonfair";
    type Permit<'a> = aqs::SemaphorePermit<'a>;
    new(p) = aqs::Semaphore::new(p);
    acquire(s) = s.acquire().expect("never closed");
    try_acquire(s) = s.try_acquire().ok();
    add_permits(s, n) = s.add_permits(n);
}

contender! {
    /// `aqs::Semaphore::new_fair`: FIFO.
    AqsFair(aqs::Semaphore) = "aqs-fair";
    type Permit<'a> = aqs::SemaphorePermit<'a>;
    new(p) = aqs::Semaphore::new_fair(p);
    acquire(s) = s.acquire().expect("never closed");
    try_acquire(s) = s.try_acquire().ok();
    add_permits(s, n) = s.add_permits(n);
}

contender! {
    /// `tokio::sync::Semaphore` (FIFO only), blocked on through `block_on`
    /// as a synchronous caller would.
    Tokio(tokio::sync::Semaphore) = "tokio";
    type Permit<'a> = tokio::sync::SemaphorePermit<'a>;
    new(p) = tokio::sync::Semaphore::new(p);
    acquire(s) = block_on(s.acquire()).expect("never closed");
    try_acquire(s) = s.try_acquire().ok();
    add_permits(s, n) = s.add_permits(n);
}

contender! {
    /// `async_lock::Semaphore` (not FIFO) through its own blocking acquire.
    AsyncLock(async_lock::Semaphore) = "async-lock";
    type Permit<'a> = async_lock::SemaphoreGuard<'a>;
    new(p) = async_lock::Semaphore::new(p);
    acquire(s) = s.acquire_blocking();
    try_acquire(s) = s.try_acquire();
    add_permits(s, n) = s.add_permits(n);
}

contender! {
    /// `futures_intrusive::sync::Semaphore`, fair, through `block_on`.
    FiFair(futures_intrusive::sync::Semaphore) = "futures-intrusive-fair";
    type Permit<'a> = futures_intrusive::sync::SemaphoreReleaser<'a>;
    new(p) = futures_intrusive::sync::Semaphore::new(true, p);
    acquire(s) = block_on(s.acquire(1));
    try_acquire(s) = s.try_acquire(1);
    add_permits(s, n) = s.release(n);
}

contender! {
    /// `futures_intrusive::sync::Semaphore`, unfair, through `block_on`.
    FiUnfair(futures_intrusive::sync::Semaphore) = "futures-intrusive-unfair";
    type Permit<'a> = futures_intrusive::sync::SemaphoreReleaser<'a>;
    new(p) = futures_intrusive::sync::Semaphore::new(false, p);
    acquire(s) = block_on(s.acquire(1));
    try_acquire(s) = s.try_acquire(1);
    add_permits(s, n) = s.release(n);
}

/// A permit that gives one permit back to its semaphore on drop.
#[derive(Debug)]
pub struct OnePermit<'a, S: Contender>(&'a S);

impl<S: Contender> Drop for OnePermit<'_, S> {
    #[inline]
    fn drop(&mut self) {
        self.0.add_permits(1);
    }
}

/// The textbook blocking semaphore: a count under a mutex, and a condition
/// variable. It counts its waiters so that a release nobody waits for makes
/// no notify call. Not FIFO.
macro_rules! condvar_contender {
    (
        $(#[$doc:meta])* $ty:ident, $name:literal, $mutex:ty, $condvar:ty,
        lock: |$m:ident| $lock:expr, wait: |$c:ident, $g:ident| $wait:expr $(,)?
    ) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $ty {
            /// (permits, waiters)
            state: $mutex,
            cond: $condvar,
        }

        impl Contender for $ty {
            const NAME: &'static str = $name;
            type Permit<'a> = OnePermit<'a, Self>;

            fn new(permits: usize) -> Self {
                $ty { state: <$mutex>::new((permits, 0)), cond: <$condvar>::new() }
            }
            #[inline]
            fn acquire(&self) -> Self::Permit<'_> {
                let $m = &self.state;
                let mut state = $lock;
                while state.0 == 0 {
                    state.1 += 1;
                    let ($c, $g) = (&self.cond, state);
                    state = $wait;
                    state.1 -= 1;
                }
                state.0 -= 1;
                OnePermit(self)
            }
            #[inline]
            fn try_acquire(&self) -> Option<Self::Permit<'_>> {
                let $m = &self.state;
                let mut state = $lock;
                (state.0 > 0).then(|| {
                    state.0 -= 1;
                    OnePermit(self)
                })
            }
            #[inline]
            fn add_permits(&self, n: usize) {
                let $m = &self.state;
                let mut state = $lock;
                state.0 += n;
                let waiters = state.1;
                drop(state);
                if waiters > 0 && n == 1 {
                    self.cond.notify_one();
                } else if waiters > 0 {
                    self.cond.notify_all();
                }
            }
        }
    };
}

condvar_contender!(
    /// A count under `std::sync::Mutex` with a `std::sync::Condvar`.
    StdCondvar,
    "std-condvar",
    std::sync::Mutex<(usize, usize)>,
    std::sync::Condvar,
    lock: |m| m.lock().unwrap_or_else(|e| e.into_inner()),
    wait: |c, g| c.wait(g).unwrap_or_else(|e| e.into_inner()),
);

condvar_contender!(
    /// A count under `parking_lot::Mutex` with a `parking_lot::Condvar`.
    PlCondvar,
    "parking_lot-condvar",
    parking_lot::Mutex<(usize, usize)>,
    parking_lot::Condvar,
    lock: |m| m.lock(),
    wait: |c, g| {
        let mut g = g;
        c.wait(&mut g);
        g
    },
);
