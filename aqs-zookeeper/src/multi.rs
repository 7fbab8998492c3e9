//! `MultiLock`: Curator's `InterProcessMultiLock`, all or nothing, in one global order.
//!
//! Invariants:
//! - **G1** Parts are acquired in path order, whatever order the caller gave, so two
//!   multi-locks over overlapping sets in any process (of this crate) never wait for each other
//!   in a cycle. Curator acquires in the caller's order; mixing both on one set can deadlock.
//! - **G2** If any part fails or times out, every part taken so far is released, and the
//!   server has confirmed it, before the call returns its result; parts not yet reached were
//!   never touched. Only a cancelled call (or one cut by its deadline bound, `node::within`)
//!   leaves the releases to the background, as dropping a guard does.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::{
    Error, Mutex, MutexGuard, ReadGuard, RwLock, SemaphoreMutex, SemaphoreMutexGuard, WriteGuard,
};

/// One lock of a [`MultiLock`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Lockable {
    /// A [`Mutex`].
    Mutex(Mutex),
    /// A [`SemaphoreMutex`].
    SemaphoreMutex(SemaphoreMutex),
    /// The read half of an [`RwLock`].
    Read(RwLock),
    /// The write half of an [`RwLock`].
    Write(RwLock),
}

impl Lockable {
    fn path(&self) -> &str {
        match self {
            Lockable::Mutex(m) => m.path(),
            Lockable::SemaphoreMutex(m) => m.path(),
            Lockable::Read(l) | Lockable::Write(l) => l.path(),
        }
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<Option<PartGuard>, Error> {
        Ok(match self {
            Lockable::Mutex(m) => m.acquire_until_inner(deadline).await?.map(PartGuard::Mutex),
            Lockable::SemaphoreMutex(m) => m
                .acquire_until_inner(deadline)
                .await?
                .map(PartGuard::SemaphoreMutex),
            Lockable::Read(l) => l.read_until(deadline).await?.map(PartGuard::Read),
            Lockable::Write(l) => l.write_until(deadline).await?.map(PartGuard::Write),
        })
    }
}

#[derive(Debug)]
enum PartGuard {
    Mutex(MutexGuard),
    SemaphoreMutex(SemaphoreMutexGuard),
    Read(ReadGuard),
    Write(WriteGuard),
}

impl PartGuard {
    fn fencing_token(&self) -> i64 {
        match self {
            PartGuard::Mutex(g) => g.fencing_token(),
            PartGuard::SemaphoreMutex(g) => g.fencing_token(),
            PartGuard::Read(g) => g.fencing_token(),
            PartGuard::Write(g) => g.fencing_token(),
        }
    }

    fn is_lost(&self) -> bool {
        match self {
            PartGuard::Mutex(g) => g.is_lost(),
            PartGuard::SemaphoreMutex(g) => g.is_lost(),
            PartGuard::Read(g) => g.is_lost(),
            PartGuard::Write(g) => g.is_lost(),
        }
    }

    fn is_suspended(&self) -> bool {
        match self {
            PartGuard::Mutex(g) => g.is_suspended(),
            PartGuard::SemaphoreMutex(g) => g.is_suspended(),
            PartGuard::Read(g) => g.is_suspended(),
            PartGuard::Write(g) => g.is_suspended(),
        }
    }

    async fn lost(&self) {
        match self {
            PartGuard::Mutex(g) => g.lost().await,
            PartGuard::SemaphoreMutex(g) => g.lost().await,
            PartGuard::Read(g) => g.lost().await,
            PartGuard::Write(g) => g.lost().await,
        }
    }

    async fn suspended(&self) {
        match self {
            PartGuard::Mutex(g) => g.suspended().await,
            PartGuard::SemaphoreMutex(g) => g.suspended().await,
            PartGuard::Read(g) => g.suspended().await,
            PartGuard::Write(g) => g.suspended().await,
        }
    }

    async fn release(self) -> Result<(), Error> {
        match self {
            PartGuard::Mutex(g) => g.release().await,
            PartGuard::SemaphoreMutex(g) => g.release().await,
            PartGuard::Read(g) => g.release().await,
            PartGuard::Write(g) => g.release().await,
        }
    }
}

/// Several of the crate's locks taken as one: Curator's `InterProcessMultiLock`.
///
/// The locks are acquired in path order whatever order they were given in, so multi-locks
/// over overlapping sets cannot deadlock each other; if any lock cannot be taken (error or
/// time-out), those already taken are released, and the server has confirmed it, before the
/// call returns. One [`MultiGuard`] releases them all.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let both = aqs_zookeeper::MultiLock::new(&client, &["/accounts/alice", "/accounts/bob"])?;
/// let guard = both.acquire().await?; // both mutexes, or neither
/// drop(guard);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct MultiLock {
    parts: Vec<Lockable>,
}

impl MultiLock {
    /// A multi-lock over a [`Mutex`] at each of `paths`, as Curator's
    /// `InterProcessMultiLock(client, paths)`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path; [`Error::DuplicateLock`] if a path repeats.
    pub fn new(client: &zk::Client, paths: &[&str]) -> Result<MultiLock, Error> {
        let parts = paths
            .iter()
            .map(|p| Mutex::new(client.clone(), p).map(Lockable::Mutex))
            .collect::<Result<Vec<_>, _>>()?;
        MultiLock::from_locks(parts)
    }

