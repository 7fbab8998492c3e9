//! Model-based tests: random operation sequences run against a `Semaphore`
//! and against a trivially correct model, comparing every observable.
//!
//! * `sequential_ops_match_the_model` (fair and nonfair): one thread, every
//!   public operation. A blocking acquire is issued only when the model says
//!   it succeeds at once (or fails at once because the semaphore is closed),
//!   so nothing ever waits and the queue stays empty.
//! * `concurrent_ops_conserve_permits` (fair and nonfair): a few threads run
//!   random operations with bounded waits; no moment has more permits held
//!   than were ever put in, and at the end the count balances:
//!   `available = initial + added - forgotten(sem) - drained - forgotten(permits)`.
//!
//! Case counts are modest (tiny under Miri); failure persistence is off so
//! the tests run on a read-only file system.

// These tests run real threads and clocks; under `--cfg aqs_loom` the crate's
// atomics are loom's, which only work inside `loom::model` (the crate's
// `loom_models`).
#![cfg(not(aqs_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Once};
use std::thread;
use std::time::{Duration, Instant};

use aqs::{AcquireError, OwnedSemaphorePermit, Semaphore, SemaphorePermit, TryAcquireError};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;

/// The error a blocking acquire on a closed semaphore returns (it cannot be
/// built outside the crate).
fn closed_error() -> AcquireError {
    let sem = Semaphore::new(0);
    sem.close();
    sem.acquire().unwrap_err()
}

/// proptest configuration: `cases` normally, a handful under Miri.
fn config(cases: u32, miri_cases: u32) -> Config {
    Config {
        cases: if cfg!(miri) { miri_cases } else { cases },
        failure_persistence: None,
        // Shrinking a concurrent failure replays schedules; keep it bounded.
        max_shrink_iters: if cfg!(miri) { 0 } else { 256 },
        ..Config::default()
    }
}

/// The expected overflow panics of `add_permits` are part of the model; keep
/// them out of the test output, and let every other panic through.
fn quiet_overflow_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !message.contains("exceed Semaphore::MAX_PERMITS") {
                default(info);
            }
        }));
    });
}

// ---------------------------------------------------------------------------
// Sequential model
// ---------------------------------------------------------------------------

/// Which permit type an operation uses.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Borrowed,
    Owned,
}

/// One operation. `n: None` picks the single-permit method (`acquire`,
/// `try_acquire`, ...), `Some(n)` the `_many` one.
#[derive(Debug, Clone)]
enum Op {
    /// `acquire`/`acquire_many`(`_owned`): only issued when it cannot block.
    Acquire {
        n: Option<usize>,
        kind: Kind,
    },
    /// `try_acquire`/`try_acquire_many`(`_owned`).
    TryAcquire {
        n: Option<usize>,
        kind: Kind,
    },
    /// `try_acquire(_many)(_owned)_for(ZERO)` or
    /// `try_acquire(_many)(_owned)_until(now)`.
    TimedZero {
        n: Option<usize>,
        until: bool,
        kind: Kind,
    },
    AddPermits(usize),
    /// `add_permits` of one more than `MAX_PERMITS` minus the permits in
    /// existence (available or held): must panic and change nothing.
    AddOverflow,
    /// `add_permits` up to exactly `MAX_PERMITS` in existence: must succeed,
    /// and every held permit must still come back without a panic.
    AddToMax,
    ForgetPermits(usize),
    DrainPermits,
    Close,
    DropPermit {
        kind: Kind,
        i: Index,
    },
    ForgetPermit {
        kind: Kind,
        i: Index,
    },
    Split {
        kind: Kind,
        i: Index,
        n: usize,
    },
    Merge {
        kind: Kind,
        i: Index,
        j: Index,
    },
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Borrowed), Just(Kind::Owned)]
}

