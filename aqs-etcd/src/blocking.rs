//! A blocking facade for threads, with the in-process `aqs` names: `acquire`, `acquire_many`,
//! `try_acquire`, `try_acquire_for` and `try_acquire_until`.
//!
//! A [`Session`] owns one etcd lease and a one-worker Tokio runtime that runs its keep-alives
//! and the deletes of dropped guards. Each blocking call runs the async recipe on that runtime
//! and parks the calling thread until it completes. Guards and permits are the async ones:
//! dropping them deletes their keys in the background, on the session's runtime.
//!
//! # Panics
//! Every blocking call panics if made from inside a Tokio runtime (Tokio refuses to block a
//! worker thread); use the async types there.
//!
//! # Examples
//! ```no_run
//! # fn demo() -> Result<(), aqs_etcd::Error> {
//! use std::time::Duration;
//! use aqs_etcd::blocking::{Semaphore, Session};
//! let session = Session::connect(&["127.0.0.1:2379"], Duration::from_secs(10))?;
//! let writers = Semaphore::new(&session, "/db/writers", 20)?;
//! let permit = writers.acquire()?; // blocks this thread only
//! drop(permit);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::{Error, MultiGuard, MutexGuard, Permit, RwLockGuard};

/// One etcd session (lease) and the runtime that keeps it alive.
///
/// Drop guards before their session's last handle: the runtime goes with it, and a guard that
/// outlives it can no longer delete its key, which then goes when the lease expires.
#[derive(Debug, Clone)]
pub struct Session {
    rt: Arc<Runtime>,
    session: crate::Session,
}

impl Session {
    /// Connects to `endpoints` (`host:port`) and grants a lease with `ttl`.
    ///
    /// # Errors
    /// [`Error::InvalidTtl`] as [`crate::Session::new`]; [`Error::Etcd`] if no server answers.
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn connect(endpoints: &[&str], ttl: Duration) -> Result<Session, Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("aqs-etcd")
            .enable_all()
            .build()
            .map_err(|e| Error::Etcd(etcd_client::Error::IoError(e)))?;
        let session = rt.block_on(async {
            let client = etcd_client::Client::connect(endpoints, None).await?;
            crate::Session::new(client, ttl).await
        })?;
        Ok(Session {
            rt: Arc::new(rt),
            session,
        })
    }

    /// The async session, for the async types.
    pub fn session(&self) -> &crate::Session {
        &self.session
    }

    /// Runs an async call on this session's runtime and waits for it: for what has no blocking
    /// form, such as [`MutexGuard::release`] or a raw client request.
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

fn until(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// Generates a blocking wrapper's one-permit family over an async type's timed acquire.
macro_rules! acquire_family {
    ($guard:ty, $this:ident, $d:ident => $timed:expr) => {
        /// Blocks until held.
        ///
        /// # Errors
        /// As the async type's acquire.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn acquire(&self) -> Result<$guard, Error> {
            Ok(self.try_acquire_for(Duration::MAX)?.expect("no deadline"))
        }

        /// Takes it only if it is free now, after one look.
        ///
        /// # Errors
        /// As the async type's acquire.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn try_acquire(&self) -> Result<Option<$guard>, Error> {
            self.try_acquire_for(Duration::ZERO)
        }

        /// Blocks until held or `timeout` has passed (`Ok(None)`, leaving no key).
        /// `Duration::MAX` means no deadline.
        ///
        /// # Errors
        /// As the async type's acquire.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<$guard>, Error> {
            let $this = self;
            let $d = timeout;
            self.rt().block_on($timed)
        }

        /// Blocks until held or `deadline` (`Ok(None)`, leaving no key).
        ///
        /// # Errors
        /// As the async type's acquire.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<$guard>, Error> {
            self.try_acquire_for(until(deadline))
        }
    };
}

/// A blocking [`crate::Mutex`].
#[derive(Debug, Clone)]
pub struct Mutex {
    session: Session,
    inner: crate::Mutex,
}

impl Mutex {
    fn rt(&self) -> &Session {
        &self.session
    }

