//! A bounded pool of (fake) database connections, limited by a semaphore.
//!
//! ```text
//! cargo run --example connection_pool
//! ```
//!
//! The pool owns `POOL_SIZE` connections and a semaphore with one permit per
//! connection. Checking a connection out first takes a permit, waiting at most
//! `CHECKOUT_TIMEOUT`; holding a permit guarantees that an idle connection is
//! there to take. The returned guard gives the connection back when dropped,
//! and only then its permit. Many worker threads send requests; some are
//! slow, so others sometimes time out waiting for a connection.
//!
//! The semaphore is fair: a request that has waited longest gets the next free
//! connection, so no request waits much longer than its turn. A nonfair
//! semaphore (`Semaphore::new`) would give more throughput under heavy load,
//! at the price of letting newcomers overtake waiting requests.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use aqs::{Semaphore, SemaphorePermit, TryAcquireError};

const POOL_SIZE: usize = 4;
const WORKERS: usize = 12;
const REQUESTS_PER_WORKER: usize = 20;
const CHECKOUT_TIMEOUT: Duration = Duration::from_millis(20);

/// A fake connection: it only counts the queries it ran.
#[derive(Debug)]
struct Connection {
    id: usize,
    queries: usize,
}

impl Connection {
    fn query(&mut self, cost: Duration) {
        thread::sleep(cost);
        self.queries += 1;
    }
}

struct Pool {
    idle: Mutex<Vec<Connection>>,
    /// One permit per idle connection.
    permits: Semaphore,
    /// Bookkeeping for the summary: connections out now, and the most at once.
    checked_out: AtomicUsize,
    max_checked_out: AtomicUsize,
}

/// A checked-out connection; dropping it returns the connection to the pool.
struct PooledConnection<'a> {
    pool: &'a Pool,
    conn: Option<Connection>,
    /// Released after `drop` below has put the connection back, so the next
    /// permit holder always finds an idle connection.
    _permit: SemaphorePermit<'a>,
}

impl Pool {
    fn new(size: usize) -> Self {
        Pool {
            idle: Mutex::new((0..size).map(|id| Connection { id, queries: 0 }).collect()),
            permits: Semaphore::new_fair(size),
            checked_out: AtomicUsize::new(0),
            max_checked_out: AtomicUsize::new(0),
        }
    }

    /// Waits up to `timeout` for a connection.
    fn checkout(&self, timeout: Duration) -> Result<PooledConnection<'_>, TryAcquireError> {
        let permit = self.permits.try_acquire_for(timeout)?;
        let conn = self
            .idle
            .lock()
            .unwrap()
            .pop()
            .expect("a permit guarantees an idle connection");
        let now = self.checked_out.fetch_add(1, SeqCst) + 1;
        self.max_checked_out.fetch_max(now, SeqCst);
        Ok(PooledConnection {
            pool: self,
            conn: Some(conn),
            _permit: permit,
        })
    }

    /// Refuses every later checkout; requests still waiting get an error.
    fn shut_down(&self) {
        self.permits.close();
    }
}

impl Drop for PooledConnection<'_> {
    fn drop(&mut self) {
        self.pool.checked_out.fetch_sub(1, SeqCst);
        if let Some(conn) = self.conn.take() {
            self.pool.idle.lock().unwrap().push(conn);
        }
        // `_permit` is dropped after this, returning the permit.
    }
}

impl Deref for PooledConnection<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until drop")
    }
}

impl DerefMut for PooledConnection<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("present until drop")
    }
}

fn main() {
    let pool = Pool::new(POOL_SIZE);
    let served = AtomicUsize::new(0);
    let timeouts = AtomicUsize::new(0);
    let start = Instant::now();

    thread::scope(|s| {
        for worker in 0..WORKERS {
            let (pool, served, timeouts) = (&pool, &served, &timeouts);
            s.spawn(move || {
                for request in 0..REQUESTS_PER_WORKER {
                    // Every so often a request runs a slow report.
                    let cost = if (worker + request) % 11 == 0 { 30 } else { 1 };
                    match pool.checkout(CHECKOUT_TIMEOUT) {
                        Ok(mut conn) => {
                            conn.query(Duration::from_millis(cost));
                            served.fetch_add(1, Relaxed);
                        }
                        Err(TryAcquireError::NoPermits) => {
                            timeouts.fetch_add(1, Relaxed);
                        }
                        Err(_closed) => {
                            unreachable!("the pool is shut down only at the end")
                        }
                    }
                }
            });
        }
    });
    let elapsed = start.elapsed();

    pool.shut_down();
    let late = pool.checkout(CHECKOUT_TIMEOUT).err();

    let (served, timeouts) = (served.into_inner(), timeouts.into_inner());
    let max = pool.max_checked_out.load(SeqCst);
    let mut idle = pool.idle.into_inner().unwrap();
    idle.sort_by_key(|c| c.id);
    let per_connection: Vec<String> = idle
        .iter()
        .map(|c| format!("#{}: {}", c.id, c.queries))
        .collect();

    println!(
        "{WORKERS} workers sent {} requests to a pool of {POOL_SIZE} connections",
        WORKERS * REQUESTS_PER_WORKER
    );
    let line = |label: &str, value: String| println!("  {label:<28}{value}");
    line("served:", served.to_string());
    line(
        &format!("timed out after {CHECKOUT_TIMEOUT:?}:"),
        timeouts.to_string(),
    );
    line(
        "most checked out at once:",
        format!("{max} (limit {POOL_SIZE})"),
    );
    line("queries per connection:", per_connection.join(", "));
    line(
        "a request after shutdown:",
        late.map_or("served?!".to_string(), |e| e.to_string()),
    );
    line("took:", format!("{elapsed:.0?}"));

    assert!(max <= POOL_SIZE, "the pool limit was exceeded");
    assert_eq!(served + timeouts, WORKERS * REQUESTS_PER_WORKER);
    assert_eq!(idle.len(), POOL_SIZE, "a connection was not returned");
    assert_eq!(idle.iter().map(|c| c.queries).sum::<usize>(), served);
    assert_eq!(late, Some(TryAcquireError::Closed));
}
