//! `Semaphore` and `SemaphoreMutex`: Curator's `InterProcessSemaphoreV2` node protocol.
//!
//! Invariants:
//! - **S1** Every child of `PATH/leases` counts against the limit, whatever its name: that is
//!   Curator's rule, and a Rust and a Java client must count the same nodes.
//! - **S2** Only the holder of the gate mutex at `PATH/locks` creates lease nodes, and it keeps
//!   the gate until its own nodes fit under the limit. So waiters' nodes never fill the limit
//!   (liveness), grants follow the gate's FIFO order, and a release wakes only the gate holder's
//!   children watch (no herd).
//! - **S3** A request for `n` permits creates its `n` nodes under one gate hold and is granted
//!   only when all of them fit: never a partial grant, so two multi-permit requests cannot
//!   deadlock each other holding halves.
//! - **S4** The limit is checked before anything is written, and again on every look while
//!   waiting (a shared limit may change; a raise wakes the gate holder, CURATOR-75).
//! - **S5** A shared count of 0 or less admits no one, and a request above the shared count
//!   waits, before and during its wait, until the count is raised: Curator's meaning, which
//!   operators use to drain a semaphore. Only a fixed limit refuses such a request.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::health::Health;
use crate::lease::Lease;
use crate::mutex::{lock_node, LOCK_NAME};
use crate::node::{self, Cleanup};
use crate::queue::Turn;
use crate::Error;

/// Where a semaphore's limit comes from.
#[derive(Debug, Clone)]
enum Limit {
    /// From the constructor only, a convention all clients must share (Curator's default).
    Fixed(u32),
    /// From a shared count node, read at every look (Curator's `SharedCountReader`).
    Shared(Arc<str>),
    /// From the constructor, refused if the shared count node disagrees.
    Checked { configured: u32, count: Arc<str> },
}

/// A cluster-wide counting semaphore with Curator's `InterProcessSemaphoreV2` layout.
///
/// ```text
/// PATH                               container
/// ├── locks                          container: the gate, a Mutex
/// │   └── _c_<uuid>-lock-<seq10>     one per client at or queued at the gate
/// └── leases                         container: every child counts against the limit
///     └── _c_<uuid>-lease-<seq10>    one per permit held, plus the gate holder's
/// ```
///
/// The gate holder creates its lease nodes and holds them once `PATH/leases` has at most
/// `limit` children. The gate admits one waiter at a time, so grants are FIFO and a release
/// wakes only the gate holder. Java clients using `InterProcessSemaphoreV2` on the same path
/// share the permits.
///
/// The limit comes from the constructor ([`new`](Self::new)), from a Curator `SharedCount`
/// node ([`with_shared_limit`](Self::with_shared_limit)), or from the constructor checked
/// against a shared count ([`with_checked_limit`](Self::with_checked_limit)).
///
/// | Curator `InterProcessSemaphoreV2` | `aqs_zookeeper::Semaphore` |
/// |---|---|
/// | `new InterProcessSemaphoreV2(client, path, maxLeases)` | [`new`](Self::new) |
/// | `new InterProcessSemaphoreV2(client, path, sharedCountReader)` | [`with_shared_limit`](Self::with_shared_limit) |
/// | `acquire()` | [`acquire`](Self::acquire) |
/// | `acquire(qty)` | [`acquire_many`](Self::acquire_many) |
/// | `acquire(time, unit)` | [`try_acquire_for`](Self::try_acquire_for), [`try_acquire_until`](Self::try_acquire_until) |
/// | `acquire(qty, time, unit)` | [`try_acquire_many_for`](Self::try_acquire_many_for) |
/// | `returnLease(lease)` | drop the [`Permit`], or [`Permit::release`] |
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let online = aqs_zookeeper::Semaphore::new(client, "/chat/online", 1000)?;
/// let permit = online.acquire().await?; // at most 1000 across the cluster
/// println!("fencing token {}", permit.fencing_token());
/// drop(permit); // deletes the lease node, retried across a connection loss
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    client: zk::Client,
    path: Arc<str>,
    limit: Limit,
}

impl Semaphore {
    /// A semaphore of `limit` permits at `path`. Writes nothing until the first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidLimit`] if `limit` is 0; [`Error::InvalidPath`] if `path` is not an
    /// absolute ZooKeeper path.
    pub fn new(client: zk::Client, path: &str, limit: u32) -> Result<Semaphore, Error> {
        node::validate_path(path)?;
        if limit == 0 {
            return Err(Error::InvalidLimit);
        }
        Ok(Semaphore {
            client,
            path: path.into(),
            limit: Limit::Fixed(limit),
        })
    }

