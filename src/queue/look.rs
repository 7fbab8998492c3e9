//! The look at the queue that tells a nonfair read arrival whether a writer
//! waits next in line (`exclusive_queued`), and the cache of its answer.
//!
//! A read arrival that finds anyone queued looks before it takes the lock,
//! so that arriving readers do not starve a queued writer. The walk enters a
//! reclamation guard (two RMWs on a word every waiter writes) and reads
//! nodes, on every such arrival. Under contention most arrivals find the
//! queue as the previous one did, so the answer is kept in one word beside
//! a version that moves whenever the queue changes in a way that could turn
//! the walk's answer from no to yes. A changed queue costs one RMW by the
//! thread that changed it; an unchanged one costs an arrival one load.
//!
//! # Implementation
//!
//! The cache word:
//!
//! ```text
//!  63                          32 31                            1   0
//! +------------------------------+-------------------------------+---+
//! | version                      | the version the answer is for | Y |
//! +------------------------------+-------------------------------+---+
//! ```
//!
//! `Y` is the cached answer (a writer waits next in line). The answer holds
//! while the low 31 bits of `version` equal the middle field; a bump adds
//! one to `version` and so leaves the middle field naming an old one. An
//! answer left alone for 2^31 bumps (no read arrival looked meanwhile)
//! would hold again, for every arrival until the next bump.
//!
//! ## Invariants
//!
//! Cited by name in the queue code.
//!
//! * **V1, a change that can turn the answer from no into yes bumps the
//!   version after it.** The walk answers yes at the first exclusive node,
//!   passing readers whose wake-up is pending and readers that are leaving,
//!   and no at the first other reader or at a missing `next` link. So its
//!   answer turns from no to yes only when a node is linked (`enq`: a
//!   writer, or a reader that a release found from the tail and woke before
//!   its link was written, with a writer behind it), a reader's wake flag
//!   is set (`wake`), a node is marked cancelled (`unlink`: any node, as a
//!   cancel is rare), or a reader becomes head without its wake-up pending
//!   (`set_head_and_propagate`: every reader, as that cannot be told). The
//!   thread that made the change bumps the version with a `Release` RMW
//!   right after it. An enqueue bumps before it counts itself in the state
//!   word (Q1), so a thread that reads the count with `Acquire` sees the
//!   bump too; a read arrival loads the count `Relaxed`, and for it the
//!   bump is one of the changes in flight below.
//! * **V2, an answer is cached only for the version its walk began under.**
//!   The arrival loads the word (`Acquire`, which synchronizes with every
//!   bump it sees, and so with every change before them), walks, and stores
//!   its answer with a CAS from the word it loaded: a bump in between fails
//!   the CAS, and nothing is cached. A walk that found the reclamation gate
//!   closed (R8) answered yes without looking, and is not cached.
//! * **V3, only a synchronizer that looks keeps a version.**
//!   `RawSync::keeps_look` is set at construction (a nonfair read-write
//!   lock) and never changes; elsewhere every bump is a test of that field.
//!   A policy that looks on a synchronizer that does not keep a version
//!   walks on every arrival.
//!
//! What a cached answer is worth: by V1 and V2, a cached no was the answer
//! of a walk that saw every change whose bump the arriving thread's load
//! saw. A change whose bump it has not seen yet is one made by a thread
//! that is between two instructions, which a walk could miss as well (a
//! node linking in). A cached yes may outlive its truth; the changes that
//! turn yes into no without a bump are a writer becoming head, which then
//! holds the lock (no read can get in), a woken reader taking its wake flag
//! back, which is about to read, and a writer that left being skipped out
//! of the queue (the walk answers yes at a writer that is leaving, too).
//! The next bump ends each. Neither answer decides anything but whether a
//! read arrival defers: the cache changes no safety property of the lock,
//! only how long a writer may wait.

use super::node::CANCELLED;
use super::policy::Mode;
use super::RawSync;
use crate::loom::{AtomicU64, Ordering::*};

/// One step of the version (its field is the high half).
const BUMP: u64 = 1 << 32;
/// The cached answer: a writer waits next in line.
const YES: u64 = 1;
/// The versions the middle field tells apart (it holds their low 31 bits).
const VERSION_BITS: u64 = 0x7FFF_FFFF;
/// A new cache: version 0, with an answer for the version furthest from it
/// (2^31 - 1 bumps away), so none.
const EMPTY: u64 = VERSION_BITS << 1;

/// The cached answer and its version (V1, V2).
pub(super) struct Look {
    word: AtomicU64,
}

impl Look {
    /// An empty cache.
    #[cfg(not(aqs_loom))]
    pub(super) const fn new() -> Self {
        Look {
            word: AtomicU64::new(EMPTY),
        }
    }

    /// An empty cache (loom's atomics have no `const fn new`).
    #[cfg(aqs_loom)]
    pub(super) fn new() -> Self {
        Look {
            word: AtomicU64::new(EMPTY),
        }
    }

    /// V1: a change that could turn the answer from no into yes was made.
    #[inline]
    fn bump(&self) {
        self.word.fetch_add(BUMP, Release);
    }
}

/// The answer a cache word holds for its own version, if any.
#[inline]
fn answer_of(word: u64) -> Option<bool> {
    ((word >> 1) & VERSION_BITS == (word >> 32) & VERSION_BITS).then_some(word & YES != 0)
}

