//! Async waiters (feature `async`) on the same queues as threads: each
//! synchronizer's async form, FIFO order across threads and tasks, cancel
//! safety (a future dropped while queued, or after a release woke it), the
//! documented hazard of a woken task that is never polled, and futures and
//! guards that a multi-threaded tokio runtime accepts. Every blocking wait
//! is bounded.

#![cfg(all(feature = "async", not(aqs_loom)))]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use aqs::{CountDownLatch, FairMutex, FairRwLock, MutexAsync, RwLockAsync, Semaphore};
use common::{join_bounded, wait_until, BOUND};
use futures_executor::block_on;

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Polls `f` once with `waker`.
fn poll_with<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

#[test]
fn semaphore_async_forms_take_and_return_permits() {
    let sem = Arc::new(Semaphore::new(3));
    block_on(async {
        let one = sem.acquire_async().await.unwrap();
        let two = sem.acquire_many_async(2).await.unwrap();
        assert_eq!((one.num_permits(), two.num_permits()), (1, 2));
        assert_eq!(sem.available_permits(), 0);
        drop((one, two));
        let owned = Arc::clone(&sem).acquire_owned_async().await.unwrap();
        let many = Arc::clone(&sem).acquire_many_owned_async(2).await.unwrap();
        assert_eq!(owned.num_permits() + many.num_permits(), 3);
        let zero = sem.acquire_many_async(0).await.unwrap();
        assert_eq!(zero.num_permits(), 0);
    });
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn closing_fails_queued_and_later_async_acquires() {
    let sem = Semaphore::new(0);
    let counter = Arc::new(Count::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut queued = Box::pin(sem.acquire_async());
    assert!(poll_with(&mut queued, &waker).is_pending());
    assert_eq!(sem.queue_length(), 1);
    sem.close();
    assert!(counter.0.load(SeqCst) >= 1, "close woke the task");
    assert!(matches!(
        poll_with(&mut queued, &waker),
        Poll::Ready(Err(_))
    ));
    assert!(block_on(sem.acquire_async()).is_err());
    assert!(block_on(sem.acquire_many_async(0)).is_err());
    assert_eq!(sem.queue_length(), 0);
}

/// On a fair semaphore, threads and tasks are served in arrival order,
/// whichever kind each is: thread, task, thread, task.
#[test]
fn fair_order_holds_across_threads_and_tasks() {
    let sem = Arc::new(Semaphore::new_fair(0));
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..4 {
        let (s, order) = (Arc::clone(&sem), Arc::clone(&order));
        waiters.push(thread::spawn(move || {
            let permit = if i % 2 == 0 {
                s.acquire().unwrap()
            } else {
                block_on(s.acquire_async()).unwrap()
            };
            order.lock().unwrap().push(i);
            permit.forget();
        }));
        wait_until("the waiter queues", || sem.queue_length() == i + 1);
    }
    for i in 0..4 {
        sem.add_permits(1);
        wait_until("the next waiter is served", || {
            order.lock().unwrap().len() == i + 1
        });
    }
    for w in waiters {
        join_bounded(w);
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
}

#[test]
fn a_future_dropped_while_queued_leaves_the_queue() {
    let sem = Semaphore::new_fair(0);
    let waker = Waker::from(Arc::new(Count::default()));
    let mut fut = Box::pin(sem.acquire_many_async(2));
    assert!(poll_with(&mut fut, &waker).is_pending());
    assert_eq!(sem.queue_length(), 1);
    drop(fut);
    assert_eq!(sem.queue_length(), 0);
    sem.add_permits(1);
    assert!(sem.try_acquire().is_ok(), "the fair queue is empty again");
}

/// A future woken by a release, then dropped without being polled, passes
/// the wake-up on: the thread queued behind it gets the permit.
#[test]
fn a_future_dropped_after_its_wake_passes_it_on() {
    let sem = Arc::new(Semaphore::new_fair(0));
    let counter = Arc::new(Count::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut fut = Box::pin(sem.acquire_async());
    assert!(poll_with(&mut fut, &waker).is_pending());
    let thread = {
        let sem = Arc::clone(&sem);
        thread::spawn(move || sem.try_acquire_for(BOUND).map(|p| p.forget()).is_ok())
    };
    wait_until("the thread queues behind the task", || {
        sem.queue_length() == 2
    });
    sem.add_permits(1);
    wait_until("the release wakes the task", || counter.0.load(SeqCst) >= 1);
    drop(fut);
    assert!(join_bounded(thread), "the wake-up was passed on");
    assert_eq!(sem.available_permits(), 0);
}

/// The documented hazard: a task woken at the head of a fair queue keeps
/// the permit that is its until it is polled, and the thread behind it
/// waits that long. Polled, it takes the permit; released, the thread gets
/// it.
#[test]
fn a_woken_task_that_is_not_polled_holds_up_the_fair_queue() {
    let sem = Arc::new(Semaphore::new_fair(0));
    let counter = Arc::new(Count::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut fut = Box::pin(sem.acquire_async());
    assert!(poll_with(&mut fut, &waker).is_pending());
    let thread = {
        let sem = Arc::clone(&sem);
        thread::spawn(move || sem.try_acquire_for(BOUND).map(|p| p.forget()).is_ok())
    };
    wait_until("the thread queues behind the task", || {
        sem.queue_length() == 2
    });
    sem.add_permits(1);
    wait_until("the release wakes the task", || counter.0.load(SeqCst) >= 1);
    assert_eq!(sem.available_permits(), 1, "the permit waits for the task");
    assert!(!thread.is_finished() || sem.available_permits() == 0);
    let Poll::Ready(Ok(permit)) = poll_with(&mut fut, &waker) else {
        panic!("the woken task takes its permit when polled");
    };
    drop(permit);
    assert!(join_bounded(thread));
}

#[test]
fn latch_wait_async_returns_at_zero() {
    let latch = Arc::new(CountDownLatch::new(2));
    let waker = Waker::from(Arc::new(Count::default()));
    let mut fut = Box::pin(latch.wait_async());
    assert!(poll_with(&mut fut, &waker).is_pending());
    let downer = {
        let latch = Arc::clone(&latch);
        thread::spawn(move || {
            latch.count_down();
            latch.count_down();
        })
    };
    join_bounded(downer);
    assert!(poll_with(&mut fut, &waker).is_ready());
    block_on(latch.wait_async()); // open: at once
}

#[test]
fn locks_can_be_awaited_beside_threads() {
    const ROUNDS: u64 = if cfg!(miri) { 5 } else { 200 };
    let m = Arc::new(FairMutex::new(0u64));
    let rw = Arc::new(FairRwLock::new(0u64));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (m, rw) = (Arc::clone(&m), Arc::clone(&rw));
            thread::spawn(move || {
                for _ in 0..ROUNDS {
                    if i % 2 == 0 {
                        *m.lock() += 1;
                        *rw.write() += 1;
                        let _ = *rw.read();
                    } else {
                        block_on(async {
                            *m.lock_async().await += 1;
                            *rw.write_async().await += 1;
                            let _ = *rw.read_async().await;
                        });
                    }
                }
            })
        })
        .collect();
    for t in threads {
        join_bounded(t);
    }
    assert_eq!((*m.lock(), *rw.read()), (4 * ROUNDS, 4 * ROUNDS));
}

/// Guards held across an `.await` on tokio's multi-threaded runtime: the
/// futures and guards are `Send`, and no update is lost.
#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's I/O driver is beyond Miri; the other tests run the futures"
)]
// Holding the guard across an await is what the test is for.
#[allow(clippy::await_holding_lock)]
fn tokio_multi_thread_accepts_futures_holding_guards() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let m = Arc::new(aqs::Mutex::new(0u64));
    let rw = Arc::new(aqs::RwLock::new(0u64));
    let sem = Arc::new(Semaphore::new(2));
    let inside = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (m, rw, sem, inside) = (m.clone(), rw.clone(), sem.clone(), inside.clone());
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let permit = sem.acquire_async().await.unwrap();
                        assert!(inside.fetch_add(1, SeqCst) < 2, "more holders than permits");
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, SeqCst);
                        drop(permit);
                        let mut g = m.lock_async().await;
                        tokio::task::yield_now().await; // a guard across an await
                        *g += 1;
                        drop(g);
                        *rw.write_async().await += 1;
                    }
                })
            })
            .collect();
        for t in tasks {
            tokio::time::timeout(BOUND, t)
                .await
                .expect("a task hung")
                .unwrap();
        }
    });
    assert_eq!((*m.lock(), *rw.read()), (400, 400));
    assert_eq!(sem.available_permits(), 2);
}

