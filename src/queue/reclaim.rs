//! Node reclamation: a small grace-period scheme per synchronizer.
//!
//! AQS was written for a garbage collector: releasers, cancellers and backward
//! scans keep reading nodes after those nodes have left the queue. Here nodes
//! are heap allocations freed by a small, per-synchronizer grace-period scheme:
//!
//! * every thread that dereferences a node it does not own runs inside a
//!   [`Guard`], counted in the low half of [`Reclaim::word`];
//! * a node that no link leads to any more is *retired*: pushed onto
//!   [`Reclaim::retired`] by the one thread that unlinked it;
//! * a reader that leaves while it looks like the last one takes the retired
//!   list (and the [`Reclaim::spare`] batch) while still counted, then tries
//!   to take the count from 1 to 0 with a CAS; if that succeeds it frees what
//!   it took, otherwise it parks what it took in `spare` and leaves as usual.
//!
//! The invariants it relies on are R1 to R8 in `queue/mod.rs`: who retires
//! a node (R1 to R3), that only the unreachable is retired, once (R4), that
//! nodes are dereferenced only inside a guard or by their owner (R5), that
//! nobody parks or yields inside a guard (R6), that a thread holds one guard
//! at a time (R7), and the bound on what waits to be freed (R8).
//!
//! # Why a batch may be freed
//!
//! Let a leaver take batch `B` at time `t1` (its `swap`s) and then take the
//! reader count from 1 to 0 at `t2` (its CAS). Every node in `B` was unlinked
//! before it was retired, so before `t1` (R4). A thread that could still hold
//! a pointer to such a node loaded it before the unlink (or, for a node on the
//! retired list, while the node was on it), so it was a reader before `t1`,
//! and since it was not counted at `t2` it has left: its decrement (Release)
//! is earlier in the count's modification order than our CAS (AcqRel), and
//! every change of the word is a read-modify-write, so all its accesses
//! happen-before our free. A thread that enters after `t2` increments the
//! count with an Acquire RMW that reads ours (or a later RMW), so it sees every
//! unlink and cannot reach a node of `B`. Both sides are RMWs of one word, so
//! no fence is needed and loom checks exactly the code that ships.
//!
//! # The bound (R8)
//!
//! Freeing needs a moment at which the leaver is the only reader. Guards that
//! overlap without a gap (many threads, or one preempted inside its guard)
//! never give one, so the count's word also holds the *backlog*: how many
//! nodes retired by guards that have left are not yet freed. A guard adds its
//! retirements with the decrement that leaves, and the freer subtracts what
//! it freed. While the backlog is at [`BACKLOG_LIMIT`] or more the gate is
//! closed: an arriving guard backs out (a leave that retired nothing) and
//! waits, outside any guard, until the backlog drops. The guards already
//! inside never wait for anything (R6), so they leave, the last one frees,
//! and the gate opens. Nothing is retired while the gate is closed except by
//! the guards already inside, so at most `BACKLOG_LIMIT - 1` nodes plus what
//! the guards inside at the closing retire are ever unfreed, whatever the
//! schedule. An epoch scheme (two counts that alternate) bounds the backlog
//! without making arrivals wait; we measured one (`docs/design.md`, R8):
//! every entry and leave became a load and a CAS, and loom's models grew ten
//! times slower. The gate costs nothing until it closes: the check reads the
//! value that the entry's `fetch_add` returns anyway.
//!
//! # No leave walks a list except to free it
//!
//! A leaver that is not the last one does not touch the list: one load and
//! one RMW. One that looks last but loses the CAS (another guard entered or
//! left in between) keeps what it took in `spare`, merging with a batch
//! parked there already in O(1): the head of every batch knows its last node
//! and length (`retired_tail`, written when the node became the list's head:
//! a node is pushed onto the list once, by R4, so a head never comes back
//! and what it carries is never stale; `batch_tail`, written by the owner
//! that parks a batch).
//!
//! Whatever is still retired when the synchronizer is dropped is freed by its
//! `Drop`, which has `&mut self` and so proves nobody is inside.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

