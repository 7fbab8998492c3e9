//! `Session`: one etcd lease per client session, kept alive by the crate, with loss detection
//! that fires before the server can expire the lease.
//!
//! Invariants:
//! - **S1** The server cannot expire the lease before `TTL` after it last processed a
//!   keep-alive (or the grant), and it processed that request no earlier than the client sent
//!   it. So with `last_acked_send` the send instant of the latest request whose answer arrived,
//!   the lease lives at least until `last_acked_send + TTL` in server time.
//! - **S2** The state is declared lost at `last_acked_send + TTL - margin(TTL)`, with
//!   `margin(TTL) = TTL / 20 + 100 ms`: `TTL / 20` covers a server clock that runs up to 5 %
//!   faster than ours (NTP keeps real clocks within 0.05 %), and 100 ms covers the lateness of our
//!   own timer and of the code that reads the flag on a busy machine. An answer is attributed to
//!   the *oldest* unanswered send, which is its own request on an in-order stream and an earlier
//!   one otherwise, so the bound errs early, never late.
//! - **S3** The state only goes `Live <-> Suspended -> Lost`; once lost it stays lost. The
//!   keep-alive task ends when it is lost, and an answer with TTL 0 (lease gone) is loss at once.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, LeaseKeepAliveStream, LeaseKeeper};
use tokio::sync::watch;
use tokio::time::{sleep_until, timeout_at, Instant};

use crate::Error;

/// etcd's largest lease TTL, in seconds (`MaxLeaseTTL`).
const MAX_TTL_SECS: u64 = 9_000_000_000;

/// How long to wait before re-opening a broken keep-alive stream.
const RETRY: Duration = Duration::from_millis(100);

/// The safety margin of rule S2: how long before the earliest possible server-side expiry the
/// session declares itself lost.
pub(crate) fn loss_margin(ttl: Duration) -> Duration {
    ttl / 20 + Duration::from_millis(100)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Live,
    Suspended,
    Lost,
}

/// One etcd lease, kept alive by a background task: the session every lock key is put with.
///
/// A session is what Go's `concurrency.Session` is: one lease with the TTL you choose, kept
/// alive every `TTL / 3`. Keys put with it go when the lease ends, so a crashed holder's locks
/// free themselves `TTL` after its last keep-alive.
///
/// # Loss
/// The server may expire the lease `TTL` after it last processed a keep-alive, and it processed
/// that no earlier than the client sent it. The session therefore records the *send* instant of
/// each keep-alive that was answered and reports [`is_lost`](Self::is_lost) at
/// `last answered send + TTL - (TTL / 20 + 100 ms)`, before the server can have deleted any of
/// its keys (rule S2 in the source explains the margin). While keep-alives go unanswered for
/// longer than `TTL / 3`, or their stream is broken, the session is
/// [`is_suspended`](Self::is_suspended): it may recover, or become lost. Once lost it stays
/// lost; open a new session to go on.
///
/// Cloning is cheap and shares the lease. When the last clone (and every guard made from it)
/// is dropped, the lease is revoked from a task on the runtime that created the session.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// let client = etcd_client::Client::connect(["127.0.0.1:2379"], None).await?;
/// let session = aqs_etcd::Session::new(client, Duration::from_secs(5)).await?;
/// println!("lease {:x}", session.lease_id());
/// tokio::select! {
///     _ = session.lost() => println!("lost: stop work that needs the locks"),
///     _ = tokio::time::sleep(Duration::from_secs(1)) => {}
/// }
/// session.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    lease: i64,
    ttl: Duration,
    state: watch::Receiver<State>,
    closed: watch::Sender<bool>,
    keeper: tokio::task::JoinHandle<()>,
    rt: tokio::runtime::Handle,
    /// One in-process queue per lock name: a session has one key per name (the key is named
    /// after the lease), so its own contenders on one name take turns here first.
    locals: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Numbers the session's semaphore lease keys, so each key's name is known before it is put.
    next_seq: std::sync::atomic::AtomicU64,
}