    /// A semaphore at `path` whose limit is the value of the Curator `SharedCount` node at
    /// `count_path` (a 4-byte big-endian integer), read on every look at the leases. Raising
    /// the count wakes a waiting acquirer at once. As in Curator, a count of 0 or less admits
    /// no one (a way to drain the semaphore), and a request above the count waits for a raise
    /// instead of failing.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if either path is invalid. A missing or malformed count node is
    /// reported by each acquire as [`Error::InvalidSharedCount`].
    pub fn with_shared_limit(
        client: zk::Client,
        path: &str,
        count_path: &str,
    ) -> Result<Semaphore, Error> {
        node::validate_path(path)?;
        node::validate_path(count_path)?;
        Ok(Semaphore {
            client,
            path: path.into(),
            limit: Limit::Shared(count_path.into()),
        })
    }

    /// A semaphore of `limit` permits that must agree with the shared count at `count_path`:
    /// every acquire reads the count first and fails with [`Error::LimitMismatch`], writing
    /// nothing, if it differs.
    ///
    /// # Errors
    /// As [`new`](Self::new), and [`Error::InvalidPath`] for `count_path`.
    pub fn with_checked_limit(
        client: zk::Client,
        path: &str,
        limit: u32,
        count_path: &str,
    ) -> Result<Semaphore, Error> {
        let mut s = Semaphore::new(client, path, limit)?;
        node::validate_path(count_path)?;
        s.limit = Limit::Checked {
            configured: limit,
            count: count_path.into(),
        };
        Ok(s)
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The limit now: the constructor's, or the shared count's current value (0 for a count of
    /// 0 or less).
    ///
    /// # Errors
    /// [`Error::InvalidSharedCount`], [`Error::LimitMismatch`], or a session error, when the
    /// limit comes from a shared count node.
    pub async fn limit(&self) -> Result<u32, Error> {
        Ok(self.read_limit(false).await?.0)
    }

    /// Waits for one permit.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session ends while waiting; [`Error::NodeDeleted`] if
    /// someone else deletes one of this waiter's nodes; [`Error::Closed`] if the client
    /// is closed; [`Error::InvalidSharedCount`] or [`Error::LimitMismatch`] for a bad shared
    /// limit; [`Error::Zk`] for other ZooKeeper failures. On error nothing of this attempt stays
    /// in ZooKeeper.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's gate and lease nodes (found by their
    /// protected names if a create's reply was lost), from a task spawned on the current Tokio
    /// runtime. Nothing is granted to a dropped future.
    pub async fn acquire(&self) -> Result<Permit, Error> {
        self.acquire_many(1).await
    }

    /// Waits for `n` permits, granted together (never a part of them).
    ///
    /// # Errors
    /// [`Error::InvalidPermits`] if `n` is 0 or above a fixed limit, before anything is written;
    /// otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_many(&self, n: u32) -> Result<Permit, Error> {
        Ok(self.acquire_inner(n, None).await?.expect("no deadline"))
    }

    /// Takes one permit only if it is free now and no one is queued at the gate.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<Permit>, Error> {
        self.acquire_inner(1, Some(Instant::now())).await
    }

