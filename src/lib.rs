//! Blocking synchronizers built the way `java.util.concurrent` builds them:
//! one atomic state word, a lock-free CLH wait queue run by the protocol of
//! Java's `AbstractQueuedSynchronizer` (AQS), and small synchronizers on top.
//!
//! The family, each fair (strict FIFO) or barging where that applies:
//!
//! * [`Semaphore`]: counting permits with RAII guards, in tokio's shape
//!   but blocking the calling thread;
//! * [`Mutex`], [`FairMutex`], [`ReentrantMutex`] and [`Condvar`], through
//!   `lock_api`, as the JDK's `ReentrantLock` and its `Condition`;
//! * [`RwLock`] and [`FairRwLock`], through `lock_api`, as the JDK's
//!   `ReentrantReadWriteLock`: both of the queue's modes in one queue;
//! * [`CountDownLatch`], the JDK's one-shot gate;
//! * [`lock_all`]: several locks all or nothing, in one global order
//!   (Curator's `InterProcessMultiLock`, in one process).
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

#![cfg_attr(docsrs, feature(doc_cfg))]
// The loom build is internal: its cfg is no badge a user should see.
#![cfg_attr(docsrs, doc(auto_cfg(hide(aqs_loom))))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations)]

#[cfg(not(target_has_atomic = "64"))]
compile_error!("aqs needs 64-bit atomics (its state word is an AtomicU64)");

mod condvar;
mod error;
#[cfg(all(feature = "async", not(aqs_loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub mod future;
mod latch;
mod loom;
// The loom build has no `lock_api` impls (loom's atomics are not `const`, and
// `RawMutex::INIT` must be): only the mutex's loom models use its lock.
#[cfg(not(aqs_loom))]
mod multi;
#[cfg_attr(aqs_loom, allow(dead_code))]
mod mutex;
mod park;
mod permit;
mod queue;
#[cfg_attr(aqs_loom, allow(dead_code))]
mod rwlock;
mod semaphore;
mod spin;
#[cfg(feature = "async")]
#[cfg_attr(aqs_loom, allow(dead_code))] // only the async loom models use it
mod waker;

pub use condvar::WaitTimeoutResult;
#[cfg(not(aqs_loom))]
pub use condvar::{Condvar, CondvarMutex};
pub use error::{AcquireError, TryAcquireError};
#[cfg(all(feature = "async", not(aqs_loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use future::{MutexAsync, RwLockAsync};
pub use latch::CountDownLatch;
#[cfg(not(aqs_loom))]
pub use multi::{
    lock_all, try_lock_all_for, try_lock_all_until, LockSet, Lockable, MultiGuard, Write,
};
#[cfg(not(aqs_loom))]
pub use mutex::{
    FairMutex, FairMutexGuard, Mutex, MutexGuard, ReentrantMutex, ReentrantMutexGuard,
};
pub use mutex::{RawFairMutex, RawMutex, RawThreadId};
pub use permit::{OwnedSemaphorePermit, SemaphorePermit};
#[cfg(not(aqs_loom))]
pub use rwlock::{
    FairRwLock, FairRwLockReadGuard, FairRwLockWriteGuard, RwLock, RwLockReadGuard,
    RwLockWriteGuard,
};
pub use rwlock::{RawFairRwLock, RawRwLock};
pub use semaphore::Semaphore;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// `docs/tour.md`'s examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/tour.md")]
struct TourDoctests;
