//! `Mutex`: Curator's `InterProcessMutex`, reentrant only through a guard.
//!
//! Invariants:
//! - **M1** Every acquire through a handle queues a node of its own, whoever else holds a
//!   guard of the same handle: a handle never grants the lock twice by itself, so tasks (or
//!   threads) that share one exclude each other as separate handles do.
//! - **M2** Reentrancy is explicit: [`MutexGuard::reenter`] shares the guard's hold
//!   (`Arc<Lease>`), so the hold count is the number of live guards on it and the node is
//!   deleted when the last one goes (lease rule L1).

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::health::Health;
use crate::lease::Lease;
use crate::node::{self, Cleanup};
use crate::queue::{Queue, Turn};
use crate::Error;

/// Curator's lock name for mutex nodes.
pub(crate) const LOCK_NAME: &str = "lock-";

/// A cluster-wide FIFO mutex with Curator's `InterProcessMutex` layout, reentrant through its
/// guards.
///
/// Each contender creates `PATH/_c_<uuid>-lock-<seq>` (ephemeral-sequential). The lowest
/// sequence holds the lock and each waiter watches only its predecessor, so a release wakes one
/// waiter. Java clients using `InterProcessMutex` on the same path share the queue.
///
/// **Reentrancy is explicit, through a guard.** Curator counts holds per thread; a task is not
/// a thread (it moves between threads, and one task can run several futures at once), so no
/// handle can tell who is asking. Here every [`acquire`](Self::acquire) queues like any other
/// contender, even through a handle that already holds the lock: tasks or threads that share
/// one handle (an `Arc<Mutex>`) never hold it at once. To re-enter, call
/// [`MutexGuard::reenter`], which shares the guard's node; the node is deleted when the last
/// guard on it goes. An acquire through a handle from the code that holds it waits for itself,
/// as a `tokio::sync::Mutex` does.
///
/// | Curator `InterProcessMutex` | `aqs_zookeeper::Mutex` |
/// |---|---|
/// | `new InterProcessMutex(client, path)` | [`Mutex::new`] |
/// | `acquire()` | [`acquire`](Self::acquire) |
/// | `acquire(time, unit)` | [`try_acquire_for`](Self::try_acquire_for), [`try_acquire_until`](Self::try_acquire_until) |
/// | `release()` | drop the guard, or [`MutexGuard::release`] |
/// | `isAcquiredInThisProcess()` | [`is_acquired`](Self::is_acquired) |
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let mutex = aqs_zookeeper::Mutex::new(client, "/demo/mutex")?;
/// let guard = mutex.acquire().await?;
/// let again = guard.reenter()?; // reentrant: same node, explicitly
/// println!("holding with fencing token {}", guard.fencing_token());
/// drop(again);
/// guard.release().await?; // deletes the node and waits for the server to confirm
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Mutex {
    client: zk::Client,
    path: Arc<str>,
    owner: Owner,
}

impl Mutex {
    /// A mutex at `path` on `client`'s session. Writes nothing until the first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not an absolute ZooKeeper path.
    pub fn new(client: zk::Client, path: &str) -> Result<Mutex, Error> {
        node::validate_path(path)?;
        Ok(Mutex {
            client,
            path: path.into(),
            owner: Owner::default(),
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether a guard acquired through this handle (or re-entered from one) is alive.
    pub fn is_acquired(&self) -> bool {
        self.owner.is_held()
    }

    /// Waits until this handle holds the mutex.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session ends while waiting; [`Error::NodeDeleted`] if
    /// someone else deletes the waiter's node; [`Error::Closed`] if the client is closed;
    /// [`Error::Zk`] for other ZooKeeper failures. On error nothing of this attempt stays in ZooKeeper.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's node (found by its protected name if the
    /// create's reply was lost), from a task spawned on the Tokio runtime the acquire started on.
    pub async fn acquire(&self) -> Result<MutexGuard, Error> {
        Ok(self.acquire_until_inner(None).await?.expect("no deadline"))
    }

    /// Takes the mutex only if no one holds it or waits for it, after one look at the queue.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<MutexGuard>, Error> {
        self.acquire_until_inner(Some(Instant::now())).await
    }

    /// Like [`acquire`](Self::acquire), but gives up after `timeout` and returns `Ok(None)`,
    /// leaving no node behind.
    /// A `timeout` such as `Duration::MAX`, too large for a deadline, waits without one.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<MutexGuard>, Error> {
        self.acquire_until_inner(node::deadline_after(timeout))
            .await
    }

    /// Like [`try_acquire_for`](Self::try_acquire_for), with a deadline.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<Option<MutexGuard>, Error> {
        self.acquire_until_inner(Some(Instant::from_std(deadline)))
            .await
    }

