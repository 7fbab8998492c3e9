//! The crate's error type.

use std::fmt;
use std::time::Duration;

/// Why a session or lock operation failed.
///
/// An acquire that fails leaves nothing of its attempt in etcd: its key (named after the
/// session's lease, so it can always be found again) is deleted before the error is returned
/// or, if the server does not answer in time, by a task on the current Tokio runtime that keeps
/// trying until the server confirms or the lease ends (which deletes the key too).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The lock name is empty (or a multi-lock has no parts). Nothing was written.
    InvalidName(String),
    /// A session TTL that is not a whole number of seconds from 1 s to etcd's maximum
    /// (9,000,000,000 s): etcd counts lease TTLs in whole seconds. Nothing was written.
    InvalidTtl(Duration),
    /// A semaphore limit of 0: no one could ever acquire. Nothing was written.
    InvalidLimit,
    /// A request for 0 permits, or for more than the semaphore's limit, which could never be
    /// granted. Nothing was written.
    InvalidPermits {
        /// The permits asked for.
        requested: u32,
        /// The semaphore's limit.
        limit: u32,
    },
    /// A multi-lock names the same lock twice; it would wait for itself.
    DuplicateLock(String),
    /// The session's lease ended, or may have ended: it expired, was revoked, or the client has
    /// not had a keep-alive answered for so long that the server may already have expired it
    /// (see [`Session`](crate::Session)). Nothing was granted.
    SessionLost,
    /// The session was closed with [`Session::close`](crate::Session::close).
    Closed,
    /// Any other error from the etcd client (a server that is down, a refused request).
    Etcd(etcd_client::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidName(n) => write!(f, "invalid lock name {n:?}"),
            Error::InvalidTtl(t) => write!(
                f,
                "invalid session TTL {t:?}: etcd takes whole seconds from 1 to 9000000000"
            ),
            Error::InvalidLimit => f.write_str("a semaphore limit must be at least 1"),
            Error::InvalidPermits { requested, limit } => write!(
                f,
                "cannot acquire {requested} permits of a semaphore with limit {limit}"
            ),
            Error::DuplicateLock(n) => write!(f, "the multi-lock names {n:?} twice"),
            Error::SessionLost => f.write_str("the etcd session's lease ended or may have ended"),
            Error::Closed => f.write_str("the etcd session is closed"),
            Error::Etcd(e) => write!(f, "etcd: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Etcd(e) => Some(e),
            _ => None,
        }
    }
}

impl From<etcd_client::Error> for Error {
    fn from(e: etcd_client::Error) -> Error {
        Error::Etcd(e)
    }
}
