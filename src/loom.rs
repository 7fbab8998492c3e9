//! The sync shim: the only module that names `std`'s or loom's atomics and
//! cells. With `RUSTFLAGS="--cfg aqs_loom"` every name here is loom's
//! model-checked version, so no code path of the crate is invisible to the
//! model checker. Parking lives in [`crate::park`] and spinning in
//! [`crate::spin`], each with its own loom switch.
//!
//! The cfg is the crate's own (`aqs_loom`), not bare `loom`: other crates
//! switch their code on `cfg(loom)` too, and a bare flag would flip them all.

#[cfg(not(aqs_loom))]
pub(crate) use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[cfg(aqs_loom)]
pub(crate) use loom::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

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
#[allow(dead_code)] // only the loom build's node bookkeeping uses it today
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(aqs_loom))]
#[allow(dead_code)]
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
