//! A held set of nodes: what every guard and permit stands on.
//!
//! Invariants:
//! - **L1** A lease's nodes are deleted exactly once the lease ends: by [`Lease::release`], or by
//!   a guaranteed delete spawned on the runtime that granted it when the lease is dropped. The
//!   delete is retried across connection losses until the server confirms it or the session
//!   ends, which deletes the nodes too.
//! - **L2** The loss flag only ever goes from "held" to "lost", and it goes there as soon as the
//!   client knows its session ended, or once the connection has been down for a whole session
//!   timeout (by then the server may have expired the session and granted the nodes' place to
//!   someone else). Watching session state costs no request, so holding adds nothing to the
//!   recipes' request counts.

use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client as zk;

use crate::node::{self, OwnNode};
use crate::Error;

/// Nodes held by one grant, watched for loss (L2) and deleted when it ends (L1).
#[derive(Debug)]
pub(crate) struct Lease {
    client: zk::Client,
    nodes: Vec<OwnNode>,
    lost: watch::Receiver<bool>,
    monitor: tokio::task::JoinHandle<()>,
    rt: tokio::runtime::Handle,
}

impl Lease {
    /// Starts holding `nodes` (at least one). Must run inside a Tokio runtime.
    pub(crate) fn new(client: &zk::Client, nodes: Vec<OwnNode>) -> Lease {
        debug_assert!(!nodes.is_empty());
        let (tx, lost) = watch::channel(false);
        let monitor = tokio::spawn(monitor(client.clone(), tx));
        Lease {
            client: client.clone(),
            nodes,
            lost,
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
        *self.lost.borrow()
    }

    pub(crate) async fn lost(&self) {
        let mut rx = self.lost.clone();
        let _ = rx.wait_for(|lost| *lost).await;
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

/// Sets the loss flag when the session ends or stays disconnected for a session timeout (L2).
async fn monitor(client: zk::Client, lost: watch::Sender<bool>) {
    let mut states = client.state_watcher();
    let timeout: Duration = client.session_timeout();
    loop {
        let s = states.state();
        if s.is_terminated() {
            break;
        }
        if s == zk::SessionState::Disconnected {
            if tokio::time::timeout(timeout, states.changed())
                .await
                .is_err()
            {
                break;
            }
        } else {
            states.changed().await;
        }
    }
    let _ = lost.send(true);
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.monitor.abort();
        if self.nodes.is_empty() {
            return;
        }
        let client = self.client.clone();
        let nodes = std::mem::take(&mut self.nodes);
        self.rt.spawn(async move {
            for n in &nodes {
                node::guaranteed_delete(&client, &n.path).await;
            }
        });
    }
}
