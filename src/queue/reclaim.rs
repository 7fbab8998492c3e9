//! Node reclamation: a small epoch scheme per synchronizer, with a bound.
//!
//! AQS was written for a garbage collector: releasers, cancellers and backward
//! scans keep reading nodes after those nodes have left the queue. Here nodes
//! are heap allocations freed by a grace-period scheme private to each
//! synchronizer:
//!
//! * every thread that dereferences a node it does not own runs inside a
//!   [`Guard`], counted in one of two *slots* of [`Reclaim::word`];
//! * a node that no link leads to any more is *retired*: kept in the
//!   retiring guard's own batch (no shared write), and the batch goes to the
//!   shared *limbo* list, tagged, when the guard leaves;
//! * the word also holds an *epoch*. Guards enter the slot of the current
//!   epoch's parity. The epoch advances by one when the other slot (the
//!   previous epoch's) has drained, and by three when both have; the
//!   leaver whose step advanced it frees the limbo batches old enough.
//!
//! ```text
//!  63        56 55                 28 27                  0
//! +------------+---------------------+---------------------+
//! | epoch (u8) | readers in slot 1   | readers in slot 0   |
//! +------------+---------------------+---------------------+
//! ```
//!
//! The invariants it relies on are R1 to R7 in `queue/mod.rs`: who retires
//! a node (R1 to R3), that only the unreachable is retired, once (R4), that
//! nodes are dereferenced only inside a guard or by their owner (R5), that
//! nobody parks, yields or spins inside a guard (R6), and the bound (R7).
//!
//! # Why a batch may be freed
//!
//! *E1, nobody old stays.* When the epoch is `E`, no guard that entered at
//! `E - 2` or earlier is inside. An advance from `e` to `e + 1` happens in
//! the leave that drained slot `(e + 1) & 1`, where the guards of `e - 1`
//! were counted (those of `e - 2` and earlier left before `e` began, by E1
//! itself); an advance by three happens only with both slots empty.
//!
//! *E2, the tag covers every holder.* A guard that entered at `e` tags its
//! batch `e + 1`. A guard whose entry comes after the retiring guard's
//! leave in the word's modification order reads that leave's Release with
//! its Acquire entry (both are RMWs of the word), so it sees every unlink
//! the retiring guard made and cannot reach the batch's nodes. Every other
//! guard entered while the retiring guard was inside, at an epoch of at
//! most `e + 1`: the epoch cannot pass `e + 1` while the retiring guard is
//! still in slot `e & 1` (an advance to `e + 2` needs that slot drained).
//!
//! So a batch tagged `t` may be freed once the epoch is `t + 2` or more: by
//! E1 every guard that entered at `t` or earlier has left, and by E2 those
//! are all that could hold its nodes. The collector reads the epoch *after*
//! it takes the batches, with an Acquire load: every batch it took was
//! pushed after its guard's entry, so its tag is at most one ahead of the
//! epoch read (age 255 modulo 256, never freed), and the load synchronizes
//! with the leaving RMWs of the guards E1 says are gone (every write to the
//! word is an RMW, so each leave heads a release sequence that runs through
//! all later writes), so all their accesses happen-before the free. Every
//! step is an RMW on one word, a load of it, or a push or swap of the limbo
//! list, so no fence is needed and loom checks the code that ships.
//!
//! # The bound (R7)
//!
//! A guard is short (R6), so the previous epoch's slot drains within one
//! guard's time, however the guards overlap, and the leave that drains it
//! advances the epoch and collects. A batch waits three advances at most,
//! so the limbo list holds only what was retired during the last few
//! guards' time, and every leave does O(1) amortised work: a batch is
//! looked at by at most three collections (ages 0 and 1 are kept, plus the
//! one that frees it), and kept batches are pushed back as one chain. A
//! collector that puts batches back then makes an RMW on the word and looks
//! again if the epoch moved meanwhile, so an advance whose own collection
//! found limbo empty while those batches were out does not leave them
//! behind once all is quiet. (Until 0.1.0's hardening the list
//! was freed only when a single reader count reached zero, and every other
//! leaver walked the whole list to put it back: overlapping guards could
//! keep it from ever draining.) Tagging by the entry epoch rather than by
//! an RMW at retirement costs one advance of delay and no instruction.
//!
//! Whatever is still in limbo when the synchronizer is dropped is freed by
//! its `Drop`, which has `&mut self` and so proves nobody is inside.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

