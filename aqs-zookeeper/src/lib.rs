//! Apache Curator's lock recipes in Rust, on a real ZooKeeper, with Curator 5's znode layout,
//! so that Rust and Java clients on one path share one lock or semaphore.
//!
//! | Curator 5 | `aqs_zookeeper` | layout under `PATH` |
//! |---|---|---|
//! | `InterProcessSemaphoreV2` | [`Semaphore`] | `locks/_c_<uuid>-lock-<seq>`, `leases/_c_<uuid>-lease-<seq>` |
//! | `InterProcessMutex` | [`Mutex`] (reentrant through [`MutexGuard::reenter`]) | `_c_<uuid>-lock-<seq>` |
//! | `InterProcessSemaphoreMutex` | [`SemaphoreMutex`] | as `Semaphore` with limit 1 |
//! | `InterProcessReadWriteLock` | [`RwLock`] | `_c_<uuid>-__READ__<seq>`, `_c_<uuid>-__WRIT__<seq>` |
//! | `InterProcessMultiLock` | [`MultiLock`] | the parts' own nodes |
//!
//! The API is async first, on Tokio. [`blocking`] wraps it for threads with the in-process
//! `aqs` names. Every permit and guard:
//! - deletes its nodes when dropped, retried across connection losses until the server confirms
//!   or the session ends (Curator's guaranteed delete);
//! - has a [`fencing_token`](MutexGuard::fencing_token), the zxid that created its node, which
//!   grows with every later grant;
//! - reports loss through `is_lost()` and `lost()` before the earliest instant the server
//!   could expire its session (a per-session heartbeat bounds when the server last heard from
//!   the client), and doubt through `is_suspended()` and `suspended()` while the connection is
//!   down and the hold may still stand.
//!
//! A timed acquire returns within its deadline plus 500 ms whatever the connection does.
//! A waiter whose session ends gets [`Error::SessionLost`] instead of waiting forever, and no
//! grant is ever made through a node of an ended session (Curator's CURATOR-604). Sessions,
//! loss and fencing are explained in the design notes, `docs/zookeeper.md`.
//!
//! # Examples
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! let client = zookeeper_client::Client::connector()
//!     .with_session_timeout(Duration::from_secs(10))
//!     .connect("127.0.0.1:2181")
//!     .await?;
//! let online = aqs_zookeeper::Semaphore::new(client, "/chat/online", 1000)?;
//! if let Some(permit) = online.try_acquire_for(Duration::from_secs(1)).await? {
//!     println!("in, token {}", permit.fencing_token());
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod blocking;
mod close;
mod error;
mod health;
mod lease;
mod multi;
mod mutex;
mod node;
mod queue;
mod rwlock;
mod semaphore;

pub use close::close_session;
pub use error::Error;
pub use multi::{Lockable, MultiGuard, MultiLock};
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{ReadGuard, ReadLock, RwLock, WriteGuard, WriteLock};
pub use semaphore::{Permit, Semaphore, SemaphoreMutex, SemaphoreMutexGuard};
pub use zookeeper_client;

/// Compiles the README's examples as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