/// Tasks dropped at random points while threads and other tasks contend:
/// nothing lost, and every live waiter gets through.
#[test]
fn cancellation_storm_loses_nothing() {
    let sem = Arc::new(Semaphore::new_fair(2));
    let waker = Waker::from(Arc::new(Count::default()));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let sem = Arc::clone(&sem);
            thread::spawn(move || {
                for _ in 0..(if cfg!(miri) { 5 } else { 300 }) {
                    let _p = sem
                        .try_acquire_for(BOUND)
                        .expect("a thread waited too long");
                }
            })
        })
        .collect();
    for i in 0..(if cfg!(miri) { 30 } else { 3_000 }) {
        let mut fut = Box::pin(sem.acquire_async());
        for _ in 0..(i % 3) {
            if let Poll::Ready(permit) = poll_with(&mut fut, &waker) {
                drop(permit);
                break;
            }
        }
        drop(fut);
    }
    for t in threads {
        join_bounded(t);
    }
    assert_eq!(sem.available_permits(), 2);
    assert_eq!(sem.queue_length(), 0);
}

/// The future types are `Send`, for executors that move tasks between
/// threads.
#[test]
fn futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let (sem, latch) = (Arc::new(Semaphore::new(1)), CountDownLatch::new(0));
    let (m, rw) = (aqs::Mutex::new(()), aqs::FairRwLock::new(()));
    send(&sem.acquire_async());
    send(&Arc::clone(&sem).acquire_owned_async());
    send(&latch.wait_async());
    send(&m.lock_async());
    send(&rw.read_async());
    send(&rw.write_async());
    let _ = Duration::ZERO;
}

