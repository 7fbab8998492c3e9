//! Ending a session on purpose, as a process does before it exits.
//!
//! The client sends `CloseSession` only when its last clone drops, and only if its connection
//! task still runs then. Handles, guards and their tasks hold clones, and a runtime that shuts
//! down stops the connection task first. So a process that returns from `main` while it holds
//! locks leaves their nodes behind until the server expires the session, a whole session
//! timeout later. [`close_session`] closes the session through a second connection to it and
//! waits for the server's answer.

use zookeeper_client as zk;

use crate::{health, Error};

/// How long one attempt at the second connection may take before a fresh one replaces it.
const ATTEMPT: std::time::Duration = std::time::Duration::from_secs(1);

/// Ends `client`'s session on the server now and waits until the server has done it.
///
/// The server deletes every ephemeral node of the session in the same step: every lock, permit
/// and queued waiter of the session is gone when this returns, and every guard of it reports
/// [`is_lost`](crate::MutexGuard::is_lost). Later acquires through the session fail with
/// [`Error::SessionLost`] ([`Error::Closed`] once the client is closed). Call it before a
/// process exits, or to give up everything at once; dropping the guards afterwards is
/// harmless.
///
/// `hosts` is the connect string the client was built with (zookeeper-client keeps no copy of
/// it). The call opens a second, plain connection to the same session (its id and password),
/// and closes the session through it, as the client itself does when its last clone drops; the
/// server then drops the client's own connection, and the client finds its session ended.
///
/// Servers that require TLS or SASL refuse the plain connection: there, drop every handle,
/// guard and clone of the client, and keep the runtime running until
/// [`Client::state`](zk::Client::state) reports `Closed`.
///
/// # Errors
/// - [`Error::Zk`] with [`Timeout`](zk::Error::Timeout) if no server in `hosts` confirmed the
///   close within the session timeout (the session then ends when the server expires it).
///   With a session timeout of two seconds or less this is likely: the second connection
///   and the client's own take the session from each other, and an attempt can stall;
/// - [`Error::Zk`] with the client's error if `hosts` is malformed or no server accepts the
///   connection.
///
/// A session that had already ended is not an error.
///
/// # Cancel safety
/// Not cancel safe: a call dropped half-way may still close the session (the second
/// connection's close goes on in the background), while the crate's guards learn of it only
/// when the client notices, up to `2/5` of the session timeout later. Call it again to
/// finish.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), aqs_zookeeper::Error> {
/// let hosts = "127.0.0.1:2181";
/// let client = zookeeper_client::Client::connect(hosts).await?;
/// let jobs = aqs_zookeeper::Mutex::new(client.clone(), "/jobs/nightly")?;
/// let guard = jobs.acquire().await?;
/// // ... the process is told to exit while it holds the lock:
/// aqs_zookeeper::close_session(&client, hosts).await?;
/// assert!(guard.is_lost());
/// # Ok(())
/// # }
/// ```
pub async fn close_session(client: &zk::Client, hosts: &str) -> Result<(), Error> {
    // Even a client that reports its session expired or closed is asked again: it also says so
    // when its own reconnect gave up, which the server may not have done.
    let t = client.session_timeout();
    match tokio::time::timeout(t, close_through_second_connection(client, hosts)).await {
        Ok(r) => r?,
        Err(_) => return Err(Error::Zk(zk::Error::Timeout)),
    }
    health::end(client).await;
    Ok(())
}

/// Closes the session through a second connection, then asks the server again: only a server
/// that refuses the session as expired proves it ended (the client also reports `Closed` when
/// it merely failed to connect). Bounded by the caller.
async fn close_through_second_connection(client: &zk::Client, hosts: &str) -> Result<(), Error> {
    loop {
        let connect = zk::Client::connector()
            .with_session(client.session().clone())
            .with_session_timeout(client.session_timeout())
            .connect(hosts);
        // The server gives a session to its newest connection; the client's own connection
        // then reconnects at once and takes it back, and a handshake caught in that exchange
        // can stall. A fresh attempt gets through.
        let Ok(second) = tokio::time::timeout(ATTEMPT, connect).await else {
            continue;
        };
        let second = match second {
            Ok(c) => c,
            Err(zk::Error::SessionExpired) => return Ok(()),
            Err(e) => return Err(Error::Zk(e)),
        };
        let mut states = second.state_watcher();
        // Dropping the only clone makes its connection task send `CloseSession`; it ends once
        // the server has answered (or the connection failed, which the next turn finds out).
        drop(second);
        let _ = tokio::time::timeout(ATTEMPT, async {
            let mut state = states.state();
            while !state.is_terminated() {
                state = states.changed().await;
            }
        })
        .await;
    }
}