use super::node::Node;
use super::Payload;
use crate::loom::{AtomicPtr, AtomicU64, Ordering::*};

/// The gate closes while this many retired nodes or more await freeing (R8).
/// A node is about 100 bytes, so this keeps a synchronizer's garbage under
/// about 50 KiB; the gate closes only when guards overlapped for long.
#[cfg_attr(aqs_loom, allow(dead_code))]
pub(crate) const BACKLOG_LIMIT: u64 = 512;

/// One reader in [`Reclaim::word`] (the low 32 bits count readers).
const READER: u64 = 1;
/// The readers' bits.
const READERS: u64 = (1 << 32) - 1;
/// One node of backlog (the high 32 bits).
const RETIRED: u64 = 1 << 32;

fn readers_of(word: u64) -> u64 {
    word & READERS
}

fn backlog_of(word: u64) -> u64 {
    word >> 32
}

/// The grace-period bookkeeping of one synchronizer (see the module docs).
pub(crate) struct Reclaim {
    /// Low 32 bits: threads inside queue code (holding [`Guard`]s). High 32
    /// bits: the backlog, nodes retired by guards that have left and not yet
    /// freed (R8). Changed only by read-modify-writes.
    word: AtomicU64,
    /// Retired nodes, linked through `retired_next`; the head's
    /// `retired_tail` is the last node.
    retired: AtomicPtr<Node>,
    /// A batch taken by a leaver that then found it was not the last reader,
    /// for the next freer; linked as `retired`, its head's `batch_tail`
    /// giving its last node and length.
    spare: AtomicPtr<Node>,
    /// loom only: the gate's limit, so that a model can close it.
    #[cfg(aqs_loom)]
    pub(super) limit: u64,
    /// Tests only: retired and not yet freed, counted apart from the backlog.
    #[cfg(all(test, not(aqs_loom)))]
    unfreed: std::sync::atomic::AtomicUsize,
    /// Tests only: how many arrivals found the gate closed.
    #[cfg(all(test, not(aqs_loom)))]
    gate_waits: std::sync::atomic::AtomicUsize,
}

impl Reclaim {
    #[cfg(not(aqs_loom))]
    pub(crate) const fn new() -> Self {
        Reclaim {
            word: AtomicU64::new(0),
            retired: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
            #[cfg(test)]
            unfreed: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(test)]
            gate_waits: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    #[cfg(aqs_loom)]
    pub(crate) fn new() -> Self {
        Reclaim {
            word: AtomicU64::new(0),
            retired: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
            limit: u64::from(u32::MAX),
        }
    }

    #[inline]
    fn limit(&self) -> u64 {
        #[cfg(aqs_loom)]
        return self.limit;
        #[cfg(not(aqs_loom))]
        BACKLOG_LIMIT
    }

    /// Enters queue code: from now until the guard drops, no node reachable
    /// now or retired later is freed. Waits, outside any guard, while the
    /// gate is closed (R8).
    #[inline]
    pub(crate) fn enter(&self) -> Guard<'_> {
        loop {
            if let Some(guard) = self.try_enter() {
                return guard;
            }
            self.wait_at_gate();
        }
    }

