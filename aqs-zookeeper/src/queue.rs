//! The sequence queue under every lock recipe: Curator's `LockInternals` wait loop.
//!
//! Invariants:
//! - **Q1** Order is the server's sequence after the lock name compared as a string, Curator's
//!   sort key, which also orders the negative sequences after a `cversion` wrap as Curator
//!   does; the protected prefix never affects order.
//! - **Q2** A waiter watches exactly one node, so a release wakes O(1) waiters: an exclusive
//!   waiter watches its immediate predecessor, a shared waiter the first exclusive node before
//!   it (Curator's `InterProcessReadWriteLock` read rule). When that node is deleted, the
//!   waiter lists the children again; a stale or missing watch target only costs a re-list.
//! - **Q3** A waiter whose own node is missing is not granted. The listing that shows it
//!   missing came through the live session, so someone else deleted it:
//!   [`Error::NodeDeleted`] ([`Error::SessionLost`] if the session has ended since).

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::node::{self, OwnNode};
use crate::Error;

/// How a waiter decides it holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Holds when first among all of the recipe's nodes (a mutex, a write lock).
    Exclusive,
    /// Holds when no node named `exclusive_name` sorts before it (a read lock).
    Shared { exclusive_name: &'static str },
}

/// One lock's queue: its parent node and the lock names its recipe sorts by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queue<'a> {
    pub(crate) client: &'a zk::Client,
    pub(crate) parent: &'a str,
    pub(crate) lock_names: &'static [&'static str],
}

impl Queue<'_> {
    /// The recipe's children in queue order (Q1): Curator's, by the sequence as a string.
    async fn sorted(&self) -> Result<Vec<(String, String)>, Error> {
        let children = node::retry(self.client, || self.client.list_children(self.parent)).await?;
        let mut seqs: Vec<(String, String)> = children
            .into_iter()
            .filter_map(|c| Some((node::sequence_of(&c, self.lock_names)?.to_owned(), c)))
            .collect();
        seqs.sort_unstable();
        Ok(seqs)
    }

    /// Waits until `own` holds the lock by `turn`; `Ok(false)` at `deadline`.
    ///
    /// The first check runs even if `deadline` has passed, so a zero wait is a `try`.
    pub(crate) async fn wait_turn(
        &self,
        own: &OwnNode,
        turn: Turn,
        deadline: Option<Instant>,
    ) -> Result<bool, Error> {
        loop {
            let sorted = self.sorted().await?;
            let Some(pos) = sorted.iter().position(|(_, c)| *c == own.name) else {
                return Err(node::own_node_gone(self.client, &own.path)); // Q3
            };
            let blocker = match turn {
                Turn::Exclusive => pos.checked_sub(1).map(|i| &sorted[i].1),
                Turn::Shared { exclusive_name } => sorted[..pos]
                    .iter()
                    .map(|(_, c)| c)
                    .find(|c| c.contains(exclusive_name)),
            };
            let Some(blocker) = blocker else {
                return Ok(true);
            };
            let path = format!("{}/{blocker}", self.parent);
            // getData, as Curator does: unlike exists, it leaves no watch behind on a node
            // that is already gone.
            let watcher =
                match node::retry(self.client, || self.client.get_and_watch_data(&path)).await {
                    Ok((_, _, w)) => w,
                    Err(Error::Zk(zk::Error::NoNode)) => continue, // Q2: gone already, look again.
                    Err(e) => return Err(e),
                };
            if !node::fired(watcher, deadline).await {
                return Ok(false);
            }
        }
    }
}
