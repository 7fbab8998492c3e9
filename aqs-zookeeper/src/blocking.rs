//! A blocking facade for threads, with the in-process `aqs` names: `acquire`, `acquire_many`,
//! `try_acquire`, `try_acquire_for` and `try_acquire_until`.
//!
//! A [`Session`] owns one ZooKeeper session and a one-worker Tokio runtime that runs its
//! connection, the loss monitors and the guaranteed deletes. Each blocking call runs the async
//! recipe on that runtime and parks the calling thread until it completes. Guards and permits
//! are the async ones: dropping them deletes their nodes in the background, on the session's
//! runtime.
//!
//! # Panics
//! Every blocking call panics if made from inside a Tokio runtime (Tokio refuses to block a
//! worker thread); use the async types there.
//!
//! # Examples
//! ```no_run
//! # fn demo() -> Result<(), aqs_zookeeper::Error> {
//! use std::time::Duration;
//! use aqs_zookeeper::blocking::{Semaphore, Session};
//! let session = Session::connect_with_timeout("127.0.0.1:2181", Duration::from_secs(10))?;
//! let writers = Semaphore::new(&session, "/db/writers", 20)?;
//! let permit = writers.acquire()?; // blocks this thread only
//! drop(permit);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zookeeper_client as zk;

use crate::{Error, MultiGuard, MutexGuard, Permit, ReadGuard, SemaphoreMutexGuard, WriteGuard};

/// One ZooKeeper session and the runtime that drives it.
///
/// Drop guards before their session: a guard that outlives it can no longer delete its nodes,
/// which then go only when the server expires the session. Dropping the last clone does not
/// wait for the server either; [`close`](Session::close) does, and ends the session at once.
///
/// Dropping the last clone is safe anywhere, inside async code too: there the session's
/// runtime is shut down in the background rather than waited for.
#[derive(Debug, Clone)]
pub struct Session {
    rt: Arc<OwnedRuntime>,
    client: zk::Client,
    hosts: Arc<str>,
}

/// The session's runtime. Dropping a Tokio runtime blocks until its tasks stop, which Tokio
/// forbids (with a panic) inside async code; when the last `Session` goes there, the runtime
/// is shut down in the background instead.
#[derive(Debug)]
struct OwnedRuntime(Option<Runtime>);

impl OwnedRuntime {
    fn get(&self) -> &Runtime {
        self.0.as_ref().expect("taken only on drop")
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                rt.shutdown_background();
            }
        }
    }
}

impl Session {
    /// Connects to `hosts` (`host:port[,host:port...][/chroot]`) with the client's default
    /// session timeout.
    ///
    /// # Errors
    /// [`Error::Zk`] if no server accepts the session.
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn connect(hosts: &str) -> Result<Session, Error> {
        Session::build(hosts, None)
    }

    /// Connects with the given session timeout: how long the server keeps the session, and so
    /// the nodes it holds, after it last heard from this client.
    ///
    /// # Errors
    /// [`Error::Zk`] if no server accepts the session.
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn connect_with_timeout(hosts: &str, session_timeout: Duration) -> Result<Session, Error> {
        Session::build(hosts, Some(session_timeout))
    }

    fn build(hosts: &str, timeout: Option<Duration>) -> Result<Session, Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("aqs-zookeeper")
            .enable_all()
            .build()
            .map_err(|e| Error::Zk(zk::Error::UnexpectedError(e.to_string())))?;
        let mut connector = zk::Client::connector();
        if let Some(t) = timeout {
            connector = connector.with_session_timeout(t);
        }
        let client = rt.block_on(connector.connect(hosts))?;
        Ok(Session {
            rt: Arc::new(OwnedRuntime(Some(rt))),
            client,
            hosts: hosts.into(),
        })
    }

    /// Ends the session on the server now and waits until the server has done it, as
    /// [`crate::close_session`]: every node of the session is gone when this returns, and every
    /// guard of it reports lost. Call it before the process exits.
    ///
    /// # Errors
    /// As [`crate::close_session`].
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn close(self) -> Result<(), Error> {
        self.block_on(crate::close_session(&self.client, &self.hosts))
    }

    /// The async client, for use with the async types from async code.
    pub fn client(&self) -> &zk::Client {
        &self.client
    }

    /// Runs an async call on this session's runtime and waits for it: for what has no blocking
    /// form, such as [`MutexGuard::release`] or a raw client request.
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.get().block_on(f)
    }
}

