//! The benchmark suites of `aqs`: `aqs::Semaphore`, and `aqs::Mutex` and
//! `aqs::FairMutex`, each beside its peers in one run, every contender
//! driven through the same code.
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
//! The thread-pool cells (`contended`, `io`, `mutex_contended`,
//! `mutex_unlock_fair`) measure windows: the workers run for a ramp, then
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
//! benchmark/scripts/bench-report.sh --run   # both suites and the JDK's, then docs/bench-results.md
//! ```

pub mod harness;
mod mutex;
mod semaphore;

pub use mutex::*;
pub use semaphore::*;
