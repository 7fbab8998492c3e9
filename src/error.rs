//! Errors returned by the semaphore's acquire methods.

use std::error::Error;
use std::fmt;

/// The error of a blocking acquire: the semaphore was closed.
///
/// Returned by [`Semaphore::acquire`](crate::Semaphore::acquire) and its
/// variants when [`Semaphore::close`](crate::Semaphore::close) was called
/// before or while they waited.
///
/// It cannot be built outside this crate, so holding one proves that an
/// acquire failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireError(pub(crate) ());

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("semaphore closed")
    }
}

impl Error for AcquireError {}

/// The error of a non-blocking or timed acquire.
///
/// More reasons may be added (for synchronizers to come), so a `match` on it
/// needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryAcquireError {
    /// The semaphore was closed.
    Closed,
    /// Not enough permits were available (or fairness forbade taking them),
    /// and for a timed acquire, none became available before the deadline.
    NoPermits,
}

impl TryAcquireError {
    /// Whether this is [`TryAcquireError::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, TryAcquireError::Closed)
    }

    /// Whether this is [`TryAcquireError::NoPermits`].
    pub fn is_no_permits(&self) -> bool {
        matches!(self, TryAcquireError::NoPermits)
    }
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryAcquireError::Closed => f.write_str("semaphore closed"),
            TryAcquireError::NoPermits => f.write_str("no permits available"),
        }
    }
}

impl Error for TryAcquireError {}

impl From<AcquireError> for TryAcquireError {
    fn from(_: AcquireError) -> Self {
        TryAcquireError::Closed
    }
}