fn count() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![1 => Just(None), 3 => (0..=4usize).prop_map(Some)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (count(), kind()).prop_map(|(n, kind)| Op::Acquire { n, kind }),
        4 => (count(), kind()).prop_map(|(n, kind)| Op::TryAcquire { n, kind }),
        2 => (count(), any::<bool>(), kind()).prop_map(|(n, until, kind)| Op::TimedZero { n, until, kind }),
        3 => (0..=5usize).prop_map(Op::AddPermits),
        1 => Just(Op::AddOverflow),
        1 => Just(Op::AddToMax),
        2 => prop_oneof![0..=4usize, Just(usize::MAX)].prop_map(Op::ForgetPermits),
        1 => Just(Op::DrainPermits),
        1 => Just(Op::Close),
        4 => (kind(), any::<Index>()).prop_map(|(kind, i)| Op::DropPermit { kind, i }),
        1 => (kind(), any::<Index>()).prop_map(|(kind, i)| Op::ForgetPermit { kind, i }),
        2 => (kind(), any::<Index>(), 0..=3usize).prop_map(|(kind, i, n)| Op::Split { kind, i, n }),
        2 => (kind(), any::<Index>(), any::<Index>()).prop_map(|(kind, i, j)| Op::Merge { kind, i, j }),
    ]
}

/// The trivially correct model: a count, a flag, and the permits held.
#[derive(Debug, Default)]
struct Model {
    available: usize,
    closed: bool,
    borrowed: Vec<usize>,
    owned: Vec<usize>,
}

impl Model {
    /// What an immediate acquire of `n` returns (and takes, on success).
    fn try_take(&mut self, n: usize) -> Result<usize, TryAcquireError> {
        if self.closed {
            Err(TryAcquireError::Closed)
        } else if n <= self.available {
            self.available -= n;
            Ok(n)
        } else {
            Err(TryAcquireError::NoPermits)
        }
    }

    /// The permits in existence: available plus held.
    fn total(&self) -> usize {
        self.available + self.borrowed.iter().sum::<usize>() + self.owned.iter().sum::<usize>()
    }

    fn held(&mut self, kind: Kind) -> &mut Vec<usize> {
        match kind {
            Kind::Borrowed => &mut self.borrowed,
            Kind::Owned => &mut self.owned,
        }
    }
}

/// The permits the real semaphore handed out, index for index with the model.
struct Held<'a> {
    borrowed: Vec<SemaphorePermit<'a>>,
    owned: Vec<OwnedSemaphorePermit>,
}

/// Removes element `i` of `real` and of `model` alike.
fn take_at<T>(real: &mut Vec<T>, model: &mut Vec<usize>, i: usize) -> (T, usize) {
    (real.swap_remove(i), model.swap_remove(i))
}

