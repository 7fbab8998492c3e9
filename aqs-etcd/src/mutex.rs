//! `Mutex`: etcd's `concurrency.Mutex` recipe, with the grant confirmed by the server.
//!
//! Layout (Go's `client/v3/concurrency/mutex.go`, `etcdctl lock`, the server's `v3lock`):
//! a contender puts `NAME/<lease id in lowercase hex>` (empty value) with its session's lease,
//! only if absent. Keys under `NAME/` are ordered by create revision; the lowest holds.
//!
//! Invariants:
//! - **M1** A session has at most one key per name. Its own contenders for a name take turns in
//!   an in-process FIFO queue first ([`Session::local_queue`]), and the queue's turn is held
//!   until the key is deleted, so a later contender never adopts or races a key an earlier one
//!   is still deleting.
//! - **M2** A waiter waits for the deletion of its predecessor only: the key with the largest
//!   create revision below its own. After each deletion it looks again. How it waits (a watch
//!   from the current revision, and a second look when anything was written since the first)
//!   is WA1-WA3 in `wait.rs`.
//! - **M3** Every grant is decided by one request: the create txn that puts our key and finds
//!   no key before it (or, for a key of ours it adopts, finds ours first), or a txn that
//!   compares our key's create revision with the one it was created at and, in the same
//!   transaction, finds no key before it. No grant through a key the server has deleted.
//! - **M4** An attempt's key is deleted on every path that does not hand it to a guard
//!   (timeout, error, cancellation), even if the create's reply was lost: the key's name
//!   depends only on the lease, so it is known before the create is sent.
//! - **M5** A request that fails to reach the server (a restart, a lost connection) is retried
//!   every 100 ms until the deadline or the session's loss; a refusal is returned. So a server
//!   outage shorter than the loss bound is invisible to a waiter, and a longer one ends it with
//!   `SessionLost`.

use std::future::Future;
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};
use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

use crate::wait::{self, Look};
use crate::{Error, Session};

/// The least time an acquire's first look (its create request and the answer that decides
/// whether it holds) is given, even when the deadline is sooner or has passed: `try_lock` and
/// zero timeouts make one real look instead of giving up before asking.
pub(crate) const MIN_LOOK: Duration = Duration::from_secs(1);

/// The deadline for an acquire's own requests: `deadline`, but at least [`MIN_LOOK`] from now.
pub(crate) fn look_deadline(deadline: Option<Instant>) -> Option<Instant> {
    deadline.map(|d| d.max(Instant::now() + MIN_LOOK))
}

/// How long to wait before retrying a request that failed to reach the server (M5).
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How long a timed-out or failed acquire waits for the delete of its key before handing the
/// delete to a background task (which retries until the server confirms or the lease ends).
pub(crate) const CLEANUP_WAIT: Duration = Duration::from_secs(2);

/// A cluster-wide FIFO mutex with etcd's `concurrency.Mutex` layout.
///
/// Each contender puts `NAME/<lease id in hex>` with its [`Session`]'s lease. The key with the
/// lowest create revision holds; each waiter watches only the deletion of the key created just
/// before its own, so a release wakes one waiter. `etcdctl lock NAME`, Go clients using
/// `concurrency.NewMutex(session, NAME)` and the server's `v3lock` service on the same `NAME`
/// share the queue.
///
/// **One key per lease.** Because the key is named after the lease, one session holds at most
/// one key per name. Contenders through the same session (several handles, or several tasks on
/// one handle) queue in process, first come first served, then take the session's one place in
/// etcd's queue in turn. The mutex is not reentrant: a second `lock` while holding waits for the
/// first guard to go.
///
/// # Fairness
/// FIFO by create revision across all clients; FIFO by arrival among one session's contenders.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// let client = etcd_client::Client::connect(["127.0.0.1:2379"], None).await?;
/// let session = aqs_etcd::Session::new(client, Duration::from_secs(10)).await?;
/// let mutex = aqs_etcd::Mutex::new(&session, "/demo/mutex")?;
/// let guard = mutex.lock().await?;
/// println!("holding {} with fencing token {}", guard.key(), guard.token());
/// guard.release().await?; // deletes the key and waits for the server to confirm
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Mutex {
    session: Session,
    name: String,
    prefix: String,
    key: String,
}