/// Generates a blocking wrapper's acquire family over an async type's, one method each.
macro_rules! acquire_family {
    ($guard:ty, $target:ident => $inner:expr) => {
        /// Blocks until held.
        ///
        /// # Errors
        /// As the async `acquire`.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn acquire(&self) -> Result<$guard, Error> {
            let $target = self;
            self.session.block_on($inner.acquire())
        }

        /// Takes it only if it is free now, after one look.
        ///
        /// # Errors
        /// As the async `acquire`.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn try_acquire(&self) -> Result<Option<$guard>, Error> {
            let $target = self;
            self.session.block_on($inner.try_acquire())
        }

        /// Blocks up to `timeout`; `Ok(None)` on time-out, leaving no node behind.
        ///
        /// # Errors
        /// As the async `acquire`.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn try_acquire_for(&self, timeout: Duration) -> Result<Option<$guard>, Error> {
            let $target = self;
            self.session.block_on($inner.try_acquire_for(timeout))
        }

        /// Blocks until `deadline`; `Ok(None)` on time-out, leaving no node behind.
        ///
        /// # Errors
        /// As the async `acquire`.
        ///
        /// # Panics
        /// If called from inside a Tokio runtime.
        pub fn try_acquire_until(&self, deadline: Instant) -> Result<Option<$guard>, Error> {
            let $target = self;
            self.session.block_on($inner.try_acquire_until(deadline))
        }
    };
}

/// Blocking [`crate::Semaphore`].
#[derive(Debug, Clone)]
pub struct Semaphore {
    session: Session,
    inner: crate::Semaphore,
}

impl Semaphore {
    /// As [`crate::Semaphore::new`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::new`].
    pub fn new(session: &Session, path: &str, limit: u32) -> Result<Semaphore, Error> {
        Ok(Semaphore {
            session: session.clone(),
            inner: crate::Semaphore::new(session.client.clone(), path, limit)?,
        })
    }

    /// As [`crate::Semaphore::with_shared_limit`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::with_shared_limit`].
    pub fn with_shared_limit(
        session: &Session,
        path: &str,
        count_path: &str,
    ) -> Result<Semaphore, Error> {
        Ok(Semaphore {
            session: session.clone(),
            inner: crate::Semaphore::with_shared_limit(session.client.clone(), path, count_path)?,
        })
    }

    /// As [`crate::Semaphore::with_checked_limit`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::with_checked_limit`].
    pub fn with_checked_limit(
        session: &Session,
        path: &str,
        limit: u32,
        count_path: &str,
    ) -> Result<Semaphore, Error> {
        Ok(Semaphore {
            session: session.clone(),
            inner: crate::Semaphore::with_checked_limit(
                session.client.clone(),
                path,
                limit,
                count_path,
            )?,
        })
    }

    acquire_family!(Permit, s => s.inner);

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

    /// Takes `n` permits only if they are free now.
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire_many`].
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn try_acquire_many(&self, n: u32) -> Result<Option<Permit>, Error> {
        self.session.block_on(self.inner.try_acquire_many(n))
    }

    /// Blocks up to `timeout` for `n` permits.
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

    /// Blocks until `deadline` for `n` permits.
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire_many`].
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn try_acquire_many_until(
        &self,
        n: u32,
        deadline: Instant,
    ) -> Result<Option<Permit>, Error> {
        self.session
            .block_on(self.inner.try_acquire_many_until(n, deadline))
    }

    /// As [`crate::Semaphore::limit`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::limit`].
    ///
    /// # Panics
    /// If called from inside a Tokio runtime.
    pub fn limit(&self) -> Result<u32, Error> {
        self.session.block_on(self.inner.limit())
    }
}