fn sequential(fair: bool, initial: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    quiet_overflow_panics();
    let sem = Arc::new(if fair {
        Semaphore::new_fair(initial)
    } else {
        Semaphore::new(initial)
    });
    let mut model = Model {
        available: initial,
        ..Model::default()
    };
    let mut held = Held {
        borrowed: Vec::new(),
        owned: Vec::new(),
    };

    for (step, op) in ops.iter().enumerate() {
        match op.clone() {
            Op::Acquire { n, kind } => {
                let want = n.unwrap_or(1);
                if !model.closed && want > model.available {
                    continue; // would block forever: single-threaded, nobody releases
                }
                let expected = model.try_take(want).map_err(|_| closed_error());
                match kind {
                    Kind::Borrowed => {
                        let got = match n {
                            None => sem.acquire(),
                            Some(n) => sem.acquire_many(n),
                        };
                        prop_assert_eq!(
                            got.as_ref().map(|p| p.num_permits()).map_err(|e| *e),
                            expected,
                            "{:?}",
                            op
                        );
                        if let Ok(p) = got {
                            held.borrowed.push(p);
                            model.borrowed.push(want);
                        }
                    }
                    Kind::Owned => {
                        let got = match n {
                            None => Arc::clone(&sem).acquire_owned(),
                            Some(n) => Arc::clone(&sem).acquire_many_owned(n),
                        };
                        prop_assert_eq!(
                            got.as_ref().map(|p| p.num_permits()).map_err(|e| *e),
                            expected,
                            "{:?}",
                            op
                        );
                        if let Ok(p) = got {
                            prop_assert!(Arc::ptr_eq(p.semaphore(), &sem));
                            held.owned.push(p);
                            model.owned.push(want);
                        }
                    }
                }
            }
            Op::TryAcquire { n, kind } => {
                let want = n.unwrap_or(1);
                let expected = model.try_take(want);
                match kind {
                    Kind::Borrowed => {
                        let got = match n {
                            None => sem.try_acquire(),
                            Some(n) => sem.try_acquire_many(n),
                        };
                        prop_assert_eq!(
                            got.as_ref().map(|p| p.num_permits()).map_err(|e| *e),
                            expected,
                            "{:?}",
                            op
                        );
                        if let Ok(p) = got {
                            held.borrowed.push(p);
                            model.borrowed.push(want);
                        }
                    }
                    Kind::Owned => {
                        let got = match n {
                            None => Arc::clone(&sem).try_acquire_owned(),
                            Some(n) => Arc::clone(&sem).try_acquire_many_owned(n),
                        };
                        prop_assert_eq!(
                            got.as_ref().map(|p| p.num_permits()).map_err(|e| *e),
                            expected,
                            "{:?}",
                            op
                        );
                        if let Ok(p) = got {
                            held.owned.push(p);
                            model.owned.push(want);
                        }
                    }
                }
            }
            Op::TimedZero { n, until, kind } => {
                let want = n.unwrap_or(1);
                let expected = model.try_take(want);
                // A zero timeout or a deadline that has passed by the time the
                // call looks at it: takes what is free now, never queues.
                match kind {
                    Kind::Borrowed => {
                        let got = match (n, until) {
                            (None, false) => sem.try_acquire_for(Duration::ZERO),
                            (Some(n), false) => sem.try_acquire_many_for(n, Duration::ZERO),
                            (None, true) => sem.try_acquire_until(Instant::now()),
                            (Some(n), true) => sem.try_acquire_many_until(n, Instant::now()),
                        };
                        prop_assert_eq!(
                            got.as_ref().map(|p| p.num_permits()).map_err(|e| *e),
                            expected,
                            "{:?}",
                            op
                        );
                        if let Ok(p) = got {
                            held.borrowed.push(p);
                            model.borrowed.push(want);
                        }
                    }
                    Kind::Owned => {
                        let sem = Arc::clone(&sem);
                        let got = match (n, until) {
                            (None, false) => sem.try_acquire_owned_for(Duration::ZERO),
                            (Some(n), false) => sem.try_acquire_many_owned_for(n, Duration::ZERO),
                            (None, true) => sem.try_acquire_owned_until(Instant::now()),
                            (Some(n), true) => sem.try_acquire_many_owned_until(n, Instant::now()),
                        };
                        prop_assert_eq!(
                            got.as_ref().map(|p| p.num_permits()).map_err(|e| *e),
                            expected,
                            "{:?}",
                            op
                        );
                        if let Ok(p) = got {
                            held.owned.push(p);
                            model.owned.push(want);
                        }
                    }
                }
            }
            Op::AddPermits(n) if model.total() + n > Semaphore::MAX_PERMITS => {
                let result = panic::catch_unwind(AssertUnwindSafe(|| sem.add_permits(n)));
                prop_assert!(
                    result.is_err(),
                    "add_permits({}) over {} in existence did not panic",
                    n,
                    model.total()
                );
            }
            Op::AddPermits(n) => {
                sem.add_permits(n);
                model.available += n;
            }
            Op::AddOverflow => {
                let n = Semaphore::MAX_PERMITS - model.total() + 1;
                let result = panic::catch_unwind(AssertUnwindSafe(|| sem.add_permits(n)));
                prop_assert!(
                    result.is_err(),
                    "add_permits({}) over {} in existence did not panic",
                    n,
                    model.total()
                );
            }
            Op::AddToMax => {
                let n = Semaphore::MAX_PERMITS - model.total();
                sem.add_permits(n);
                model.available += n;
            }
            Op::ForgetPermits(n) => {
                let expected = n.min(model.available);
                prop_assert_eq!(sem.forget_permits(n), expected, "{:?}", op);
                model.available -= expected;
            }
            Op::DrainPermits => {
                prop_assert_eq!(sem.drain_permits(), model.available);
                model.available = 0;
            }
            Op::Close => {
                sem.close();
                model.closed = true;
            }
            Op::DropPermit { kind, i } => {
                let list = model.held(kind);
                if list.is_empty() {
                    continue;
                }
                let i = i.index(list.len());
                let permits = match kind {
                    Kind::Borrowed => take_at(&mut held.borrowed, &mut model.borrowed, i).1,
                    Kind::Owned => take_at(&mut held.owned, &mut model.owned, i).1,
                };
                // Dropped at the end of the statement above: the permits are back.
                model.available += permits;
            }
            Op::ForgetPermit { kind, i } => {
                let list = model.held(kind);
                if list.is_empty() {
                    continue;
                }
                let i = i.index(list.len());
                match kind {
                    Kind::Borrowed => take_at(&mut held.borrowed, &mut model.borrowed, i)
                        .0
                        .forget(),
                    Kind::Owned => take_at(&mut held.owned, &mut model.owned, i).0.forget(),
                }
            }
            Op::Split { kind, i, n } => {
                let list = model.held(kind);
                if list.is_empty() {
                    continue;
                }
                let i = i.index(list.len());
                let has = list[i];
                let fits = n <= has;
                let split = match kind {
                    Kind::Borrowed => {
                        let part = held.borrowed[i].split(n);
                        let got = part.as_ref().map(|p| p.num_permits());
                        held.borrowed.extend(part);
                        got
                    }
                    Kind::Owned => {
                        let part = held.owned[i].split(n);
                        let got = part.as_ref().map(|p| p.num_permits());
                        held.owned.extend(part);
                        got
                    }
                };
                prop_assert_eq!(split, fits.then_some(n), "split({}) of {}", n, has);
                if fits {
                    let list = model.held(kind);
                    list[i] -= n;
                    list.push(n);
                }
            }
            Op::Merge { kind, i, j } => {
                let len = model.held(kind).len();
                if len < 2 {
                    continue;
                }
                let (i, j) = (i.index(len), j.index(len));
                if i == j {
                    continue;
                }
                // Take `j` out first; `swap_remove` may move the last element
                // into `j`, so find `i` again if it was that last one.
                let i = if i == len - 1 { j } else { i };
                match kind {
                    Kind::Borrowed => {
                        let (other, permits) = take_at(&mut held.borrowed, &mut model.borrowed, j);
                        held.borrowed[i].merge(other);
                        model.borrowed[i] += permits;
                    }
                    Kind::Owned => {
                        let (other, permits) = take_at(&mut held.owned, &mut model.owned, j);
                        held.owned[i].merge(other);
                        model.owned[i] += permits;
                    }
                }
            }
        }
        check(&sem, fair, &model, &held)
            .map_err(|e| TestCaseError::fail(format!("after step {step} ({op:?}): {e}")))?;
    }

    // Give everything back: the count must come out exactly.
    let outstanding: usize = model.borrowed.iter().chain(&model.owned).sum();
    drop(held);
    prop_assert_eq!(sem.available_permits(), model.available + outstanding);
    prop_assert_eq!(Arc::strong_count(&sem), 1, "an owned permit leaked its Arc");
    Ok(())
}

