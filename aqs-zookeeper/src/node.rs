//! Curator's node conventions: protected names, container parents, sequence order, and the
//! guaranteed delete.

use std::time::Duration;

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

/// The sequence number after the last occurrence of `lock_name` in `node`, Curator's sort key.
pub(crate) fn sequence_of(node: &str, lock_name: &str) -> Option<u64> {
    let i = node.rfind(lock_name)?;
    node[i + lock_name.len()..].parse().ok()
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
        match client.create(&parent[..i], b"", &opts).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(e.into()),
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

/// Creates `parent/_c_<uuid>-<base><seq>` (ephemeral-sequential), re-creating reaped parents.
/// After a connection loss it looks for its own node by the protected prefix (CURATOR-48)
/// before trying again.
pub(crate) async fn create_protected(
    client: &zk::Client,
    parent: &str,
    prefix: &str,
    base: &str,
) -> Result<OwnNode, Error> {
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let path = format!("{parent}/{prefix}{base}");
    loop {
        match client.create(&path, b"127.0.0.1", &opts).await {
            Ok((stat, seq)) => {
                let path = format!("{path}{seq}");
                let name = path[parent.len() + 1..].to_owned();
                return Ok(OwnNode {
                    path,
                    name,
                    czxid: stat.czxid,
                });
            }
            Err(zk::Error::NoNode) => ensure_containers(client, parent).await?,
            Err(zk::Error::ConnectionLoss) => {
                if let Some(node) = find_protected(client, parent, prefix).await? {
                    return Ok(node);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The child of `parent` whose name starts with `prefix`, if the server has one.
async fn find_protected(
    client: &zk::Client,
    parent: &str,
    prefix: &str,
) -> Result<Option<OwnNode>, Error> {
    let children = match client.list_children(parent).await {
        Ok(c) => c,
        Err(zk::Error::NoNode) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    for name in children.into_iter().filter(|c| c.starts_with(prefix)) {
        let path = format!("{parent}/{name}");
        match client.check_stat(&path).await? {
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

/// Deletes `path` until the server confirms it is gone or the session that owns it ended,
/// retrying across connection losses (Curator's `guaranteed()` delete).
pub(crate) async fn guaranteed_delete(client: zk::Client, path: String) {
    loop {
        match client.delete(&path, None).await {
            Ok(()) | Err(zk::Error::NoNode) => return,
            Err(e) if terminated(&e) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Deletes every node under `parent` whose name starts with `prefix`: the clean-up of an acquire
/// that was cancelled or timed out, including one whose create reply never arrived (CURATOR-79).
pub(crate) async fn delete_protected(client: zk::Client, parent: String, prefix: String) {
    loop {
        match client.list_children(&parent).await {
            Ok(children) => {
                for name in children.into_iter().filter(|c| c.starts_with(&prefix)) {
                    guaranteed_delete(client.clone(), format!("{parent}/{name}")).await;
                }
                return;
            }
            Err(zk::Error::NoNode) => return,
            Err(e) if terminated(&e) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Arms a [`delete_protected`] that runs on drop unless disarmed: the acquire's own clean-up
/// for cancellation, time-outs and errors.
pub(crate) struct Cleanup {
    pub(crate) armed: Option<(zk::Client, String, String)>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some((client, parent, prefix)) = self.armed.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(delete_protected(client, parent, prefix));
            }
        }
    }
}

/// A fresh protected prefix, `_c_<uuid v4>-`.
pub(crate) fn new_prefix() -> String {
    format!("_c_{}-", uuid::Uuid::new_v4())
}

/// Whether `e` means the client or its session is gone for good.
pub(crate) fn terminated(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::NoHosts
            | zk::Error::SessionExpired
            | zk::Error::AuthFailed
            | zk::Error::ClientClosed
    )
}
