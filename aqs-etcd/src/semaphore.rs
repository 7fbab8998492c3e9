//! `Semaphore`: Curator's V2 design on etcd, a gate mutex plus one lease key per grant.
//!
//! Layout under `NAME`:
//! ```text
//! NAME/lock/<lease hex>             the gate: a Mutex (etcd's concurrency.Mutex layout)
//! NAME/leases/<lease hex>-<seq>     one key per grant, value = its permits in decimal,
//!                                   put with the holder's session lease
//! ```
//!
//! Invariants:
//! - **P1** A lease key is only put by the gate's holder, in a txn that compares the gate key's
//!   create revision with the gate guard's token: a contender whose gate hold is gone (its
//!   lease ended) never adds permits.
//! - **P2** The gate holder grants only if the permits of the lease keys it read plus its own
//!   are at most the limit. Only the gate holder puts keys, and holders only delete theirs, so
//!   the sum it read can only have shrunk by the time its txn runs: the limit holds.
//! - **P3** Only the gate holder watches `NAME/leases/`, and only for deletes: a release wakes
//!   at most one waiter (the gate holder), and a gate hand-off wakes one (the next in the
//!   gate's queue). FIFO comes from the gate's queue; the gate holder is the first waiter, so a
//!   free permit goes to it at once (work-conserving).
//! - **P4** The lease key's name (`<lease hex>-<seq>`, `seq` from the session) is fixed before
//!   the put is sent, so a timed-out, failed or cancelled acquire deletes it even if the put's
//!   reply was lost (rule M4 of the mutex).

use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use tokio::time::Instant;

use crate::mutex::{header_revision, kvs, look_deadline, request, Attempt};
use crate::wait::{self, Look};
use crate::{Error, Mutex, Session};

/// A cluster-wide counting semaphore with a fixed limit: fair (FIFO), work-conserving, a release
/// wakes at most one waiter, and a crashed holder's permits return when its lease ends.
///
/// Every client of one `NAME` must use the same limit; it is not stored in etcd, and clients
/// that disagree each enforce their own.
///
/// # Fairness
/// FIFO: contenders pass a gate [`Mutex`] (`NAME/lock`) in create-revision order, and the gate's
/// holder waits for enough permits while the others wait behind it. A request for many permits
/// is therefore not overtaken by later requests for fewer.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// let client = etcd_client::Client::connect(["127.0.0.1:2379"], None).await?;
/// let session = aqs_etcd::Session::new(client, Duration::from_secs(10)).await?;
/// let writers = aqs_etcd::Semaphore::new(&session, "/db/writers", 20)?;
/// let permit = writers.acquire_many(2).await?;
/// println!("{} permits, token {}", permit.permits(), permit.token());
/// permit.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    session: Session,
    gate: Mutex,
    leases: String,
    limit: u32,
}

impl Semaphore {
    /// A semaphore called `name` with `limit` permits, on `session`'s lease. Writes nothing
    /// until the first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidName`] if `name` is empty; [`Error::InvalidLimit`] if `limit` is 0.
    pub fn new(session: &Session, name: &str, limit: u32) -> Result<Semaphore, Error> {
        if name.is_empty() {
            return Err(Error::InvalidName(name.to_owned()));
        }
        if limit == 0 {
            return Err(Error::InvalidLimit);
        }
        Ok(Semaphore {
            session: session.clone(),
            gate: Mutex::new(session, &format!("{name}/lock"))?,
            leases: format!("{name}/leases/"),
            limit,
        })
    }

    /// The limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Waits for one permit.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire_many`](Self::acquire_many).
    pub async fn acquire(&self) -> Result<Permit, Error> {
        self.acquire_many(1).await
    }

    /// Waits for `n` permits, granted together.
    ///
    /// # Errors
    /// [`Error::InvalidPermits`] if `n` is 0 or above the limit; [`Error::SessionLost`] or
    /// [`Error::Closed`] if the session is or becomes lost or closed while waiting;
    /// [`Error::Etcd`] for a failed request. On error nothing of this attempt stays in etcd.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's keys from a task on the session's runtime,
    /// even if a put's reply never arrived.
    pub async fn acquire_many(&self, n: u32) -> Result<Permit, Error> {
        Ok(self.acquire_until(n, None).await?.expect("no deadline"))
    }

    /// Like [`acquire`](Self::acquire), but gives up after `timeout` with `Ok(None)`, leaving
    /// no key. A timeout too large to add to now (such as `Duration::MAX`) means no deadline.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire_many`](Self::acquire_many).
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<Permit>, Error> {
        self.try_acquire_many_for(1, timeout).await
    }

    /// Like [`acquire_many`](Self::acquire_many), but gives up after `timeout` with `Ok(None)`,
    /// leaving no key. A timeout too large to add to now means no deadline.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// As [`acquire_many`](Self::acquire_many).
    pub async fn try_acquire_many_for(
        &self,
        n: u32,
        timeout: Duration,
    ) -> Result<Option<Permit>, Error> {
        self.acquire_until(n, Instant::now().checked_add(timeout))
            .await
    }

