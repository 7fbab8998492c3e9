//! `RwLock`: Curator's `InterProcessReadWriteLock`, reentrant only through a guard.
//!
//! Invariants:
//! - **W1** Readers and writers share one parent and one sequence. A writer holds when its node
//!   is first; a reader holds when no writer node sorts before its own (queue rule Q2 in
//!   `queue.rs` gives who each watches).
//! - **W2** A handle never shares a hold by itself (mutex rule M1): each acquire queues its own
//!   node. A downgrade is explicit: [`WriteGuard::downgrade`] gives a read guard on the write
//!   node. Curator instead creates a read node and grants it at once, and that node can sort
//!   after a queued writer, which is then granted while the downgraded reader still reads.
//!   Sharing the write node keeps the downgrade exclusive until both guards are gone.
//! - **W3** An acquire of one half through a handle with a live guard of the other half would
//!   wait behind that guard's node, forever if the same code holds it (an upgrade, or a read
//!   under one's own write); it fails with [`Error::WouldDeadlock`] instead, whichever task
//!   holds the other half, so a reader and a writer sharing a handle never hold at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::lease::Lease;
use crate::mutex::{lock_node, Owner};
use crate::node;
use crate::queue::Turn;
use crate::Error;

/// Curator's read node name: 8 characters, followed directly by the sequence.
pub(crate) const READ_NAME: &str = "__READ__";
/// Curator's write node name.
pub(crate) const WRITE_NAME: &str = "__WRIT__";
const LOCK_NAMES: [&str; 2] = [READ_NAME, WRITE_NAME];

/// A cluster-wide read-write lock with Curator's `InterProcessReadWriteLock` layout.
///
/// ```text
/// PATH                              container
/// ├── _c_<uuid>-__WRIT__<seq10>     a writer: holds when first
/// └── _c_<uuid>-__READ__<seq10>     a reader: holds when no writer sorts before it
/// ```
///
/// Fair in arrival order: a reader that arrives after a waiting writer waits behind it. A
/// release wakes only the waiters that watched the deleted node: a writer's successor, or the
/// readers queued behind that writer. Java clients using `InterProcessReadWriteLock` on the
/// same path share the queue.
///
/// A handle never grants twice by itself, as [`Mutex`](crate::Mutex) does not: each acquire
/// queues its own node, and re-entry is explicit ([`ReadGuard::reenter`],
/// [`WriteGuard::reenter`]). A downgrade is explicit too: [`WriteGuard::downgrade`] gives a
/// read guard that keeps the lock exclusive until both guards are gone. Acquiring one half
/// through a handle that has a live guard of the other half fails with
/// [`Error::WouldDeadlock`] (there are no upgrades), so a reader task and a writer task that
/// share one handle never hold at once: give them a handle each.
///
/// | Curator `InterProcessReadWriteLock` | `aqs_zookeeper::RwLock` |
/// |---|---|
/// | `readLock().acquire()` | `read_lock().acquire()` |
/// | `writeLock().acquire(time, unit)` | `write_lock().try_acquire_for(timeout)` |
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let config = aqs_zookeeper::RwLock::new(client, "/demo/config")?;
/// {
///     let _read = config.read_lock().acquire().await?; // shared with other readers
/// }
/// let write = config.write_lock().acquire().await?; // alone
/// drop(write);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RwLock {
    client: zk::Client,
    path: Arc<str>,
    read: Owner,
    write: Owner,
}