impl Session {
    /// Grants a lease with `ttl` and starts keeping it alive. Must be called inside a Tokio
    /// runtime, which then runs the keep-alives and the deletes of dropped guards.
    ///
    /// # Errors
    /// [`Error::InvalidTtl`] if `ttl` is not a whole number of seconds from 1 s to etcd's
    /// maximum; [`Error::Etcd`] if the server does not grant the lease. The server may grant a
    /// longer TTL than asked (its minimum is about 1.5 election timeouts); [`ttl`](Self::ttl)
    /// reports the granted one, and loss is computed from it.
    ///
    /// # Cancel safety
    /// If cancelled after the grant request was sent, a lease may be left to expire by itself
    /// after `ttl`; it holds no keys.
    pub async fn new(client: Client, ttl: Duration) -> Result<Session, Error> {
        let secs = ttl.as_secs();
        if ttl.subsec_nanos() != 0 || secs == 0 || secs > MAX_TTL_SECS {
            return Err(Error::InvalidTtl(ttl));
        }
        let sent = Instant::now();
        let granted = client
            .lease_client()
            .grant(secs as i64, None)
            .await
            .map_err(Error::from)?;
        let ttl = Duration::from_secs(granted.ttl().max(1) as u64);
        let lease = granted.id();
        let (tx, state) = watch::channel(State::Live);
        let (closed, _) = watch::channel(false);
        let keeper = tokio::spawn(keep_alive(client.clone(), lease, ttl, tx, sent));
        Ok(Session {
            inner: Arc::new(Inner {
                client,
                lease,
                ttl,
                state,
                closed,
                keeper,
                rt: tokio::runtime::Handle::current(),
                locals: Default::default(),
                next_seq: Default::default(),
            }),
        })
    }

    /// The lease id; lock keys are named after it in lowercase hex.
    pub fn lease_id(&self) -> i64 {
        self.inner.lease
    }

    /// The TTL the server granted.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// The client the session was made with.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Whether the lease has ended or may have ended (see [Loss](Self#loss)), or the session
    /// was closed. Once true, it stays true.
    pub fn is_lost(&self) -> bool {
        *self.inner.state.borrow() == State::Lost || self.is_closed()
    }

    /// Whether keep-alives are failing right now (unanswered for longer than `TTL / 3`, or their
    /// stream is broken) without the session being lost yet.
    pub fn is_suspended(&self) -> bool {
        *self.inner.state.borrow() == State::Suspended && !self.is_lost()
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        *self.inner.closed.borrow()
    }

    /// Completes when [`is_lost`](Self::is_lost) becomes true.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) {
        let mut state = self.inner.state.clone();
        let mut closed = self.inner.closed.subscribe();
        tokio::select! {
            _ = state.wait_for(|s| *s == State::Lost) => {}
            _ = closed.wait_for(|c| *c) => {}
        }
    }

    /// Completes when the session is suspended or lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn suspended(&self) {
        let mut state = self.inner.state.clone();
        let mut closed = self.inner.closed.subscribe();
        tokio::select! {
            _ = state.wait_for(|s| *s != State::Live) => {}
            _ = closed.wait_for(|c| *c) => {}
        }
    }

    /// Revokes the lease: the server deletes every key put with it (every lock this session
    /// holds or waits for), and the session is lost from now on.
    ///
    /// # Errors
    /// [`Error::Etcd`] if the revoke fails; the session is closed all the same, and the lease
    /// ends by itself `TTL` after its last keep-alive.
    pub async fn close(&self) -> Result<(), Error> {
        self.inner.closed.send_replace(true);
        self.inner.keeper.abort();
        self.inner
            .client
            .lease_client()
            .revoke(self.inner.lease)
            .await?;
        Ok(())
    }

    /// The in-process queue of this session's contenders for `name`.
    pub(crate) fn local_queue(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locals = self.inner.locals.lock().unwrap_or_else(|e| e.into_inner());
        locals.entry(name.to_owned()).or_default().clone()
    }

    /// A number not handed out before by this session.
    pub(crate) fn next_seq(&self) -> u64 {
        self.inner
            .next_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The runtime the session was created on.
    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.rt
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("lease", &format_args!("{:x}", self.lease))
            .field("ttl", &self.ttl)
            .field("state", &*self.state.borrow())
            .field("closed", &*self.closed.borrow())
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.keeper.abort();
        if *self.closed.borrow() {
            return;
        }
        let mut leases = self.client.lease_client();
        let lease = self.lease;
        self.rt.spawn(async move {
            let _ = leases.revoke(lease).await;
        });
    }
}

