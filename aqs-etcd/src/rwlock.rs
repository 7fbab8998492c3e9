//! `RwLock`: the layout of etcd's Go `contrib/recipes` `RWMutex`, with the grant confirmed by
//! the server.
//!
//! Layout under `NAME` (Go's `recipe.NewRWMutex(session, NAME)` writes the same prefixes):
//! ```text
//! NAME/read/<unique>    a reader, put with the session lease, only if absent
//! NAME/write/<unique>   a writer, the same
//! ```
//! Go names `<unique>` after the put time in nanoseconds; here it is `<lease hex>-<seq>`, fixed
//! before the put, so a cancelled attempt can always delete it. The recipe never reads the
//! suffix, only the prefix and the revision, so both kinds of client share one queue.
//!
//! Invariants:
//! - **R1** A reader waits while a `write/` key with a lower revision exists: it watches the
//!   delete of the last such key and looks again. A writer does the same over all keys under
//!   `NAME/`. Keys are never modified, so mod revision = create revision; Go compares mod
//!   revisions and so do we.
//! - **R2** The grant is decided by one txn that compares the own key's create revision and, in
//!   the same request, finds no blocking key (rule M3 of the mutex).
//! - **R3** An attempt's key is deleted on every path that does not hand it to a guard (M4).

use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};
use tokio::time::Instant;

use crate::mutex::{header_revision, look_deadline, request, Attempt};
use crate::wait;
use crate::{Error, Session};

/// A cluster-wide read-write lock with the layout of etcd's Go `recipes.RWMutex`: readers share,
/// a writer is alone, and both queue in one FIFO order by revision.
///
/// # Fairness
/// FIFO by revision: a reader behind a waiting writer waits for that writer, so writers are not
/// starved; the readers between two writers enter together.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// let client = etcd_client::Client::connect(["127.0.0.1:2379"], None).await?;
/// let session = aqs_etcd::Session::new(client, Duration::from_secs(10)).await?;
/// let config = aqs_etcd::RwLock::new(&session, "/demo/config")?;
/// let read = config.read().await?;
/// println!("reading, token {}", read.token());
/// drop(read);
/// let write = config.write().await?;
/// write.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RwLock {
    session: Session,
    prefix: String,
}

/// Which side of an [`RwLock`] a request or guard is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Read,
    Write,
}

impl RwLock {
    /// A read-write lock called `name` on `session`'s lease. Writes nothing until the first
    /// acquire.
    ///
    /// # Errors
    /// [`Error::InvalidName`] if `name` is empty.
    pub fn new(session: &Session, name: &str) -> Result<RwLock, Error> {
        if name.is_empty() {
            return Err(Error::InvalidName(name.to_owned()));
        }
        Ok(RwLock {
            session: session.clone(),
            prefix: format!("{name}/"),
        })
    }

    /// Waits for a read hold.
    ///
    /// # Errors
    /// [`Error::SessionLost`] or [`Error::Closed`] if the session is or becomes lost or closed
    /// (or the key disappears) while waiting; [`Error::Etcd`] for a failed request. On error
    /// nothing of this attempt stays in etcd.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's key from a task on the session's runtime,
    /// even if the put's reply never arrived.
    pub async fn read(&self) -> Result<RwLockGuard, Error> {
        Ok(self.acquire(Side::Read, None).await?.expect("no deadline"))
    }

    /// Waits for the write hold.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// As [`read`](Self::read).
    pub async fn write(&self) -> Result<RwLockGuard, Error> {
        Ok(self.acquire(Side::Write, None).await?.expect("no deadline"))
    }

    /// Like [`read`](Self::read), but gives up after `timeout` with `Ok(None)`, leaving no key.
    /// A timeout too large to add to now means no deadline.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// As [`read`](Self::read).
    pub async fn try_read_for(&self, timeout: Duration) -> Result<Option<RwLockGuard>, Error> {
        self.acquire(Side::Read, Instant::now().checked_add(timeout))
            .await
    }

    /// Like [`write`](Self::write), but gives up after `timeout` with `Ok(None)`, leaving no
    /// key. A timeout too large to add to now means no deadline.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// As [`read`](Self::read).
    pub async fn try_write_for(&self, timeout: Duration) -> Result<Option<RwLockGuard>, Error> {
        self.acquire(Side::Write, Instant::now().checked_add(timeout))
            .await
    }