/// Compares every observable of the semaphore with the model.
fn check(
    sem: &Arc<Semaphore>,
    fair: bool,
    model: &Model,
    held: &Held<'_>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        sem.available_permits(),
        model.available,
        "available_permits"
    );
    prop_assert_eq!(sem.is_closed(), model.closed, "is_closed");
    prop_assert_eq!(sem.is_fair(), fair, "is_fair");
    prop_assert_eq!(
        sem.queue_length(),
        0,
        "queue_length of a single-threaded run"
    );
    prop_assert!(
        !sem.has_queued_threads(),
        "has_queued_threads of a single-threaded run"
    );
    let borrowed: Vec<usize> = held
        .borrowed
        .iter()
        .map(SemaphorePermit::num_permits)
        .collect();
    prop_assert_eq!(&borrowed, &model.borrowed, "borrowed permit counts");
    let owned: Vec<usize> = held
        .owned
        .iter()
        .map(OwnedSemaphorePermit::num_permits)
        .collect();
    prop_assert_eq!(&owned, &model.owned, "owned permit counts");
    prop_assert_eq!(
        Arc::strong_count(sem),
        1 + held.owned.len(),
        "Arc count vs owned permits"
    );
    let debug = format!("{sem:?}");
    prop_assert!(
        debug.contains(&format!("permits: {}", model.available)),
        "{}",
        debug
    );
    prop_assert!(
        debug.contains(&format!("closed: {}", model.closed)),
        "{}",
        debug
    );
    Ok(())
}

fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 0..=max)
}

proptest! {
    #![proptest_config(config(256, 3))]

    #[test]
    fn sequential_ops_match_the_model_nonfair(initial in 0..=6usize, ops in ops(if cfg!(miri) { 16 } else { 64 })) {
        sequential(false, initial, &ops)?;
    }

    #[test]
    fn sequential_ops_match_the_model_fair(initial in 0..=6usize, ops in ops(if cfg!(miri) { 16 } else { 64 })) {
        sequential(true, initial, &ops)?;
    }
}

// ---------------------------------------------------------------------------
// Concurrent conservation
// ---------------------------------------------------------------------------

/// A wait that must not time out unless something is lost.
const GENEROUS: Duration = Duration::from_secs(10);
/// How long the main thread waits for all workers before calling it a hang.
const WATCHDOG: Duration = Duration::from_secs(120);

/// One thread's operation.
#[derive(Debug, Clone)]
enum COp {
    /// `try_acquire_many_for(n, wait)`: may time out; kept on success.
    Timed {
        n: usize,
        wait_us: u64,
    },
    /// `try_acquire_many(n)`: kept on success.
    Try {
        n: usize,
        kind: Kind,
    },
    /// Drop a held permit.
    Release(Index),
    /// Forget a held permit.
    ForgetHeld(Index),
    /// Split `n` off a held permit.
    Split(Index, usize),
    /// Merge two held permits of the same kind.
    Merge(Index, Index),
    AddPermits(usize),
    ForgetPermits(usize),
    DrainPermits,
    Close,
    Yield,
}

fn cop() -> impl Strategy<Value = COp> {
    prop_oneof![
        6 => (1..=3usize, 0..2_000u64).prop_map(|(n, wait_us)| COp::Timed { n, wait_us }),
        3 => (0..=3usize, kind()).prop_map(|(n, kind)| COp::Try { n, kind }),
        6 => any::<Index>().prop_map(COp::Release),
        1 => any::<Index>().prop_map(COp::ForgetHeld),
        1 => (any::<Index>(), 0..=2usize).prop_map(|(i, n)| COp::Split(i, n)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(i, j)| COp::Merge(i, j)),
        2 => (1..=3usize).prop_map(COp::AddPermits),
        1 => (0..=2usize).prop_map(COp::ForgetPermits),
        1 => Just(COp::DrainPermits),
        1 => prop_oneof![19 => Just(COp::Yield), 1 => Just(COp::Close)],
    ]
}

/// What one thread did to the count.
#[derive(Debug, Default)]
struct Tally {
    added: usize,
    forgot: usize,
    drained: usize,
    forgotten_held: usize,
}

/// A held permit of either kind.
enum AnyPermit<'a> {
    Borrowed(SemaphorePermit<'a>),
    Owned(OwnedSemaphorePermit),
}

impl AnyPermit<'_> {
    fn num_permits(&self) -> usize {
        match self {
            AnyPermit::Borrowed(p) => p.num_permits(),
            AnyPermit::Owned(p) => p.num_permits(),
        }
    }
}

/// Shared between the workers: the safety check's bookkeeping.
struct Shared {
    sem: Arc<Semaphore>,
    initial: usize,
    /// Permits ever put in by `add_permits`, counted *before* the call.
    added: AtomicUsize,
    /// Permits held now, counted *after* an acquire and *before* a release,
    /// so it never exceeds what the workers really hold.
    in_use: AtomicUsize,
}

impl Shared {
    fn took(&self, n: usize) {
        let now = self.in_use.fetch_add(n, SeqCst) + n;
        let ever = self.initial + self.added.load(SeqCst);
        assert!(
            now <= ever,
            "{now} permits held but only {ever} ever existed"
        );
    }

