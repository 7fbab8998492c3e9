//! How every recipe waits: look, and while the look says to wait for a delete, watch for it and
//! look again.
//!
//! etcd serves a watch that starts at a past revision from a loop that catches such watchers
//! up about every 100 ms, so a watch opened "from just after the read" delivers the delete up
//! to 100 ms late whenever anything was written between the read and the watch's creation,
//! which under contention is often (etcd's Go recipe watches so, and so does the server's lock
//! service). A watch opened from the current revision is served at once. So the waiter opens
//! the watch first, from now, and then makes sure it missed nothing:
//!
//! - **WA1** A wait's watch starts at the current revision, never in the past. The server's
//!   answer to its creation carries the revision `w` it starts after: it delivers every event
//!   later than `w`. (If a write lands while the server registers the watch, that one watch is
//!   caught up by the loop after all: rare, and late rather than lost.)
//! - **WA2** If `w` is past the revision the look that asked for the wait read at, the thing
//!   waited for may have gone in between; the waiter looks again, with the watch open, and
//!   waits on this watch only if the new look asks for the same wait. Looks are linearizable
//!   (never serializable), so the new look reads at a revision at or past `w`, and anything it
//!   did not see is later than `w`, which the watch sees. An answer without a revision counts
//!   as past, so it always looks again.
//! - **WA3** Every wake-up, and every broken or refused watch, leads to a new look (after the
//!   retry pause if the watch broke or was refused, and never past the deadline); only a look
//!   decides (the recipes' M3, R2, P2). A wait never grants anything by itself.

use std::future::Future;

use etcd_client::{EventType, KvClient, Txn, WatchClient, WatchOptions, WatchStream};
use tokio::time::Instant;

use crate::mutex::{bounded, header_revision, is_transient, kvs, pause, request};
use crate::{Error, Session};

/// What a look decided.
pub(crate) enum Look<T> {
    /// Done: the caller returns `T`.
    Done(T),
    /// Wait for a delete of `key` (of every key under it, with `prefix`), having read at
    /// revision `seen`.
    Wait {
        key: Vec<u8>,
        prefix: bool,
        seen: i64,
    },
    /// The request did not reach the server and the retry pause is over (M5): look again.
    Again,
    /// The deadline passed.
    TimedOut,
}

/// The look of the mutex and the read-write lock (M2-M3, R1-R2): `query` is one txn that
/// compares our key's create revision with `own` and gets the last key before it that blocks
/// us. Retried while the server cannot be reached (M5), until `until`.
pub(crate) async fn look_before(
    s: &Session,
    kv: &KvClient,
    query: &Txn,
    own: i64,
    until: Option<Instant>,
) -> Result<Look<i64>, Error> {
    let make = || {
        let (mut kv, query) = (kv.clone(), query.clone());
        async move { kv.txn(query).await }
    };
    let Some(resp) = request(s, until, make).await? else {
        return Ok(Look::TimedOut);
    };
    if !resp.succeeded() {
        return Err(Error::SessionLost); // our key is gone: the lease ended
    }
    Ok(match kvs(&resp.op_responses()[0]).first() {
        None => Look::Done(own),
        Some(before) => Look::Wait {
            key: before.key().to_vec(),
            prefix: false,
            seen: header_revision(resp.header()),
        },
    })
}

/// Looks with `look` until it decides, waiting between looks as it asks (WA1-WA3); `first` is a
/// look already made. `Ok(None)` at `deadline`; an error if a look fails or the session is lost.
pub(crate) async fn until_done<T, L, Fut>(
    s: &Session,
    deadline: Option<Instant>,
    first: Option<Look<T>>,
    mut look: L,
) -> Result<Option<T>, Error>
where
    L: FnMut() -> Fut,
    Fut: Future<Output = Result<Look<T>, Error>>,
{
    let mut watches = s.client().watch_client();
    let mut next = first;
    loop {
        let (key, prefix, seen) = match next.take() {
            Some(l) => match l {
                Look::Done(t) => return Ok(Some(t)),
                Look::TimedOut => return Ok(None),
                Look::Again => continue,
                Look::Wait { key, prefix, seen } => (key, prefix, seen),
            },
            None => {
                next = Some(look().await?);
                continue;
            }
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        let mut watch = match open(s, &mut watches, &key, prefix, deadline).await? {
            Opened::Watch(w) => w,
            Opened::Again => continue, // WA3: look again
            Opened::TimedOut => return Ok(None),
        };
        if watch.created > seen {
            // WA2: written since the look; it may have missed the delete.
            match look().await? {
                Look::Wait {
                    key: k, prefix: p, ..
                } if k == key && p == prefix => {}
                other => {
                    next = Some(other);
                    continue;
                }
            }
        }
        if !watch.deleted(s, deadline).await? || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
}

/// A watch for deletes, open from the revision it was created at (WA1).
struct DeleteWatch {
    stream: WatchStream,
    /// The revision the server created it at.
    created: i64,
}

enum Opened {
    Watch(Box<DeleteWatch>),
    /// Not opened; the retry pause is over: look again.
    Again,
    TimedOut,
}

/// Opens a watch on `key` (or every key under it) from the current revision and waits for the
/// server's confirmation, which carries that revision.
async fn open(
    s: &Session,
    watches: &mut WatchClient,
    key: &[u8],
    prefix: bool,
    deadline: Option<Instant>,
) -> Result<Opened, Error> {
    let opts = if prefix {
        WatchOptions::new().with_prefix()
    } else {
        WatchOptions::new()
    };
    let mut stream = match bounded(s, deadline, watches.watch(key, Some(opts))).await {
        Ok(Some(stream)) => stream,
        Ok(None) => return Ok(Opened::TimedOut),
        Err(e) if is_transient(&e) => return again(s, deadline).await,
        Err(e) => return Err(e),
    };
    match bounded(s, deadline, stream.message()).await {
        Ok(Some(Some(m))) if m.created() && !m.canceled() => {
            Ok(Opened::Watch(Box::new(DeleteWatch {
                created: m.header().map_or(i64::MAX, |h| h.revision()), // WA2
                stream,
            })))
        }
        Ok(None) => Ok(Opened::TimedOut),
        // Refused or closed at once: pause, then look again.
        Ok(Some(_)) => again(s, deadline).await,
        Err(e) if is_transient(&e) => again(s, deadline).await,
        Err(e) => Err(e),
    }
}

async fn again(s: &Session, deadline: Option<Instant>) -> Result<Opened, Error> {
    Ok(if pause(s, deadline).await? {
        Opened::Again
    } else {
        Opened::TimedOut
    })
}

impl DeleteWatch {
    /// Waits for a delete: `Ok(true)` once one comes, or once the watch broke or was cancelled
    /// and the retry pause is over (look again either way, WA3); `Ok(false)` at the deadline.
    async fn deleted(&mut self, s: &Session, deadline: Option<Instant>) -> Result<bool, Error> {
        loop {
            let msg = match bounded(s, deadline, self.stream.message()).await {
                Ok(Some(msg)) => msg,
                Ok(None) => return Ok(false),
                Err(e) if is_transient(&e) => return pause(s, deadline).await,
                Err(e) => return Err(e),
            };
            match msg {
                Some(w) if w.canceled() => return pause(s, deadline).await,
                Some(w)
                    if w.events()
                        .iter()
                        .any(|e| e.event_type() == EventType::Delete) =>
                {
                    return Ok(true)
                }
                Some(_) => {}
                None => return pause(s, deadline).await,
            }
        }
    }
}
