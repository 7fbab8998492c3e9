//! Who gets a mutex next (issue 35): the independent harness's mutex
//! workload (T threads loop lock, section, unlock) for fair and barging
//! mutexes side by side in one run, with what the lock did beside how fast:
//! how often it changed hands, how evenly the threads got it, and the
//! longest run of one thread's acquisitions in a row.
//!
//! ```text
//! cargo bench -p aqs-benchmark --bench fair_handoff       # 3 s a cell
//! AQS_BENCH_QUICK=1 cargo bench -p aqs-benchmark --bench fair_handoff
//! ```
//!
//! The section is the `rwlock_mix` one (20 dependent xorshift-multiply
//! rounds on a word of the worker's own, its own cache line), and the
//! holder then records itself in the mutex's value: if the previous holder
//! was another thread, that is one *change of hands*. Per cell: M ops/s,
//! process CPU time per operation, changes of hands per acquisition (a
//! strict FIFO lock with every thread always waiting changes hands on every
//! acquisition, 1.00), the per-thread spread (most acquisitions of one
//! thread over fewest), and the longest run of one thread's acquisitions
//! in a row.
//!
//! Beside the mutexes runs a reference that is not a product: a ticket lock
//! whose waiters spin (then yield) on the ticket being served. It is the
//! cheapest lock that keeps strict FIFO, with no queue and no sleeping, so
//! its cell at 2 threads bounds what any strictly FIFO lock can do on the
//! host: each acquisition is a hand-over between CPUs.

use std::cell::UnsafeCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::thread;
use std::time::Duration;

use aqs_benchmark::harness::{process_cpu_time, Padded};

/// One operation's work, on the worker's own word.
#[inline(never)]
fn section(x: &mut u64) {
    for _ in 0..20 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
}

/// What the holders record in the mutex's value.
#[derive(Default)]
struct Owner {
    last: usize,
    changes: u64,
    run: u64,
    longest: u64,
}

impl Owner {
    fn enter(&mut self, me: usize) {
        if self.last == me {
            self.run += 1;
        } else {
            self.last = me;
            self.changes += 1;
            self.run = 1;
        }
        self.longest = self.longest.max(self.run);
    }
}

/// A mutex under test: one operation around the section.
trait Contender: Sync {
    const NAME: &'static str;
    fn new() -> Self;
    fn op(&self, me: usize, x: &mut u64);
    fn into_owner(self) -> Owner;
}

macro_rules! contender {
    ($ty:ty, $name:expr $(, $unwrap:ident)?) => {
        impl Contender for $ty {
            const NAME: &'static str = $name;
            fn new() -> Self {
                <$ty>::new(Owner::default())
            }
            fn op(&self, me: usize, x: &mut u64) {
                let mut g = self.lock()$(.$unwrap())?;
                section(x);
                g.enter(me);
            }
            fn into_owner(self) -> Owner {
                self.into_inner()$(.$unwrap())?
            }
        }
    };
}
contender!(aqs::FairMutex<Owner>, "aqs FairMutex");
contender!(parking_lot::FairMutex<Owner>, "parking_lot FairMutex");
contender!(aqs::Mutex<Owner>, "aqs Mutex");
contender!(parking_lot::Mutex<Owner>, "parking_lot Mutex");
contender!(std::sync::Mutex<Owner>, "std Mutex", unwrap);

/// The strict-FIFO reference (not a product): take a ticket, spin until it
/// is served, yielding the CPU after a short spin so that oversubscribed
/// cells make progress.
struct TicketLock {
    next: AtomicU32,
    serving: AtomicU32,
    owner: UnsafeCell<Owner>,
}

// SAFETY: `owner` is only touched by the thread whose ticket is served,
// between the Acquire load that saw it served and the Release store that
// serves the next ticket.
unsafe impl Sync for TicketLock {}

impl Contender for TicketLock {
    const NAME: &'static str = "ticket lock (reference)";
    fn new() -> Self {
        TicketLock {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
            owner: UnsafeCell::new(Owner::default()),
        }
    }
    fn op(&self, me: usize, x: &mut u64) {
        let ticket = self.next.fetch_add(1, Relaxed);
        let mut spins = 0u32;
        while self.serving.load(Acquire) != ticket {
            if spins < 64 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        section(x);
        // SAFETY: our ticket is served (see `Sync` above).
        unsafe { (*self.owner.get()).enter(me) };
        self.serving.store(ticket.wrapping_add(1), Release);
    }
    fn into_owner(self) -> Owner {
        self.owner.into_inner()
    }
}

fn cell<L: Contender>(threads: usize, window: Duration) {
    let lock = Padded(L::new());
    let stop = Padded(AtomicBool::new(false));
    let (counts, cpu) = thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let (lock, stop) = (&lock, &stop);
                s.spawn(move || {
                    let mut own = Padded(i as u64 + 1);
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        lock.op(i + 1, &mut own.0);
                        n += 1;
                    }
                    black_box(own.0);
                    n
                })
            })
            .collect();
        let cpu0 = process_cpu_time();
        thread::sleep(window);
        stop.store(true, Relaxed);
        let cpu = process_cpu_time() - cpu0;
        let counts: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        (counts, cpu)
    });
    let owner = lock.0.into_owner();
    let ops: u64 = counts.iter().sum();
    let (most, fewest) = (
        counts.iter().max().copied().unwrap_or(0),
        counts.iter().min().copied().unwrap_or(0).max(1),
    );
    println!(
        "t{threads}/{:<22} {:7.2} M ops/s   CPU {:.3} us/op   changes of hands/acq {:.3}   \
         spread {:.2}   longest run {}",
        L::NAME,
        ops as f64 / window.as_secs_f64() / 1e6,
        cpu.as_secs_f64() * 1e6 / ops as f64,
        owner.changes as f64 / ops as f64,
        most as f64 / fewest as f64,
        owner.longest,
    );
}

fn main() {
    let quick = std::env::var("AQS_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let window = if quick {
        Duration::from_millis(100)
    } else {
        Duration::from_secs(3)
    };
    for threads in [2, 4, 16] {
        cell::<aqs::FairMutex<Owner>>(threads, window);
        cell::<parking_lot::FairMutex<Owner>>(threads, window);
        cell::<aqs::Mutex<Owner>>(threads, window);
        cell::<parking_lot::Mutex<Owner>>(threads, window);
        cell::<std::sync::Mutex<Owner>>(threads, window);
        cell::<TicketLock>(threads, window);
    }
}
