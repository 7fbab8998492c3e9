//! Curator's lock recipes on a real ZooKeeper (issue 27), with Curator 5's znode layout.
//!
//! Work in progress. So far: [`Semaphore`] (Curator's `InterProcessSemaphoreV2`, one permit per acquire), [`Mutex`] (Curator's `InterProcessMutex` protocol, not yet
//! reentrant) and [`server`], the harness that starts a real ZooKeeper from Debian's
//! `zookeeper` package for tests. `SemaphoreMutex`, `RwLock`, `MultiLock` and the
//! blocking facade are not written yet.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod mutex;
mod node;
mod semaphore;
pub mod server;

pub use error::Error;
pub use mutex::{Mutex, MutexGuard};
pub use semaphore::{Permit, Semaphore};
pub use zookeeper_client;
