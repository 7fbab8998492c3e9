//! A session's health, as its holders must see it: suspended (the connection is in doubt) and
//! lost (the server may expire the session at any moment).
//!
//! zookeeper-client 0.11 does not expose when the server last heard from the client: it
//! declares a silent link dead only `2/5 T` after its last *receive*, and reports the session
//! expired only once it reconnects. The server's expiry clock, though, started at the last
//! packet it received. So the crate measures its own bound: one task per session (not per lock)
//! sends a cheap read (`exists /`) every `T/8` while the session has a hold or an acquire under
//! way, and records for every reply the instant the request was **sent**.
//!
//! Invariants:
//! - **H1** `last_ack` is the send instant of the latest heartbeat whose reply arrived (or the
//!   instant the health was created, which precedes every request of every grant that uses
//!   it). The server heard from the client at or after `last_ack`, so it cannot expire the
//!   session before `last_ack + T` on its own clock (ZooKeeper's `ExpiryQueue` rounds expiry
//!   times up to the next tick, never down).
//! - **H2** Loss is declared at `lost_at = last_ack + T - T/20 - 100 ms`: `T/20` allows the
//!   server's clock to run up to 5 % fast against ours, and 100 ms covers scheduling between
//!   the deadline passing and a holder acting on it. [`Status::is_lost_now`] compares with the
//!   clock itself, so a late task never delays it.
//! - **H3** Loss is sticky per grant: the task counts losses (`losses`) before it lets a
//!   heartbeat reply move `lost_at` forward, so a grant that saw `now >= lost_at` also sees
//!   `losses` grow. A session that ended counts as a loss forever.
//! - **H4** Suspended means the client reports the connection down, or no heartbeat sent in
//!   the last `T/3` has been answered (a heartbeat has been outstanding for about `T/5`).
//!   Suspension clears when a reply arrives on a live connection; a grant's hold then stands.
//! - **H5** If the task ends for any reason its status sender drops, and every grant reports
//!   lost: `lost()` and `is_lost()` agree.
//! - **H6** [`end`] (called by `close_session` once the server confirmed the close) makes the
//!   task publish the session as ended before it returns, and a task started later starts
//!   ended. So when `close_session` returns, every guard reports lost and every acquire of the
//!   session fails, whatever the client's own connection is doing: the server does not answer
//!   the old connection of a session closed through another, and the client notices only
//!   when its link times out (`2/5 T`). The record of the close counts for
//!   [`CLOSED_RECORD`] session timeouts: by then the client reports its session terminated
//!   itself, and a terminated client's task starts ended too. So a process that opens and
//!   closes sessions all its life keeps only the records of the last few timeouts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use zookeeper_client as zk;

/// How many session timeouts a session closed on purpose stays recorded (H6). The client
/// notices the close when its link times out, `2/5 T` after the server last answered, and
/// learns on reconnecting that the session expired; if no server answers, zookeeper-client
/// gives the session up itself `7/5 T` after its last receive, plus at most one connection
/// attempt: about `2 T` in the worst case. Either way it then reports its session terminated
/// (while its connection task runs; without that task it reports `Closed`). Three timeouts
/// leave room for that. An acquire in between needs the server, which refuses the session.
pub(crate) const CLOSED_RECORD: u32 = 3;

/// The fixed part of the loss margin (H2): scheduling between the deadline and the holder.
pub(crate) const FIXED_MARGIN: Duration = Duration::from_millis(100);

/// How long before the server may expire a session loss is declared, for a session timeout `t`
/// (H2): `t/20 + 100 ms`.
pub(crate) fn loss_margin(t: Duration) -> Duration {
    t / 20 + FIXED_MARGIN
}

/// What the session's health task last published.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Status {
    /// Losses declared so far (H3); grants compare it with the count at their creation.
    pub(crate) losses: u64,
    /// When the server may be about to expire the session, unless a heartbeat reply comes.
    pub(crate) lost_at: Instant,
    /// When the connection is in doubt for lack of heartbeat replies (H4).
    pub(crate) suspend_at: Instant,
    /// The client reports the connection down.
    pub(crate) disconnected: bool,
    /// The session ended for good.
    pub(crate) ended: bool,
}

