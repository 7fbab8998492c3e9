//! Multi-lock: several of the crate's locks taken all or nothing, in one
//! global order, behind one guard (Curator's `InterProcessMultiLock`, in
//! one process).
//!
//! Invariants (cited as G1 and G2):
//!
//! * **G1, one global order.** Every call takes its locks in ascending order
//!   of their raw locks' addresses, whatever order the caller listed them
//!   in. Two calls over overlapping sets therefore never each hold a lock
//!   the other waits for. A set that names one lock twice panics before
//!   anything is taken.
//! * **G2, all or nothing.** A timed call that cannot take every lock by
//!   its deadline releases, in reverse order, every lock it took, and
//!   returns `None`: nothing stays held.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use lock_api::{RawMutex as _, RawMutexTimed as _, RawRwLock as _, RawRwLockTimed as _};

use crate::{
    FairMutex, FairMutexGuard, FairRwLock, FairRwLockWriteGuard, Mutex, MutexGuard, RawFairMutex,
    RawFairRwLock, RawMutex, RawRwLock, RwLock, RwLockWriteGuard,
};

/// One lock of a set, seen by [`lock_all`]: how to take it, give it back
/// and order it. Sealed; implemented by `&Mutex<T>`, `&FairMutex<T>`, and
/// the write side of `&RwLock<T>` and `&FairRwLock<T>` ([`Write`]).
pub trait Lockable<'a>: sealed::Sealed {
    /// The guard of a lock taken this way.
    type Guard;

    #[doc(hidden)]
    fn raw(&self) -> &'a dyn RawLock;

    /// # Safety
    ///
    /// The calling thread holds the lock, through [`Lockable::raw`].
    #[doc(hidden)]
    unsafe fn guard(self) -> Self::Guard;
}

mod sealed {
    pub trait Sealed {}
}

/// The raw side of a [`Lockable`]: not for use outside the crate.
#[doc(hidden)]
pub trait RawLock {
    fn take(&self);
    fn take_until(&self, deadline: Instant) -> bool;
    /// # Safety
    ///
    /// The calling thread holds the lock.
    unsafe fn give_back(&self);
}

macro_rules! raw_lock {
    ($raw:ty, $lock:ident, $try_until:ident, $unlock:ident) => {
        impl RawLock for $raw {
            fn take(&self) {
                self.$lock();
            }
            fn take_until(&self, deadline: Instant) -> bool {
                self.$try_until(deadline)
            }
            unsafe fn give_back(&self) {
                // SAFETY: the caller holds the lock.
                unsafe { self.$unlock() }
            }
        }
    };
}
raw_lock!(RawMutex, lock, try_lock_until, unlock);
raw_lock!(RawFairMutex, lock, try_lock_until, unlock);
raw_lock!(
    RawRwLock,
    lock_exclusive,
    try_lock_exclusive_until,
    unlock_exclusive
);
raw_lock!(
    RawFairRwLock,
    lock_exclusive,
    try_lock_exclusive_until,
    unlock_exclusive
);

macro_rules! lockable_mutex {
    ($lock:ident, $guard:ident) => {
        impl<T: ?Sized> sealed::Sealed for &$lock<T> {}

        impl<'a, T: ?Sized + 'a> Lockable<'a> for &'a $lock<T> {
            type Guard = $guard<'a, T>;

            fn raw(&self) -> &'a dyn RawLock {
                // SAFETY: only used to lock and unlock through `RawLock`,
                // which keeps lock_api's contract (G2).
                unsafe { $lock::raw(self) }
            }

            unsafe fn guard(self) -> Self::Guard {
                // SAFETY: the caller holds the lock.
                unsafe { self.make_guard_unchecked() }
            }
        }
    };
}
lockable_mutex!(Mutex, MutexGuard);
lockable_mutex!(FairMutex, FairMutexGuard);

/// The write side of a read-write lock, as a member of a [`lock_all`] set:
/// `aqs::Write(&lock)`.
///
/// # Examples
///
/// ```
/// let table = aqs::RwLock::new(0);
/// let log = aqs::Mutex::new(Vec::new());
/// let mut both = aqs::lock_all((aqs::Write(&table), &log));
/// *both.0 += 1;
/// both.1.push("incremented");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Write<'a, L: ?Sized>(pub &'a L);