/// The keep-alive task: sends a keep-alive every `TTL / 3`, tracks the send instant of the
/// latest answered one, and declares loss by rule S2.
async fn keep_alive(
    client: Client,
    lease: i64,
    ttl: Duration,
    state: watch::Sender<State>,
    mut last_acked: Instant,
) {
    let interval = ttl / 3;
    let mut ttl = ttl;
    let mut leases = client.lease_client();
    let mut link: Option<(LeaseKeeper, LeaseKeepAliveStream)> = None;
    // Send instants of the requests not answered yet, oldest first.
    let mut unanswered: VecDeque<Instant> = VecDeque::new();
    let mut next_send = last_acked + interval;
    let set = |s: State| {
        state.send_if_modified(|old| {
            let changed = *old != s;
            *old = s;
            changed
        });
    };
    loop {
        let lost_at = last_acked + ttl.saturating_sub(loss_margin(ttl));
        if Instant::now() >= lost_at {
            break;
        }
        let Some((keeper, stream)) = link.as_mut() else {
            // (Re)open the stream; opening sends one keep-alive and waits for its answer.
            let sent = Instant::now();
            match timeout_at(lost_at, leases.keep_alive(lease)).await {
                Err(_) => break,
                Ok(Ok(l)) => {
                    last_acked = last_acked.max(sent);
                    unanswered.clear();
                    next_send = sent + interval;
                    link = Some(l);
                    set(State::Live);
                }
                Ok(Err(etcd_client::Error::LeaseKeepAliveError(_))) => break, // lease not found
                Ok(Err(_)) => {
                    set(State::Suspended);
                    sleep_until(lost_at.min(Instant::now() + RETRY)).await;
                }
            }
            continue;
        };
        let mut broken = false;
        tokio::select! {
            _ = sleep_until(lost_at) => break,
            _ = sleep_until(next_send) => {
                let now = Instant::now();
                if unanswered.front().is_some_and(|t| now.duration_since(*t) >= interval) {
                    set(State::Suspended);
                }
                unanswered.push_back(now);
                next_send = now + interval;
                broken = keeper.keep_alive().await.is_err();
            }
            msg = stream.message() => match msg {
                Ok(Some(resp)) => {
                    if resp.ttl() <= 0 {
                        break; // the lease is gone (S3)
                    }
                    // A shorter TTL than granted (never seen) shortens the bound.
                    ttl = ttl.min(Duration::from_secs(resp.ttl() as u64));
                    if let Some(sent) = unanswered.pop_front() {
                        last_acked = last_acked.max(sent);
                        set(State::Live);
                    }
                }
                _ => broken = true,
            },
        }
        if broken {
            link = None;
            unanswered.clear();
            set(State::Suspended);
        }
    }
    set(State::Lost);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margin_leaves_most_of_the_ttl() {
        assert_eq!(
            loss_margin(Duration::from_secs(2)),
            Duration::from_millis(200)
        );
        assert_eq!(
            loss_margin(Duration::from_secs(60)),
            Duration::from_millis(3100)
        );
        assert!(loss_margin(Duration::from_secs(1)) < Duration::from_secs(1));
    }
}