impl Mutex {
    /// A mutex called `name` on `session`'s lease. Writes nothing until the first acquire.
    ///
    /// `name` is used as Go's `concurrency.NewMutex` uses its prefix: keys are `name + "/" +
    /// lease id in hex`, so pass the same string as `etcdctl lock` gets.
    ///
    /// # Errors
    /// [`Error::InvalidName`] if `name` is empty.
    pub fn new(session: &Session, name: &str) -> Result<Mutex, Error> {
        if name.is_empty() {
            return Err(Error::InvalidName(name.to_owned()));
        }
        let prefix = format!("{name}/");
        let key = format!("{prefix}{:x}", session.lease_id());
        Ok(Mutex {
            session: session.clone(),
            name: name.to_owned(),
            prefix,
            key,
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key this session's contender puts: `name/<lease id in hex>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Waits until this session holds the mutex.
    ///
    /// # Errors
    /// [`Error::SessionLost`] if the session is or becomes lost, or its key disappears, while
    /// waiting; [`Error::Closed`] if the session was closed; [`Error::Etcd`] if the server
    /// refuses a request. A server that cannot be reached is retried every 100 ms until the
    /// deadline or the session's loss (rule M5). On error nothing of this attempt stays in etcd.
    ///
    /// # Cancel safety
    /// Dropping the future deletes this attempt's key from a task spawned on the session's
    /// runtime, even if the create's reply never arrived.
    pub async fn lock(&self) -> Result<MutexGuard, Error> {
        Ok(self.lock_until(None).await?.expect("no deadline"))
    }

    /// Takes the mutex only if it is free now: one look, no wait.
    ///
    /// # Errors
    /// As [`lock`](Self::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](Self::lock).
    pub async fn try_lock(&self) -> Result<Option<MutexGuard>, Error> {
        self.lock_until(Some(Instant::now())).await
    }

    /// Like [`lock`](Self::lock), but gives up after `timeout` and returns `Ok(None)`, having
    /// deleted its key. A timeout too large to add to now (such as `Duration::MAX`) means no
    /// deadline.
    ///
    /// # Errors
    /// As [`lock`](Self::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](Self::lock).
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MutexGuard>, Error> {
        self.lock_until(Instant::now().checked_add(timeout)).await
    }

    /// Like [`try_lock_for`](Self::try_lock_for), with a deadline.
    ///
    /// # Errors
    /// As [`lock`](Self::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](Self::lock).
    pub async fn try_lock_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<Option<MutexGuard>, Error> {
        self.lock_until(Some(Instant::from_std(deadline))).await
    }

    pub(crate) async fn lock_until(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<MutexGuard>, Error> {
        self.check_session()?;
        let queue = self.session.local_queue(&self.name);
        // M1: this session's contenders for the name go one at a time. A deadline that has
        // passed still gets one look (try_lock).
        let look = look_deadline(deadline);
        let turn = match queue.clone().try_lock_owned() {
            Ok(turn) => turn,
            Err(_) => match bounded(&self.session, deadline, async {
                Ok(queue.lock_owned().await)
            })
            .await?
            {
                Some(turn) => turn,
                None => return Ok(None),
            },
        };
        let mut attempt = Attempt {
            session: self.session.clone(),
            key: Some(self.key.clone()),
            turn: Some(turn),
        };
        match self.contend(deadline, look).await {
            Ok(Some(token)) => Ok(Some(MutexGuard {
                key: self.key.clone(),
                token,
                attempt,
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

    fn check_session(&self) -> Result<(), Error> {
        if self.session.is_closed() {
            Err(Error::Closed)
        } else if self.session.is_lost() {
            Err(Error::SessionLost)
        } else {
            Ok(())
        }
    }

    /// Puts the key if absent and waits for its turn; `Some(create revision)` once held. The
    /// requests are bounded by `look`, the waits by `deadline`.
    async fn contend(
        &self,
        deadline: Option<Instant>,
        look: Option<Instant>,
    ) -> Result<Option<i64>, Error> {
        let s = &self.session;
        let mut kv = s.client().kv_client();
        // After our put, the two newest keys are ours and the one just before it (M2), so a
        // created key learns from its own request whether it holds and whom to wait for.
        let newest = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(2);
        let first = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1);
        // Create only if absent; else read our key and the first key, in the same request.
        let create = Txn::new()
            .when([Compare::create_revision(
                self.key.as_str(),
                CompareOp::Equal,
                0,
            )])
            .and_then([
                TxnOp::put(
                    self.key.as_str(),
                    "",
                    Some(PutOptions::new().with_lease(s.lease_id())),
                ),
                TxnOp::get(self.prefix.as_str(), Some(newest)),
            ])
            .or_else([
                TxnOp::get(self.key.as_str(), None),
                TxnOp::get(self.prefix.as_str(), Some(first)),
            ]);
        // M5: a transient failure (server restarting, connection lost) is retried; the create
        // is idempotent for our lease.
        let resp = loop {
            match bounded(s, look, kv.txn(create.clone())).await {
                Ok(Some(resp)) => break resp,
                Ok(None) => return Ok(None),
                Err(e) if is_transient(&e) => {
                    if !pause(s, look).await? {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(e),
            }
        };
        let ops = resp.op_responses();
        let (own, first) = if resp.succeeded() {
            // Our key is the newest: this request's revision is its create revision.
            let own = header_revision(resp.header());
            debug_assert_eq!(
                kvs(&ops[1]).first().map(|kv| kv.create_revision()),
                Some(own)
            );
            match kvs(&ops[1]).get(1) {
                // M3: the request that created our key found none before it.
                None => return Ok(Some(own)),
                Some(before) => (
                    own,
                    Look::Wait {
                        key: before.key().to_vec(),
                        prefix: false,
                        seen: own,
                    },
                ),
            }
        } else {
            // A key of ours from an attempt whose delete has not run: adopt it, as Go does.
            let own = kvs(&ops[0])
                .first()
                .map(|kv| kv.create_revision())
                .ok_or(Error::SessionLost)?;
            if kvs(&ops[1]).first().map(|kv| kv.create_revision()) == Some(own) {
                return Ok(Some(own)); // the same request showed our key exists and is first
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None); // try_lock: the create's look was the one look
            }
            (own, Look::Again)
        };
        // M2, M3: each look confirms, in one request, that our key is the one we created, and
        // finds the key just before it (the largest create revision below ours).
        let last_before = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1)
            .with_max_create_revision(own - 1);
        let query = Txn::new()
            .when([Compare::create_revision(
                self.key.as_str(),
                CompareOp::Equal,
                own,
            )])
            .and_then([TxnOp::get(self.prefix.as_str(), Some(last_before))]);
        let look_again = || wait::look_before(s, &kv, &query, own, look);
        wait::until_done(s, deadline, Some(first), look_again).await
    }
}

pub(crate) fn header_revision(h: Option<&etcd_client::ResponseHeader>) -> i64 {
    h.map(|h| h.revision()).unwrap_or(0)
}

/// The keys a txn's get returned (none for any other operation).
pub(crate) fn kvs(op: &TxnOpResponse) -> &[etcd_client::KeyValue] {
    match op {
        TxnOpResponse::Get(g) => g.kvs(),
        _ => &[],
    }
}

/// Whether `e` is a failure to reach the server (it may be restarting, or the connection was
/// lost) rather than a refusal: worth retrying while the session lives (M5).
pub(crate) fn is_transient(e: &Error) -> bool {
    use etcd_client::Error as E;
    match e {
        Error::Etcd(E::TransportError(_) | E::IoError(_) | E::WatchError(_)) => true,
        Error::Etcd(E::GRpcStatus(st)) => matches!(
            st.code(),
            tonic::Code::Unavailable
                | tonic::Code::Unknown
                | tonic::Code::Cancelled
                | tonic::Code::DeadlineExceeded
                | tonic::Code::Aborted
        ),
        _ => false,
    }
}

/// Waits a little before a retry; `Ok(false)` if `deadline` comes first, an error if the
/// session is lost first.
pub(crate) async fn pause(s: &Session, deadline: Option<Instant>) -> Result<bool, Error> {
    let nap = async {
        tokio::time::sleep(RETRY_PAUSE).await;
        Ok::<(), etcd_client::Error>(())
    };
    Ok(bounded(s, deadline, nap).await?.is_some())
}

/// Runs a request made by `make`, retrying it while it fails to reach the server (M5), until
/// `until` (`Ok(None)`) or the session's loss. Only for requests that are safe to repeat.
pub(crate) async fn request<T, F, Fut>(
    s: &Session,
    until: Option<Instant>,
    mut make: F,
) -> Result<Option<T>, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    loop {
        match bounded(s, until, make()).await {
            Err(e) if is_transient(&e) => {
                if !pause(s, until).await? {
                    return Ok(None);
                }
            }
            r => return r,
        }
    }
}

/// Runs one request, giving up at `deadline` (`Ok(None)`) or when the session is lost.
pub(crate) async fn bounded<T, F>(
    s: &Session,
    deadline: Option<Instant>,
    f: F,
) -> Result<Option<T>, Error>
where
    F: Future<Output = Result<T, etcd_client::Error>>,
{
    let until = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = f => Ok(Some(r?)),
        _ = until => Ok(None),
        _ = s.lost() => Err(if s.is_closed() { Error::Closed } else { Error::SessionLost }),
    }
}

/// One contender's key, deleted when dropped (M4).
#[derive(Debug)]
pub(crate) struct Attempt {
    pub(crate) session: Session,
    /// The key, until its delete has been started.
    pub(crate) key: Option<String>,
    /// This session's turn for the name (M1), held until the key is deleted.
    pub(crate) turn: Option<OwnedMutexGuard<()>>,
}

impl Attempt {
    /// Starts deleting the key on the session's runtime; the task holds the turn until done.
    pub(crate) fn spawn_delete(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        let key = self.key.take()?;
        let turn = self.turn.take();
        let session = self.session.clone();
        Some(self.session.runtime().spawn(async move {
            let mut kv = session.client().kv_client();
            // Until the server confirms, or the lease is gone (which deletes the key too). A
            // request can hang while the server is frozen or cut off, so each races the loss,
            // which rule S2 bounds by the TTL.
            while !session.is_lost() {
                tokio::select! {
                    r = kv.delete(key.as_str(), None) => if r.is_ok() { break },
                    () = session.lost() => break,
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            drop(turn);
        }))
    }

    /// Deletes the key and waits for it, up to [`CLEANUP_WAIT`].
    pub(crate) async fn delete_now(&mut self) {
        if let Some(task) = self.spawn_delete() {
            let _ = tokio::time::timeout(CLEANUP_WAIT, task).await;
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        self.spawn_delete();
    }
}

/// Proof of holding a [`Mutex`]; dropping it deletes the key (from a task on the session's
/// runtime) and so wakes the next waiter.
#[must_use = "dropping the guard releases the lock at once"]
#[derive(Debug)]
pub struct MutexGuard {
    key: String,
    token: i64,
    attempt: Attempt,
}

impl MutexGuard {
    /// The fencing token: the create revision of this holder's key. Every later holder of the
    /// lock, from any client, has a larger one, so a resource that remembers the largest token it
    /// has seen can refuse a stale holder's writes.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The holder's key, `name/<lease id in hex>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the hold is known to be lost, or may be: the session's lease ended or may have
    /// ended (see [`Session`]). Turns true before the server can delete the key.
    pub fn is_lost(&self) -> bool {
        self.attempt.session.is_lost()
    }

    /// Whether the session's keep-alives are failing now; the hold may still be lost.
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

impl Attempt {
    /// Deletes the key now and waits until the server confirms it, as guards' `release` do.
    pub(crate) async fn release(&mut self) -> Result<(), Error> {
        let Some(task) = self.spawn_delete() else {
            return Ok(());
        };
        // The task ends once the server confirms the delete, or once the session is lost (the
        // key then goes with the lease), which rule S2 bounds by the TTL. A fixed wait would
        // report a live session lost while a leader election delays the delete.
        tokio::select! {
            _ = task => {}
            () = self.session.lost() => {}
        }
        if self.session.is_lost() {
            Err(Error::SessionLost)
        } else {
            Ok(())
        }
    }
}