    /// A mutex called `name` on `session`.
    ///
    /// # Errors
    /// As [`crate::Mutex::new`].
    pub fn new(session: &Session, name: &str) -> Result<Mutex, Error> {
        Ok(Mutex {
            session: session.clone(),
            inner: crate::Mutex::new(&session.session, name)?,
        })
    }

    acquire_family!(MutexGuard, this, d => this.inner.try_lock_for(d));
}

/// A blocking [`crate::Semaphore`].
#[derive(Debug, Clone)]
pub struct Semaphore {
    session: Session,
    inner: crate::Semaphore,
}

impl Semaphore {
    fn rt(&self) -> &Session {
        &self.session
    }

    /// A semaphore called `name` with `limit` permits on `session`.
    ///
    /// # Errors
    /// As [`crate::Semaphore::new`].
    pub fn new(session: &Session, name: &str, limit: u32) -> Result<Semaphore, Error> {
        Ok(Semaphore {
            session: session.clone(),
            inner: crate::Semaphore::new(&session.session, name, limit)?,
        })
    }

    acquire_family!(Permit, this, d => this.inner.try_acquire_for(d));

    /// Blocks until `n` permits are held together.
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire_many`].
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn acquire_many(&self, n: u32) -> Result<Permit, Error> {
        self.session.block_on(self.inner.acquire_many(n))
    }

    /// Blocks until `n` permits are held or `timeout` has passed (`Ok(None)`).
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire_many`].
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn try_acquire_many_for(&self, n: u32, timeout: Duration) -> Result<Option<Permit>, Error> {
        self.session
            .block_on(self.inner.try_acquire_many_for(n, timeout))
    }
}

/// A blocking [`crate::RwLock`]: [`read`](Self::read) and [`write`](Self::write) give its two
/// sides, each with the acquire family.
#[derive(Debug, Clone)]
pub struct RwLock {
    session: Session,
    inner: crate::RwLock,
}

impl RwLock {
    /// A read-write lock called `name` on `session`.
    ///
    /// # Errors
    /// As [`crate::RwLock::new`].
    pub fn new(session: &Session, name: &str) -> Result<RwLock, Error> {
        Ok(RwLock {
            session: session.clone(),
            inner: crate::RwLock::new(&session.session, name)?,
        })
    }

    /// The read side.
    pub fn read(&self) -> ReadLock<'_> {
        ReadLock { lock: self }
    }

    /// The write side.
    pub fn write(&self) -> WriteLock<'_> {
        WriteLock { lock: self }
    }
}

/// The read side of a blocking [`RwLock`].
#[derive(Debug, Clone, Copy)]
pub struct ReadLock<'a> {
    lock: &'a RwLock,
}

impl ReadLock<'_> {
    fn rt(&self) -> &Session {
        &self.lock.session
    }

    acquire_family!(RwLockGuard, this, d => this.lock.inner.try_read_for(d));
}

/// The write side of a blocking [`RwLock`].
#[derive(Debug, Clone, Copy)]
pub struct WriteLock<'a> {
    lock: &'a RwLock,
}

impl WriteLock<'_> {
    fn rt(&self) -> &Session {
        &self.lock.session
    }

    acquire_family!(RwLockGuard, this, d => this.lock.inner.try_write_for(d));
}

/// A blocking [`crate::MultiLock`].
#[derive(Debug, Clone)]
pub struct MultiLock {
    session: Session,
    inner: crate::MultiLock,
}

impl MultiLock {
    fn rt(&self) -> &Session {
        &self.session
    }

    /// A multi-lock over the mutexes called `names`, all on `session`.
    ///
    /// # Errors
    /// As [`crate::MultiLock::new`].
    pub fn new(session: &Session, names: &[&str]) -> Result<MultiLock, Error> {
        let parts = names
            .iter()
            .map(|n| crate::Mutex::new(&session.session, n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MultiLock {
            session: session.clone(),
            inner: crate::MultiLock::new(parts)?,
        })
    }

    acquire_family!(MultiGuard, this, d => this.inner.try_lock_for(d));
}