impl Status {
    /// Whether the session may be expired by now (H2), judged by the clock.
    pub(crate) fn is_lost_now(&self) -> bool {
        self.ended || Instant::now() >= self.lost_at
    }

    pub(crate) fn is_suspended_now(&self) -> bool {
        self.disconnected || Instant::now() >= self.suspend_at
    }
}

/// One session's health task and its published status. Dropping the last handle stops it.
#[derive(Debug)]
pub(crate) struct Health {
    status: watch::Receiver<Status>,
    task: tokio::task::JoinHandle<()>,
    /// Tells the task that the session was closed on purpose (H6).
    end: Arc<tokio::sync::Notify>,
}

/// The sessions of this process: the live health tasks, and the sessions closed on purpose
/// lately (H6).
#[derive(Default)]
struct Sessions {
    live: HashMap<i64, Weak<Health>>,
    /// Each closed session's id, with the instant its record expires.
    closed: HashMap<i64, Instant>,
}

impl Sessions {
    /// Records that session `id`, whose timeout is `t`, was closed at `now` (H6), and drops
    /// the records that have expired by then, so that only the sessions closed lately are
    /// kept.
    fn close(&mut self, id: i64, t: Duration, now: Instant) {
        self.closed.retain(|_, until| *until > now);
        self.closed.insert(id, now + t * CLOSED_RECORD);
    }

    /// Whether session `id` was closed on purpose and its record has not expired at `now`.
    fn is_closed(&self, id: i64, now: Instant) -> bool {
        self.closed.get(&id).is_some_and(|until| *until > now)
    }
}

