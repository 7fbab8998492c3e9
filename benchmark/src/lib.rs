//! The benchmark suites of `aqs`: `aqs::Semaphore`; `aqs::Mutex` and
//! `aqs::FairMutex`; and `aqs::RwLock` and `aqs::FairRwLock`; each beside its
//! peers in one run, every contender driven through the same code.
//!
//! The semaphores under test are `aqs` fair and nonfair, tokio, async-lock,
//! futures-intrusive fair and unfair, and a Mutex + Condvar semaphore on std
//! and on parking_lot, each behind [`Contender`]; `benches/semaphore.rs`
//! runs every workload for each of them through criterion, and
//! `jdk/SemaphoreBench.java` runs the same workloads over
//! `java.util.concurrent.Semaphore`, fair and nonfair, as the anchor.
//!
//! | group | what is measured |
//! |---|---|
//! | `uncontended` | one thread: acquire + release, and try_acquire + release; beside them a bare atomic pair and the critical section alone |
//! | `contended` | T in {2, 4, 16} threads over P in {1, 4} permits, each looping acquire, critical section (load a word, 50 dependent xorshift-multiply rounds, store it back), release: wall and process CPU time per pair, and each thread's pairs |
//! | `handoff` | two threads ping-pong over two 0-permit semaphores: wall and process CPU time per round trip |
//! | `batch_wake` | 8 threads parked on a 0-permit semaphore, one `add_permits(8)`: time until the last has returned |
//! | `io` | a semaphore bounding I/O: 16 threads over 4 permits, each holding its permit across a 100 µs `thread::sleep`, and 64 threads over 8 permits holding 1 ms: wall and process CPU time per pair |
//!
//! The mutexes under test are `aqs::Mutex` (barging) and `aqs::FairMutex`
//! (strict FIFO), `parking_lot::Mutex` and `parking_lot::FairMutex` (its
//! `Mutex` with `unlock_fair` on every unlock), and `std::sync::Mutex`, each
//! a lock over one `u64` behind [`MutexContender`]; each crate's condition
//! variable goes with its mutex behind [`CondvarContender`].
//! `benches/mutex.rs` runs them, and `jdk/MutexBench.java` runs the same
//! workloads over `ReentrantLock`, fair and nonfair, and `synchronized`.
//!
//! | group | what is measured |
//! |---|---|
//! | `mutex_uncontended` | one thread: lock + unlock; beside it a bare compare-and-swap + store on one word |
//! | `mutex_contended` | T in {2, 4, 16} threads each looping lock, critical section (the semaphore suite's: 50 rounds; and one of 500 rounds) on the locked word, unlock: wall and process CPU time per pair, and each thread's pairs in each window (the fairness spread: most over fewest) |
//! | `mutex_unlock_fair` | aqs `Mutex` and parking_lot `Mutex`: two threads looping lock, 50 rounds, `unlock_fair`, so the lock passes to the other whenever it waits: wall and CPU time per pair |
//! | `mutex_condvar` | `ping_pong`: two threads pass a turn through one mutex and two condvars (each waits on its own, notifies the other's): wall and CPU time per round trip. `notify_all8`: 8 threads wait on one condvar, one `notify_all` under the lock: time until the last has returned from `wait` and unlocked |
//!
//! The read-write locks under test are `aqs::RwLock` (writers may barge;
//! arriving readers defer to a writer first in the queue) and
//! `aqs::FairRwLock` (strict FIFO), `parking_lot::RwLock` and
//! `std::sync::RwLock`, each a lock over one `u64` behind
//! [`RwLockContender`]. `benches/rwlock.rs` runs them, and
//! `jdk/RwLockBench.java` runs the same workloads over
//! `ReentrantReadWriteLock`, nonfair and fair, and `StampedLock`
//! (`readLock`/`unlockRead`, `writeLock`/`unlockWrite`) as an extra
//! reference. A read loads the word under the read lock and mixes it
//! (`CS_ROUNDS` rounds, the mutex suite's short section) into a local that
//! goes to `black_box`; a write does the same and stores the word back.
//!
//! | group | what is measured |
//! |---|---|
//! | `rwlock_uncontended` | one thread: read lock + unlock, and write lock + unlock |
//! | `rwlock_contended` | T in {2, 4, 16} threads each looping one operation, a read with probability R in {100, 99, 90, 50}% (drawn by a per-thread xorshift64, [`xorshift`] from [`xorshift_seed`]`(i)`, the same sequence in Java): wall and process CPU time per operation, and each thread's operations and, of those, reads in each window (the report's spreads of reads and of writes per thread) |
//! | `rwlock_writer_wait` | 3 threads loop read sections without pause while one writer loops: lock call, acquired, write section, unlock, the section's work outside the lock; each of 10 windows (300 ms; 50 ms quick) gives the longest and the median wait from lock call to acquired. Not a criterion cell: it prints and writes its JSON line only, and runs unless a filter names another group |
//!
//! A full run of the read-write lock suite takes about 4 to 5 minutes on a
//! 2-CPU machine (48 contended cells of about 4 s each, 8 uncontended cells,
//! 4 writer-wait cells of 3 s), and `RwLockBench.java` about 3 more; the
//! quick one about 30 s and 45 s. To stay within that, the contended group
//! runs only the short critical section (the mutex suite also runs one ten
//! times longer).
//!
//! The thread-pool cells (`contended`, `io`, `mutex_contended`,
//! `mutex_unlock_fair`, `rwlock_contended`) measure windows: the workers run for a ramp, then
//! the operations completed and the process CPU clock
//! (`CLOCK_PROCESS_CPUTIME_ID`) are read at both ends of the window while
//! the measuring thread sleeps. The ping-pongs (`handoff`, `ping_pong`) read
//! the same clock around each sample's round trips, the measuring thread
//! being one of the two players. CPU time per operation therefore counts
//! every thread's spinning, yielding and parking, not only the winner's.
//!
//! # Running
//!
//! From the repository root:
//!
//! ```sh
//! CARGO_TARGET_DIR=target/bench cargo bench -p aqs-benchmark     # everything
//! AQS_BENCH_QUICK=1 CARGO_TARGET_DIR=target/bench \
//!     cargo bench -p aqs-benchmark -- io/                        # the I/O workload, quick
//! AQS_BENCH_QUICK=1 CARGO_TARGET_DIR=target/bench \
//!     cargo bench -p aqs-benchmark --bench mutex                 # the mutex suite, quick
//! AQS_BENCH_QUICK=1 CARGO_TARGET_DIR=target/bench \
//!     cargo bench -p aqs-benchmark --bench rwlock                # the read-write lock suite, quick
//! AQS_BENCH_QUICK=1 CARGO_TARGET_DIR=target/bench \
//!     benchmark/scripts/bench-jdk.sh rwlock                      # its JDK anchor, quick
//! benchmark/scripts/bench-report.sh --run   # every suite and the JDK's, then docs/bench-results.md
//! ```

pub mod harness;
mod mutex;
mod rwlock;
mod semaphore;

pub use mutex::*;
pub use rwlock::*;
pub use semaphore::*;