    /// A multi-lock over the given locks.
    ///
    /// # Errors
    /// [`Error::DuplicateLock`] if two of them are on one path: the multi-lock would wait for
    /// itself.
    pub fn from_locks(mut parts: Vec<Lockable>) -> Result<MultiLock, Error> {
        parts.sort_by(|a, b| a.path().cmp(b.path()));
        if let Some(w) = parts.windows(2).find(|w| w[0].path() == w[1].path()) {
            return Err(Error::DuplicateLock(w[0].path().to_owned()));
        }
        Ok(MultiLock { parts })
    }

    /// The locks' paths, in the order they are acquired.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().map(Lockable::path)
    }

    /// Waits until every lock is held.
    ///
    /// # Errors
    /// The first error of any lock, after releasing those taken before it.
    ///
    /// # Cancel safety
    /// Dropping the future releases the locks taken so far and deletes the node of the one
    /// being waited for, from tasks spawned on the Tokio runtime the acquire started on.
    pub async fn acquire(&self) -> Result<MultiGuard, Error> {
        Ok(self.acquire_until_inner(None).await?.expect("no deadline"))
    }

    /// Takes every lock only if each is free now.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<MultiGuard>, Error> {
        self.acquire_until_inner(Some(Instant::now())).await
    }

    /// Waits up to `timeout` for all of them; on time-out releases those taken and returns
    /// `Ok(None)`.
    /// A `timeout` such as `Duration::MAX`, too large for a deadline, waits without one.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_for(&self, timeout: Duration) -> Result<Option<MultiGuard>, Error> {
        self.acquire_until_inner(crate::node::deadline_after(timeout))
            .await
    }

    /// Waits until `deadline` for all of them; on time-out releases those taken and returns
    /// `Ok(None)`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<Option<MultiGuard>, Error> {
        self.acquire_until_inner(Some(Instant::from_std(deadline)))
            .await
    }

    async fn acquire_until_inner(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<MultiGuard>, Error> {
        crate::node::within(deadline, self.acquire_until_unbounded(deadline)).await
    }

    async fn acquire_until_unbounded(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<MultiGuard>, Error> {
        let mut taken = MultiGuard {
            guards: Vec::with_capacity(self.parts.len()),
        };
        for part in &self.parts {
            // G2: on `None` or `Err`, release what was taken and wait for the server.
            let failed = match part.acquire_until(deadline).await {
                Ok(Some(g)) => {
                    taken.guards.push(g);
                    continue;
                }
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            let _ = taken.release().await; // the acquire's own result matters more
            return failed;
        }
        Ok(Some(taken))
    }
}

/// Proof of holding every lock of a [`MultiLock`]; dropping it releases them in reverse order.
#[must_use = "dropping the guard releases the locks at once"]
#[derive(Debug)]
pub struct MultiGuard {
    guards: Vec<PartGuard>,
}

impl MultiGuard {
    /// Each lock's fencing token, in acquisition (path) order.
    pub fn fencing_tokens(&self) -> Vec<i64> {
        self.guards.iter().map(PartGuard::fencing_token).collect()
    }

    /// Whether any of the holds is lost, as [`MutexGuard::is_lost`] says of one: before the
    /// server could expire a session and grant a part to someone else.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(PartGuard::is_lost)
    }

    /// Completes when [`is_lost`](Self::is_lost) becomes true. With no parts it never does.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) {
        first_of(self.guards.iter().map(|g| Box::pin(g.lost()) as Pinned<'_>)).await
    }

    /// Whether the connection of any part is in doubt now, as [`MutexGuard::is_suspended`]
    /// says of one. The holds may still be valid.
    pub fn is_suspended(&self) -> bool {
        self.guards.iter().any(PartGuard::is_suspended)
    }

    /// Completes when [`is_suspended`](Self::is_suspended) or [`is_lost`](Self::is_lost)
    /// becomes true. With no parts it never does.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn suspended(&self) {
        first_of(
            self.guards
                .iter()
                .map(|g| Box::pin(g.suspended()) as Pinned<'_>),
        )
        .await
    }

    /// Releases every lock in reverse order, waiting for the server to confirm each.
    ///
    /// # Errors
    /// The first error, after trying every release.
    pub async fn release(mut self) -> Result<(), Error> {
        let mut first = Ok(());
        while let Some(g) = self.guards.pop() {
            let r = g.release().await;
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

type Pinned<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

/// Completes when the first of `futures` does; never if there are none.
async fn first_of<'a>(futures: impl Iterator<Item = Pinned<'a>>) {
    let mut futures: Vec<Pinned<'a>> = futures.collect();
    std::future::poll_fn(|cx| {
        // Poll every one, so that each registers its waker.
        let mut done = false;
        for f in &mut futures {
            done |= f.as_mut().poll(cx).is_ready();
        }
        if done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        while let Some(g) = self.guards.pop() {
            drop(g);
        }
    }
}