    /// Enters as [`enter`](Self::enter) does, unless the gate is closed
    /// (R8): then backs out and returns `None` at once, for a caller that
    /// must not wait (a `try_` acquire's look at the queue).
    #[inline]
    pub(crate) fn try_enter(&self) -> Option<Guard<'_>> {
        // Acquire: reads the last freer's CAS (or a later RMW), so every
        // unlink before its frees is visible to our link loads.
        let before = self.word.fetch_add(READER, Acquire);
        if backlog_of(before) < self.limit() {
            return Some(Guard {
                reclaim: self,
                retired: Cell::new(0),
                #[cfg(feature = "async")]
                wakes: Default::default(),
                _not_send: PhantomData,
            });
        }
        // Back out: a leave that retired nothing (if we are the last
        // reader, it frees).
        self.leave(0);
        None
    }

    /// R8: the gate is closed, and we have backed out. Waits until the
    /// backlog is under the limit, or until nobody is inside (then the next
    /// entry's back-out frees, if a freer has not already).
    #[cold]
    fn wait_at_gate(&self) {
        #[cfg(all(test, not(aqs_loom)))]
        self.gate_waits.fetch_add(1, Relaxed);
        // R6 holds: we are outside every guard. The guards inside are
        // short, so spin a little (the crate's budget), then give the CPU
        // to them.
        let spin = crate::spin::Spin::new();
        loop {
            let word = self.word.load(Relaxed);
            if backlog_of(word) < self.limit() {
                return;
            }
            // Nobody inside: a freer is between its CAS and its
            // subtraction. Give it a moment, then enter again (our back-out
            // frees, if anything is left).
            let nobody_inside = readers_of(word) == 0;
            if !spin.spin() {
                crate::loom::yield_now();
            }
            if nobody_inside {
                return;
            }
        }
    }

    /// Retires `node` (R4 is the caller's proof).
    ///
    /// # Safety
    ///
    /// No link leads to `node` any more, and this thread is the only one that
    /// will ever retire it (R4). `guard` is this `Reclaim`'s.
    pub(crate) unsafe fn retire(&self, node: *mut Node, guard: &Guard<'_>) {
        // SAFETY: the caller reached `node` inside `guard` and has not
        // retired it yet, so it is not freed (R5).
        let n = unsafe { guard.node(node) };
        // Acquire: the head's `retired_tail` was written before its push.
        let mut head = self.retired.load(Acquire);
        loop {
            let (last, len) = if head.is_null() {
                (node, 1)
            } else {
                // SAFETY: R5: loaded from the retired list inside the guard,
                // so not freed (module docs).
                let (last, len) = retired_tail(unsafe { guard.node(head) });
                (last, len + 1)
            };
            // SAFETY: `node` is not published yet: ours alone (R4).
            n.retired_tail.with_mut(|t| unsafe { *t = (last, len) });
            // SAFETY: not published yet: ours alone (R4).
            n.retired_next.with_mut(|next| unsafe { *next = head });
            // Release: the unlinking writes before this push, and the fields
            // above, happen-before whoever takes or reads the list (Acquire).
            match self
                .retired
                .compare_exchange_weak(head, node, Release, Acquire)
            {
                Ok(_) => break,
                Err(current) => head = current,
            }
        }
        guard.retired.set(guard.retired.get() + 1);
        #[cfg(all(test, not(aqs_loom)))]
        self.unfreed.fetch_add(1, Relaxed);
    }

    /// Leaves a guard that retired `retired` nodes (module docs).
    fn leave(&self, retired: u64) {
        let mut add = retired * RETIRED;
        loop {
            // Acquire: the pushes of the guards whose leaves we read here
            // are seen by our swaps below.
            let word = self.word.load(Acquire);
            if readers_of(word) == 1 && backlog_of(word.wrapping_add(add)) > 0 {
                // We look like the last reader, and garbage waits (with one
                // reader, every retired node is counted: the others' at
                // their leaves, ours in `add`). Take it while still counted,
                // then try to be the last one out.
                let batch = self.take();
                // AcqRel: Release publishes our accesses to whoever frees
                // after us; Acquire makes every earlier reader's accesses
                // happen-before our frees (module docs).
                match self
                    .word
                    .compare_exchange(word, word - READER + add, AcqRel, Relaxed)
                {
                    Ok(_) => {
                        // R8: the backlog falls once the nodes are freed, so
                        // the gate holds arrivals back until then; and it
                        // falls even if a free panics (none runs outside
                        // code, O2), so that a bug there cannot close the
                        // gate for good.
                        let _subtract = Subtract(&self.word, batch.len);
                        // SAFETY: every node in the batch was retired (R4)
                        // before we took it, and no reader that entered
                        // before that remains (module docs).
                        unsafe { self.free_list(batch) };
                        drop(_subtract);
                        // A guard may have entered, retired and left between
                        // our look and our CAS, with the word back at what we
                        // saw (another freer subtracting as much as it
                        // added): its nodes are on the list, and we may be
                        // the last out. Another turn, so that nothing lingers
                        // once all is quiet.
                        if self.retired.load(Acquire).is_null()
                            && self.spare.load(Acquire).is_null()
                        {
                            return;
                        }
                        self.word.fetch_add(READER, Acquire);
                        add = 0;
                        continue;
                    }
                    Err(_) => {
                        // Another guard entered or left in between; we are
                        // still counted. Park the batch for a later freer
                        // (perhaps us: we look again).
                        self.stash(batch);
                        continue;
                    }
                }
            }
            // AcqRel as above.
            let before = self.word.fetch_add(add.wrapping_sub(READER), AcqRel);
            if readers_of(before) != 1 || backlog_of(before.wrapping_add(add)) == 0 {
                return;
            }
            // The others left between our look and our leave: we were the
            // last after all, and garbage waits. Another turn, so that
            // nothing lingers once all is quiet.
            self.word.fetch_add(READER, Acquire);
            add = 0;
        }
    }

    /// Takes the retired list and the spare batch, as one batch.
    fn take(&self) -> Batch {
        // Acquire: pairs with the pushes' and the stashes' Release.
        let list = self.retired.swap(ptr::null_mut(), Acquire);
        let list = Batch::taken(list, retired_tail);
        if self.spare.load(Relaxed).is_null() {
            return list;
        }
        let spare = self.spare.swap(ptr::null_mut(), Acquire);
        let spare = Batch::taken(spare, batch_tail);
        list.join(spare)
    }

    /// Parks a taken batch in `spare` for a later freer, joining it with
    /// whatever another leaver parked there meanwhile. Called while counted.
    fn stash(&self, mut batch: Batch) {
        while !batch.head.is_null() {
            // SAFETY: the batch is ours until the CAS below publishes it.
            unsafe { Node::get(batch.head) }
                .batch_tail
                .with_mut(|t| unsafe { *t = (batch.last, batch.len) });
            // Release: the links and the tail above happen-before the
            // taker's Acquire swap.
            match self
                .spare
                .compare_exchange(ptr::null_mut(), batch.head, Release, Relaxed)
            {
                Ok(_) => return,
                Err(_) => {
                    let other = self.spare.swap(ptr::null_mut(), Acquire);
                    let other = Batch::taken(other, batch_tail);
                    batch = batch.join(other);
                }
            }
        }
    }

    /// Frees every node of a batch.
    ///
    /// # Safety
    ///
    /// The batch was taken from the shared lists by the caller, and no
    /// thread can reach its nodes (module docs, R4 and R5).
    unsafe fn free_list(&self, batch: Batch) {
        let mut node = batch.head;
        let mut freed = 0;
        while !node.is_null() {
            // SAFETY: the caller's proof (R4, R5): the batch is ours alone.
            let n = unsafe { Node::get(node) };
            // SAFETY: as above, nobody else touches the link (R4); read it
            // before freeing.
            let next = n.retired_next.with(|next| unsafe { *next });
            // SAFETY: the caller's proof that nobody can reach the batch.
            unsafe { Node::free(node) };
            node = next;
            freed += 1;
        }
        debug_assert_eq!(freed, batch.len, "a retired batch lost count of its nodes");
        #[cfg(all(test, not(aqs_loom)))]
        self.unfreed.fetch_sub(freed as usize, Relaxed);
    }

    /// Whether no retired node awaits freeing; for tests and models.
    #[cfg(test)]
    pub(crate) fn retired_is_empty(&self) -> bool {
        self.retired.load(Acquire).is_null()
            && self.spare.load(Acquire).is_null()
            && backlog_of(self.word.load(Acquire)) == 0
    }

    /// Threads inside a guard now; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn readers(&self) -> usize {
        readers_of(self.word.load(Acquire)) as usize
    }

    /// Whether arriving guards wait at the gate now (R8); for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn gate_closed(&self) -> bool {
        backlog_of(self.word.load(Acquire)) >= BACKLOG_LIMIT
    }

    /// How many arrivals have found the gate closed; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn gate_waits(&self) -> usize {
        self.gate_waits.load(Relaxed)
    }

    /// Nodes retired and not yet freed; for tests.
    #[cfg(all(test, not(aqs_loom)))]
    pub(crate) fn unfreed(&self) -> usize {
        self.unfreed.load(Relaxed)
    }

    /// Frees the retired list; for `Drop`, where `&mut` proves nobody is inside.
    pub(crate) fn drain(&mut self) {
        let batch = self.take();
        // SAFETY: `&mut self` proves no thread is inside a guard, and every
        // node taken was retired exactly once (R4).
        unsafe { self.free_list(batch) };
    }
}

