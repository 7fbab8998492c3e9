//! Curator's node conventions: protected names, container parents, sequence order, the
//! guaranteed delete, and riding out a connection loss without outliving the session.
//!
//! Invariants every recipe relies on:
//! - **Z1** A node counts as this client's only while its `ephemeralOwner` is the client's
//!   session. A `zookeeper_client::Client` never moves to a new session, so a node made by an
//!   ended session can never grant anything (this is what CURATOR-604 gets wrong).
//! - **Z2** Every create uses a fresh protected prefix `_c_<uuid v4>-`, so a create whose reply
//!   was lost is found again by prefix (CURATOR-48) and a cancelled attempt can be deleted even
//!   if its reply never arrived (CURATOR-79).
//! - **Z4** Before looking for protected nodes by prefix (after a lost reply, or to clean up) a
//!   client `sync`s the parent, so that a server it reconnected to has applied what the leader
//!   committed; and a create recovered after a lost reply deletes any other node of its prefix
//!   afterwards, in case the lost create landed late. Neither runs on the hot path.
//! - **Z3** Requests that fail with a connection loss are retried only while the session can
//!   still be alive: once the connection has been down for a whole session timeout, the server
//!   has expired the session or will as soon as it runs, and the operation fails with
//!   [`Error::SessionLost`].

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::Error;

/// Checks that `path` is an absolute ZooKeeper path with no empty segment and no trailing `/`.
pub(crate) fn validate_path(path: &str) -> Result<(), Error> {
    let ok = path.len() > 1
        && path.starts_with('/')
        && !path.ends_with('/')
        && path[1..]
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
        && !path.chars().any(|c| c == '\0' || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidPath(path.to_owned()))
    }
}

/// The sort key of `node`: what follows the last occurrence of any of `lock_names`, as
/// Curator's `fixForSorting` takes it, if it is a sequence. `None` for a child that is not a
/// lock node of this recipe.
///
/// Curator compares these keys **as strings**, and so must we to agree on the order. ZooKeeper
/// writes the parent's `cversion` with `%010d`, a signed 32-bit number: ten digits up to
/// 2^31 - 1, then, once the parent has seen 2^31 creates and deletes, a `-` and up to ten
/// digits. As strings, `-...` sorts before every `0...`, which is the order Curator uses past
/// the wrap; a numeric parse (as this crate did) would not even see those nodes.
pub(crate) fn sequence_of<'a>(node: &'a str, lock_names: &[&str]) -> Option<&'a str> {
    lock_names.iter().find_map(|name| {
        let i = node.rfind(name)?;
        let seq = &node[i + name.len()..];
        let digits = seq.strip_prefix('-').unwrap_or(seq);
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(seq)
    })
}

