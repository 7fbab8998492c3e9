//! `MultiLock`: several mutexes held together, all or nothing.
//!
//! Invariant **ML1**: the parts are taken in name order (sorted once at construction), so two
//! multi-locks over overlapping sets cannot deadlock each other; on timeout, error or
//! cancellation every part taken so far is released: its key is deleted, and the call waits
//! for that as a timed-out acquire does (up to 2 s), after which the delete goes on in the
//! background, so a deadline stays bounded.

use std::time::Duration;

use tokio::time::Instant;

use crate::{Error, Mutex, MutexGuard};

/// Several [`Mutex`]es acquired together, all or nothing, like Curator's
/// `InterProcessMultiLock` over mutexes.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// let client = etcd_client::Client::connect(["127.0.0.1:2379"], None).await?;
/// let session = aqs_etcd::Session::new(client, Duration::from_secs(10)).await?;
/// let both = aqs_etcd::MultiLock::new(vec![
///     aqs_etcd::Mutex::new(&session, "/accounts/a")?,
///     aqs_etcd::Mutex::new(&session, "/accounts/b")?,
/// ])?;
/// let guard = both.lock().await?;
/// println!("holding {} locks", guard.guards().len());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MultiLock {
    parts: Vec<Mutex>,
}

impl MultiLock {
    /// A multi-lock over `parts`, which are taken in name order.
    ///
    /// # Errors
    /// [`Error::DuplicateLock`] if two parts have the same name (the second would wait for the
    /// first forever); [`Error::InvalidName`] if `parts` is empty.
    pub fn new(mut parts: Vec<Mutex>) -> Result<MultiLock, Error> {
        if parts.is_empty() {
            return Err(Error::InvalidName(String::new()));
        }
        parts.sort_by(|a, b| a.name().cmp(b.name()));
        if let Some(w) = parts.windows(2).find(|w| w[0].name() == w[1].name()) {
            return Err(Error::DuplicateLock(w[0].name().to_owned()));
        }
        Ok(MultiLock { parts })
    }

    /// Waits until every part is held.
    ///
    /// # Errors
    /// As [`Mutex::lock`]; parts already taken are released first.
    ///
    /// # Cancel safety
    /// Dropping the future releases the parts taken so far and deletes the pending part's key.
    pub async fn lock(&self) -> Result<MultiGuard, Error> {
        Ok(self.lock_until(None).await?.expect("no deadline"))
    }

    /// Like [`lock`](Self::lock), but gives up after `timeout` with `Ok(None)`, holding
    /// nothing and leaving no key. A timeout too large to add to now means no deadline.
    ///
    /// # Errors
    /// As [`lock`](Self::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](Self::lock).
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MultiGuard>, Error> {
        self.lock_until(Instant::now().checked_add(timeout)).await
    }

    async fn lock_until(&self, deadline: Option<Instant>) -> Result<Option<MultiGuard>, Error> {
        let mut guards: Vec<MutexGuard> = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            let r = part.lock_until(deadline).await;
            let Ok(Some(g)) = r else {
                // ML1: release what was taken before returning, so the caller holds nothing;
                // each delete is waited for as a timed-out acquire's is (up to CLEANUP_WAIT),
                // and goes on in the background past that, so a deadline stays bounded.
                for g in guards {
                    let _ = tokio::time::timeout(crate::mutex::CLEANUP_WAIT, g.release()).await;
                }
                return r.map(|_| None);
            };
            guards.push(g);
        }
        Ok(Some(MultiGuard { guards }))
    }
}

/// Proof of holding every part of a [`MultiLock`]; dropping it releases them all.
#[must_use = "dropping the guard releases every part at once"]
#[derive(Debug)]
pub struct MultiGuard {
    guards: Vec<MutexGuard>,
}

impl MultiGuard {
    /// The parts' guards, in name order.
    pub fn guards(&self) -> &[MutexGuard] {
        &self.guards
    }

    /// Whether any part's hold is known to be lost, or may be.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(|g| g.is_lost())
    }

    /// Releases every part, waiting for the server to confirm each delete.
    ///
    /// # Errors
    /// The first part's error, as [`MutexGuard::release`]; every part is released regardless.
    pub async fn release(self) -> Result<(), Error> {
        let mut first = Ok(());
        for g in self.guards {
            let r = g.release().await;
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