// ---------------------------------------------------------------------------
// tokio's own semaphore cases (tests/sync_semaphore.rs and
// sync_semaphore_owned.rs), in our words, on the async forms
// ---------------------------------------------------------------------------

#[test]
fn tokio_case_acquire_waits_for_a_release_from_another_thread() {
    let sem = Arc::new(Semaphore::new(1));
    let held = Arc::clone(&sem).try_acquire_owned().unwrap();
    let waker = Waker::from(Arc::new(Count::default()));
    let mut fut = Box::pin(sem.acquire_async());
    assert!(poll_with(&mut fut, &waker).is_pending());
    let releaser = thread::spawn(move || drop(held));
    join_bounded(releaser);
    let got = matches!(poll_with(&mut fut, &waker), Poll::Ready(Ok(_)));
    drop(fut);
    assert!(got);
}

#[test]
fn tokio_case_add_permits_serves_a_waiting_acquire_many() {
    let sem = Semaphore::new(1);
    let waker = Waker::from(Arc::new(Count::default()));
    let mut fut = Box::pin(sem.acquire_many_async(3));
    assert!(poll_with(&mut fut, &waker).is_pending());
    sem.add_permits(1);
    assert!(poll_with(&mut fut, &waker).is_pending(), "two of three");
    sem.add_permits(1);
    let Poll::Ready(Ok(permit)) = poll_with(&mut fut, &waker) else {
        panic!("three permits are there");
    };
    assert_eq!(permit.num_permits(), 3);
    drop(permit);
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn tokio_case_forget_and_merge_owned_permits() {
    let sem = Arc::new(Semaphore::new(3));
    block_on(async {
        let mut a = Arc::clone(&sem).acquire_owned_async().await.unwrap();
        let b = Arc::clone(&sem).acquire_owned_async().await.unwrap();
        a.merge(b);
        assert_eq!(a.num_permits(), 2);
        a.forget();
    });
    assert_eq!(sem.available_permits(), 1);
}

#[test]
#[should_panic(expected = "MAX_PERMITS")]
fn tokio_case_acquire_many_past_the_maximum_panics() {
    let sem = Semaphore::new(0);
    drop(sem.acquire_many_async(Semaphore::MAX_PERMITS + 1));
}

#[test]
fn tokio_case_stress_many_tasks_return_every_permit() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let sem = Arc::new(Semaphore::new(5));
    rt.block_on(async {
        let tasks: Vec<_> = (0..if cfg!(miri) { 4 } else { 200 })
            .map(|_| {
                let sem = Arc::clone(&sem);
                tokio::spawn(async move {
                    let _p = sem.acquire_owned_async().await.unwrap();
                    tokio::task::yield_now().await;
                })
            })
            .collect();
        for t in tasks {
            tokio::time::timeout(BOUND, t)
                .await
                .expect("a task hung")
                .unwrap();
        }
    });
    assert_eq!(sem.available_permits(), 5);
}

