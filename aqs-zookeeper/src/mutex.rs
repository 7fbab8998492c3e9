//! `Mutex`: Curator's `InterProcessMutex` node protocol.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::node::{self, Cleanup, OwnNode};
use crate::Error;

/// Curator's lock name for mutex nodes.
const LOCK_NAME: &str = "lock-";

/// A cluster-wide mutex with Curator's `InterProcessMutex` layout: each contender creates
/// `PATH/_c_<uuid>-lock-<seq>` (ephemeral-sequential); the lowest sequence holds the lock and each
/// waiter watches only its predecessor, so a release wakes one waiter.
///
/// Java clients using `InterProcessMutex` on the same path take part in the same queue.
///
/// Not yet reentrant: a second `acquire` from the same owner queues behind the first.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let mutex = aqs_zookeeper::Mutex::new(client, "/demo/mutex")?;
/// let guard = mutex.acquire().await?;
/// println!("holding with fencing token {}", guard.fencing_token());
/// drop(guard); // deletes the node, even across a connection loss
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Mutex {
    client: zk::Client,
    path: Arc<str>,
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
        })
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits until this client holds the mutex.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session ends while waiting; [`Error::Zk`] for other
    /// ZooKeeper failures. On error nothing of this attempt stays in ZooKeeper.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's node (found by its protected name if the
    /// create's reply was lost), from a task spawned on the current Tokio runtime.
    pub async fn acquire(&self) -> Result<MutexGuard, Error> {
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
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<MutexGuard>, Error> {
        self.acquire_inner(Some(Instant::now() + timeout)).await
    }

    pub(crate) async fn acquire_inner(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<MutexGuard>, Error> {
        let prefix = node::new_prefix();
        let mut cleanup = Cleanup {
            armed: Some((self.client.clone(), self.path.to_string(), prefix.clone())),
        };
        let own = node::create_protected(&self.client, &self.path, &prefix, LOCK_NAME).await?;
        if wait_first(&self.client, &self.path, &own, deadline).await? {
            cleanup.armed = None;
            Ok(Some(MutexGuard::new(self.client.clone(), own)))
        } else {
            Ok(None)
        }
    }
}

/// Waits until `own` sorts first among the lock's children; `false` on deadline.
pub(crate) async fn wait_first(
    client: &zk::Client,
    parent: &str,
    own: &OwnNode,
    deadline: Option<Instant>,
) -> Result<bool, Error> {
    loop {
        let children = client.list_children(parent).await?;
        let mut seqs: Vec<(u64, &String)> = children
            .iter()
            .filter_map(|c| node::sequence_of(c, LOCK_NAME).map(|s| (s, c)))
            .collect();
        seqs.sort();
        let Some(pos) = seqs.iter().position(|(_, c)| **c == own.name) else {
            // Our node is gone: the session that made it ended.
            return Err(Error::SessionLost);
        };
        if pos == 0 {
            return Ok(true);
        }
        let pred = format!("{parent}/{}", seqs[pos - 1].1);
        let watcher = match client.check_and_watch_stat(&pred).await? {
            (Some(_), w) => w,
            (None, _) => continue,
        };
        match deadline {
            None => {
                watcher.changed().await;
            }
            Some(d) => {
                if tokio::time::timeout_at(d, watcher.changed()).await.is_err() {
                    return Ok(false);
                }
            }
        }
    }
}

/// Proof of holding a [`Mutex`]; dropping it releases the lock.
#[must_use = "dropping the guard releases the lock at once"]
#[derive(Debug)]
pub struct MutexGuard {
    lease: Lease,
}

impl MutexGuard {
    fn new(client: zk::Client, own: OwnNode) -> MutexGuard {
        MutexGuard {
            lease: Lease::new(client, own),
        }
    }

    /// The zxid that created this holder's node: larger for every later holder of the lock, so a
    /// resource can refuse writes stamped with an older token.
    pub fn fencing_token(&self) -> i64 {
        self.lease.own.czxid
    }

    /// The full path of this holder's node.
    pub fn node_path(&self) -> &str {
        &self.lease.own.path
    }

    /// Whether the holder's node is known to be gone (session expired or node deleted): the lock
    /// may now be held by someone else.
    pub fn is_lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// Completes when the holder's node is known to be gone.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) {
        self.lease.lost().await
    }
}

/// A held node: watches it for loss and deletes it on drop.
#[derive(Debug)]
pub(crate) struct Lease {
    client: zk::Client,
    pub(crate) own: OwnNode,
    lost: watch::Receiver<bool>,
    monitor: tokio::task::JoinHandle<()>,
    rt: tokio::runtime::Handle,
}

impl Lease {
    pub(crate) fn new(client: zk::Client, own: OwnNode) -> Lease {
        let (tx, lost) = watch::channel(false);
        let monitor = tokio::spawn(monitor(client.clone(), own.path.clone(), tx));
        Lease {
            client,
            own,
            lost,
            monitor,
            rt: tokio::runtime::Handle::current(),
        }
    }
}

async fn monitor(client: zk::Client, path: String, tx: watch::Sender<bool>) {
    loop {
        match client.check_and_watch_stat(&path).await {
            Ok((Some(stat), w)) if stat.ephemeral_owner == client.session_id().0 => {
                w.changed().await;
            }
            Ok(_) => break,
            Err(e) if node::terminated(&e) => break,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let _ = tx.send(true);
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.monitor.abort();
        self.rt.spawn(node::guaranteed_delete(
            self.client.clone(),
            self.own.path.clone(),
        ));
    }
}

impl Lease {
    pub(crate) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    pub(crate) async fn lost(&self) {
        let mut rx = self.lost.clone();
        let _ = rx.wait_for(|lost| *lost).await;
    }
}
