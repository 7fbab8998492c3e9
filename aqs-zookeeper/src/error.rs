//! The crate's error type.

use std::fmt;

use zookeeper_client as zk;

/// Why a lock or semaphore operation failed.
///
/// Every error leaves nothing of the failed attempt in ZooKeeper: nodes it created are deleted
/// (found again by their protected names if a reply was lost), from a task on the current Tokio
/// runtime, retried until the server confirms or the session ends.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The path is not a valid absolute ZooKeeper path (it must start with `/`, must not end
    /// with `/`, and must not contain empty, `.` or `..` segments). Nothing was written.
    InvalidPath(String),
    /// A semaphore limit of 0: no one could ever acquire. Nothing was written.
    InvalidLimit,
    /// A request for 0 permits, or for more than a fixed semaphore limit, which could never be
    /// granted. Nothing was written. (Above a shared count, a request waits for a raise, as in
    /// Curator.)
    InvalidPermits {
        /// The permits asked for.
        requested: u32,
        /// The limit at the time of the request.
        limit: u32,
    },
    /// This client's configured limit differs from the shared count node it was told to agree
    /// with. Curator leaves such a mismatch to convention; here it is refused before anything is
    /// written.
    LimitMismatch {
        /// The limit this client was constructed with.
        configured: u32,
        /// The value of the shared count node.
        shared: u32,
    },
    /// The shared count node is missing or does not hold a 4-byte big-endian integer
    /// (Curator's `SharedCount` encoding). A count of 0 or less is valid: it admits no one.
    InvalidSharedCount {
        /// The count node's path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A multi-lock names the same lock twice; it would wait for itself.
    DuplicateLock(String),
    /// One half of a read-write lock asked for through a handle with a live guard of the other
    /// half: it would queue behind that guard's node, forever if the caller holds it (a write
    /// under one's own read waits forever in Curator). Release the other guard first, use
    /// `WriteGuard::downgrade` for a read under one's own write, or give each task its own
    /// handle.
    WouldDeadlock,
    /// The session ended (expired, or the connection stayed down for a whole session timeout, by
    /// which time the server has expired it or will as soon as it runs) while the operation was
    /// under way. Nothing was granted; the client's ephemeral nodes are gone or going.
    SessionLost,
    /// The waiter's own node was deleted by someone else (an operator, another client) while its
    /// session was alive, so it left the queue. Nothing was granted; its other nodes of the
    /// attempt are deleted. Retrying queues again at the back.
    NodeDeleted {
        /// The full path of the node that vanished.
        path: String,
    },
    /// The client is closed: its connection task has ended, for example because the runtime
    /// it was connected on shut down.
    Closed,
    /// Any other error from the ZooKeeper client.
    Zk(zk::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidPath(p) => write!(f, "invalid ZooKeeper path {p:?}"),
            Error::InvalidLimit => f.write_str("a semaphore limit must be at least 1"),
            Error::InvalidPermits { requested, limit } => write!(
                f,
                "cannot acquire {requested} permits of a semaphore with limit {limit}"
            ),
            Error::LimitMismatch { configured, shared } => write!(
                f,
                "this client's limit {configured} differs from the shared count {shared}"
            ),
            Error::InvalidSharedCount { path, reason } => {
                write!(f, "shared count node {path:?}: {reason}")
            }
            Error::DuplicateLock(p) => write!(f, "the multi-lock names {p:?} twice"),
            Error::WouldDeadlock => f.write_str(
                "one half of a read-write lock requested through a handle holding the other half",
            ),
            Error::SessionLost => f.write_str("the ZooKeeper session ended during the operation"),
            Error::NodeDeleted { path } => {
                write!(f, "the waiter's node {path:?} was deleted by someone else")
            }
            Error::Closed => f.write_str("the ZooKeeper client is closed"),
            Error::Zk(e) => write!(f, "ZooKeeper: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Zk(e) => Some(e),
            _ => None,
        }
    }
}

impl From<zk::Error> for Error {
    fn from(e: zk::Error) -> Error {
        match e {
            zk::Error::SessionExpired | zk::Error::AuthFailed => Error::SessionLost,
            zk::Error::ClientClosed => Error::Closed,
            // zookeeper-client 0.11 answers this when the client's session task is gone (its
            // runtime shut down) without having reached a terminal state: closed, in effect.
            zk::Error::UnexpectedError(m) if m.starts_with("expect error state") => Error::Closed,
            e => Error::Zk(e),
        }
    }
}
