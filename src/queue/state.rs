//! The state word: its fields, their masks and the helpers that read them.
//! The table of legal combinations is in the module notes (`queue/mod.rs`).

/// The closed bit.
pub(crate) const CLOSED: u64 = 1;
/// The armed bit: a queued thread may be asleep counting on a release to
/// wake it through the head (A1).
pub(crate) const ARMED: u64 = 1 << 1;
/// One queued thread in the `waiters` field.
pub(crate) const ONE_WAITER: u64 = 1 << 2;
/// The `waiters` field: bits 2 to 31.
const WAITER_MASK: u64 = 0xFFFF_FFFC;
/// The most waiters a synchronizer queues at once (Q5): the field holds
/// 2^30 - 1, and the margin of 2^20 covers arrivals that passed the check
/// and have not yet counted themselves (each is a running thread or a
/// polled future between two instructions).
#[cfg_attr(aqs_loom, allow(dead_code))]
pub(crate) const MAX_WAITERS: u32 = (1 << 30) - (1 << 20);
/// Where the policy's `value` starts.
const VALUE_SHIFT: u32 = 32;
/// The queue's half of the word: `waiters`, `ARMED` and `CLOSED`.
const LOW_MASK: u64 = (1 << VALUE_SHIFT) - 1;

/// The state word of a new synchronizer holding `value`.
#[inline]
pub(crate) const fn initial(value: u32) -> u64 {
    (value as u64) << VALUE_SHIFT
}

/// The policy's value held in a state word.
#[inline]
pub(crate) const fn value_of(state: u64) -> u32 {
    (state >> VALUE_SHIFT) as u32
}

/// The number of queued threads in a state word.
#[inline]
pub(crate) const fn waiters_of(state: u64) -> u32 {
    ((state & WAITER_MASK) >> 2) as u32
}

/// Whether a state word has the armed bit.
#[inline]
pub(crate) const fn is_armed(state: u64) -> bool {
    state & ARMED != 0
}

/// Whether a state word is closed.
#[inline]
pub(crate) const fn is_closed(state: u64) -> bool {
    state & CLOSED != 0
}

/// Whether the queue's half of a state word is clear: nobody queued, not
/// armed, not closed.
#[inline]
pub(crate) const fn queue_half_clear(state: u64) -> bool {
    state & LOW_MASK == 0
}

/// `state` with its value replaced by `value`.
#[inline]
pub(crate) const fn with_value(state: u64, value: u32) -> u64 {
    (state & LOW_MASK) | (value as u64) << VALUE_SHIFT
}

/// `state` with its value lowered to `value` (an acquire only takes):
/// `with_value` by one subtraction, which cannot borrow from the low half.
/// It sits between an acquire's load and its CAS, on the uncontended path.
#[inline]
pub(crate) const fn after_take(state: u64, value: u32) -> u64 {
    debug_assert!(value <= value_of(state));
    state - ((value_of(state).wrapping_sub(value) as u64) << VALUE_SHIFT)
}

/// What adding `units` to the value adds to the word (a release by
/// `fetch_add`, for policies whose releases only add: `release_adds`).
#[inline]
pub(crate) const fn value_delta(units: u32) -> u64 {
    (units as u64) << VALUE_SHIFT
}

#[cfg(all(test, not(aqs_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fields_are_independent() {
        let s = with_value(CLOSED | (3 * ONE_WAITER), 7);
        assert_eq!(value_of(s), 7);
        assert_eq!(waiters_of(s), 3);
        assert!(is_closed(s));
        let s = with_value(s, u32::MAX);
        assert_eq!(
            (value_of(s), waiters_of(s), is_closed(s)),
            (u32::MAX, 3, true)
        );
        let s = with_value(0x3FFF_FFFF * ONE_WAITER, 0);
        assert_eq!(
            (value_of(s), waiters_of(s), is_closed(s), is_armed(s)),
            (0, 0x3FFF_FFFF, false, false)
        );
        let s = s | ARMED;
        assert_eq!(
            (value_of(s), waiters_of(s), is_closed(s), is_armed(s)),
            (0, 0x3FFF_FFFF, false, true)
        );
        assert_eq!(value_of(with_value(s, 1) - ONE_WAITER), 1);
        assert_eq!(after_take(with_value(s, 9), 4), with_value(s, 4));
        assert_eq!(value_of(initial(5) + value_delta(3)), 8);
    }
}
