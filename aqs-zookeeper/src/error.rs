//! The crate's error type.

use std::fmt;

/// Why a lock or semaphore operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The path is not a valid absolute ZooKeeper path (it must start with `/`, must not end
    /// with `/` and must not contain empty segments). Nothing was written.
    InvalidPath(String),
    /// A semaphore limit of 0: no one could ever acquire. Nothing was written.
    InvalidLimit,
    /// The session that created this client's node ended (expired or closed) while the
    /// operation was under way; its ephemeral nodes are gone or going, so nothing was granted.
    SessionLost,
    /// Any other error from the ZooKeeper client.
    Zk(zookeeper_client::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidPath(p) => write!(f, "invalid ZooKeeper path {p:?}"),
            Error::InvalidLimit => f.write_str("a semaphore limit must be at least 1"),
            Error::SessionLost => f.write_str("the ZooKeeper session ended during the operation"),
            Error::Zk(e) => write!(f, "ZooKeeper: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<zookeeper_client::Error> for Error {
    fn from(e: zookeeper_client::Error) -> Error {
        match e {
            zookeeper_client::Error::SessionExpired | zookeeper_client::Error::ClientClosed => {
                Error::SessionLost
            }
            e => Error::Zk(e),
        }
    }
}