/// Creates each missing ancestor of `parent` (and `parent` itself) as a container node, as
/// Curator's `creatingParentContainersIfNeeded` does.
async fn ensure_containers(client: &zk::Client, parent: &str) -> Result<(), Error> {
    let opts = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    for (i, _) in parent
        .match_indices('/')
        .skip(1)
        .chain([(parent.len(), "")])
    {
        let prefix = &parent[..i];
        match retry(client, || client.create(prefix, b"", &opts)).await {
            Ok(_) | Err(Error::Zk(zk::Error::NodeExists)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A node this client created: its full path, its name and the zxid that created it.
#[derive(Debug, Clone)]
pub(crate) struct OwnNode {
    pub(crate) path: String,
    pub(crate) name: String,
    pub(crate) czxid: i64,
}

/// Creates `parent/<prefix><base><seq>` (ephemeral-sequential, data `127.0.0.1` as Curator
/// writes), re-creating reaped container parents. After a connection loss it looks for its own
/// node by the protected prefix (Z2) before trying again.
pub(crate) async fn create_protected(
    client: &zk::Client,
    parent: &str,
    prefix: &str,
    base: &str,
) -> Result<OwnNode, Error> {
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let path = format!("{parent}/{prefix}{base}");
    let mut recovered = false;
    let own = loop {
        match client.create(&path, b"127.0.0.1", &opts).await {
            Ok((stat, seq)) => {
                let path = format!("{path}{seq}");
                let name = path[parent.len() + 1..].to_owned();
                break OwnNode {
                    path,
                    name,
                    czxid: stat.czxid,
                };
            }
            Err(zk::Error::NoNode) => ensure_containers(client, parent).await?,
            Err(e) if connection_failed(&e) => {
                recovered = true;
                reconnected_after(client, &e).await?;
                if let Some(node) = find_protected(client, parent, prefix).await? {
                    break node;
                }
            }
            Err(e) => return Err(e.into()),
        }
    };
    if recovered {
        // Z4: a create whose reply was lost may still land after we looked and created again;
        // the orphan would block the queue (or eat a permit) for the session's life.
        let (c, parent, prefix, keep) = (
            client.clone(),
            parent.to_owned(),
            prefix.to_owned(),
            own.name.clone(),
        );
        tokio::spawn(async move { delete_duplicates(&c, &parent, &prefix, &keep).await });
    }
    Ok(own)
}

/// Deletes every child of `parent` with `prefix` except `keep`, after a `sync` (Z4).
async fn delete_duplicates(client: &zk::Client, parent: &str, prefix: &str, keep: &str) {
    let _ = retry(client, || client.sync(parent)).await;
    if let Ok(children) = retry(client, || client.list_children(parent)).await {
        for name in children
            .into_iter()
            .filter(|c| c.starts_with(prefix) && c != keep)
        {
            guaranteed_delete(client, &format!("{parent}/{name}")).await;
        }
    }
}

/// The child of `parent` whose name starts with `prefix` and that this session owns (Z1).
async fn find_protected(
    client: &zk::Client,
    parent: &str,
    prefix: &str,
) -> Result<Option<OwnNode>, Error> {
    // Z4: after a reconnect to another server, see at least what the leader had committed.
    match retry(client, || client.sync(parent)).await {
        Ok(()) | Err(Error::Zk(zk::Error::NoNode)) => {}
        Err(e) => return Err(e),
    }
    let children = match retry(client, || client.list_children(parent)).await {
        Ok(c) => c,
        Err(Error::Zk(zk::Error::NoNode)) => return Ok(None),
        Err(e) => return Err(e),
    };
    for name in children.into_iter().filter(|c| c.starts_with(prefix)) {
        let path = format!("{parent}/{name}");
        match retry(client, || client.check_stat(&path)).await? {
            Some(stat) if stat.ephemeral_owner == client.session_id().0 => {
                return Ok(Some(OwnNode {
                    path,
                    name,
                    czxid: stat.czxid,
                }));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// [`guaranteed_delete`] whose first attempt, `first`, was already sent.
pub(crate) async fn guaranteed_delete_after(
    client: &zk::Client,
    path: &str,
    first: impl Future<Output = Result<(), zk::Error>>,
) {
    match first.await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(e) if terminated(&e) => {}
        Err(_) => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            guaranteed_delete(client, path).await
        }
    }
}

/// Deletes `path` until the server confirms it is gone or the session that owns it ended,
/// retrying across connection losses (Curator's `guaranteed()` delete).
pub(crate) async fn guaranteed_delete(client: &zk::Client, path: &str) {
    loop {
        match client.delete(path, None).await {
            Ok(()) | Err(zk::Error::NoNode) => return,
            Err(e) if terminated(&e) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Deletes every node under `parent` whose name starts with `prefix`: the clean-up of an acquire
/// that was cancelled, timed out or failed, including one whose create reply never arrived (Z2).
pub(crate) async fn delete_protected(client: &zk::Client, parent: &str, prefix: &str) {
    // Z4: a lagging server might not list a node the leader already has.
    let _ = retry(client, || client.sync(parent)).await;
    loop {
        match client.list_children(parent).await {
            Ok(children) => {
                for name in children.into_iter().filter(|c| c.starts_with(prefix)) {
                    guaranteed_delete(client, &format!("{parent}/{name}")).await;
                }
                return;
            }
            Err(zk::Error::NoNode) => return,
            Err(e) if terminated(&e) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The protected names an acquire has created or may have created. Unless disarmed, dropping it
/// deletes them from a task on the runtime it was created on: the acquire's clean-up for
/// cancellation, time-outs and errors.
pub(crate) struct Cleanup {
    client: zk::Client,
    armed: Vec<(String, String)>,
    /// The runtime of the acquire, captured at creation: the clean-up runs there even if the
    /// future is dropped outside any runtime.
    rt: Option<tokio::runtime::Handle>,
}

impl Cleanup {
    pub(crate) fn new(client: &zk::Client) -> Cleanup {
        Cleanup {
            client: client.clone(),
            armed: Vec::new(),
            rt: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Records a fresh protected prefix under `parent` (before its create is sent) and returns it.
    pub(crate) fn prefix(&mut self, parent: &str) -> String {
        let prefix = format!("_c_{}-", uuid::Uuid::new_v4());
        self.armed.push((parent.to_owned(), prefix.clone()));
        prefix
    }

    /// The attempt succeeded: its nodes now belong to a lease.
    pub(crate) fn disarm(mut self) {
        self.armed.clear();
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.armed.is_empty() {
            return;
        }
        let armed = std::mem::take(&mut self.armed);
        let client = self.client.clone();
        if let Some(rt) = self
            .rt
            .take()
            .or_else(|| tokio::runtime::Handle::try_current().ok())
        {
            rt.spawn(async move {
                for (parent, prefix) in armed.iter().rev() {
                    delete_protected(&client, parent, prefix).await;
                }
            });
        }
    }
}

/// The error for a waiter whose own node `path` is missing from a listing its session just
/// made (Q3). The listing's reply proves the session alive then, and a live session's ephemeral
/// node goes only by a delete: someone else's, unless the session has ended since.
pub(crate) fn own_node_gone(client: &zk::Client, path: &str) -> Error {
    match client.state() {
        zk::SessionState::Closed => Error::Closed,
        s if s.is_terminated() => Error::SessionLost,
        _ => Error::NodeDeleted {
            path: path.to_owned(),
        },
    }
}

/// Whether `e` means the client or its session is gone for good: the session's own ends, and
/// every error the crate reports as [`Error::Closed`] or [`Error::SessionLost`] (a client whose
/// connection task is gone answers each request with an `UnexpectedError`), so that a
/// guaranteed delete does not retry forever on a closed client.
pub(crate) fn terminated(e: &zk::Error) -> bool {
    matches!(e, zk::Error::NoHosts)
        || matches!(Error::from(e.clone()), Error::Closed | Error::SessionLost)
}

fn connected(s: zk::SessionState) -> bool {
    matches!(
        s,
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly
    )
}

/// Whether `e` is the connection failing under a request. zookeeper-client 0.11 reports a
/// request sent while disconnected as `ConnectionLoss`, but fails the requests in flight when a
/// connection breaks with the transport's own error (`Custom`: a reset socket, or no response
/// within the read timeout). Either way the session may still be alive (Z3).
pub(crate) fn connection_failed(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::ConnectionLoss | zk::Error::Custom(_) | zk::Error::Timeout
    )
}

/// [`reconnected`], after the failure `e`. A transport error can arrive before the client has
/// marked the session disconnected; a short pause keeps the retry from spinning on it.
async fn reconnected_after(client: &zk::Client, e: &zk::Error) -> Result<(), Error> {
    if !matches!(e, zk::Error::ConnectionLoss) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reconnected(client).await
}

/// Waits until the session is connected again after a connection loss (Z3): `Err` once it ended,
/// or once the connection has stayed down for a whole session timeout.
pub(crate) async fn reconnected(client: &zk::Client) -> Result<(), Error> {
    let mut states = client.state_watcher();
    let wait = async {
        loop {
            let s = states.state();
            if s == zk::SessionState::Closed {
                return Err(Error::Closed);
            }
            if s.is_terminated() {
                return Err(Error::SessionLost);
            }
            if connected(s) {
                return Ok(());
            }
            states.changed().await;
        }
    };
    tokio::time::timeout(client.session_timeout(), wait)
        .await
        .unwrap_or(Err(Error::SessionLost))
}

/// Runs `op` until it does not fail with a connection failure, waiting for the session to reconnect
/// in between (Z3). Only for idempotent requests: reads, watches and deletes.
pub(crate) async fn retry<T, F, Fut>(client: &zk::Client, mut op: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, zk::Error>>,
{
    loop {
        match op().await {
            Err(e) if connection_failed(&e) => reconnected_after(client, &e).await?,
            r => return r.map_err(Error::from),
        }
    }
}

/// The deadline `timeout` from now; `None` (no deadline) if it is too far to represent, so a
/// timeout such as `Duration::MAX` waits as long as it takes instead of panicking.
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// How long past its deadline a timed acquire may run, whatever the connection does: time for
/// the round trips of one look when the deadline is now (a `try_acquire`).
pub(crate) const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// Runs a timed acquire, giving up with `Ok(None)` at `deadline` plus [`DEADLINE_GRACE`] even
/// if a request is stuck in an outage (requests wait in the client's queue, and retries can
/// add up to a session timeout each). Dropping the acquire cleans up as cancelling it does.
pub(crate) async fn within<T, F>(deadline: Option<Instant>, acquire: F) -> Result<Option<T>, Error>
where
    F: Future<Output = Result<Option<T>, Error>>,
{
    match deadline.and_then(|d| d.checked_add(DEADLINE_GRACE)) {
        None => acquire.await,
        Some(limit) => tokio::time::timeout_at(limit, acquire)
            .await
            .unwrap_or(Ok(None)),
    }
}

/// [`within`] for an acquire through `client`'s session: `Err(SessionLost)` (`Err(Closed)`
/// for a closed client) at once if the session ended for good, or as soon as it does while the
/// acquire waits (health rule H6), even if the client itself has not noticed yet.
pub(crate) async fn within_session<T, F>(
    client: &zk::Client,
    deadline: Option<Instant>,
    acquire: F,
) -> Result<Option<T>, Error>
where
    F: Future<Output = Result<Option<T>, Error>>,
{
    let health = crate::health::Health::of(client);
    // A client whose connection task is gone is closed, not lost (as `Error::from` says).
    let gone = || match client.state() {
        zk::SessionState::Closed => Error::Closed,
        _ => Error::SessionLost,
    };
    if health.is_ended() {
        return Err(gone());
    }
    let ended = health.ended();
    within(deadline, async {
        tokio::select! {
            biased;
            r = acquire => r,
            () = ended => Err(gone()),
        }
    })
    .await
}

/// Waits for `watcher` to fire, or for `deadline`; `false` on deadline. A session that ends
/// fires the watcher too, and the caller's next request reports it.
pub(crate) async fn fired(watcher: zk::OneshotWatcher, deadline: Option<Instant>) -> bool {
    match deadline {
        None => {
            watcher.changed().await;
            true
        }
        Some(d) => tokio::time::timeout_at(d, watcher.changed()).await.is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqs_test_servers::zookeeper::TestServer;

    async fn client(s: &TestServer) -> zk::Client {
        zk::Client::connect(&s.addr().to_string()).await.unwrap()
    }

    /// Z4: a second node of one prefix (a lost create that landed late) is deleted, the kept
    /// one and other prefixes are not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn duplicates_of_a_recovered_create_are_deleted() {
        let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
        let a = client(&s).await;
        let keep = create_protected(&a, "/d", "_c_same-", "lock-")
            .await
            .unwrap();
        let late = create_protected(&a, "/d", "_c_same-", "lock-")
            .await
            .unwrap();
        let other = create_protected(&a, "/d", "_c_other-", "lock-")
            .await
            .unwrap();
        delete_duplicates(&a, "/d", "_c_same-", &keep.name).await;
        assert!(a.check_stat(&keep.path).await.unwrap().is_some());
        assert!(a.check_stat(&late.path).await.unwrap().is_none());
        assert!(a.check_stat(&other.path).await.unwrap().is_some());
    }

    /// A guaranteed delete ends when the client is closed (its connection task gone with its
    /// runtime) instead of retrying every 100 ms forever.
    #[test]
    fn a_guaranteed_delete_ends_on_a_closed_client() {
        let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
        let first = tokio::runtime::Runtime::new().unwrap();
        let c = first.block_on(client(&s));
        drop(first); // the client's connection task ends with its runtime
        let second = tokio::runtime::Runtime::new().unwrap();
        second.block_on(async {
            tokio::time::timeout(Duration::from_secs(20), guaranteed_delete(&c, "/p/x"))
                .await
                .expect("the delete gives up on a closed client");
            tokio::time::timeout(Duration::from_secs(20), delete_protected(&c, "/p", "_c_x-"))
                .await
                .expect("the clean-up gives up on a closed client");
        });
    }

    /// Sort keys are Curator's: the string after the last lock name, including the negative
    /// sequences ZooKeeper writes after the parent's `cversion` wraps past 2^31.
    #[test]
    fn sort_keys_are_curators_strings_across_the_wrap() {
        let rw = ["__READ__", "__WRIT__"];
        assert_eq!(
            sequence_of("_c_x-__READ__0000000042", &rw),
            Some("0000000042")
        );
        assert_eq!(sequence_of("lease-0000000001", &["lock-"]), None);
        assert_eq!(sequence_of("_c_x-lock-", &["lock-"]), None);
        assert_eq!(sequence_of("_c_x-lock-12a", &["lock-"]), None);
        assert_eq!(
            sequence_of("_c_x-lock--000000005", &["lock-"]),
            Some("-000000005")
        );
        assert_eq!(
            sequence_of("_c_x-lock--2147483648", &["lock-"]),
            Some("-2147483648")
        );
        // Java's String.compareTo order, as Curator sorts: every wrapped (negative) sequence
        // before every positive one.
        let mut names = vec![
            "_c_a-lock-2147483647",
            "_c_b-lock--2147483648",
            "_c_c-lock-0000000007",
            "_c_d-lock--000000001",
        ];
        names.sort_by_key(|n| sequence_of(n, &["lock-"]).unwrap().to_owned());
        assert_eq!(
            names,
            [
                "_c_d-lock--000000001",
                "_c_b-lock--2147483648",
                "_c_c-lock-0000000007",
                "_c_a-lock-2147483647"
            ]
        );
    }

    /// CURATOR-48: after a lost reply the node is found by prefix, but only if this session owns
    /// it (Z1, Z2); a clean-up deletes by prefix and leaves other clients' nodes alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn protected_nodes_are_found_by_prefix_and_owner() {
        let s = TestServer::start(Duration::from_secs(60)).expect("ZooKeeper must start");
        let (a, b) = (client(&s).await, client(&s).await);
        let mut cleanup = Cleanup::new(&a);
        let prefix = cleanup.prefix("/p/q");
        let own = create_protected(&a, "/p/q", &prefix, "lock-")
            .await
            .unwrap();
        assert!(own.name.starts_with(&prefix) && own.name.contains("lock-"));
        let found = find_protected(&a, "/p/q", &prefix).await.unwrap().unwrap();
        assert_eq!((found.path, found.czxid), (own.path.clone(), own.czxid));
        // The same prefix seen from another session is not its node.
        assert!(find_protected(&b, "/p/q", &prefix).await.unwrap().is_none());
        let other = create_protected(&b, "/p/q", "_c_other-", "lock-")
            .await
            .unwrap();
        drop(cleanup);
        tokio::time::timeout(Duration::from_secs(20), async {
            while a.check_stat(&own.path).await.unwrap().is_some() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the clean-up deletes the node");
        assert!(a.check_stat(&other.path).await.unwrap().is_some());
        assert_eq!(sequence_of(&other.name, &["lock-"]), Some("0000000001"));
    }
}
