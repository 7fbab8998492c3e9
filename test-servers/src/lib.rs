//! Throwaway ZooKeeper and etcd servers for the tests, benchmarks and examples of
//! `aqs-zookeeper` and `aqs-etcd`; not published, and not part of either crate's API.
//!
//! Each [`TestServer`](zookeeper::TestServer) runs a real server from the system's packages
//! (Debian's `zookeeper` through `java`, or `etcd`) on free loopback ports with a temporary data
//! directory, and returns once it serves. A test can kill and restart it on the same ports and
//! data, or freeze and thaw it (SIGSTOP, SIGCONT). Dropping it, also when a test panics, kills
//! the server and removes its data directory.
//!
//! ```no_run
//! use std::time::Duration;
//! let zk = aqs_test_servers::zookeeper::TestServer::start(Duration::from_secs(60))?;
//! let etcd = aqs_test_servers::etcd::TestServer::start(Duration::from_secs(30))?;
//! println!("ZooKeeper at {}, etcd at {}", zk.addr(), etcd.endpoint());
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod checker;
pub mod etcd;
pub mod golang;
pub mod java;
mod process;
pub mod workers;
pub mod zookeeper;