    /// Takes `n` permits only if they are free now and no one is queued at the gate.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_many(&self, n: u32) -> Result<Option<Permit>, Error> {
        self.acquire_inner(n, Some(Instant::now())).await
    }

    /// Waits up to `timeout` for one permit; `Ok(None)` on time-out, leaving no node behind.
    /// A `timeout` such as `Duration::MAX`, too large for a deadline, waits without one.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Permit>, Error> {
        self.acquire_inner(1, node::deadline_after(timeout)).await
    }

    /// Waits until `deadline` for one permit; `Ok(None)` on time-out, leaving no node behind.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<Option<Permit>, Error> {
        self.acquire_inner(1, Some(Instant::from_std(deadline)))
            .await
    }

    /// Waits up to `timeout` for `n` permits.
    /// A `timeout` such as `Duration::MAX`, too large for a deadline, waits without one.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_many_for(
        &self,
        n: u32,
        timeout: Duration,
    ) -> Result<Option<Permit>, Error> {
        self.acquire_inner(n, node::deadline_after(timeout)).await
    }

    /// Waits until `deadline` for `n` permits.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_many_until(
        &self,
        n: u32,
        deadline: std::time::Instant,
    ) -> Result<Option<Permit>, Error> {
        self.acquire_inner(n, Some(Instant::from_std(deadline)))
            .await
    }

    /// The current limit, and a watch on the shared count if there is one (S4).
    async fn read_limit(&self, watch: bool) -> Result<(u32, Option<zk::OneshotWatcher>), Error> {
        let (configured, count) = match &self.limit {
            Limit::Fixed(n) => return Ok((*n, None)),
            Limit::Shared(count) => (None, count),
            Limit::Checked { configured, count } => (Some(*configured), count),
        };
        let c = &self.client;
        let read = if watch {
            node::retry(c, || c.get_and_watch_data(count))
                .await
                .map(|(data, _, w)| (data, Some(w)))
        } else {
            node::retry(c, || c.get_data(count))
                .await
                .map(|(data, _)| (data, None))
        };
        let (data, watcher) = match read {
            Ok(r) => r,
            Err(Error::Zk(zk::Error::NoNode)) => {
                return Err(bad_count(count, "the node does not exist".into()))
            }
            Err(e) => return Err(e),
        };
        // S5: a count of 0 or less admits no one, as in Curator: waiters wait for a raise.
        let shared = match <[u8; 4]>::try_from(data.as_slice()) {
            Ok(b) => i32::from_be_bytes(b).max(0) as u32,
            Err(_) => {
                let len = data.len();
                return Err(bad_count(
                    count,
                    format!("{len} bytes, not a 4-byte integer"),
                ));
            }
        };
        match configured {
            Some(configured) if configured != shared => {
                Err(Error::LimitMismatch { configured, shared })
            }
            _ => Ok((shared, watcher)),
        }
    }

    async fn acquire_inner(
        &self,
        n: u32,
        deadline: Option<Instant>,
    ) -> Result<Option<Permit>, Error> {
        node::within_session(
            &self.client,
            deadline,
            self.acquire_inner_unbounded(n, deadline),
        )
        .await
    }

    async fn acquire_inner_unbounded(
        &self,
        n: u32,
        deadline: Option<Instant>,
    ) -> Result<Option<Permit>, Error> {
        // Before the first request, so that its heartbeat bounds the grant's session (H1).
        let health = Health::of(&self.client);
        let (limit, _) = self.read_limit(false).await?;
        // S5: only a fixed limit makes a request impossible; a shared one may be raised.
        let fixed = !matches!(self.limit, Limit::Shared(_));
        if n == 0 || (fixed && n > limit) {
            return Err(Error::InvalidPermits {
                requested: n,
                limit,
            });
        }
        let gate_path = format!("{}/locks", self.path);
        let gate = lock_node(
            &self.client,
            &gate_path,
            LOCK_NAME,
            &[LOCK_NAME],
            Turn::Exclusive,
            deadline,
        )
        .await?;
        let Some(gate) = gate else {
            return Ok(None);
        };
        let leases = format!("{}/leases", self.path);
        let mut cleanup = Cleanup::new(&self.client);
        let mut own = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let prefix = cleanup.prefix(&leases);
            own.push(node::create_protected(&self.client, &leases, &prefix, "lease-").await?);
        }
        let c = &self.client;
        loop {
            let (children, children_watch) =
                node::retry(c, || c.list_and_watch_children(&leases)).await?;
            if let Some(gone) = own.iter().find(|o| !children.contains(&o.name)) {
                return Err(node::own_node_gone(c, &gone.path)); // as queue rule Q3
            }
            let (limit, count_watch) = self.read_limit(true).await?;
            // S5: below `n` (even 0 or less) the waiter waits for a raise, as Curator's does.
            if children.len() <= limit as usize {
                break;
            }
            let fired = async {
                match count_watch {
                    Some(w) => {
                        tokio::select! {
                            _ = children_watch.changed() => {}
                            _ = w.changed() => {}
                        }
                    }
                    None => {
                        children_watch.changed().await;
                    }
                }
            };
            let woke = match deadline {
                None => {
                    fired.await;
                    true
                }
                Some(d) => tokio::time::timeout_at(d, fired).await.is_ok(),
            };
            if !woke {
                return Ok(None);
            }
        }
        drop(gate); // S2: the next waiter at the gate may go; its delete runs in the background.
        cleanup.disarm();
        Ok(Some(Permit {
            lease: Lease::new(&self.client, health, own),
            permits: n,
        }))
    }
}

fn bad_count(path: &str, reason: String) -> Error {
    Error::InvalidSharedCount {
        path: path.to_owned(),
        reason,
    }
}

/// Permits of a [`Semaphore`]: one lease node each. Dropping it deletes them.
#[must_use = "dropping the permit releases it at once"]
#[derive(Debug)]
pub struct Permit {
    lease: Lease,
    permits: u32,
}

