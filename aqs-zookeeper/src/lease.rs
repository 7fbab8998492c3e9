//! A held set of nodes: what every guard and permit stands on.
//!
//! Invariants:
//! - **L1** A lease's nodes are deleted exactly once the lease ends: by [`Lease::release`], or,
//!   when the lease is dropped, by deletes sent at once (the client sends a request when it is
//!   called, whatever runtime is current) whose retries run on the runtime that granted it. The
//!   delete is retried across connection losses until the server confirms it or the session
//!   ends, which deletes the nodes too.
//! - **L2** The loss flag only ever goes from "held" to "lost" (health rule H3 in
//!   `health.rs`), and it goes there before the earliest instant the server could expire the
//!   session (H2): the session's own heartbeat bounds when the server last heard from it. A
//!   lease born while its session was already in that state is born lost.
//! - **L3** Once lost, the lease deletes its nodes on a best-effort basis (if the session comes
//!   back they would otherwise hold a place nobody uses). Suspension alone deletes nothing: a
//!   reconnect within the session leaves the hold standing.
//! - **L4** A lease keeps its session's health task running; the task costs one request per
//!   `T/8` per session, never per lock, and none while the session holds and waits for nothing.

use std::sync::Arc;

use tokio::sync::watch;
use zookeeper_client as zk;

use crate::health::{Health, Status};
use crate::node::{self, OwnNode};
use crate::Error;

/// A grant's view of its session's health: lost since it was born (L2), and suspended now.
#[derive(Debug, Clone)]
pub(crate) struct Loss {
    status: watch::Receiver<Status>,
    born: u64,
    born_lost: bool,
}

impl Loss {
    fn new(health: &Health) -> Loss {
        let status = health.subscribe();
        let s = *status.borrow();
        Loss {
            born: s.losses,
            born_lost: s.is_lost_now(),
            status,
        }
    }

    /// Whether the session's task is gone (H5): then the grant counts as lost.
    fn task_gone(&self) -> bool {
        self.status.has_changed().is_err()
    }

    pub(crate) fn is_lost(&self) -> bool {
        let s = *self.status.borrow();
        self.born_lost || s.losses > self.born || s.is_lost_now() || self.task_gone()
    }

    pub(crate) fn is_suspended(&self) -> bool {
        self.status.borrow().is_suspended_now() || self.task_gone()
    }

    /// Completes when `pred` holds, re-checked at every status change and at the instants the
    /// status names (so a late task delays nothing).
    async fn until(&self, pred: impl Fn(&Loss) -> bool) {
        let mut rx = self.status.clone();
        loop {
            if pred(self) {
                return;
            }
            let s = *rx.borrow_and_update();
            let now = std::time::Instant::now();
            let next = [s.lost_at, s.suspend_at]
                .into_iter()
                .filter(|at| *at > now)
                .min();
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                _ = async {
                    match next {
                        Some(at) => tokio::time::sleep_until(at.into()).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
        }
    }

    pub(crate) async fn lost(&self) {
        self.until(Loss::is_lost).await
    }

    pub(crate) async fn suspended(&self) {
        self.until(|l| l.is_suspended() || l.is_lost()).await
    }
}

/// Nodes held by one grant, watched for loss (L2) and deleted when it ends (L1).
#[derive(Debug)]
pub(crate) struct Lease {
    client: zk::Client,
    nodes: Vec<OwnNode>,
    loss: Loss,
    _health: Arc<Health>,
    monitor: tokio::task::JoinHandle<()>,
    rt: tokio::runtime::Handle,
}

impl Lease {
    /// Starts holding `nodes` (at least one), watched by `health`, which the acquire took
    /// before its first request (H1). Must run inside a Tokio runtime.
    pub(crate) fn new(client: &zk::Client, health: Arc<Health>, nodes: Vec<OwnNode>) -> Lease {
        debug_assert!(!nodes.is_empty());
        let loss = Loss::new(&health);
        let monitor = tokio::spawn(monitor(client.clone(), loss.clone(), nodes.clone()));
        Lease {
            client: client.clone(),
            nodes,
            loss,
            _health: health,
            monitor,
            rt: tokio::runtime::Handle::current(),
        }
    }

    /// The zxid that created the lease's last node: later grants of the same recipe have larger
    /// ones.
    pub(crate) fn fencing_token(&self) -> i64 {
        self.nodes.iter().map(|n| n.czxid).max().unwrap_or(0)
    }

    pub(crate) fn nodes(&self) -> &[OwnNode] {
        &self.nodes
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.loss.is_lost()
    }

    pub(crate) async fn lost(&self) {
        self.loss.lost().await
    }

    pub(crate) fn is_suspended(&self) -> bool {
        self.loss.is_suspended()
    }

    pub(crate) async fn suspended(&self) {
        self.loss.suspended().await
    }

    /// The path of the lease's first node.
    pub(crate) fn path(&self) -> &str {
        &self.nodes[0].path
    }

    /// Gives up one share of a reentrant hold; the last share deletes the nodes now and waits
    /// for the server, as [`release`](Self::release) does. Earlier shares return at once.
    pub(crate) async fn release_share(self: std::sync::Arc<Lease>) -> Result<(), Error> {
        match std::sync::Arc::try_unwrap(self) {
            Ok(lease) => lease.release().await,
            Err(_) => Ok(()),
        }
    }

    /// Deletes the nodes now and waits until the server confirms it or the session ended (L1).
    pub(crate) async fn release(mut self) -> Result<(), Error> {
        let nodes = std::mem::take(&mut self.nodes);
        for n in &nodes {
            node::guaranteed_delete(&self.client, &n.path).await;
        }
        match self.client.state() {
            zk::SessionState::Closed => Err(Error::Closed),
            s if s.is_terminated() => Err(Error::SessionLost),
            _ => Ok(()),
        }
    }
}

/// Deletes the nodes once the lease is lost (L3): the holder has been told to stop, and the
/// nodes would only keep the place taken if the session came back.
async fn monitor(client: zk::Client, loss: Loss, nodes: Vec<OwnNode>) {
    loss.lost().await;
    for n in &nodes {
        node::guaranteed_delete(&client, &n.path).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.monitor.abort();
        if self.nodes.is_empty() {
            return;
        }
        let client = self.client.clone();
        let nodes = std::mem::take(&mut self.nodes);
        // L1: the client sends a request when it is called, so the deletes leave now, even if
        // the runtime that granted the lease is gone; only the retries need a task.
        let first: Vec<_> = nodes.iter().map(|n| client.delete(&n.path, None)).collect();
        self.rt.spawn(async move {
            for (n, first) in nodes.iter().zip(first) {
                node::guaranteed_delete_after(&client, &n.path, first).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqs_test_servers::zookeeper::TestServer;
    use std::time::Duration;

    /// If the session's health task dies, every grant reports lost both ways: `is_lost()` and
    /// `lost()` agree (H5), and suspension says so too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_health_task_means_lost_both_ways() {
        let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
        let c = zk::Client::connect(&s.addr().to_string()).await.unwrap();
        let health = Health::of(&c);
        let loss = Loss::new(&health);
        assert!(!loss.is_lost() && !loss.is_suspended());
        health.abort_task_for_test();
        tokio::time::timeout(Duration::from_secs(20), loss.lost())
            .await
            .expect("lost() completes");
        assert!(loss.is_lost() && loss.is_suspended());
    }
}