macro_rules! lockable_write {
    ($lock:ident, $guard:ident) => {
        impl<T: ?Sized> sealed::Sealed for Write<'_, $lock<T>> {}

        impl<'a, T: ?Sized + 'a> Lockable<'a> for Write<'a, $lock<T>> {
            type Guard = $guard<'a, T>;

            fn raw(&self) -> &'a dyn RawLock {
                // SAFETY: only used to lock and unlock through `RawLock`.
                unsafe { $lock::raw(self.0) }
            }

            unsafe fn guard(self) -> Self::Guard {
                // SAFETY: the caller holds the write lock.
                unsafe { self.0.make_write_guard_unchecked() }
            }
        }
    };
}
lockable_write!(RwLock, RwLockWriteGuard);
lockable_write!(FairRwLock, FairRwLockWriteGuard);

/// A set of locks for [`lock_all`]: a tuple of up to eight [`Lockable`]s,
/// or a `Vec` of one kind. Sealed.
pub trait LockSet<'a>: Sized {
    /// The guards, in the set's shape: a tuple, or a `Vec`.
    type Guards;

    #[doc(hidden)]
    fn raws(&self) -> Vec<&'a dyn RawLock>;

    /// # Safety
    ///
    /// The calling thread holds every lock of the set.
    #[doc(hidden)]
    unsafe fn guards(self) -> Self::Guards;
}

macro_rules! tuple_set {
    ($($t:ident $i:tt),+) => {
        impl<'a, $($t: Lockable<'a>),+> LockSet<'a> for ($($t,)+) {
            type Guards = ($($t::Guard,)+);

            fn raws(&self) -> Vec<&'a dyn RawLock> {
                vec![$(self.$i.raw()),+]
            }

            unsafe fn guards(self) -> Self::Guards {
                // SAFETY: the caller holds every lock.
                unsafe { ($(self.$i.guard(),)+) }
            }
        }
    };
}
tuple_set!(A 0);
tuple_set!(A 0, B 1);
tuple_set!(A 0, B 1, C 2);
tuple_set!(A 0, B 1, C 2, D 3);
tuple_set!(A 0, B 1, C 2, D 3, E 4);
tuple_set!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_set!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_set!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

impl<'a, L: Lockable<'a>> LockSet<'a> for Vec<L> {
    type Guards = Vec<L::Guard>;

    fn raws(&self) -> Vec<&'a dyn RawLock> {
        self.iter().map(Lockable::raw).collect()
    }

    unsafe fn guards(self) -> Self::Guards {
        // SAFETY: the caller holds every lock.
        self.into_iter().map(|l| unsafe { l.guard() }).collect()
    }
}

/// The guards of a whole set, taken by [`lock_all`]: dereferences to the
/// tuple (or `Vec`) of guards; dropping it unlocks every lock.
pub struct MultiGuard<G> {
    guards: G,
}

impl<G> MultiGuard<G> {
    /// The guards themselves, to drop one by one.
    ///
    /// # Examples
    ///
    /// ```
    /// let (a, b) = (aqs::Mutex::new(1), aqs::Mutex::new(2));
    /// let (ga, gb) = aqs::lock_all((&a, &b)).into_inner();
    /// drop(ga);
    /// assert!(a.try_lock().is_some() && b.try_lock().is_none());
    /// # drop(gb);
    /// ```
    pub fn into_inner(self) -> G {
        self.guards
    }
}

impl<G> Deref for MultiGuard<G> {
    type Target = G;
    fn deref(&self) -> &G {
        &self.guards
    }
}

impl<G> DerefMut for MultiGuard<G> {
    fn deref_mut(&mut self) -> &mut G {
        &mut self.guards
    }
}

impl<G> fmt::Debug for MultiGuard<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiGuard").finish_non_exhaustive()
    }
}

/// The set's raw locks in the global order (G1).
///
/// # Panics
///
/// If the set names one lock twice.
fn ordered<'a>(set: &impl LockSet<'a>) -> Vec<&'a dyn RawLock> {
    let mut raws = set.raws();
    raws.sort_by_key(|r| address(*r));
    if raws.windows(2).any(|w| address(w[0]) == address(w[1])) {
        panic!("aqs::lock_all: the set names one lock twice, which would deadlock");
    }
    raws
}

fn address(raw: &dyn RawLock) -> usize {
    raw as *const dyn RawLock as *const () as usize
}

