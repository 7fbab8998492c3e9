//! An async service and a blocking worker pool sharing one fair semaphore:
//! at most 4 "database connections" in use at once, whether the caller is
//! a tokio task (request handlers) or a plain thread (a CPU-heavy batch job
//! that must not run on the runtime). Threads park their own thread; tasks
//! wait with a waker; both queue in one FIFO order, and nobody blocks on a
//! future.
//!
//! Run with `cargo run --example async_service --features async`.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use aqs::Semaphore;

const CONNECTIONS: usize = 4;

/// Counts connections in use and remembers the most ever in use at once.
#[derive(Default)]
struct Pool {
    in_use: AtomicUsize,
    most: AtomicUsize,
}

impl Pool {
    fn query(&self, work: Duration) {
        let now = self.in_use.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        assert!(now <= CONNECTIONS, "more connections than the limit");
        thread::sleep(work); // the database's time, on whoever holds the permit
        self.in_use.fetch_sub(1, SeqCst);
    }
}

fn main() {
    let limit = Arc::new(Semaphore::new_fair(CONNECTIONS));
    let pool = Arc::new(Pool::default());

    // The blocking worker pool: plain threads, blocking acquire.
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (limit, pool) = (Arc::clone(&limit), Arc::clone(&pool));
            thread::spawn(move || {
                for _ in 0..20 {
                    let _conn = limit.acquire().expect("never closed");
                    pool.query(Duration::from_micros(300));
                }
            })
        })
        .collect();

    // The async service: request handlers on tokio's multi-threaded runtime.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");
    let served = rt.block_on(async {
        let handlers: Vec<_> = (0..40)
            .map(|_| {
                let (limit, pool) = (Arc::clone(&limit), Arc::clone(&pool));
                tokio::spawn(async move {
                    let _conn = limit.acquire_async().await.expect("never closed");
                    // A short query: fine to run on the runtime's thread.
                    pool.query(Duration::from_micros(100));
                })
            })
            .collect();
        let mut served = 0;
        for h in handlers {
            tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .expect("a handler hung")
                .expect("a handler panicked");
            served += 1;
        }
        served
    });
    for w in workers {
        w.join().expect("a worker panicked");
    }
    assert_eq!(limit.available_permits(), CONNECTIONS);
    println!(
        "{served} requests and 60 batch queries; at most {} of {CONNECTIONS} connections in use",
        pool.most.load(SeqCst)
    );
}