use super::node::Node;
use super::Payload;
use crate::loom::{AtomicPtr, AtomicU64, Ordering::*};

/// Bits of one slot's reader count.
const COUNT_BITS: u32 = 28;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
const EPOCH_SHIFT: u32 = 56;
const LOW_MASK: u64 = (1 << EPOCH_SHIFT) - 1;

#[inline]
const fn epoch_of(word: u64) -> u32 {
    (word >> EPOCH_SHIFT) as u32
}

#[inline]
const fn count_of(word: u64, slot: u32) -> u64 {
    (word >> (slot * COUNT_BITS)) & COUNT_MASK
}

#[inline]
const fn one_in(slot: u32) -> u64 {
    1 << (slot * COUNT_BITS)
}

#[inline]
const fn with_epoch(word: u64, epoch: u32) -> u64 {
    (word & LOW_MASK) | ((epoch as u64 & 0xFF) << EPOCH_SHIFT)
}

/// How many advances separate epoch `tag` from `now`, modulo 256. A batch
/// may be tagged one epoch ahead of the epoch a collector reads (its guard
/// entered at `now` and tagged `now + 1`): that is age 255, never freed. A
/// batch so old that its age wrapped round waits longer, harmlessly.
#[inline]
const fn age(now: u32, tag: u32) -> u32 {
    now.wrapping_sub(tag) & 0xFF
}

/// The grace-period bookkeeping of one synchronizer (see the module docs).
pub(crate) struct Reclaim {
    /// The epoch and the two slots' reader counts.
    word: AtomicU64,
    /// Retired batches, linked through their first nodes' `batch_next`.
    limbo: AtomicPtr<Node>,
    /// Tests only: nodes retired and not yet freed.
    #[cfg(all(test, not(aqs_loom)))]
    unfreed: std::sync::atomic::AtomicUsize,
}