/// Takes every lock of `set`, blocking as long as it takes, and returns
/// their guards as one. Locks are taken in one global order (by address),
/// so two threads locking overlapping sets never deadlock, whatever order
/// each lists them in.
///
/// The set is a tuple of up to eight locks, or a `Vec` of one kind: a
/// `&Mutex<T>`, a `&FairMutex<T>`, or [`Write`] of a `&RwLock<T>` or
/// `&FairRwLock<T>`. The guards come back in the set's order.
///
/// # Panics
///
/// If the set names one lock twice (before anything is taken). If taking a
/// lock wakes a task whose waker panics (feature `async`), the panic
/// propagates after every lock taken so far is given back.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::thread;
///
/// let accounts = Arc::new([aqs::Mutex::new(100), aqs::Mutex::new(0)]);
/// // Two transfers in opposite directions: the global order keeps them
/// // from deadlocking.
/// let transfers: Vec<_> = [(0, 1), (1, 0)]
///     .into_iter()
///     .map(|(from, to)| {
///         let accounts = Arc::clone(&accounts);
///         thread::spawn(move || {
///             let mut both = aqs::lock_all((&accounts[from], &accounts[to]));
///             *both.0 -= 10;
///             *both.1 += 10;
///         })
///     })
///     .collect();
/// for t in transfers {
///     t.join().unwrap();
/// }
/// assert_eq!(*accounts[0].lock() + *accounts[1].lock(), 100);
/// ```
pub fn lock_all<'a, S: LockSet<'a>>(set: S) -> MultiGuard<S::Guards> {
    let raws = ordered(&set);
    let mut taken = Taken { raws: &raws, n: 0 };
    for raw in &raws {
        raw.take();
        taken.n += 1;
    }
    taken.n = 0; // all held: the guards own them now
                 // SAFETY: every lock of the set is held by this thread.
    let guards = unsafe { set.guards() };
    MultiGuard { guards }
}

/// The locks of a set taken so far; dropped early (a timeout) or by a
/// panic (a task waker that one of the acquires woke, O3 in the core), it
/// gives them back, last taken first, so that no lock is left held by
/// nobody.
struct Taken<'r, 'a> {
    raws: &'r [&'a dyn RawLock],
    n: usize,
}

impl Drop for Taken<'_, '_> {
    fn drop(&mut self) {
        for held in self.raws[..self.n].iter().rev() {
            // SAFETY: taken by this thread and not handed to a guard.
            unsafe { held.give_back() };
        }
    }
}

/// Takes every lock of `set` by `deadline`, or none: returns `None` if a
/// lock could not be taken in time, having released every lock it took
/// (G2). Locks are taken in the global order of [`lock_all`].
///
/// # Panics
///
/// If the set names one lock twice (before anything is taken).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let (a, b) = (aqs::Mutex::new(()), aqs::FairMutex::new(()));
/// let held = b.lock();
/// let soon = Instant::now() + Duration::from_millis(5);
/// assert!(aqs::try_lock_all_until((&a, &b), soon).is_none());
/// assert!(a.try_lock().is_some(), "a was released again");
/// drop(held);
/// assert!(aqs::try_lock_all_until((&a, &b), soon).is_some());
/// ```
pub fn try_lock_all_until<'a, S: LockSet<'a>>(
    set: S,
    deadline: Instant,
) -> Option<MultiGuard<S::Guards>> {
    let raws = ordered(&set);
    let mut taken = Taken { raws: &raws, n: 0 };
    for raw in &raws {
        if !raw.take_until(deadline) {
            return None; // `taken` gives back what it holds
        }
        taken.n += 1;
    }
    taken.n = 0; // all held: the guards own them now
                 // SAFETY: every lock of the set is held by this thread.
    let guards = unsafe { set.guards() };
    Some(MultiGuard { guards })
}

/// [`try_lock_all_until`] with a timeout: every lock of `set` within
/// `timeout`, or none. A timeout too large for the clock waits without
/// one.
///
/// # Panics
///
/// If the set names one lock twice (before anything is taken).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let locks = vec![aqs::FairMutex::new(1), aqs::FairMutex::new(2)];
/// let all = aqs::try_lock_all_for(locks.iter().collect::<Vec<_>>(), Duration::from_secs(1)).unwrap();
/// assert_eq!(all.iter().map(|g| **g).sum::<i32>(), 3);
/// ```
pub fn try_lock_all_for<'a, S: LockSet<'a>>(
    set: S,
    timeout: Duration,
) -> Option<MultiGuard<S::Guards>> {
    match Instant::now().checked_add(timeout) {
        Some(deadline) => try_lock_all_until(set, deadline),
        None => Some(lock_all(set)),
    }
}
