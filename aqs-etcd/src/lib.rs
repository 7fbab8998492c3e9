//! Lock recipes on etcd v3 that share their keys with etcd's own clients.
//!
//! | etcd (Go `client/v3/concurrency`) | `aqs_etcd` | keys under `NAME` |
//! |---|---|---|
//! | `concurrency.Session` | [`Session`] | one lease, kept alive by the crate |
//! | `concurrency.Mutex`, `etcdctl lock NAME` | [`Mutex`] | `NAME/<lease id in hex>` |
//! | `recipes.RWMutex` (Go `contrib/recipes`) | [`RwLock`] | `NAME/read/<unique>`, `NAME/write/<unique>` |
//! | (none; Curator's `InterProcessMultiLock`) | [`MultiLock`] | the parts' own keys |
//! | (none; Curator's `InterProcessSemaphoreV2`) | [`Semaphore`] | `NAME/lock/<lease hex>`, `NAME/leases/<lease hex>-<seq>` |
//!
//! A [`Mutex`] uses exactly the key layout of Go's `concurrency.Mutex`, so a Rust holder,
//! `etcdctl lock NAME` and the server's `v3lock` service on the same name exclude each other and
//! queue in one order (by create revision).
//!
//! The API is async, on Tokio; [`blocking`] wraps it for threads with the in-process `aqs`
//! names. Every guard and permit:
//! - deletes its key when dropped, from a task on the runtime that granted it;
//! - has a [`token`](MutexGuard::token), the create revision of its key, which grows with every
//!   later grant (a fencing token);
//! - reports loss through `is_lost()` and `lost()` *before* the server can expire the session's
//!   lease, and `is_suspended()` while keep-alives fail. See [`Session`] for the rule.
//!
//! A waiter confirms that its own key still exists in the same request that decides it holds
//! the lock, so no grant is ever made through a key the server has already deleted (etcd 3.4's
//! Go `Mutex` does not check this). Design notes: `docs/etcd.md`.
//!
//! # Examples
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! let client = etcd_client::Client::connect(["127.0.0.1:2379"], None).await?;
//! let session = aqs_etcd::Session::new(client, Duration::from_secs(10)).await?;
//! let mutex = aqs_etcd::Mutex::new(&session, "/demo/leader")?;
//! if let Some(guard) = mutex.try_lock_for(Duration::from_secs(1)).await? {
//!     println!("leader, token {}", guard.token());
//!     guard.release().await?;
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod blocking;
mod error;
mod multi;
mod mutex;
mod rwlock;
mod semaphore;
mod session;
mod wait;

pub use error::Error;
pub use etcd_client;
pub use multi::{MultiGuard, MultiLock};
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockGuard};
pub use semaphore::{Permit, Semaphore};
pub use session::Session;

/// Compiles the README's examples as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
