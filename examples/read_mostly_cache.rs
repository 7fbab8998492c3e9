//! A read-mostly cache: many reader threads look prices up under an
//! `RwLock`'s read lock while one refresher replaces the whole table under
//! the write lock. A `CountDownLatch` is the starting gun, so every thread
//! begins at once, and a second one tells the main thread when all readers
//! are done. Readers never see a table half replaced, and the refresher is
//! not starved by the stream of readers: arriving readers step back while it
//! waits first in line.
//!
//! Run with `cargo run --example read_mostly_cache`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use aqs::{CountDownLatch, RwLock};

/// A price table: every entry of one generation has the same price, so a
/// reader can tell a table replaced halfway.
struct Cache {
    table: RwLock<HashMap<&'static str, u64>>,
}

const ITEMS: [&str; 4] = ["apples", "bread", "coffee", "dates"];

impl Cache {
    fn new() -> Self {
        let table = ITEMS.iter().map(|item| (*item, 0)).collect();
        Cache {
            table: RwLock::new(table),
        }
    }

    /// Reads every price in one read lock; returns the generation seen.
    fn snapshot(&self) -> u64 {
        let table = self.table.read();
        let first = table[ITEMS[0]];
        assert!(
            ITEMS.iter().all(|item| table[item] == first),
            "a reader saw a table half replaced"
        );
        first
    }

    /// Replaces the whole table in one write lock.
    fn refresh(&self, generation: u64) {
        let fresh = ITEMS.iter().map(|item| (*item, generation)).collect();
        *self.table.write() = fresh;
    }
}

fn main() {
    const READERS: usize = 6;
    let cache = Arc::new(Cache::new());
    let start = Arc::new(CountDownLatch::new(1));
    let readers_done = Arc::new(CountDownLatch::new(READERS));
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));

    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (cache, start, done) = (cache.clone(), start.clone(), readers_done.clone());
            let (stop, lookups) = (stop.clone(), lookups.clone());
            thread::spawn(move || {
                start.wait();
                let mut last = 0;
                while !stop.load(Relaxed) {
                    let seen = cache.snapshot();
                    assert!(seen >= last, "generations only move forward");
                    last = seen;
                    lookups.fetch_add(1, Relaxed);
                }
                done.count_down();
            })
        })
        .collect();

    let refresher = {
        let (cache, start) = (cache.clone(), start.clone());
        thread::spawn(move || {
            start.wait();
            let mut longest = Duration::ZERO;
            for generation in 1..=50 {
                let asked = Instant::now();
                cache.refresh(generation);
                longest = longest.max(asked.elapsed());
                thread::sleep(Duration::from_millis(2));
            }
            longest
        })
    };

    start.count_down(); // everyone goes
    let longest = refresher.join().expect("the refresher panicked");
    stop.store(true, Relaxed);
    assert!(
        readers_done.wait_for(Duration::from_secs(10)),
        "readers did not finish"
    );
    for r in readers {
        r.join().expect("a reader panicked");
    }
    assert_eq!(cache.snapshot(), 50);
    println!(
        "{} lookups by {READERS} readers beside 50 refreshes; longest refresh {:?}",
        lookups.load(Relaxed),
        longest
    );
}