impl Permit {
    /// The zxid that created this permit's last lease node. Leases are created under the gate,
    /// so later grants have larger tokens.
    ///
    /// With a limit above 1 this orders grants but cannot fence: holders overlap by design, so
    /// a resource that refused tokens lower than the largest it has seen would refuse
    /// legitimate concurrent holders. Use it to identify a grant, or keep one slot per permit
    /// (a resource that remembers the last token per slot); to fence one writer, use a
    /// [`Mutex`](crate::Mutex) or a semaphore of one.
    pub fn fencing_token(&self) -> i64 {
        self.lease.fencing_token()
    }

    /// How many permits this holds.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The full path of this permit's (first) lease node.
    pub fn node_path(&self) -> &str {
        self.lease.path()
    }

    /// The full paths of all of this permit's lease nodes.
    pub fn node_paths(&self) -> impl Iterator<Item = &str> {
        self.lease.nodes().iter().map(|n| n.path.as_str())
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

    /// Deletes the lease nodes now and waits until the server confirms it.
    ///
    /// # Errors
    /// [`Error::SessionLost`] or [`Error::Closed`] if the session ended first (its nodes are
    /// then gone with it).
    pub async fn release(self) -> Result<(), Error> {
        self.lease.release().await
    }
}

/// A cluster-wide, non-reentrant mutex: Curator's `InterProcessSemaphoreMutex`, a
/// [`Semaphore`] of one permit with the same `locks/` and `leases/` layout.
///
/// Unlike [`Mutex`](crate::Mutex) it cannot be re-entered even through a guard: a second
/// acquire through the same handle waits like any other contender, as Curator's does.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let lock = aqs_zookeeper::SemaphoreMutex::new(client, "/demo/semaphore-mutex")?;
/// let guard = lock.acquire().await?;
/// drop(guard);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SemaphoreMutex {
    semaphore: Semaphore,
}

impl SemaphoreMutex {
    /// A mutex at `path`. Writes nothing until the first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not an absolute ZooKeeper path.
    pub fn new(client: zk::Client, path: &str) -> Result<SemaphoreMutex, Error> {
        Ok(SemaphoreMutex {
            semaphore: Semaphore::new(client, path, 1)?,
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.semaphore.path()
    }

    pub(crate) async fn acquire_until_inner(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<SemaphoreMutexGuard>, Error> {
        Ok(self
            .semaphore
            .acquire_inner(1, deadline)
            .await?
            .map(SemaphoreMutexGuard))
    }

    /// Waits until this client holds the lock.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire`].
    pub async fn acquire(&self) -> Result<SemaphoreMutexGuard, Error> {
        Ok(SemaphoreMutexGuard(self.semaphore.acquire().await?))
    }

    /// Takes the lock only if it is free and no one is queued.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<SemaphoreMutexGuard>, Error> {
        Ok(self.semaphore.try_acquire().await?.map(SemaphoreMutexGuard))
    }

    /// Waits up to `timeout`; `Ok(None)` on time-out, leaving no node behind.
    /// A `timeout` such as `Duration::MAX`, too large for a deadline, waits without one.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire`].
    pub async fn try_acquire_for(
        &self,
        timeout: Duration,
    ) -> Result<Option<SemaphoreMutexGuard>, Error> {
        Ok(self
            .semaphore
            .try_acquire_for(timeout)
            .await?
            .map(SemaphoreMutexGuard))
    }

    /// Waits until `deadline`; `Ok(None)` on time-out, leaving no node behind.
    ///
    /// # Errors
    /// As [`Semaphore::acquire`].
    ///
    /// # Cancel safety
    /// As [`Semaphore::acquire`].
    pub async fn try_acquire_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<Option<SemaphoreMutexGuard>, Error> {
        Ok(self
            .semaphore
            .try_acquire_until(deadline)
            .await?
            .map(SemaphoreMutexGuard))
    }
}

/// Proof of holding a [`SemaphoreMutex`]; dropping it deletes its lease node.
#[must_use = "dropping the guard releases the lock at once"]
#[derive(Debug)]
pub struct SemaphoreMutexGuard(Permit);

impl SemaphoreMutexGuard {
    /// As [`Permit::fencing_token`].
    pub fn fencing_token(&self) -> i64 {
        self.0.fencing_token()
    }

    /// The full path of the lease node.
    pub fn node_path(&self) -> &str {
        self.0.node_path()
    }

    /// As [`Permit::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.0.is_lost()
    }

    /// As [`Permit::lost`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) {
        self.0.lost().await
    }

    /// As [`Permit::is_suspended`].
    pub fn is_suspended(&self) -> bool {
        self.0.is_suspended()
    }

    /// As [`Permit::suspended`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn suspended(&self) {
        self.0.suspended().await
    }

    /// As [`Permit::release`].
    ///
    /// # Errors
    /// As [`Permit::release`].
    pub async fn release(self) -> Result<(), Error> {
        self.0.release().await
    }
}