type Registry = StdMutex<Sessions>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl Health {
    /// The health of `client`'s session, started if no grant or acquire of this session keeps
    /// it running. Call it before an acquire sends its first request (H1). Must run inside a
    /// Tokio runtime.
    pub(crate) fn of(client: &zk::Client) -> Arc<Health> {
        let id = client.session_id().0;
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = reg.live.get(&id).and_then(Weak::upgrade) {
            if !h.task.is_finished() {
                return h;
            }
        }
        reg.live.retain(|_, w| w.strong_count() > 0);
        let t = client.session_timeout();
        let now = Instant::now();
        // H6: closed on purpose lately, or over for the client itself.
        let closed = reg.is_closed(id, now) || client.state().is_terminated();
        let (tx, status) = watch::channel(Status {
            losses: u64::from(closed),
            lost_at: now + t.saturating_sub(loss_margin(t)),
            suspend_at: now + t / 3,
            disconnected: false,
            ended: closed,
        });
        let end = Arc::new(tokio::sync::Notify::new());
        let task = tokio::spawn(heartbeat(client.clone(), tx, now, end.clone(), closed));
        let h = Arc::new(Health { status, task, end });
        reg.live.insert(id, Arc::downgrade(&h));
        h
    }

    /// Ends the task as a panic or a dying runtime would, for tests of H5.
    #[cfg(test)]
    pub(crate) fn abort_task_for_test(&self) {
        self.task.abort();
    }

    /// A receiver of the status; its sender is gone once the task ended (H5).
    pub(crate) fn subscribe(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    /// Whether the session ended for good (H3, H6).
    pub(crate) fn is_ended(&self) -> bool {
        self.status.borrow().ended
    }

    /// Completes once the session ended for good, or the task is gone (H5).
    pub(crate) fn ended(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.subscribe();
        async move {
            let _ = rx.wait_for(|s| s.ended).await;
        }
    }
}

/// Publishes `client`'s session as ended, for every grant and waiter of it, and waits until the
/// task has (H6); a task started for it later starts ended (within [`CLOSED_RECORD`] session
/// timeouts because of the record, and after that because the client reports its session
/// terminated). Call it only once the server has closed the session.
pub(crate) async fn end(client: &zk::Client) {
    let id = client.session_id().0;
    let health = {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        reg.close(id, client.session_timeout(), Instant::now());
        reg.live.get(&id).and_then(Weak::upgrade)
    };
    let Some(h) = health else { return };
    h.end.notify_one();
    // The task reacts at its next poll; if it is gone, grants already report lost (H5).
    h.ended().await;
}

impl Drop for Health {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn connected(s: zk::SessionState) -> bool {
    matches!(
        s,
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly
    )
}

/// The heartbeat task (H1-H4).
async fn heartbeat(
    client: zk::Client,
    tx: watch::Sender<Status>,
    created: Instant,
    end: Arc<tokio::sync::Notify>,
    closed: bool,
) {
    let t = client.session_timeout();
    let interval = t / 8;
    let suspend_after = t / 3;
    let lost_after = t.saturating_sub(loss_margin(t));
    let mut states = client.state_watcher();
    let mut last_ack = created;
    // The `last_ack` a loss was declared for: one loss per silence (H3).
    let mut lost_for: Option<Instant> = None;
    let mut outstanding: Option<(Instant, _)> = None;
    // Not at once: a grant right after creation is covered by H1, and an uncontended
    // acquire and release must not cost a heartbeat.
    let mut next_send = created + interval;
    // A session closed on purpose starts ended (H6), with its first status.
    let mut gone = closed;
    loop {
        let state = states.state();
        let now = Instant::now();
        let ended = gone || state.is_terminated();
        let lost_at = last_ack + lost_after;
        let mut losses = tx.borrow().losses;
        if (ended || now >= lost_at) && lost_for != Some(last_ack) {
            lost_for = Some(last_ack);
            losses += 1;
        }
        tx.send_replace(Status {
            losses,
            lost_at,
            suspend_at: last_ack + suspend_after,
            disconnected: !connected(state),
            ended,
        });
        if ended {
            // H3: sticky. Keep the sender alive while anyone listens, so that the reason stays
            // "ended", not "task gone".
            tx.closed().await;
            return;
        }
        if outstanding.is_none() && now >= next_send && connected(state) {
            let c = client.clone();
            let fut: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
                Box::pin(async move { c.check_stat("/").await });
            outstanding = Some((now, fut));
            next_send = now + interval;
        }
        let mut wake = next_send.max(now + Duration::from_millis(1));
        for at in [last_ack + suspend_after, lost_at] {
            if at > now {
                wake = wake.min(at);
            }
        }
        tokio::select! {
            r = async { outstanding.as_mut().expect("checked").1.as_mut().await },
                if outstanding.is_some() =>
            {
                let (sent, _) = outstanding.take().expect("checked");
                match r {
                    Ok(_) => {
                        // H3: a reply that arrives after `lost_at` first counts the loss.
                        if Instant::now() >= last_ack + lost_after && lost_for != Some(last_ack) {
                            lost_for = Some(last_ack);
                            tx.send_modify(|s| s.losses += 1);
                        }
                        last_ack = last_ack.max(sent);
                    }
                    Err(e) => {
                        // A closed client or an ended session is final; after a connection
                        // failure, try again once the client is connected (not in a spin).
                        gone = matches!(
                            crate::Error::from(e),
                            crate::Error::SessionLost | crate::Error::Closed
                        );
                        next_send = Instant::now() + Duration::from_millis(20);
                    }
                }
            }
            _ = states.changed() => {}
            _ = end.notified() => gone = true,
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_session_is_recorded_for_a_few_timeouts_only() {
        let t = Duration::from_secs(10);
        let start = Instant::now();
        let mut sessions = Sessions::default();
        sessions.close(1, t, start);
        assert!(sessions.is_closed(1, start));
        assert!(sessions.is_closed(1, start + t * CLOSED_RECORD - Duration::from_millis(1)));
        assert!(!sessions.is_closed(1, start + t * CLOSED_RECORD));
        assert!(
            !sessions.is_closed(2, start),
            "only the closed session is recorded"
        );

        // A process that keeps closing sessions keeps only the recent records.
        for i in 0..1_000 {
            sessions.close(100 + i, t, start + t * i as u32);
        }
        assert!(
            sessions.closed.len() <= CLOSED_RECORD as usize,
            "{} records kept",
            sessions.closed.len()
        );
        let last = start + t * 999;
        assert!(sessions.is_closed(1_099, last));
        assert!(!sessions.is_closed(100, last));
    }
}