    async fn acquire(
        &self,
        side: Side,
        deadline: Option<Instant>,
    ) -> Result<Option<RwLockGuard>, Error> {
        let s = &self.session;
        if s.is_closed() {
            return Err(Error::Closed);
        }
        if s.is_lost() {
            return Err(Error::SessionLost);
        }
        let kind = match side {
            Side::Read => "read",
            Side::Write => "write",
        };
        let key = format!("{}{kind}/{:x}-{}", self.prefix, s.lease_id(), s.next_seq());
        let mut attempt = Attempt {
            session: s.clone(),
            key: Some(key.clone()),
            turn: None,
        };
        match self.contend(side, &key, deadline).await {
            Ok(Some(token)) => Ok(Some(RwLockGuard {
                attempt,
                key,
                token,
                write: side == Side::Write,
            })),
            Ok(None) => {
                attempt.delete_now().await;
                Ok(None)
            }
            Err(e) => {
                attempt.delete_now().await;
                Err(e)
            }
        }
    }

    /// Puts `key` and waits until no blocking key is older (R1, R2); `Some(revision)` once held.
    async fn contend(
        &self,
        side: Side,
        key: &str,
        deadline: Option<Instant>,
    ) -> Result<Option<i64>, Error> {
        let s = &self.session;
        let look = look_deadline(deadline);
        let kv = s.client().kv_client();
        let blockers = match side {
            Side::Read => format!("{}write/", self.prefix),
            Side::Write => self.prefix.clone(),
        };
        // Create only if absent, else read it: a retry after a lost reply finds its own key.
        let put = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key,
                "",
                Some(PutOptions::new().with_lease(s.lease_id())),
            )])
            .or_else([TxnOp::get(key, None)]);
        let make = || {
            let (mut kv, put) = (kv.clone(), put.clone());
            async move { kv.txn(put).await }
        };
        let Some(resp) = request(s, look, make).await? else {
            return Ok(None);
        };
        let own = if resp.succeeded() {
            header_revision(resp.header())
        } else {
            match &resp.op_responses()[0] {
                TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.create_revision()),
                _ => None,
            }
            .ok_or(Error::SessionLost)?
        };
        // R2: each look confirms that our key is still ours and finds the last blocking key
        // before it, in one request; waits are WA1-WA3 (`wait.rs`).
        let last_before = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Mod, SortOrder::Descend)
            .with_limit(1)
            .with_max_mod_revision(own - 1);
        let query = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, own)])
            .and_then([TxnOp::get(blockers.as_str(), Some(last_before))]);
        let look_again = || wait::look_before(s, &kv, &query, own, look);
        wait::until_done(s, deadline, None, look_again).await
    }
}

/// A read or write hold on an [`RwLock`]; dropping it deletes its key (from a task on the
/// session's runtime).
#[must_use = "dropping the guard releases the lock at once"]
#[derive(Debug)]
pub struct RwLockGuard {
    attempt: Attempt,
    key: String,
    token: i64,
    write: bool,
}

impl RwLockGuard {
    /// Whether this is the write hold.
    pub fn is_write(&self) -> bool {
        self.write
    }

    /// The fencing token: the revision that created this holder's key. A later writer has a
    /// larger one than every earlier holder.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The holder's key, `NAME/read/...` or `NAME/write/...`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the hold is known to be lost, or may be (see [`Session`]).
    pub fn is_lost(&self) -> bool {
        self.attempt.session.is_lost()
    }

    /// Whether the session's keep-alives are failing now.
    pub fn is_suspended(&self) -> bool {
        self.attempt.session.is_suspended()
    }

    /// Completes when [`is_lost`](Self::is_lost) becomes true.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) {
        self.attempt.session.lost().await
    }

    /// Deletes the key now and waits until the server confirms it.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session was lost or closed before the server confirmed the
    /// delete (the key goes with the lease then). It waits no longer than that: at most about
    /// the session's TTL while the server is unreachable.
    pub async fn release(mut self) -> Result<(), Error> {
        self.attempt.release().await
    }
}
