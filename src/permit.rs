//! RAII permits: dropping one gives its permits back to the semaphore.

use std::fmt;
use std::mem;
use std::sync::Arc;

use crate::semaphore::Semaphore;

/// Permits borrowed from a [`Semaphore`]; dropping this returns them.
///
/// Returned by [`Semaphore::acquire`] and friends. The permits go back on
/// drop, also while unwinding from a panic, unless [`forget`](Self::forget)
/// is called. Dropping never panics: [`Semaphore::add_permits`] counts held
/// permits against [`Semaphore::MAX_PERMITS`], so their return cannot
/// overflow.
#[must_use = "dropping a permit returns it to the semaphore at once"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    permits: u32,
}

/// Permits from an `Arc<Semaphore>`; dropping this returns them.
///
/// Returned by [`Semaphore::acquire_owned`] and friends; it keeps the
/// semaphore alive, so it is `'static` and can move between threads freely.
/// Like [`SemaphorePermit`]'s, its drop never panics.
#[must_use = "dropping a permit returns it to the semaphore at once"]
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
    permits: u32,
}

#[cold]
#[inline(never)]
#[track_caller]
fn foreign_merge() -> ! {
    panic!("aqs: cannot merge permits that belong to different semaphores")
}

/// Two permits of one semaphore never hold more than its `total`, which is
/// at most `MAX_PERMITS` (`semaphore.rs`, S1).
#[inline]
fn merged(a: u32, b: u32) -> u32 {
    a.checked_add(b)
        .expect("aqs: permits of one semaphore never exceed Semaphore::MAX_PERMITS")
}

impl<'a> SemaphorePermit<'a> {
    #[inline]
    pub(crate) fn new(sem: &'a Semaphore, permits: u32) -> Self {
        SemaphorePermit { sem, permits }
    }

    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits as usize
    }

    /// Keeps the permits from ever returning to the semaphore.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(2);
    /// sem.acquire().unwrap().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn forget(mut self) {
        self.sem.forgotten(mem::take(&mut self.permits));
    }

    /// Moves the permits of `other` into `self`.
    ///
    /// # Panics
    ///
    /// If `other` belongs to a different semaphore.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(3);
    /// let mut a = sem.acquire().unwrap();
    /// a.merge(sem.acquire_many(2).unwrap());
    /// assert_eq!(a.num_permits(), 3);
    /// ```
    #[track_caller]
    pub fn merge(&mut self, mut other: Self) {
        if !std::ptr::eq(self.sem, other.sem) {
            foreign_merge()
        }
        self.permits = merged(self.permits, other.permits);
        other.permits = 0;
    }

    /// Splits `n` permits off into a new permit; `None` (and no change) if
    /// this holds fewer than `n`.
    ///
    /// # Examples
    ///
    /// ```
    /// use aqs::Semaphore;
    ///
    /// let sem = Semaphore::new(3);
    /// let mut a = sem.acquire_many(3).unwrap();
    /// let b = a.split(1).unwrap();
    /// assert_eq!((a.num_permits(), b.num_permits()), (2, 1));
    /// assert!(a.split(5).is_none());
    /// ```
    pub fn split(&mut self, n: usize) -> Option<Self> {
        let n = u32::try_from(n).ok().filter(|&n| n <= self.permits)?;
        self.permits -= n;
        Some(SemaphorePermit {
            sem: self.sem,
            permits: n,
        })
    }
}

impl Drop for SemaphorePermit<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.permits > 0 {
            self.sem.release(self.permits);
        }
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("sem", self.sem)
            .field("permits", &self.permits)
            .finish()
    }
}

impl OwnedSemaphorePermit {
    #[inline]
    pub(crate) fn new(sem: Arc<Semaphore>, permits: u32) -> Self {
        OwnedSemaphorePermit { sem, permits }
    }

    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits as usize
    }

    /// Keeps the permits from ever returning to the semaphore.
    pub fn forget(mut self) {
        self.sem.forgotten(mem::take(&mut self.permits));
    }

    /// Moves the permits of `other` into `self`.
    ///
    /// # Panics
    ///
    /// If `other` belongs to a different semaphore.
    #[track_caller]
    pub fn merge(&mut self, mut other: Self) {
        if !Arc::ptr_eq(&self.sem, &other.sem) {
            foreign_merge()
        }
        self.permits = merged(self.permits, other.permits);
        other.permits = 0;
    }

    /// Splits `n` permits off into a new permit; `None` (and no change) if
    /// this holds fewer than `n`.
    pub fn split(&mut self, n: usize) -> Option<Self> {
        let n = u32::try_from(n).ok().filter(|&n| n <= self.permits)?;
        self.permits -= n;
        Some(OwnedSemaphorePermit {
            sem: Arc::clone(&self.sem),
            permits: n,
        })
    }

    /// The semaphore these permits belong to.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }
}

impl Drop for OwnedSemaphorePermit {
    #[inline]
    fn drop(&mut self) {
        if self.permits > 0 {
            self.sem.release(self.permits);
        }
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit")
            .field("sem", &*self.sem)
            .field("permits", &self.permits)
            .finish()
    }
}