    async fn acquire_until(
        &self,
        n: u32,
        deadline: Option<Instant>,
    ) -> Result<Option<Permit>, Error> {
        if n == 0 || n > self.limit {
            return Err(Error::InvalidPermits {
                requested: n,
                limit: self.limit,
            });
        }
        let look = look_deadline(deadline);
        let Some(gate) = self.gate.lock_until(deadline).await? else {
            return Ok(None);
        };
        let s = &self.session;
        let key = format!("{}{:x}-{}", self.leases, s.lease_id(), s.next_seq());
        // P4: armed before the put is sent.
        let mut attempt = Attempt {
            session: s.clone(),
            key: Some(key.clone()),
            turn: None,
        };
        let r = self.grant(&gate, &key, n, deadline, look).await;
        drop(gate); // the next contender may look now
        match r {
            Ok(Some(token)) => Ok(Some(Permit {
                attempt,
                token,
                permits: n,
                key,
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

    /// Holding the gate: waits until `n` permits are free and puts the lease key (P1-P3). The
    /// requests are bounded by `look`, the waits by `deadline`.
    async fn grant(
        &self,
        gate: &crate::MutexGuard,
        key: &str,
        n: u32,
        deadline: Option<Instant>,
        look: Option<Instant>,
    ) -> Result<Option<i64>, Error> {
        let s = &self.session;
        let kv = s.client().kv_client();
        let limit = u64::from(self.limit);
        // P1: the put compares the gate key's create revision with our gate hold's token.
        let put = Txn::new()
            .when([Compare::create_revision(
                gate.key(),
                CompareOp::Equal,
                gate.token(),
            )])
            .and_then([
                TxnOp::put(
                    key,
                    n.to_string(),
                    Some(PutOptions::new().with_lease(s.lease_id())),
                ),
                // The token is the key's create revision, also when this put repeats one whose
                // reply was lost (the repeat only modifies the key).
                TxnOp::get(key, None),
            ]);
        // P2, P3: a look counts the permits of the lease keys and, if ours fit, puts our key;
        // else it asks to wait for a delete under `NAME/leases/` (WA1-WA3, `wait.rs`).
        let look_again = || {
            let (kv, leases, put) = (kv.clone(), self.leases.clone(), put.clone());
            async move {
                let make = || {
                    let (mut kv, leases) = (kv.clone(), leases.clone());
                    async move { kv.get(leases, Some(GetOptions::new().with_prefix())).await }
                };
                let Some(resp) = request(s, look, make).await? else {
                    return Ok(Look::TimedOut);
                };
                // Values this crate did not write count as one permit, as Curator counts nodes.
                let used: u64 = resp
                    .kvs()
                    .iter()
                    .map(|kv| {
                        std::str::from_utf8(kv.value())
                            .ok()
                            .and_then(|v| v.parse::<u32>().ok())
                            .map_or(1, u64::from)
                    })
                    .sum();
                if used + u64::from(n) > limit {
                    return Ok(Look::Wait {
                        key: leases.into_bytes(),
                        prefix: true,
                        seen: header_revision(resp.header()),
                    });
                }
                // Repeating the put after a lost reply writes the same value again: harmless.
                let make = || {
                    let (mut kv, put) = (kv.clone(), put.clone());
                    async move { kv.txn(put).await }
                };
                let Some(resp) = request(s, look, make).await? else {
                    return Ok(Look::TimedOut);
                };
                if !resp.succeeded() {
                    return Err(Error::SessionLost); // the gate key is gone: the lease ended
                }
                let created = kvs(&resp.op_responses()[1])
                    .first()
                    .map(|kv| kv.create_revision());
                Ok(Look::Done(
                    created.unwrap_or_else(|| header_revision(resp.header())),
                ))
            }
        };
        wait::until_done(s, deadline, None, look_again).await
    }
}

/// Permits of a [`Semaphore`]; dropping it deletes its lease key (from a task on the session's
/// runtime) and so returns the permits.
#[must_use = "dropping the permit returns it at once"]
#[derive(Debug)]
pub struct Permit {
    attempt: Attempt,
    key: String,
    token: i64,
    permits: u32,
}

impl Permit {
    /// How many permits this holds.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The fencing token: the revision that created this permit's lease key. Every later grant
    /// of the semaphore has a larger one.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The lease key, `NAME/leases/<lease hex>-<seq>`.
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

    /// Deletes the lease key now and waits until the server confirms it.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session was lost or closed before the server confirmed the
    /// delete (the key goes with the lease then). It waits no longer than that: at most about
    /// the session's TTL while the server is unreachable.
    pub async fn release(mut self) -> Result<(), Error> {
        self.attempt.release().await
    }
}
