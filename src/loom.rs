//! The sync shim: the only module that names `std`'s or loom's atomics and
//! cells. With `RUSTFLAGS="--cfg aqs_loom"` every name here is loom's
//! model-checked version, so no code path of the crate is invisible to the
//! model checker. Parking lives in [`crate::park`] and spinning in
//! [`crate::spin`], each with its own loom switch.
//!
//! The cfg is the crate's own (`aqs_loom`), not bare `loom`: other crates
//! switch their code on `cfg(loom)` too, and a bare flag would flip them all.

// `AtomicUsize`: only the waker slot uses it (feature `async`).
#[cfg(not(aqs_loom))]
#[cfg_attr(not(feature = "async"), allow(unused_imports))]
pub(crate) use std::sync::atomic::{
    AtomicI32, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
};

#[cfg(aqs_loom)]
#[cfg_attr(not(feature = "async"), allow(unused_imports))]
pub(crate) use loom::sync::atomic::{
    AtomicI32, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
};

pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(aqs_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(aqs_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Gives the CPU away; used only when another thread must finish a short,
/// already started step (the queue's one-time initialisation).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(aqs_loom))]
    std::thread::yield_now();
    #[cfg(aqs_loom)]
    loom::thread::yield_now();
}

/// An `UnsafeCell` with loom's closure-based API on both back ends.
#[cfg(aqs_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// An `UnsafeCell` with loom's closure-based API on both back ends.
#[cfg(not(aqs_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(aqs_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// What every loom model file uses: the bounded checker and a guarded cell.
#[cfg(all(test, aqs_loom))]
pub(crate) mod model {
    use loom::cell::UnsafeCell;

    /// Runs `f` under loom with at most `bound` preemptions per execution
    /// (lowered further by `LOOM_MAX_PREEMPTIONS` if that is set and smaller).
    pub(crate) fn check(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        let bound = builder.preemption_bound.map_or(bound, |env| env.min(bound));
        builder.preemption_bound = Some(bound);
        builder.check(f);
    }

    /// A cell a lock guards: a write that overlaps another access, or does
    /// not happen-after the previous holder's unlock, is a loom causality
    /// violation.
    pub(crate) struct Guarded(UnsafeCell<usize>);

    // SAFETY: accesses are supposed to be serialized by the lock under test;
    // loom checks exactly that.
    unsafe impl Sync for Guarded {}

    impl Guarded {
        pub(crate) fn new() -> Self {
            Guarded(UnsafeCell::new(0))
        }
        /// A writer's access: counts one.
        pub(crate) fn enter(&self) {
            // SAFETY: see above; a racing access is a loom failure, not UB.
            self.0.with_mut(|n| unsafe { *n += 1 });
        }
        /// A reader's access: returns the count.
        pub(crate) fn read(&self) -> usize {
            // SAFETY: as for `enter`.
            self.0.with(|n| unsafe { *n })
        }
        /// The count, read after all threads were joined.
        pub(crate) fn total(&self) -> usize {
            self.read()
        }
    }
}