/// `word` with `answer` cached for its version.
#[inline]
fn with_answer(word: u64, answer: bool) -> u64 {
    (word & !u64::from(u32::MAX)) | (((word >> 32) & VERSION_BITS) << 1) | u64::from(answer)
}

impl RawSync {
    /// V1: records a change to the queue that could turn the look's answer
    /// from no into yes, on a synchronizer that keeps a version (V3).
    /// Called right after the change, by the thread that made it.
    #[inline]
    pub(super) fn bump_look(&self) {
        if self.keeps_look {
            self.look.bump();
        }
    }

    /// Whether a writer waits next in line (see `exclusive_queued`), from
    /// the cache when it holds an answer for the current version (V2).
    #[inline]
    pub(super) fn writer_waits(&self) -> bool {
        if !self.keeps_look {
            return self.exclusive_queued().unwrap_or(true);
        }
        // Acquire (V2): a walk that follows sees every change whose bump
        // this load sees.
        let word = self.look.word.load(Acquire);
        if let Some(answer) = answer_of(word) {
            return answer;
        }
        let Some(answer) = self.exclusive_queued() else {
            return true;
        };
        // V2: fails if a bump came after our load; then the answer is ours
        // alone (a spurious failure leaves it uncached, too). Relaxed: it
        // publishes nothing but the answer, and as an RMW it keeps the bump
        // it follows in the word's release sequence.
        let (cache, cached) = (&self.look.word, with_answer(word, answer));
        let _ = cache.compare_exchange_weak(word, cached, Relaxed, Relaxed);
        answer
    }

    /// Whether a writer waits next in line, looking from the head's
    /// successor along `next` links: the heuristic behind
    /// [`Policy::shared_arrivals_defer_to_exclusive`](super::Policy::shared_arrivals_defer_to_exclusive).
    /// The walk passes readers with a wake-up pending (a release woke them;
    /// they have not run yet) and readers that are leaving, and answers yes
    /// at the first exclusive node, leaving or not. Not only the first waiter (the JDK's
    /// `apparentlyFirstQueuedIsExclusive`): a reader that was woken but has
    /// not run yet sits first until it does, and on a busy machine that is
    /// a scheduler tick, in which arriving readers would keep passing the
    /// writer behind it. But a reader with no wake-up pending ends the walk
    /// with no: it has not been woken yet (or it has, and is running to its
    /// read), and it and the readers behind it take their reads before the
    /// writer anyway (each woken reader wakes the next). An arrival that
    /// joins them holds the writer up by at most one read hold beyond
    /// them, where deferring would hold every arrival back for the batch's
    /// whole chain of wake-ups (on a busy machine, each waits for a CPU).
    /// A waiter linking in (the tail moved, its `next` link not yet
    /// written) or leaving meanwhile may be seen or missed; the walk ends
    /// at a missing link. `None` if the reclamation gate was closed (R8):
    /// an arrival never waits there, and the caller assumes the worst, as
    /// for a waiter it cannot see.
    #[cold]
    fn exclusive_queued(&self) -> Option<bool> {
        let guard = self.reclaim.try_enter()?;
        let h = self.head.load(Acquire);
        if h.is_null() {
            return Some(false);
        }
        // SAFETY: R5: loaded from `head` inside the guard.
        let mut next = unsafe { guard.node(h) }.next.load(Acquire);
        while !next.is_null() {
            // SAFETY: R5: a `next` link loaded inside the guard.
            let node = unsafe { guard.node(next) };
            if node.mode == Mode::Exclusive {
                return Some(true);
            }
            // A reader with no wake-up pending, and not leaving: the batch
            // it heads goes before any writer behind it.
            if node.wake.load(Acquire) == 0 && node.status.load(Acquire) != CANCELLED {
                return Some(false);
            }
            next = node.next.load(Acquire);
        }
        Some(false)
    }
}

#[cfg(all(test, not(aqs_loom)))]
mod tests {
    use super::{answer_of, with_answer, BUMP, EMPTY, VERSION_BITS};

    #[test]
    fn an_answer_holds_until_the_next_bump() {
        assert_eq!(answer_of(EMPTY), None, "a new cache holds an answer");
        assert_eq!(
            answer_of(EMPTY + BUMP),
            None,
            "a bumped new cache holds an answer"
        );
        for answer in [false, true] {
            let cached = with_answer(EMPTY, answer);
            assert_eq!(answer_of(cached), Some(answer));
            assert_eq!(answer_of(cached + BUMP), None, "a bump kept the answer");
            let later = with_answer(cached + 5 * BUMP, !answer);
            assert_eq!(answer_of(later), Some(!answer));
        }
    }

    #[test]
    fn the_version_wraps_at_32_bits_and_the_answer_with_it() {
        // The last version before the middle field wraps, and the first after.
        let old = with_answer(VERSION_BITS * BUMP, true);
        assert_eq!(answer_of(old), Some(true));
        assert_eq!(answer_of(old + BUMP), None);
        // The version's own field wraps at 2^32 (`fetch_add` carries out of
        // the word); the middle field follows.
        let top = with_answer(u64::from(u32::MAX) * BUMP, false);
        assert_eq!(answer_of(top), Some(false));
        let wrapped = top.wrapping_add(BUMP);
        assert_eq!(answer_of(wrapped), None);
        assert_eq!(answer_of(with_answer(wrapped, true)), Some(true));
    }
}