impl RwLock {
    /// A read-write lock at `path`. Writes nothing until the first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not an absolute ZooKeeper path.
    pub fn new(client: zk::Client, path: &str) -> Result<RwLock, Error> {
        node::validate_path(path)?;
        Ok(RwLock {
            client,
            path: path.into(),
            read: Owner::default(),
            write: Owner::default(),
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The read half.
    pub fn read_lock(&self) -> ReadLock<'_> {
        ReadLock { lock: self }
    }

    /// The write half.
    pub fn write_lock(&self) -> WriteLock<'_> {
        WriteLock { lock: self }
    }

    pub(crate) async fn read_until(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<ReadGuard>, Error> {
        node::within_session(&self.client, deadline, self.read_until_unbounded(deadline)).await
    }

    async fn read_until_unbounded(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<ReadGuard>, Error> {
        if self.write.is_held() {
            return Err(Error::WouldDeadlock); // W3; a downgrade is `WriteGuard::downgrade` (W2)
        }
        let lease = self
            .read
            .acquire(|| {
                lock_node(
                    &self.client,
                    &self.path,
                    READ_NAME,
                    &LOCK_NAMES,
                    Turn::Shared {
                        exclusive_name: WRITE_NAME,
                    },
                    deadline,
                )
            })
            .await?;
        Ok(lease.map(|lease| ReadGuard { lease }))
    }

    pub(crate) async fn write_until(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<WriteGuard>, Error> {
        node::within_session(&self.client, deadline, self.write_until_unbounded(deadline)).await
    }

    async fn write_until_unbounded(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<WriteGuard>, Error> {
        if self.read.is_held() {
            return Err(Error::WouldDeadlock); // W3
        }
        let lease = self
            .write
            .acquire(|| {
                lock_node(
                    &self.client,
                    &self.path,
                    WRITE_NAME,
                    &LOCK_NAMES,
                    Turn::Exclusive,
                    deadline,
                )
            })
            .await?;
        Ok(lease.map(|lease| WriteGuard { lease }))
    }
}

macro_rules! half {
    ($(#[$doc:meta])* $half:ident, $guard:ident, $until:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $half<'a> {
            lock: &'a RwLock,
        }

        // The halves are `Copy` and their methods take `self`, so a future does not borrow a
        // temporary: `lock.read_lock().acquire()` can be stored, joined or spawned.
        impl<'a> $half<'a> {
            #[doc = concat!("Waits until this handle holds the ", $what, " lock.")]
            ///
            /// # Errors
            /// [`Error::SessionLost`] if the session ends while waiting; [`Error::NodeDeleted`]
            /// if someone else deletes the waiter's node; [`Error::Closed`] if the client is
            /// closed; [`Error::Zk`] for other ZooKeeper failures. On error nothing of
            /// this attempt stays in ZooKeeper.
            ///
            /// # Cancel safety
            /// Dropping the future deletes this attempt's node (found by its protected name if
            /// the create's reply was lost), from a task spawned on the Tokio runtime the acquire started on.
            pub async fn acquire(self) -> Result<$guard, Error> {
                Ok(self.lock.$until(None).await?.expect("no deadline"))
            }

            #[doc = concat!("Takes the ", $what, " lock only if it is free now, after one look.")]
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire).
            ///
            /// # Cancel safety
            /// As [`acquire`](Self::acquire).
            pub async fn try_acquire(self) -> Result<Option<$guard>, Error> {
                self.lock.$until(Some(Instant::now())).await
            }

            /// Waits up to `timeout`; `Ok(None)` on time-out, leaving no node behind.
            /// A `timeout` such as `Duration::MAX`, too large for a deadline, waits without one.
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire).
            ///
            /// # Cancel safety
            /// As [`acquire`](Self::acquire).
            pub async fn try_acquire_for(self, timeout: Duration) -> Result<Option<$guard>, Error> {
                self.lock.$until(node::deadline_after(timeout)).await
            }

            /// Waits until `deadline`; `Ok(None)` on time-out, leaving no node behind.
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire).
            ///
            /// # Cancel safety
            /// As [`acquire`](Self::acquire).
            pub async fn try_acquire_until(
                &self,
                deadline: std::time::Instant,
            ) -> Result<Option<$guard>, Error> {
                self.lock.$until(Some(Instant::from_std(deadline))).await
            }
        }

        #[doc = concat!("Proof of holding the ", $what, " lock of an [`RwLock`]; the lock is released when the last guard on its node goes.")]
        #[must_use = "dropping the guard releases the lock at once"]
        #[derive(Debug)]
        pub struct $guard {
            lease: Arc<Lease>,
        }

        impl $guard {
            /// The zxid that created the node this guard stands on; a writer's is larger than
            /// that of every holder before it.
            pub fn fencing_token(&self) -> i64 {
                self.lease.fencing_token()
            }

            /// The full path of the node this guard stands on.
            pub fn node_path(&self) -> &str {
                self.lease.path()
            }

            /// Whether the hold is lost: the session ended, or the server may expire it at any moment
            /// (no heartbeat of the session answered for nearly a session timeout; the rule is in
            /// `docs/zookeeper.md`). It becomes true before the earliest instant the server could
            /// expire the session and grant the place to someone else, so a holder that checks it
            /// between steps stops in time, unless the process itself is paused (use the fencing
            /// token for that). Once true it stays true, and the node is deleted if the session comes
            /// back.
            pub fn is_lost(&self) -> bool {
                self.lease.is_lost()
            }

            /// Completes when [`is_lost`](Self::is_lost) becomes true.
            ///
            /// # Cancel safety
            /// Cancel safe.
            pub async fn lost(&self) {
                self.lease.lost().await
            }

            /// Whether the connection is in doubt now: the client reports it down, or no heartbeat of
            /// the session sent in the last third of the session timeout has been answered. The hold
            /// may still be valid: pause work that must not run without it. It clears when the
            /// connection comes back within the session, and the hold then stands (Curator's
            /// `SUSPENDED` and `RECONNECTED`).
            pub fn is_suspended(&self) -> bool {
                self.lease.is_suspended()
            }

            /// Completes when [`is_suspended`](Self::is_suspended) or [`is_lost`](Self::is_lost)
            /// becomes true.
            ///
            /// # Cancel safety
            /// Cancel safe.
            pub async fn suspended(&self) {
                self.lease.suspended().await
            }

            /// Another guard on this hold, with no request: explicit re-entry (rule W2). The
            /// node is deleted when the last guard on it goes.
            ///
            /// # Errors
            /// [`Error::SessionLost`] if the hold is lost ([`is_lost`](Self::is_lost)).
            pub fn reenter(&self) -> Result<Self, Error> {
                if self.lease.is_lost() {
                    return Err(Error::SessionLost);
                }
                Ok(Self {
                    lease: self.lease.clone(),
                })
            }

            /// Releases this guard and, if it was the last on its node, deletes the node and
            /// waits until the server confirms it.
            ///
            /// # Errors
            /// [`Error::SessionLost`] or [`Error::Closed`] if the session ended first.
            pub async fn release(self) -> Result<(), Error> {
                self.lease.release_share().await
            }
        }
    };
}

half!(
    /// The read half of an [`RwLock`], from [`RwLock::read_lock`].
    ReadLock, ReadGuard, read_until, "read"
);
half!(
    /// The write half of an [`RwLock`], from [`RwLock::write_lock`].
    WriteLock, WriteGuard, write_until, "write"
);

impl WriteGuard {
    /// A read guard on this write hold: a safe downgrade (rule W2). It stands on the write
    /// node, so the lock stays exclusive until this guard and the read guard are both gone;
    /// drop this one to keep only the read.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the hold is lost ([`is_lost`](Self::is_lost)).
    pub fn downgrade(&self) -> Result<ReadGuard, Error> {
        if self.lease.is_lost() {
            return Err(Error::SessionLost);
        }
        Ok(ReadGuard {
            lease: self.lease.clone(),
        })
    }
}