/// Takes a freed batch's nodes off the backlog when dropped (R8).
struct Subtract<'a>(&'a AtomicU64, u64);

impl Drop for Subtract<'_> {
    fn drop(&mut self) {
        if self.1 > 0 {
            // Release: a waiter at the gate that reads this finds the nodes
            // freed (nothing depends on it; the gate is about memory).
            self.0.fetch_sub(self.1 * RETIRED, Release);
        }
    }
}

/// What a batch taken from `retired` with this node at its head ends with,
/// and how many nodes it holds.
fn retired_tail(head: &Node) -> (*mut Node, u64) {
    // SAFETY: written once, before the node's push (Release), which the
    // caller's Acquire load or swap of the list read; never written again.
    head.retired_tail.with(|t| unsafe { *t })
}

/// What a batch taken from `spare` with this node at its head ends with,
/// and how many nodes it holds.
fn batch_tail(head: &Node) -> (*mut Node, u64) {
    // SAFETY: written by the batch's last owner before its stash (Release),
    // which the caller's Acquire swap of `spare` read; only owners touch it.
    head.batch_tail.with(|t| unsafe { *t })
}

/// A batch taken from `retired` or `spare` with a swap: its head, its last
/// node and its length (null, null and 0 if empty). The taker's alone: no
/// other thread follows its links (R4, R5), so it is freed or parked whole.
struct Batch {
    head: *mut Node,
    last: *mut Node,
    len: u64,
}