    fn gave_back(&self, n: usize) {
        self.in_use.fetch_sub(n, SeqCst);
    }
}

fn worker(shared: &Shared, ops: &[COp]) -> Tally {
    let sem = &*shared.sem;
    let mut tally = Tally::default();
    let mut held: Vec<AnyPermit<'_>> = Vec::new();
    let mut closed_by_me = false;
    for op in ops {
        match *op {
            COp::Timed { n, wait_us } => {
                // The only bounded blocking acquire (there is no timed owned one).
                let got = sem
                    .try_acquire_many_for(n, Duration::from_micros(wait_us))
                    .map(AnyPermit::Borrowed);
                keep(shared, &mut held, got, n, closed_by_me);
            }
            COp::Try { n, kind } => {
                let got = match kind {
                    Kind::Borrowed => sem.try_acquire_many(n).map(AnyPermit::Borrowed),
                    Kind::Owned => Arc::clone(&shared.sem)
                        .try_acquire_many_owned(n)
                        .map(AnyPermit::Owned),
                };
                keep(shared, &mut held, got, n, closed_by_me);
            }
            COp::Release(i) if !held.is_empty() => {
                let p = held.swap_remove(i.index(held.len()));
                shared.gave_back(p.num_permits());
                drop(p);
            }
            COp::ForgetHeld(i) if !held.is_empty() => {
                let p = held.swap_remove(i.index(held.len()));
                let n = p.num_permits();
                shared.gave_back(n);
                tally.forgotten_held += n;
                match p {
                    AnyPermit::Borrowed(p) => p.forget(),
                    AnyPermit::Owned(p) => p.forget(),
                }
            }
            COp::Split(i, n) if !held.is_empty() => {
                let i = i.index(held.len());
                let has = held[i].num_permits();
                let part = match &mut held[i] {
                    AnyPermit::Borrowed(p) => p.split(n).map(AnyPermit::Borrowed),
                    AnyPermit::Owned(p) => p.split(n).map(AnyPermit::Owned),
                };
                assert_eq!(part.is_some(), n <= has, "split({n}) of a permit of {has}");
                held.extend(part);
            }
            COp::Merge(i, j) if held.len() >= 2 => {
                let (i, j) = (i.index(held.len()), j.index(held.len()));
                if i == j {
                    continue;
                }
                let (lo, hi) = (i.min(j), i.max(j));
                let other = held.swap_remove(hi);
                let total = held[lo].num_permits() + other.num_permits();
                match (&mut held[lo], other) {
                    (AnyPermit::Borrowed(a), AnyPermit::Borrowed(b)) => a.merge(b),
                    (AnyPermit::Owned(a), AnyPermit::Owned(b)) => a.merge(b),
                    (_, other) => {
                        held.push(other); // different kinds: nothing to merge
                        continue;
                    }
                }
                assert_eq!(held[lo].num_permits(), total, "merge lost permits");
            }
            COp::AddPermits(n) => {
                shared.added.fetch_add(n, SeqCst);
                sem.add_permits(n);
                tally.added += n;
            }
            COp::ForgetPermits(n) => {
                let got = sem.forget_permits(n);
                assert!(got <= n, "forget_permits({n}) took {got}");
                tally.forgot += got;
            }
            COp::DrainPermits => tally.drained += sem.drain_permits(),
            COp::Close => {
                sem.close();
                closed_by_me = true;
            }
            COp::Yield => thread::yield_now(),
            COp::Release(_) | COp::ForgetHeld(_) | COp::Split(..) | COp::Merge(..) => {}
        }
    }
    for p in held.drain(..) {
        shared.gave_back(p.num_permits());
        drop(p);
    }
    tally
}