/// Blocking [`crate::Mutex`]: threads that share a handle take turns; re-entry is
/// [`MutexGuard::reenter`].
#[derive(Debug)]
pub struct Mutex {
    session: Session,
    inner: crate::Mutex,
}

impl Mutex {
    /// As [`crate::Mutex::new`].
    ///
    /// # Errors
    /// As [`crate::Mutex::new`].
    pub fn new(session: &Session, path: &str) -> Result<Mutex, Error> {
        Ok(Mutex {
            session: session.clone(),
            inner: crate::Mutex::new(session.client.clone(), path)?,
        })
    }

    /// Whether a guard from this handle is alive.
    pub fn is_acquired(&self) -> bool {
        self.inner.is_acquired()
    }

    acquire_family!(MutexGuard, m => m.inner);
}

/// Blocking [`crate::SemaphoreMutex`].
#[derive(Debug, Clone)]
pub struct SemaphoreMutex {
    session: Session,
    inner: crate::SemaphoreMutex,
}

impl SemaphoreMutex {
    /// As [`crate::SemaphoreMutex::new`].
    ///
    /// # Errors
    /// As [`crate::SemaphoreMutex::new`].
    pub fn new(session: &Session, path: &str) -> Result<SemaphoreMutex, Error> {
        Ok(SemaphoreMutex {
            session: session.clone(),
            inner: crate::SemaphoreMutex::new(session.client.clone(), path)?,
        })
    }

    acquire_family!(SemaphoreMutexGuard, m => m.inner);
}

/// Blocking [`crate::RwLock`].
#[derive(Debug)]
pub struct RwLock {
    session: Session,
    inner: crate::RwLock,
}

impl RwLock {
    /// As [`crate::RwLock::new`].
    ///
    /// # Errors
    /// As [`crate::RwLock::new`].
    pub fn new(session: &Session, path: &str) -> Result<RwLock, Error> {
        Ok(RwLock {
            session: session.clone(),
            inner: crate::RwLock::new(session.client.clone(), path)?,
        })
    }

    /// The read half.
    pub fn read_lock(&self) -> ReadLock<'_> {
        ReadLock {
            session: &self.session,
            lock: &self.inner,
        }
    }

    /// The write half.
    pub fn write_lock(&self) -> WriteLock<'_> {
        WriteLock {
            session: &self.session,
            lock: &self.inner,
        }
    }
}

/// The read half of a blocking [`RwLock`].
#[derive(Debug, Clone, Copy)]
pub struct ReadLock<'a> {
    session: &'a Session,
    lock: &'a crate::RwLock,
}

impl ReadLock<'_> {
    acquire_family!(ReadGuard, r => r.lock.read_lock());
}

/// The write half of a blocking [`RwLock`].
#[derive(Debug, Clone, Copy)]
pub struct WriteLock<'a> {
    session: &'a Session,
    lock: &'a crate::RwLock,
}

impl WriteLock<'_> {
    acquire_family!(WriteGuard, w => w.lock.write_lock());
}

/// Blocking [`crate::MultiLock`].
#[derive(Debug)]
pub struct MultiLock {
    session: Session,
    inner: crate::MultiLock,
}

impl MultiLock {
    /// As [`crate::MultiLock::new`]: a mutex at each path.
    ///
    /// # Errors
    /// As [`crate::MultiLock::new`].
    pub fn new(session: &Session, paths: &[&str]) -> Result<MultiLock, Error> {
        Ok(MultiLock {
            session: session.clone(),
            inner: crate::MultiLock::new(&session.client, paths)?,
        })
    }

    /// As [`crate::MultiLock::from_locks`]; the locks must be on this session's client.
    ///
    /// # Errors
    /// As [`crate::MultiLock::from_locks`].
    pub fn from_locks(session: &Session, locks: Vec<crate::Lockable>) -> Result<MultiLock, Error> {
        Ok(MultiLock {
            session: session.clone(),
            inner: crate::MultiLock::from_locks(locks)?,
        })
    }

    acquire_family!(MultiGuard, m => m.inner);
}
