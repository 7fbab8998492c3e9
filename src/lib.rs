//! Blocking synchronizers built the way `java.util.concurrent` builds them:
//! one atomic state word, a lock-free CLH wait queue run by the protocol of
//! Java's `AbstractQueuedSynchronizer` (AQS), and small synchronizers on top.
//!
//! Today the crate offers a counting [`Semaphore`], fair (strict FIFO) or
//! nonfair (barging), with RAII permits and an API that follows tokio's
//! `Semaphore` where the two overlap, but blocks the calling thread instead
//! of returning futures.
//!
//! * An uncontended acquire or release is one compare-and-swap on the state
//!   word and never touches the queue or allocates.
//! * Threads that must wait join a CLH queue and park with `parking_lot_core`;
//!   a release wakes the first waiter, which wakes the next if permits remain
//!   ("propagation"), so one `add_permits(k)` serves every waiter `k` permits
//!   can satisfy.
//! * Timed waits and [`Semaphore::close`] leave the queue without losing a
//!   wake-up or a permit.
//!
//! # Quick start
//!
//! ```
//! use std::sync::Arc;
//! use std::thread;
//! use aqs::Semaphore;
//!
//! // At most 3 of the 8 jobs hold a "connection" at once.
//! let pool = Arc::new(Semaphore::new(3));
//! let jobs: Vec<_> = (0..8)
//!     .map(|job| {
//!         let pool = Arc::clone(&pool);
//!         thread::spawn(move || {
//!             let _conn = pool.acquire().expect("the pool is never closed");
//!             job * 2
//!         })
//!     })
//!     .collect();
//! let sum: u32 = jobs.into_iter().map(|j| j.join().unwrap()).sum();
//! assert_eq!(sum, 56);
//! assert_eq!(pool.available_permits(), 3);
//! ```
//!
//! # Design
//!
//! `docs/design.md` in the repository explains the queue, the memory
//! reclamation argument and the memory-ordering choices; `src/queue/mod.rs`
//! opens with the state table, the invariants and the JDK mapping next to
//! the code.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations)]

#[cfg(not(target_has_atomic = "64"))]
compile_error!("aqs needs 64-bit atomics (its state word is an AtomicU64)");

mod condvar;
mod error;
mod loom;
// The loom build has no `lock_api` impls (loom's atomics are not `const`, and
// `RawMutex::INIT` must be): only the mutex's loom models use its lock.
#[cfg_attr(aqs_loom, allow(dead_code))]
mod mutex;
mod park;
mod permit;
mod queue;
mod semaphore;
mod spin;

pub use condvar::WaitTimeoutResult;
#[cfg(not(aqs_loom))]
pub use condvar::{Condvar, CondvarMutex};
pub use error::{AcquireError, TryAcquireError};
#[cfg(not(aqs_loom))]
pub use mutex::{
    FairMutex, FairMutexGuard, Mutex, MutexGuard, ReentrantMutex, ReentrantMutexGuard,
};
pub use mutex::{RawFairMutex, RawMutex, RawThreadId};
pub use permit::{OwnedSemaphorePermit, SemaphorePermit};
pub use semaphore::Semaphore;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