/// Threads, tasks on tokio's multi-threaded runtime and tasks on a
/// single-threaded executor queue on one fair semaphore in a known order;
/// released one permit at a time, they are served in exactly that order.
/// Then all of them hammer it at once: never more holders than permits,
/// and every permit comes back.
#[test]
#[cfg_attr(
    miri,
    ignore = "tokio's I/O driver is beyond Miri; the other tests run the futures"
)]
fn mixed_threads_tokio_tasks_and_a_local_executor_share_one_fifo() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let sem = Arc::new(Semaphore::new_fair(0));
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut threads = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..9 {
        let (s, order) = (Arc::clone(&sem), Arc::clone(&order));
        match i % 3 {
            0 => threads.push(thread::spawn(move || {
                s.acquire().unwrap().forget();
                order.lock().unwrap().push(i);
            })),
            1 => tasks.push(rt.spawn(async move {
                s.acquire_async().await.unwrap().forget();
                order.lock().unwrap().push(i);
            })),
            _ => threads.push(thread::spawn(move || {
                let mut pool = futures_executor::LocalPool::new();
                pool.run_until(async move {
                    s.acquire_async().await.unwrap().forget();
                    order.lock().unwrap().push(i);
                });
            })),
        }
        wait_until("the waiter queues", || sem.queue_length() == i + 1);
    }
    for i in 0..9 {
        sem.add_permits(1);
        wait_until("the next waiter is served", || {
            order.lock().unwrap().len() == i + 1
        });
    }
    assert_eq!(*order.lock().unwrap(), (0..9).collect::<Vec<_>>());
    for t in threads {
        join_bounded(t);
    }
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });

    // Conservation under a free-for-all.
    sem.add_permits(3);
    let inside = Arc::new(AtomicUsize::new(0));
    let check = |inside: &AtomicUsize| {
        assert!(inside.fetch_add(1, SeqCst) < 3, "more holders than permits");
        inside.fetch_sub(1, SeqCst);
    };
    let mut threads = Vec::new();
    for k in 0..4 {
        let (s, inside) = (Arc::clone(&sem), Arc::clone(&inside));
        threads.push(thread::spawn(move || {
            for _ in 0..200 {
                if k % 2 == 0 {
                    let _p = s.try_acquire_for(BOUND).expect("a thread waited too long");
                    check(&inside);
                } else {
                    let mut pool = futures_executor::LocalPool::new();
                    pool.run_until(async {
                        let _p = s.acquire_async().await.unwrap();
                        check(&inside);
                    });
                }
            }
        }));
    }
    rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (s, inside) = (Arc::clone(&sem), Arc::clone(&inside));
                tokio::spawn(async move {
                    for _ in 0..100 {
                        let _p = s.acquire_async().await.unwrap();
                        check(&inside);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            tokio::time::timeout(BOUND, t)
                .await
                .expect("a task hung")
                .unwrap();
        }
    });
    for t in threads {
        join_bounded(t);
    }
    assert_eq!(sem.available_permits(), 3);
    assert_eq!(sem.queue_length(), 0);
}
