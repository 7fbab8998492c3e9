//! A bounded blocking queue in the shape of the JDK's `ArrayBlockingQueue`
//! (fair mode): one `FairMutex` and two `Condvar`s, "not full" and "not
//! empty". Producers block while the queue is full, consumers while it is
//! empty, and both are served in arrival order.
//!
//! Run with `cargo run --example blocking_queue`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use aqs::{Condvar, FairMutex};

/// A FIFO queue of at most `capacity` items.
struct BlockingQueue<T> {
    items: FairMutex<VecDeque<T>>,
    capacity: usize,
    not_full: Condvar,
    not_empty: Condvar,
}

impl<T> BlockingQueue<T> {
    fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a queue needs room for one item");
        BlockingQueue {
            items: FairMutex::new(VecDeque::with_capacity(capacity)),
            capacity,
            not_full: Condvar::new(),
            not_empty: Condvar::new(),
        }
    }

    /// Adds `item`, waiting while the queue is full (`put`).
    fn put(&self, item: T) {
        let mut items = self.items.lock();
        self.not_full
            .wait_while(&mut items, |items| items.len() == self.capacity);
        items.push_back(item);
        drop(items);
        self.not_empty.notify_one();
    }

    /// Adds `item` unless the queue stays full for `timeout` (`offer`);
    /// gives the item back if it could not.
    fn offer(&self, item: T, timeout: Duration) -> Result<(), T> {
        let mut items = self.items.lock();
        let full = |items: &mut VecDeque<T>| items.len() == self.capacity;
        if self
            .not_full
            .wait_while_for(&mut items, full, timeout)
            .timed_out()
        {
            return Err(item);
        }
        items.push_back(item);
        drop(items);
        self.not_empty.notify_one();
        Ok(())
    }

    /// Removes the oldest item, waiting while the queue is empty (`take`).
    fn take(&self) -> T {
        let mut items = self.items.lock();
        self.not_empty
            .wait_while(&mut items, |items| items.is_empty());
        let item = items.pop_front().expect("not empty");
        drop(items);
        self.not_full.notify_one();
        item
    }
}

fn main() {
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 10_000;
    let queue = Arc::new(BlockingQueue::new(16));
    let start = Instant::now();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                let mut retries = 0;
                for i in 0..PER_PRODUCER {
                    let mut item = (p, i);
                    // Half the producers use the timed form and retry.
                    if p % 2 == 1 {
                        while let Err(back) = queue.offer(item, Duration::from_micros(200)) {
                            item = back;
                            retries += 1;
                        }
                    } else {
                        queue.put(item);
                    }
                }
                retries
            })
        })
        .collect();

    let consumer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            // Items of one producer arrive in the order it put them.
            let mut next = [0; PRODUCERS];
            for _ in 0..PRODUCERS * PER_PRODUCER {
                let (p, i) = queue.take();
                assert_eq!(i, next[p], "producer {p}'s items out of order");
                next[p] += 1;
            }
            next
        })
    };

    let retries: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();
    let received = consumer.join().unwrap();
    assert!(received.iter().all(|&n| n == PER_PRODUCER));
    println!(
        "moved {} items through a 16-slot queue in {:?} ({} timed offers retried)",
        PRODUCERS * PER_PRODUCER,
        start.elapsed(),
        retries
    );
}