    pub(crate) async fn acquire_until_inner(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<MutexGuard>, Error> {
        node::within_session(
            &self.client,
            deadline,
            self.acquire_until_unbounded(deadline),
        )
        .await
    }

    async fn acquire_until_unbounded(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<MutexGuard>, Error> {
        let lease = self
            .owner
            .acquire(|| {
                lock_node(
                    &self.client,
                    &self.path,
                    LOCK_NAME,
                    &[LOCK_NAME],
                    Turn::Exclusive,
                    deadline,
                )
            })
            .await?;
        Ok(lease.map(|lease| MutexGuard { lease }))
    }
}

/// Creates a node named `lock_name` under `parent` and waits for its turn: one grant of a lock
/// recipe whose queue sorts by `lock_names`. `Ok(None)` at the deadline, with the node deleted.
pub(crate) async fn lock_node(
    client: &zk::Client,
    parent: &str,
    lock_name: &'static str,
    lock_names: &'static [&'static str],
    turn: Turn,
    deadline: Option<Instant>,
) -> Result<Option<Lease>, Error> {
    // Before the first request, so that its heartbeat bounds the grant's session (H1).
    let health = Health::of(client);
    let mut cleanup = Cleanup::new(client);
    let prefix = cleanup.prefix(parent);
    let own = node::create_protected(client, parent, &prefix, lock_name).await?;
    let queue = Queue {
        client,
        parent,
        lock_names,
    };
    if queue.wait_turn(&own, turn, deadline).await? {
        cleanup.disarm();
        Ok(Some(Lease::new(client, health, vec![own])))
    } else {
        Ok(None)
    }
}

/// The holds granted through one handle, for [`Mutex::is_acquired`] and the read-write lock's
/// conflict checks. It never re-enters one of them (M1).
#[derive(Debug, Default)]
pub(crate) struct Owner {
    held: std::sync::Mutex<Vec<Weak<Lease>>>,
}

impl Owner {
    /// Whether a hold granted through this handle is still alive.
    pub(crate) fn is_held(&self) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|w| w.strong_count() > 0);
        !held.is_empty()
    }

    /// Runs `grant` and records its lease among the handle's holds.
    pub(crate) async fn acquire<F, Fut>(&self, grant: F) -> Result<Option<Arc<Lease>>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<Lease>, Error>>,
    {
        let Some(lease) = grant().await? else {
            return Ok(None);
        };
        let lease = Arc::new(lease);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|w| w.strong_count() > 0);
        held.push(Arc::downgrade(&lease));
        Ok(Some(lease))
    }
}

/// Proof of holding a [`Mutex`]; the lock is released when the last guard on its node goes.
#[must_use = "dropping the guard releases the lock at once"]
#[derive(Debug)]
pub struct MutexGuard {
    lease: Arc<Lease>,
}

impl MutexGuard {
    /// The zxid that created this holder's node. Every later holder of the lock has a larger
    /// one, so a resource that remembers the largest token it has seen can refuse a stale
    /// holder's writes.
    pub fn fencing_token(&self) -> i64 {
        self.lease.fencing_token()
    }

    /// The full path of this holder's node.
    pub fn node_path(&self) -> &str {
        self.lease.path()
    }

    /// How many guards share this hold (this one and those from [`reenter`](Self::reenter)).
    pub fn hold_count(&self) -> usize {
        Arc::strong_count(&self.lease)
    }

    /// Re-enters the lock: another guard on this hold, with no request. The node is deleted
    /// when the last guard on it goes. This is Curator's reentrancy made explicit; a handle
    /// never re-enters by itself.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the hold is lost ([`is_lost`](Self::is_lost)).
    pub fn reenter(&self) -> Result<MutexGuard, Error> {
        if self.lease.is_lost() {
            return Err(Error::SessionLost);
        }
        Ok(MutexGuard {
            lease: self.lease.clone(),
        })
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

    /// Releases this guard's hold and, if it was the last guard on the node, deletes the node
    /// and waits until the server confirms it.
    ///
    /// # Errors
    /// [`Error::SessionLost`] or [`Error::Closed`] if the session ended first (its node is then
    /// gone with it).
    pub async fn release(self) -> Result<(), Error> {
        self.lease.release_share().await
    }
}