impl Reclaim {
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new() -> Self {
        Reclaim {
            word: AtomicU64::new(0),
            limbo: AtomicPtr::new(ptr::null_mut()),
            #[cfg(test)]
            unfreed: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        Reclaim {
            word: AtomicU64::new(0),
            limbo: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Enters queue code: from now until the guard drops, no node reachable
    /// now or retired later is freed.
    #[inline]
    pub(crate) fn enter(&self) -> Guard<'_> {
        let mut w = self.word.load(Relaxed);
        loop {
            let epoch = epoch_of(w);
            let slot = epoch & 1;
            debug_assert!(count_of(w, slot) < COUNT_MASK, "aqs: 2^28 guards at once");
            // Acquire: reads every earlier leave's Release (E2, module docs).
            match self
                .word
                .compare_exchange_weak(w, w + one_in(slot), Acquire, Relaxed)
            {
                Ok(_) => {
                    return Guard {
                        reclaim: self,
                        epoch,
                        batch: Cell::new(ptr::null_mut()),
                        #[cfg(feature = "async")]
                        wakes: Default::default(),
                        _not_send: PhantomData,
                    }
                }
                Err(actual) => w = actual,
            }
        }
    }

    /// Retires `node` into `guard`'s batch (R4 is the caller's proof).
    ///
    /// # Safety
    ///
    /// No link leads to `node` any more, and this thread is the only one that
    /// will ever retire it (R4). `guard` is this `Reclaim`'s.
    pub(crate) unsafe fn retire(&self, node: *mut Node, guard: &Guard<'_>) {
        debug_assert!(ptr::eq(self, guard.reclaim));
        // SAFETY: the caller reached `node` inside `guard` and has not
        // retired it yet, so it is not freed (R5).
        let n = unsafe { guard.node(node) };
        // The batch is ours alone until the guard pushes it (Release).
        n.retired_next.store(guard.batch.get(), Relaxed);
        guard.batch.set(node);
        #[cfg(all(test, not(aqs_loom)))]
        self.unfreed.fetch_add(1, Relaxed);
    }

    /// Leaves the guard that entered at `epoch`: hands its batch to limbo,
    /// leaves its slot, advancing the epoch if that drains the older slot
    /// (E1), and if it advanced, frees what is old enough.
    fn leave(&self, epoch: u32, batch: *mut Node) {
        if !batch.is_null() {
            // Pushed before we leave: whoever advances after our leave
            // synchronizes with it, so no batch is left behind once all is
            // quiet. Tagged `epoch + 1` (E2).
            // SAFETY: our batch: no other thread can reach it yet.
            let first = unsafe { &*batch };
            first
                .batch_epoch
                .store(epoch.wrapping_add(1) & 0xFF, Relaxed);
            self.push(batch, batch);
        }
        let slot = epoch & 1;
        let mut w = self.word.load(Relaxed);
        loop {
            let now = epoch_of(w);
            let mut next = w - one_in(slot);
            // The older slot is the one the current epoch does not use.
            let older = (now + 1) & 1;
            if count_of(next, older) == 0 {
                // E1: the previous epoch's guards are gone: advance by one;
                // with both slots empty nobody is inside, and three advances
                // make every tag so far old enough.
                let step = if count_of(next, now & 1) == 0 { 3 } else { 1 };
                next = with_epoch(next, now.wrapping_add(step));
            }
            // AcqRel: Release publishes our accesses (and our push) to
            // whoever frees after us; Acquire makes every guard that left
            // before us happen-before our frees.
            match self.word.compare_exchange_weak(w, next, AcqRel, Relaxed) {
                Ok(_) => {
                    if epoch_of(next) != now {
                        self.collect();
                    }
                    return;
                }
                Err(actual) => w = actual,
            }
        }
    }

    /// Frees every limbo batch at least two epochs older than the current
    /// epoch, and puts the others back in one push. Called by a leave that
    /// advanced the epoch.
    fn collect(&self) {
        loop {
            let batch = self.limbo.swap(ptr::null_mut(), Acquire);
            if batch.is_null() {
                return;
            }
            // The epoch is read after the swap, with an Acquire load: every
            // batch taken was pushed by a guard whose entry RMW precedes this
            // load in the word's order, so its tag is at most `now + 1`
            // (E2), and the load synchronizes with the leaves of every guard
            // that E1 says are gone (all writes to the word are RMWs). A
            // `now` from before the swap could be older than a batch's tag.
            let now = epoch_of(self.word.load(Acquire));
            let kept = self.free_old(batch, now);
            let Some((first, last)) = kept else {
                return;
            };
            self.push(first, last);
            // The batches we put back may have become old enough meanwhile,
            // by advances whose own collects found limbo empty while we
            // held them. An RMW orders us against them: an advance after it
            // in the word's order reads it, and so sees our push; an advance
            // before it shows as a newer epoch here, and we look again.
            let after = epoch_of(self.word.fetch_add(0, AcqRel));
            if after == now {
                return;
            }
        }
    }

    /// Frees the batches of the chain at `batch` that are old enough at
    /// epoch `now`; returns the chain of the others (first, last), if any.
    fn free_old(&self, mut batch: *mut Node, now: u32) -> Option<(*mut Node, *mut Node)> {
        let (mut kept, mut kept_last) = (ptr::null_mut::<Node>(), ptr::null_mut::<Node>());
        while !batch.is_null() {
            // SAFETY: taken from limbo by our swap: ours alone (only the
            // thread that takes a batch from the shared list frees it).
            let first = unsafe { &*batch };
            let next = first.batch_next.load(Relaxed);
            // Tags run from far behind `now` to `now + 1` (age 255); a tag
            // so old that it wrapped round to look young waits, harmlessly.
            if (2..=254).contains(&age(now, first.batch_epoch.load(Relaxed))) {
                // SAFETY: E1 and E2 (module docs): every guard that could
                // reach these nodes has left, and our Acquire load of the
                // word synchronized with its leave.
                unsafe { self.free_list(batch) };
            } else {
                first.batch_next.store(kept, Relaxed);
                if kept.is_null() {
                    kept_last = batch;
                }
                kept = batch;
            }
            batch = next;
        }
        (!kept.is_null()).then_some((kept, kept_last))
    }

    /// Pushes the chain of batches `first ..= last` (linked by `batch_next`)
    /// onto limbo.
    fn push(&self, first: *mut Node, last: *mut Node) {
        let mut head = self.limbo.load(Relaxed);
        loop {
            // SAFETY: the chain is ours until the CAS below publishes it.
            unsafe { &*last }.batch_next.store(head, Relaxed);
            // Release: the unlinking writes before this push happen-before
            // whoever takes the list with its Acquire swap.
            match self
                .limbo
                .compare_exchange_weak(head, first, Release, Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Frees one batch's nodes (linked by `retired_next`).
    ///
    /// # Safety
    ///
    /// The batch is owned by the caller and no thread can reach its nodes.
    unsafe fn free_list(&self, mut node: *mut Node) {
        while !node.is_null() {
            // SAFETY: owned by the caller; read the link before freeing.
            let next = unsafe { (*node).retired_next.load(Relaxed) };
            // SAFETY: the caller's proof that nobody can reach the batch.
            unsafe { Node::free(node) };
            #[cfg(all(test, not(aqs_loom)))]
            self.unfreed.fetch_sub(1, Relaxed);
            node = next;
        }
    }

    /// Whether no retired node awaits freeing; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn retired_is_empty(&self) -> bool {
        self.limbo.load(Acquire).is_null()
    }

    /// Threads inside a guard now; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn readers(&self) -> usize {
        let w = self.word.load(Acquire);
        (count_of(w, 0) + count_of(w, 1)) as usize
    }

    /// Nodes retired and not yet freed; for tests (R7's bound).
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn unfreed(&self) -> usize {
        self.unfreed.load(Relaxed)
    }

    /// Frees the limbo list; for `Drop`, where `&mut` proves nobody is inside.
    pub(crate) fn drain(&mut self) {
        let mut batch = self.limbo.swap(ptr::null_mut(), Relaxed);
        while !batch.is_null() {
            // SAFETY: `&mut self` proves no thread is inside a guard, and
            // every node in limbo was retired exactly once (R4).
            let next = unsafe { &*batch }.batch_next.load(Relaxed);
            // SAFETY: as above.
            unsafe { self.free_list(batch) };
            batch = next;
        }
    }
}

/// Proof of being inside queue code; see [`Reclaim::enter`]. Node
/// references borrowed through it live no longer than it does.
///
/// It also carries the wakers that the code inside took to wake (O1): they
/// are woken after the guard has left, by [`Guard::finish`] or, if the
/// guard is just dropped, by its `Drop`.
pub(crate) struct Guard<'a> {
    reclaim: &'a Reclaim,
    /// The epoch the guard entered at (its slot is its parity).
    epoch: u32,
    /// Nodes this guard retired, linked by `retired_next` (R7: handed to
    /// limbo when it leaves).
    batch: Cell<*mut Node>,
    #[cfg(feature = "async")]
    wakes: crate::waker::WakeList,
    /// A guard is a count on its `Reclaim`, left by the thread that entered.
    _not_send: PhantomData<*mut ()>,
}

impl Guard<'_> {
    /// A node that the guard keeps allocated, for as long as the guard lives.
    ///
    /// # Safety
    ///
    /// `node` is non-null and came from `Node::alloc` for this guard's
    /// synchronizer, and it was not freed when the guard was entered: it was
    /// loaded from `head`, `tail` or a link of such a node while this guard
    /// was held, or it is the caller's own node or its predecessor (R5, N1).
    #[inline]
    pub(crate) unsafe fn node(&self, node: *mut Node) -> &Node {
        // SAFETY: R5: a node reachable while the guard was held is freed only
        // after the guard leaves (the grace-period argument above).
        unsafe { Node::get(node) }
    }
}

impl Guard<'_> {
    /// Keeps a waker taken from a node inside the guard, to be woken once
    /// the guard has left (O1).
    #[cfg(feature = "async")]
    pub(crate) fn defer_wake(&self, waker: std::task::Waker) {
        self.wakes.push(waker);
    }