/// Records a successful acquire; checks that a thread that closed the
/// semaphore itself can no longer acquire.
fn keep<'a>(
    shared: &Shared,
    held: &mut Vec<AnyPermit<'a>>,
    got: Result<AnyPermit<'a>, TryAcquireError>,
    n: usize,
    closed_by_me: bool,
) {
    match got {
        Ok(p) => {
            assert!(
                !closed_by_me,
                "acquired {n} after this thread closed the semaphore"
            );
            assert_eq!(p.num_permits(), n);
            shared.took(n);
            held.push(p);
        }
        Err(TryAcquireError::Closed) => {
            assert!(shared.sem.is_closed(), "Closed from an open semaphore")
        }
        Err(TryAcquireError::NoPermits) => {
            assert!(
                !closed_by_me,
                "NoPermits instead of Closed after this thread closed the semaphore"
            )
        }
        Err(e) => panic!("an error the model does not know: {e:?}"),
    }
}

/// Runs each op list on its own thread; a thread that does not finish within
/// [`WATCHDOG`] fails the test (a hang is a finding, never a stuck CI job).
fn run_workers(shared: &Arc<Shared>, per_thread: Vec<Vec<COp>>) -> Vec<Tally> {
    let (done, finished) = mpsc::channel();
    let handles: Vec<_> = per_thread
        .into_iter()
        .map(|ops| {
            let shared = Arc::clone(shared);
            let done = done.clone();
            thread::spawn(move || {
                let tally = worker(&shared, &ops);
                // The receiver outlives every worker unless the test already failed.
                let _ = done.send(());
                tally
            })
        })
        .collect();
    drop(done);
    let deadline = Instant::now() + WATCHDOG;
    for _ in 0..handles.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match finished.recv_timeout(left) {
            Ok(()) => {}
            // A worker panicked (its sender is gone): join reports it below.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("a worker did not finish within {WATCHDOG:?}")
            }
        }
    }
    handles
        .into_iter()
        .map(|h| h.join().expect("a worker panicked"))
        .collect()
}

fn concurrent(fair: bool, initial: usize, per_thread: Vec<Vec<COp>>) {
    let sem = Arc::new(if fair {
        Semaphore::new_fair(initial)
    } else {
        Semaphore::new(initial)
    });
    let shared = Arc::new(Shared {
        sem: Arc::clone(&sem),
        initial,
        added: AtomicUsize::new(0),
        in_use: AtomicUsize::new(0),
    });
    let tallies = run_workers(&shared, per_thread);

    let added: usize = tallies.iter().map(|t| t.added).sum();
    let forgot: usize = tallies.iter().map(|t| t.forgot).sum();
    let drained: usize = tallies.iter().map(|t| t.drained).sum();
    let forgotten_held: usize = tallies.iter().map(|t| t.forgotten_held).sum();
    assert_eq!(shared.in_use.load(SeqCst), 0);
    assert_eq!(
        sem.available_permits(),
        initial + added - forgot - drained - forgotten_held,
        "permits not conserved: initial {initial} + added {added} - forgot {forgot} - drained {drained} \
         - forgotten permits {forgotten_held}"
    );
    assert_eq!(
        sem.queue_length(),
        0,
        "a waiter is still counted after every thread finished"
    );

    // Nothing is lost either: a generous wait for everything there is succeeds
    // unless the semaphore was closed.
    let all = sem.available_permits();
    match sem.try_acquire_many_for(all, GENEROUS) {
        Ok(p) => assert_eq!(p.num_permits(), all),
        Err(e) => assert!(
            e.is_closed() && sem.is_closed(),
            "final acquire of all {all} permits: {e:?}"
        ),
    };
}

fn schedules() -> impl Strategy<Value = (usize, Vec<Vec<COp>>)> {
    let (threads, max_ops) = if cfg!(miri) {
        (2..=2usize, 6usize)
    } else {
        (2..=4usize, 24usize)
    };
    (
        0..=4usize,
        prop::collection::vec(prop::collection::vec(cop(), 1..=max_ops), threads),
    )
}

proptest! {
    #![proptest_config(config(64, 2))]

    #[test]
    fn concurrent_ops_conserve_permits_nonfair((initial, per_thread) in schedules()) {
        concurrent(false, initial, per_thread);
    }

    #[test]
    fn concurrent_ops_conserve_permits_fair((initial, per_thread) in schedules()) {
        concurrent(true, initial, per_thread);
    }
}