impl Batch {
    /// The batch headed by `head`, just taken with a swap, whose last node
    /// and length `tail_of` reads from the head.
    fn taken(head: *mut Node, tail_of: fn(&Node) -> (*mut Node, u64)) -> Batch {
        if head.is_null() {
            return Batch {
                head,
                last: ptr::null_mut(),
                len: 0,
            };
        }
        // SAFETY: taken by the caller's swap: not freed while the caller
        // holds it, and its head's tails were written before the Release
        // that the swap's Acquire read.
        let (last, len) = tail_of(unsafe { Node::get(head) });
        Batch { head, last, len }
    }

    /// `self`'s nodes, then `other`'s, in O(1).
    fn join(self, other: Batch) -> Batch {
        if self.head.is_null() {
            return other;
        }
        if other.head.is_null() {
            return self;
        }
        // SAFETY: both batches are ours (the type's docs: R4, R5), and
        // `self.last` is its last node.
        let last = unsafe { Node::get(self.last) };
        // SAFETY: as above: only a batch's owner touches its links (R4).
        last.retired_next
            .with_mut(|next| unsafe { *next = other.head });
        Batch {
            head: self.head,
            last: other.last,
            len: self.len + other.len,
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
    /// How many nodes were retired inside: the backlog they add when the
    /// guard leaves (R8).
    retired: Cell<u64>,
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
    /// was held (or from the retired list, by `retire`), or it is the
    /// caller's own node or its predecessor (R5, N1).
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
            let wakes = self.wakes.take();
            drop(self); // leaves: its own list is empty now
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
        self.reclaim.leave(self.retired.get());
        #[cfg(feature = "async")]
        if !self.wakes.is_empty() {
            if let Err(payload) = self.wakes.take().wake_all() {
                super::propagate(Err(payload));
            }
        }
    }
}