    /// Whether no waker waits to be woken when the guard leaves.
    pub(crate) fn wakes_nobody(&self) -> bool {
        #[cfg(feature = "async")]
        return self.wakes.is_empty();
        #[cfg(not(feature = "async"))]
        true
    }

    /// Leaves, then wakes the wakers taken inside (O1). Every one is woken;
    /// the first one's panic, if any, is returned for the caller to
    /// propagate once its own state is consistent (O3).
    pub(crate) fn finish(self) -> Result<(), Payload> {
        #[cfg(feature = "async")]
        {
            let mut this = self;
            let wakes = std::mem::take(&mut this.wakes);
            drop(this); // leaves: the list is empty now
            wakes.wake_all()
        }
        #[cfg(not(feature = "async"))]
        {
            drop(self);
            Ok(())
        }
    }
}

impl Drop for Guard<'_> {
    /// Leaves, then wakes what is left to wake (O1). A guard whose owner
    /// did not call [`Guard::finish`] has no state of its own to restore,
    /// so a waker's panic propagates from here, unless the thread is
    /// unwinding already (then it is dropped: a second panic would abort).
    fn drop(&mut self) {
        self.reclaim.leave(self.epoch, self.batch.get());
        #[cfg(feature = "async")]
        if !self.wakes.is_empty() {
            if let Err(payload) = self.wakes.wake_all() {
                super::propagate(Err(payload));
            }
        }
    }
}

