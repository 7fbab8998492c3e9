//! The test policy of the core's unit tests and loom models: a counting
//! semaphore's rules, fair or barging, without the semaphore (the core never
//! imports a synchronizer).

use super::policy::{Acquired, Discipline, Policy};

/// Units counted like a semaphore's permits: fair arrivals refuse while
/// others queue; a woken waiter may take units out of turn, leaving a fair
/// queue's waiters in front what they need; `adds` releases by `fetch_add`
/// (`release_adds`) instead of the CAS loop.
pub(super) struct Permits {
    pub(super) fair: bool,
    pub(super) adds: bool,
}

/// Barging, releasing through the CAS loop.
#[cfg(not(aqs_loom))]
pub(super) const COUNT: Permits = Permits {
    fair: false,
    adds: false,
};

/// Strict FIFO, releasing through the CAS loop.
#[cfg(not(aqs_loom))]
pub(super) const FIFO: Permits = Permits {
    fair: true,
    adds: false,
};

impl Policy for Permits {
    fn try_acquire_shared(&self, value: u32, arg: u32, others_queued: bool) -> Option<Acquired> {
        if self.fair && others_queued {
            return None;
        }
        let left = value.checked_sub(arg)?;
        Some(Acquired {
            value: left,
            propagate: left > 0,
        })
    }

    fn try_release_shared(&self, value: u32, arg: u32) -> u32 {
        value.checked_add(arg).expect("overflow")
    }

    fn release_adds(&self) -> bool {
        self.adds
    }

    fn discipline(&self) -> Discipline {
        if self.fair {
            Discipline::Fifo
        } else {
            Discipline::Barging
        }
    }

    fn out_of_turn(&self) -> bool {
        true
    }

    fn try_acquire_out_of_turn(&self, value: u32, arg: u32, ahead: u32) -> Option<Acquired> {
        let reserve = if self.fair { ahead } else { 0 };
        let left = value.checked_sub(arg)?;
        (left >= reserve).then_some(Acquired {
            value: left,
            propagate: left > 0,
        })
    }
}
