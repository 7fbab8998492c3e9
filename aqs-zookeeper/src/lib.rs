//! Curator's lock recipes on a real ZooKeeper (issue 27).
//!
//! Work in progress. So far this crate holds only [`server`], the harness that starts a real
//! ZooKeeper from Debian's `zookeeper` package on a free loopback port for tests. The recipe
//! types (`Semaphore`, `Mutex`, `SemaphoreMutex`, `RwLock`, `MultiLock`) are not written yet.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod server;