#[cfg(all(test, not(aqs_loom)))]
mod tests {
    use super::*;
    use crate::queue::policy::Mode;

    /// A batch with its tag set, as a guard's leave makes it.
    fn batch(r: &Reclaim, tag: u32) -> *mut Node {
        let node = Node::alloc(1, Mode::Shared);
        let guard = r.enter();
        // SAFETY: never published: unreachable, retired once.
        unsafe { r.retire(node, &guard) };
        // Take the batch back from the guard before it leaves.
        guard.batch.set(ptr::null_mut());
        drop(guard);
        // SAFETY: ours alone.
        unsafe { &*node }.batch_epoch.store(tag & 0xFF, Relaxed);
        node
    }

    /// Which of the tags `now + 1`, `now`, `now - 1`, `now - 2`, `now - 3`
    /// a collection at `now` frees: only the last two (E1, E2). The first
    /// is a batch whose guard entered at the epoch the collector read
    /// (age 255 modulo 256): freeing it would free nodes a guard may hold.
    #[test]
    fn collection_frees_only_batches_two_epochs_old() {
        for now in [0u32, 1, 5, 254, 255] {
            let r = Reclaim::new();
            let tags = [1i32, 0, -1, -2, -3].map(|d| (now as i32 + d).rem_euclid(256) as u32);
            let batches = tags.map(|t| batch(&r, t));
            for b in &batches {
                // SAFETY: ours; chained one by one.
                unsafe { &**b }.batch_next.store(ptr::null_mut(), Relaxed);
            }
            let before = r.unfreed();
            let mut kept = Vec::new();
            for b in batches {
                if let Some((first, _)) = r.free_old(b, now) {
                    kept.push(first);
                }
            }
            assert_eq!(
                before - r.unfreed(),
                2,
                "now {now}: exactly two batches freed"
            );
            assert_eq!(
                kept,
                batches[..3].to_vec(),
                "now {now}: the young ones kept"
            );
            for b in kept {
                r.push(b, b);
            }
            let mut r = r;
            r.drain();
            assert_eq!(r.unfreed(), 0);
        }
    }
}
