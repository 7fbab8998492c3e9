//! `Semaphore`: Curator's `InterProcessSemaphoreV2` node protocol.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::mutex::{Lease, Mutex};
use crate::node::{self, Cleanup};
use crate::Error;

/// A cluster-wide counting semaphore with Curator's `InterProcessSemaphoreV2` layout:
/// a gate mutex at `PATH/locks`, and one ephemeral-sequential `_c_<uuid>-lease-<seq>` node per
/// permit under `PATH/leases`. The gate holder creates its lease node and holds a permit once
/// `PATH/leases` has at most `limit` children; the gate admits one waiter at a time, so grants
/// are FIFO and a release wakes only the gate holder.
///
/// Java clients using `InterProcessSemaphoreV2` with the same limit on the same path share the
/// permits. The limit is a convention every client must agree on.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let online = aqs_zookeeper::Semaphore::new(client, "/chat/online", 1000)?;
/// let permit = online.acquire().await?;
/// println!("fencing token {}", permit.fencing_token());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    client: zk::Client,
    path: Arc<str>,
    limit: u32,
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
            limit,
        })
    }

    /// The number of permits.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Waits for one permit.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session ends while waiting; [`Error::Zk`] for other
    /// ZooKeeper failures. On error nothing of this attempt stays in ZooKeeper.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's gate and lease nodes (found by their protected
    /// names), from tasks spawned on the current Tokio runtime.
    pub async fn acquire(&self) -> Result<Permit, Error> {
        Ok(self.acquire_inner(None).await?.expect("no deadline"))
    }

    /// Like [`acquire`](Self::acquire), but gives up after `timeout` and returns `Ok(None)`,
    /// leaving no node behind.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Permit>, Error> {
        self.acquire_inner(Some(Instant::now() + timeout)).await
    }

    async fn acquire_inner(&self, deadline: Option<Instant>) -> Result<Option<Permit>, Error> {
        let gate = Mutex::new(self.client.clone(), &format!("{}/locks", self.path))?;
        let Some(gate_guard) = gate.acquire_inner(deadline).await? else {
            return Ok(None);
        };
        let leases = format!("{}/leases", self.path);
        let prefix = node::new_prefix();
        let mut cleanup = Cleanup {
            armed: Some((self.client.clone(), leases.clone(), prefix.clone())),
        };
        let own = node::create_protected(&self.client, &leases, &prefix, "lease-").await?;
        loop {
            let (children, watcher) = self.client.list_and_watch_children(&leases).await?;
            if !children.contains(&own.name) {
                return Err(Error::SessionLost);
            }
            if children.len() <= self.limit as usize {
                break;
            }
            match deadline {
                None => {
                    watcher.changed().await;
                }
                Some(d) => {
                    if tokio::time::timeout_at(d, watcher.changed()).await.is_err() {
                        return Ok(None);
                    }
                }
            }
        }
        drop(gate_guard);
        cleanup.armed = None;
        Ok(Some(Permit {
            lease: Lease::new(self.client.clone(), own),
        }))
    }
}

/// One permit of a [`Semaphore`]; dropping it deletes its lease node.
#[must_use = "dropping the permit releases it at once"]
#[derive(Debug)]
pub struct Permit {
    lease: Lease,
}

impl Permit {
    /// The zxid that created this permit's lease node; leases are created under the gate, so
    /// later grants have larger tokens.
    pub fn fencing_token(&self) -> i64 {
        self.lease.own.czxid
    }

    /// The full path of this permit's lease node.
    pub fn node_path(&self) -> &str {
        &self.lease.own.path
    }

    /// Whether the lease node is known to be gone (session expired or node deleted).
    pub fn is_lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// Completes when the lease node is known to be gone.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) {
        self.lease.lost().await
    }
}
