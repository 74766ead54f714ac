//! The action queue: per-CPU slots in a calendar queue of CPUs, plus a small heap for everything
//! else, in one order `(time, seq)`.
//!
//! `seq` is a monotonic scheduling counter: every [`ActionQueue::push`] and every
//! [`ActionQueue::set`] takes the next one, so actions due at the same instant come out in the
//! order they were scheduled (FIFO) unless a [`Chooser`] other than FIFO picks another one.
//!
//! Most actions belong to one CPU and at most one of each kind is live at a time: the CPU's next
//! step, and the expiry its local timer is programmed for. Those live in the CPU's [`Slot`]s; a
//! new one overwrites the old (re-arming a timer, a wait cut short), so nothing stale is ever
//! queued and the queue holds at most two actions per CPU plus those in flight between CPUs
//! (interrupts on their way, workload actions), which go to a 4-ary heap. The CPUs with a live
//! slot, keyed by their earliest slot, are in a calendar queue (R. Brown, "Calendar queues",
//! CACM 31(10), 1988): time is cut into buckets of a width fitted to the run, the CPUs due
//! within the next few thousand buckets sit in the bucket of their key (a list in key order),
//! the rest in an indexed 4-ary heap until the window reaches them. A simulator CPU pops its
//! action and re-arms a little later, over and over (the "hold" pattern), which a calendar
//! serves in expected constant time per action where a heap of N CPUs sinks the re-armed CPU
//! through O(log N) levels. The CPU just popped is placed lazily, once for its pop and its
//! re-arm together (see [`ActionQueue`]).

use super::Time;

/// A queued action with its ordering key `(time << 64) | seq`: earliest time first, then
/// scheduling order.
#[derive(Debug)]
struct Entry<A> {
    key: u128,
    action: A,
}

impl<A> Entry<A> {
    #[inline]
    fn time(&self) -> Time {
        (self.key >> 64) as Time
    }
}

/// A 4-ary min-heap of entries: the actions not held in a CPU slot (interrupts in flight,
/// workload actions). It stays short (a few entries per CPU at most).
#[derive(Debug)]
struct QuadHeap<A> {
    v: Vec<Entry<A>>,
}

impl<A> QuadHeap<A> {
    fn with_capacity(n: usize) -> Self {
        QuadHeap { v: Vec::with_capacity(n) }
    }

    #[inline]
    fn len(&self) -> usize {
        self.v.len()
    }

    #[inline]
    fn peek(&self) -> Option<&Entry<A>> {
        self.v.first()
    }

    #[inline]
    fn push(&mut self, e: Entry<A>) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.v[parent].key <= self.v[i].key {
                break;
            }
            self.v.swap(parent, i);
            i = parent;
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<A>> {
        let n = self.v.len();
        if n == 0 {
            return None;
        }
        let top = self.v.swap_remove(0);
        let n = n - 1;
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let last = (first + 4).min(n);
            let mut m = first;
            for c in first + 1..last {
                if self.v[c].key < self.v[m].key {
                    m = c;
                }
            }
            if self.v[i].key <= self.v[m].key {
                break;
            }
            self.v.swap(i, m);
            i = m;
        }
        Some(top)
    }
}

/// Decides which of several actions due at the same instant runs first.
///
/// This is the interface a later interleaving explorer plugs into: a run is fully described by
/// its seed plus the list of choices made here. [`Chooser::Fifo`] is the default and makes no
/// choice at all (it is never consulted), so the common path costs nothing. The candidates at a
/// choice point are the actions due at that instant, in `(time, seq)` order.
#[derive(Debug, Clone, Default)]
pub enum Chooser {
    /// Same-time actions run in the order they were scheduled.
    #[default]
    Fifo,
    /// Replay recorded choices: at the n-th choice point pick index `choices[n]` (taken modulo
    /// the number of candidates); past the end of the list, FIFO.
    Replay { choices: Vec<u32>, next: usize },
    /// Record the choices made (all FIFO) so that a run can be replayed or mutated.
    Record { choices: Vec<u32> },
    /// A strategy object decides (the interleaving explorer's strategies and replay of its
    /// tokens, `src/explore/`).
    Strategy(Box<dyn ChoiceStrategy>),
}

/// A strategy for [`Chooser::Strategy`]: at the choice point numbered `point` (0, 1, ... in the
/// run), pick one of the candidates due at the same instant, listed in `(time, seq)` order.
/// `owners[i]` is the CPU that candidate `i` belongs to ([`ActionQueue::owner_of`]; `u32::MAX`
/// when it belongs to none or no owner function is set). The result is taken modulo the number
/// of candidates.
pub trait ChoiceStrategy: std::fmt::Debug + Send {
    fn choose(&mut self, point: u64, owners: &[u32]) -> usize;
    /// The strategy as `Any`, so that its owner can take back what it recorded.
    fn as_any(&self) -> &dyn std::any::Any;
    /// A copy in the same state (so that a [`Chooser`] stays `Clone`).
    fn box_clone(&self) -> Box<dyn ChoiceStrategy>;
}

impl Clone for Box<dyn ChoiceStrategy> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

impl Chooser {
    fn choose(&mut self, candidates: usize, point: u64, owner: impl Fn(usize) -> u32) -> usize {
        match self {
            Chooser::Strategy(s) => {
                let owners: Vec<u32> = (0..candidates).map(owner).collect();
                s.choose(point, &owners) % candidates
            }
            Chooser::Fifo => 0,
            Chooser::Replay { choices, next } => {
                let c = choices.get(*next).copied().unwrap_or(0) as usize % candidates;
                *next += 1;
                c
            }
            Chooser::Record { choices } => {
                choices.push(0);
                0
            }
        }
    }
}

/// The per-CPU slots: at most one live action of each kind per CPU. Setting a slot replaces
/// what it held (the old action is gone, never popped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The CPU's next step (the end of its current step's time, or of its wait).
    Step = 0,
    /// The expiry its local timer is programmed for (one hardware timer per CPU).
    Timer = 1,
}

const NR_SLOTS: usize = 2;

/// One slot: its key `(time << 64) | seq` and action (`None`: empty, key `u128::MAX`).
#[derive(Debug, Clone, Copy)]
struct SlotEntry<A> {
    key: u128,
    action: Option<A>,
}

/// A CPU's slots, in one cache line (when an action is at most 16 bytes): popping a CPU's
/// action reads its slots just after the heap picked the CPU, usually a cache miss on a large
/// machine, so it should be one.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct CpuSlots<A>([SlotEntry<A>; NR_SLOTS]);

/// Key of an empty slot, and of a CPU with no live slot.
const NONE_KEY: u128 = u128::MAX;

/// Positions allocated past the last CPU in the far heap, so that every position with a child
/// has four.
const HEAP_PAD: usize = 4;

/// [`Node::at`] of a CPU with no live slot (in no structure), and the end of a bucket's list.
const NOT_QUEUED: u32 = u32::MAX;
/// [`Node::at`] of a CPU in a calendar bucket.
const IN_RING: u32 = u32::MAX - 1;
/// [`Node::at`] of the CPU popped last, whose new key is not placed yet (see [`ActionQueue`]).
const PENDING: u32 = u32::MAX - 2;
/// End of a bucket's list; no pending CPU.
const NIL: u32 = u32::MAX;

/// Buckets in the ring per CPU (rounded up to a power of two, at least 64 in all). A window
/// of many buckets keeps the CPUs whose next key lies several spacings on (a long step) out of
/// the far heap while the buckets stay narrow: with 2 per CPU, `run hackbench 32` on 256 CPUs
/// placed 2.1M of 12.2M re-armed CPUs in the far heap (10% of its time in far-heap sifts), with
/// 8 per CPU 75K.
const BUCKETS_PER_CPU: usize = 8;

/// The smallest ring (in buckets, minus one) whose bucket ends the CPU popped last asks the
/// host to cache as soon as its next key is known, before the settle that places it: from 512
/// CPUs (4096 buckets, 32 KB of ends) the ends of a bucket some steps ahead are rarely in the
/// host's L1. On hackbench at 4096 CPUs (256 KB of ends) that load was a quarter of
/// `Kernel::run`'s samples.
const PREFETCH_BUCKETS_FROM: u64 = 4095;

/// CPU pops between two looks at the bucket width (fewer in unit tests, so that their short
/// runs change widths).
#[cfg(not(test))]
const RESAMPLE_POPS: u32 = 1024;
#[cfg(test)]
const RESAMPLE_POPS: u32 = 16;

/// The bucket width narrows when more than one in `WIDTH_SLACK` CPU pops has cost a step of a
/// walk along a bucket's list (buckets shared by keys placed out of order), else widens when as
/// many have cost a skip over 64 empty buckets.
const WIDTH_SLACK: u32 = 8;

/// Walk steps or empty-bucket skips since the last look at the width that change it (see
/// [`WIDTH_SLACK`]).
const WIDTH_CHANGE_AT: u32 = RESAMPLE_POPS / WIDTH_SLACK;

/// The widest bucket, `2^MAX_SHIFT` ns (about 18 minutes): the window's end stays far from
/// overflowing.
const MAX_SHIFT: u32 = 40;

/// A CPU's place in the CPU-level structure: its key and its bucket links (two to a cache
/// line).
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
struct Node {
    /// The earliest of its slot keys (`NONE_KEY`: none live).
    key: u128,
    /// Its neighbours in its bucket, earlier and later (`NIL` at the ends).
    prev: u32,
    next: u32,
    /// Where it is: its far-heap position, `IN_RING`, `PENDING` or `NOT_QUEUED`.
    at: u32,
    /// Its bucket's index in the ring (`number & mask`) while it is `IN_RING`, so that an
    /// unlink does not work it out from the key again.
    bucket: u32,
}

/// Where a candidate of a choice point lives.
enum Source<A> {
    Heap(Entry<A>),
    Slot(usize, usize),
}

/// The queue of pending actions.
///
/// Each CPU with a live slot has a key, its earliest slot's (`Node::key`). The CPUs are kept in
/// a calendar queue: a ring of `mask + 1` buckets, each `2^shift` ns wide, holds the CPUs whose
/// key's bucket number (`time >> shift`) lies in the window `cur .. cur + mask + 1`, bucket
/// `number & mask`, each bucket a doubly linked list in key order; an occupancy bitmap finds the
/// earliest non-empty bucket from `low`, a lower bound of the ring's bucket numbers. CPUs whose
/// key lies at or past the window's end (a timer far away, a CPU idle until then) wait in an
/// indexed 4-ary heap (`far_*`), and every ring key is earlier than every far key; when a pop
/// moves the window's start to the popped key's bucket, the far CPUs now inside it move into
/// their buckets (`far_bucket`, the far root's bucket number, tells at one compare whether
/// any does). A ring CPU's node also holds its bucket's index, for the unlink. Keys are never
/// earlier than the last popped one's bucket (nothing is scheduled into the past); one that is
/// makes the ring rebuilt from that bucket on, so the order stays exact whatever is set.
///
/// The width follows the run: every [`RESAMPLE_POPS`] CPU pops it halves if too many inserts
/// walked along a bucket's list, or doubles if too many pops skipped runs of empty buckets
/// ([`WIDTH_SLACK`]), and the ring is rebuilt in the new width. The width decides only speed,
/// never order: within a bucket the full `(time, seq)` key orders the list, and same-time keys
/// always share a bucket. `first` names the earliest placed CPU at all times, so a peek reads
/// two fields.
///
/// The CPU just popped is not placed at once (`pending`): it usually sets its next step before
/// the queue is asked for its next action, and then one placement serves both. Its key takes
/// part in every look at the minimum meanwhile.
///
/// No count of live slots is kept (a set and a pop would each pay for it): [`ActionQueue::len`]
/// counts them.
#[derive(Debug)]
pub struct ActionQueue<A> {
    /// Each CPU's slots.
    slots: Vec<CpuSlots<A>>,
    /// Each CPU's key and place.
    nodes: Vec<Node>,
    /// Per bucket: its first and last CPU (`NIL` when empty).
    ends: Vec<[u32; 2]>,
    /// Bit `i` set: bucket `i` holds a CPU.
    bits: Vec<u64>,
    /// Bucket count minus one (the count is a power of two, at least 64).
    mask: u64,
    /// `log2` of the bucket width in ns.
    shift: u32,
    /// The window's first bucket number.
    cur: u64,
    /// No ring CPU's bucket number is below it (and it is at least `cur`); `u64::MAX` while
    /// the ring is empty, so that an insert looks at it alone.
    low: u64,
    /// Number of CPUs in the ring.
    ring_len: usize,
    /// The far heap: `far_key[i]` is the key of CPU `far_cpu[i]` for `i < far_n`; children of
    /// `i` are `4i + 1 ..= 4i + 4`; `NONE_KEY` from `far_n` on (with [`HEAP_PAD`] spare
    /// positions, so that every position below `far_n` has four children to compare).
    far_key: Vec<u128>,
    far_cpu: Vec<u32>,
    far_n: usize,
    /// The bucket number of the far heap's root (of `NONE_KEY` when it is empty): a pop that
    /// moves the window's start looks here, not into the heap, to see whether a far CPU comes
    /// inside the window (it rarely does).
    far_bucket: u64,
    /// The earliest placed CPU (the ring's first, else the far heap's root; `NIL`: none) and its
    /// key (`NONE_KEY`: none).
    first: u32,
    first_key: u128,
    /// The CPU popped last, in no structure until placed (`NIL`: none).
    pending: u32,
    /// CPU pops left before the width is looked at again; since it was last looked at, steps
    /// of walks along a bucket's list and words of 64 empty buckets skipped.
    pops_left: u32,
    walks: u32,
    skips: u32,
    heap: QuadHeap<A>,
    seq: u64,
    /// How same-time actions are ordered.
    pub chooser: Chooser,
    /// Number of choice points met (instants with more than one action due).
    pub choice_points: u64,
    /// Which CPU an action belongs to, for [`Chooser::Strategy`] (e.g. PCT's per-CPU priorities).
    pub owner_of: Option<fn(&A) -> u32>,
}

impl<A> Default for ActionQueue<A> {
    fn default() -> Self {
        Self::new()
    }
}

/// The index (0 to 3) of the least of four keys, the first on a tie (`j & 3` at a use spares
/// the bounds check).
#[inline(always)]
fn least_of_four(ch: &[u128; 4]) -> usize {
    let a = (ch[1] < ch[0]) as usize;
    let b = 2 + (ch[3] < ch[2]) as usize;
    if ch[b] < ch[a] {
        b
    } else {
        a
    }
}

impl<A> ActionQueue<A> {
    /// A queue without CPU slots (everything through [`ActionQueue::push`]).
    pub fn new() -> Self {
        Self::with_cpus(0)
    }

    /// A queue with slots for CPUs `0..nr_cpus`.
    pub fn with_cpus(nr_cpus: usize) -> Self {
        let mut slots = Vec::with_capacity(nr_cpus);
        slots.resize_with(nr_cpus, || CpuSlots([(); NR_SLOTS].map(|_| SlotEntry { key: NONE_KEY, action: None })));
        let nb = (BUCKETS_PER_CPU * nr_cpus).next_power_of_two().max(64);
        ActionQueue {
            slots,
            nodes: vec![Node { key: NONE_KEY, prev: NIL, next: NIL, at: NOT_QUEUED, bucket: 0 }; nr_cpus],
            ends: vec![[NIL; 2]; nb],
            bits: vec![0; nb / 64],
            mask: nb as u64 - 1,
            shift: 8,
            cur: 0,
            low: u64::MAX,
            ring_len: 0,
            far_key: vec![NONE_KEY; nr_cpus + HEAP_PAD],
            far_cpu: vec![NOT_QUEUED; nr_cpus + HEAP_PAD],
            far_n: 0,
            // The bucket number of `NONE_KEY` (the empty far heap's root) at the first width.
            far_bucket: u64::MAX >> 8,
            first: NIL,
            first_key: NONE_KEY,
            pending: NIL,
            pops_left: RESAMPLE_POPS,
            walks: 0,
            skips: 0,
            heap: QuadHeap::with_capacity(64),
            seq: 0,
            chooser: Chooser::Fifo,
            choice_points: 0,
            owner_of: None,
        }
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        let seq = self.seq;
        // Without an overflow check: 2^64 schedulings do not happen.
        self.seq = seq.wrapping_add(1);
        seq
    }

    /// Schedule `action` at absolute time `time` (an action not held in a CPU slot).
    #[inline]
    pub fn push(&mut self, time: Time, action: A) {
        let seq = self.next_seq();
        self.heap.push(Entry { key: ((time as u128) << 64) | seq as u128, action });
    }

    /// Schedule `action` at `time` in `cpu`'s `slot`, replacing what the slot held. It takes
    /// the next `seq`, exactly as a [`ActionQueue::push`] at this point would.
    #[inline]
    pub fn set(&mut self, cpu: usize, slot: Slot, time: Time, action: A) {
        let seq = self.next_seq();
        let key = ((time as u128) << 64) | seq as u128;
        let s = &mut self.slots[cpu].0;
        s[slot as usize] = SlotEntry { key, action: Some(action) };
        // The CPU's earliest key: the new one or its other slot's.
        let k = key.min(s[slot as usize ^ 1].key);
        self.update_key(cpu, k);
    }

    /// Empty `cpu`'s `slot` (its action will not run).
    #[inline]
    pub fn cancel(&mut self, cpu: usize, slot: Slot) {
        let e = &mut self.slots[cpu].0[slot as usize];
        if e.action.take().is_some() {
            e.key = NONE_KEY;
            self.update(cpu);
        }
    }

    /// Time of the action in `cpu`'s `slot`, if any.
    pub fn slot_time(&self, cpu: usize, slot: Slot) -> Option<Time> {
        let e = &self.slots[cpu].0[slot as usize];
        e.action.as_ref().map(|_| (e.key >> 64) as Time)
    }

    /// The earliest key of `cpu`'s slots (`NONE_KEY` if none is live).
    #[inline]
    fn cpu_min(&self, cpu: usize) -> u128 {
        let s = &self.slots[cpu].0;
        s[0].key.min(s[1].key)
    }

    /// CPU `c`'s node.
    #[inline(always)]
    fn node(&self, c: u32) -> &Node {
        debug_assert!((c as usize) < self.nodes.len());
        // SAFETY: the CPUs linked in buckets, held in the far heap and pending are CPUs of this
        // queue (below `nodes.len()`).
        unsafe { self.nodes.get_unchecked(c as usize) }
    }

    /// CPU `c`'s node, to change.
    #[inline(always)]
    fn node_mut(&mut self, c: u32) -> &mut Node {
        debug_assert!((c as usize) < self.nodes.len());
        // SAFETY: as in `node`.
        unsafe { self.nodes.get_unchecked_mut(c as usize) }
    }

    /// The bucket number of `key`.
    #[inline(always)]
    fn bucket(&self, key: u128) -> u64 {
        // `shift` is at most MAX_SHIFT: the wrapping shift is the plain one, without a check.
        ((key >> 64) as u64).wrapping_shr(self.shift)
    }

    /// Give `cpu` its new earliest key.
    #[inline(always)]
    fn update(&mut self, cpu: usize) {
        let k = self.cpu_min(cpu);
        self.update_key(cpu, k);
    }

    /// Give `cpu`, whose slots were just indexed (`cpu < slots.len()`), its new earliest key
    /// `k`.
    #[inline(always)]
    fn update_key(&mut self, cpu: usize, k: u128) {
        debug_assert!(cpu < self.slots.len() && self.slots.len() == self.nodes.len());
        // SAFETY: `cpu` indexed `slots`, and `nodes` is as long (one of each per CPU).
        let n = unsafe { self.nodes.get_unchecked_mut(cpu) };
        if n.at == PENDING {
            // Placed by the next settle: on a large ring, ask the host for its bucket's ends
            // now (see `PREFETCH_BUCKETS_FROM`).
            n.key = k;
            if self.mask >= PREFETCH_BUCKETS_FROM {
                let i = (self.bucket(k) & self.mask) as usize;
                super::prefetch::prefetch(self.ends.as_ptr().wrapping_add(i));
            }
            return;
        }
        self.update_slow(cpu, k);
    }

    /// [`ActionQueue::update`] of a CPU that is placed (or in no structure).
    #[inline(never)]
    fn update_slow(&mut self, cpu: usize, k: u128) {
        match self.nodes[cpu].at {
            IN_RING => self.ring_remove(cpu as u32),
            NOT_QUEUED => {}
            p => {
                let b = self.bucket(k);
                if k != NONE_KEY && b >= self.cur && b - self.cur > self.mask {
                    // Stays far: move it within the far heap.
                    let i = p as usize;
                    let old = self.far_key[i];
                    self.nodes[cpu].key = k;
                    self.far_key[i] = k;
                    if k < old {
                        self.far_sift_up(i);
                    } else {
                        self.far_sift_down(i);
                    }
                    self.far_root_changed();
                    if cpu as u32 == self.first || k < self.first_key {
                        self.refresh_first();
                    }
                    return;
                }
                self.far_remove_at(p as usize);
            }
        }
        self.nodes[cpu].key = k;
        self.place(cpu as u32);
        if cpu as u32 == self.first {
            self.refresh_first();
        }
        // Placements with no pop between them (one action arming timers on many CPUs) look
        // at the width here, as `count_pop` would.
        if self.walks > WIDTH_CHANGE_AT {
            self.resample();
        }
    }

    /// Put `cpu` (in no structure) where its key belongs: the ring, the far heap, or nowhere;
    /// it becomes `first` if it is earlier.
    #[inline(always)]
    fn place(&mut self, cpu: u32) {
        let k = self.node(cpu).key;
        let b = self.bucket(k);
        // A key at `Time::MAX` (`NONE_KEY` among them) takes the slow path.
        if b.wrapping_sub(self.cur) <= self.mask && (k >> 64) as Time != Time::MAX {
            self.ring_insert(cpu, k, b);
            if k < self.first_key {
                (self.first, self.first_key) = (cpu, k);
            }
        } else {
            self.place_slow(cpu, k, b);
        }
    }

    /// [`ActionQueue::place`] of a CPU whose key is not in the window.
    #[inline(never)]
    fn place_slow(&mut self, cpu: u32, k: u128, b: u64) {
        if k == NONE_KEY {
            self.node_mut(cpu).at = NOT_QUEUED;
        } else if b < self.cur {
            // Earlier than the window: never from the simulator (nothing is scheduled into the
            // past), but the order stays exact.
            self.node_mut(cpu).at = NOT_QUEUED;
            self.rebuild(b, self.shift);
            self.place(cpu);
        } else if b - self.cur <= self.mask {
            // A key at `Time::MAX` inside the window (a window at the end of time).
            self.ring_insert(cpu, k, b);
            if k < self.first_key {
                (self.first, self.first_key) = (cpu, k);
            }
        } else {
            self.far_push(cpu, k);
            if k < self.first_key {
                (self.first, self.first_key) = (cpu, k);
            }
        }
    }

    /// Find `first` again (after it left, or after a rebuild).
    #[inline(always)]
    fn refresh_first(&mut self) {
        (self.first_key, self.first) = if self.ring_len > 0 {
            let c = self.ring_first();
            (self.node(c).key, c)
        } else if self.far_n > 0 {
            (self.far_key[0], self.far_cpu[0])
        } else {
            (NONE_KEY, NIL)
        };
    }

    /// Place the CPU popped last.
    #[inline(always)]
    fn settle(&mut self) {
        let p = self.pending;
        if p != NIL {
            self.pending = NIL;
            self.place(p);
        }
    }

    /// Link `cpu` with key `key` into the list of bucket number `b` (in the window), in key
    /// order.
    #[inline(always)]
    fn ring_insert(&mut self, cpu: u32, key: u128, b: u64) {
        let i = (b & self.mask) as usize;
        debug_assert!(i < self.ends.len() && i >> 6 < self.bits.len());
        // SAFETY: `i <= mask`, and `ends` has `mask + 1` buckets, `bits` a bit for each.
        let [head, tail] = unsafe { *self.ends.get_unchecked(i) };
        // Usually the latest of its bucket (a later step, a fresh seq), else maybe the earliest.
        let (prev, next) = if tail == NIL {
            // SAFETY: as above.
            unsafe { *self.bits.get_unchecked_mut(i >> 6) |= 1 << (i & 63) };
            (NIL, NIL)
        } else if self.node(tail).key < key {
            (tail, NIL)
        } else if key < self.node(head).key {
            (NIL, head)
        } else {
            // Between the head (earlier) and the tail (later): the walk stops at the head.
            let mut p = self.node(tail).prev;
            while self.node(p).key > key {
                p = self.node(p).prev;
                // Reset every RESAMPLE_POPS pops, long before it could wrap.
                self.walks = self.walks.wrapping_add(1);
            }
            (p, self.node(p).next)
        };
        let n = self.node_mut(cpu);
        (n.prev, n.next, n.at, n.bucket) = (prev, next, IN_RING, i as u32);
        // SAFETY: as above.
        let ends = unsafe { self.ends.get_unchecked_mut(i) };
        if prev == NIL {
            ends[0] = cpu;
        } else {
            self.node_mut(prev).next = cpu;
        }
        // SAFETY: as above.
        let ends = unsafe { self.ends.get_unchecked_mut(i) };
        if next == NIL {
            ends[1] = cpu;
        } else {
            self.node_mut(next).prev = cpu;
        }
        if b < self.low {
            self.low = b;
        }
        // At most one per CPU: no overflow.
        self.ring_len = self.ring_len.wrapping_add(1);
    }

    /// Unlink `cpu` from its bucket.
    #[inline(always)]
    fn ring_remove(&mut self, cpu: u32) {
        let Node { prev, next, bucket, .. } = *self.node(cpu);
        let i = bucket as usize;
        debug_assert!(i < self.ends.len() && i >> 6 < self.bits.len());
        if prev == NIL {
            // SAFETY: `i <= mask`, and `ends` has `mask + 1` buckets, `bits` a bit for each.
            unsafe { self.ends.get_unchecked_mut(i)[0] = next };
        } else {
            self.node_mut(prev).next = next;
        }
        if next == NIL {
            // SAFETY: as above.
            unsafe { self.ends.get_unchecked_mut(i)[1] = prev };
        } else {
            self.node_mut(next).prev = prev;
        }
        if prev == NIL && next == NIL {
            // SAFETY: as above.
            unsafe { *self.bits.get_unchecked_mut(i >> 6) &= !(1 << (i & 63)) };
        }
        self.node_mut(cpu).at = NOT_QUEUED;
        // It was counted: no underflow.
        self.ring_len = self.ring_len.wrapping_sub(1);
        if self.ring_len == 0 {
            self.low = u64::MAX;
        }
    }

    /// Unlink the head of bucket `i`, whose next CPU is `next` ([`ActionQueue::ring_remove`] of a
    /// CPU known to be first in its bucket; the caller sets its `at`).
    #[inline(always)]
    fn ring_remove_head(&mut self, i: usize, next: u32) {
        debug_assert!(i < self.ends.len() && i >> 6 < self.bits.len());
        // SAFETY: a linked CPU's `bucket` is at most `mask`, and `ends` has `mask + 1` buckets,
        // `bits` a bit for each.
        unsafe {
            let ends = self.ends.get_unchecked_mut(i);
            ends[0] = next;
            if next == NIL {
                ends[1] = NIL;
                *self.bits.get_unchecked_mut(i >> 6) &= !(1 << (i & 63));
            } else {
                self.node_mut(next).prev = NIL;
            }
        }
        // It was counted: no underflow.
        self.ring_len = self.ring_len.wrapping_sub(1);
        if self.ring_len == 0 {
            self.low = u64::MAX;
        }
    }

    /// The earliest CPU of the (non-empty) ring: the head of the earliest non-empty bucket, whose
    /// number becomes `low`.
    #[inline(always)]
    fn ring_first(&mut self) -> u32 {
        debug_assert!(self.ring_len > 0);
        let i = (self.low & self.mask) as usize;
        debug_assert!(i >> 6 < self.bits.len());
        // SAFETY: `i <= mask`, and `bits` has a bit for each of the `mask + 1` buckets.
        let word = unsafe { *self.bits.get_unchecked(i >> 6) } & (!0u64 << (i & 63));
        let j = if word != 0 { (i & !63) | word.trailing_zeros() as usize } else { self.ring_first_slow(i >> 6) };
        // Within the window: no overflow.
        self.low = self.low.wrapping_add((j as u64).wrapping_sub(i as u64) & self.mask);
        debug_assert!(j < self.ends.len());
        // SAFETY: a bit's index is a bucket's.
        unsafe { self.ends.get_unchecked(j)[0] }
    }

    /// The first set bit of the occupancy bitmap after word `w`, round the ring.
    #[inline(never)]
    fn ring_first_slow(&mut self, w: usize) -> usize {
        let nw = self.bits.len();
        for d in 1..=nw {
            // Reset every RESAMPLE_POPS pops, long before it could wrap.
            self.skips = self.skips.wrapping_add(1);
            let v = (w + d) & (nw - 1);
            let word = self.bits[v];
            if word != 0 {
                return (v << 6) | word.trailing_zeros() as usize;
            }
        }
        unreachable!("a non-empty ring has a set bit")
    }

    /// The earliest CPU, the one popped last included, and its key.
    #[inline(always)]
    fn least_cpu(&self) -> (u128, u32) {
        let (k, c) = (self.first_key, self.first);
        let p = self.pending;
        if p != NIL {
            let pk = self.node(p).key;
            if pk < k {
                return (pk, p);
            }
        }
        (k, c)
    }

    /// Move the window's start to bucket number `b` (no CPU is earlier), and the far CPUs now
    /// inside it into the ring.
    #[inline(always)]
    fn advance(&mut self, b: u64) {
        if b != self.cur {
            debug_assert!(b > self.cur);
            self.cur = b;
            if self.low < b {
                self.low = b;
            }
            // The far root is not earlier than the popped key: no underflow unless the heap is
            // empty, when `far_bucket` is far past any window and the call finds nothing.
            if self.far_bucket.wrapping_sub(b) <= self.mask {
                self.migrate();
            }
        }
    }

    /// Note the far heap's root's bucket number again (after the root or the width changed).
    #[inline(always)]
    fn far_root_changed(&mut self) {
        self.far_bucket = self.bucket(self.far_key[0]);
    }

    /// Move the far CPUs inside the window into the ring, earliest first.
    #[inline(never)]
    fn migrate(&mut self) {
        while self.far_n > 0 {
            let k = self.far_key[0];
            let b = self.bucket(k);
            // Far keys are past the window's start: no overflow.
            if b.wrapping_sub(self.cur) > self.mask {
                break;
            }
            let c = self.far_cpu[0];
            self.far_remove_at(0);
            self.ring_insert(c, k, b);
        }
    }

    /// Rebuild the ring with the window starting at bucket number `cur` of width `2^shift`.
    #[cold]
    fn rebuild(&mut self, cur: u64, shift: u32) {
        let mut cpus = Vec::with_capacity(self.ring_len);
        for w in 0..self.bits.len() {
            let mut word = self.bits[w];
            while word != 0 {
                let i = (w << 6) | word.trailing_zeros() as usize;
                word &= word - 1;
                let mut c = self.ends[i][0];
                while c != NIL {
                    cpus.push(c);
                    c = self.nodes[c as usize].next;
                }
                self.ends[i] = [NIL; 2];
            }
            self.bits[w] = 0;
        }
        self.ring_len = 0;
        (self.cur, self.low, self.shift) = (cur, u64::MAX, shift);
        self.far_root_changed();
        (self.first, self.first_key) = (NIL, NONE_KEY);
        for c in cpus {
            self.place(c);
        }
        self.migrate();
        self.refresh_first();
    }

    /// Count a CPU pop and, every [`RESAMPLE_POPS`], fit the bucket width to what the pops
    /// cost (see [`WIDTH_SLACK`]); at once when the walks since the last look already exceed
    /// what narrows it. Thousands of CPUs arming timers at about the same time (a workload's
    /// start) crowd a bucket, and until the width is looked at every placement walks the crowd:
    /// on 4096 CPUs, nanosleep's start walked 4.1M steps before a look. Such a burst may
    /// have no pop in it at all, so `update_slow` looks too.
    #[inline(always)]
    fn count_pop(&mut self) {
        // Reset to RESAMPLE_POPS at zero: no underflow.
        self.pops_left = self.pops_left.wrapping_sub(1);
        if self.pops_left == 0 || self.walks > WIDTH_CHANGE_AT {
            self.resample();
        }
    }

    #[cold]
    fn resample(&mut self) {
        let shift = if self.walks > WIDTH_CHANGE_AT && self.shift > 0 {
            self.shift - 1
        } else if self.skips > WIDTH_CHANGE_AT && self.shift < MAX_SHIFT {
            self.shift + 1
        } else {
            self.shift
        };
        (self.pops_left, self.walks, self.skips) = (RESAMPLE_POPS, 0, 0);
        if shift != self.shift {
            // The window's start as a time, in buckets of the new width.
            let start = self.cur << self.shift;
            self.rebuild(start >> shift, shift);
        }
    }

    /// Put `cpu` with key `k` into the far heap.
    fn far_push(&mut self, cpu: u32, k: u128) {
        let i = self.far_n;
        self.far_n += 1;
        self.nodes[cpu as usize].key = k;
        self.far_place(i, k, cpu);
        self.far_sift_up(i);
        self.far_root_changed();
    }

    /// Take the CPU at far-heap position `i` out of the far heap.
    fn far_remove_at(&mut self, i: usize) {
        let cpu = self.far_cpu[i] as usize;
        self.nodes[cpu].at = NOT_QUEUED;
        let last = self.far_n - 1;
        let (k, c) = (self.far_key[last], self.far_cpu[last]);
        self.far_n = last;
        self.far_key[last] = NONE_KEY;
        if i != last {
            let old = self.far_key[i];
            self.far_place(i, k, c);
            if k < old {
                self.far_sift_up(i);
            } else {
                self.far_sift_down(i);
            }
        }
        self.far_root_changed();
    }

    /// Move the far-heap entry at `i` up to its place.
    fn far_sift_up(&mut self, mut i: usize) {
        let (k, c) = (self.far_key[i], self.far_cpu[i]);
        while i > 0 {
            let parent = (i - 1) / 4;
            // SAFETY: `parent < i < far_n`, and far-heap positions below `far_n` hold CPUs of
            // this queue.
            unsafe {
                let pk = *self.far_key.get_unchecked(parent);
                if pk < k {
                    break;
                }
                let pc = *self.far_cpu.get_unchecked(parent);
                self.far_place_unchecked(i, pk, pc);
            }
            i = parent;
        }
        self.far_place(i, k, c);
    }

    /// Move the far-heap entry at `i` down to its place.
    fn far_sift_down(&mut self, mut i: usize) {
        let (k, c) = (self.far_key[i], self.far_cpu[i]);
        let n = self.far_n;
        debug_assert!(n + HEAP_PAD <= self.far_key.len());
        while 4 * i + 1 < n {
            let first = 4 * i + 1;
            // SAFETY: `first < far_n` and `far_key` has `HEAP_PAD` (4) positions past every
            // CPU, so `first + 3 < far_n + 4 <= far_key.len()`.
            let ch = unsafe { &*(self.far_key.as_ptr().add(first) as *const [u128; 4]) };
            let j = least_of_four(ch);
            let (m, mk) = (first + j, ch[j & 3]);
            if k < mk {
                break;
            }
            debug_assert!(m < n);
            // SAFETY: a child earlier than a live key is live (`m < far_n`; the padding is
            // `NONE_KEY`), and `i < m`.
            unsafe {
                let mc = *self.far_cpu.get_unchecked(m);
                self.far_place_unchecked(i, mk, mc);
            }
            i = m;
        }
        self.far_place(i, k, c);
    }

    /// [`ActionQueue::far_place`] without bounds checks, for the sift loops.
    ///
    /// # Safety
    /// `i < far_n` and `cpu` is a CPU of this queue (`cpu < nodes.len()`).
    #[inline(always)]
    unsafe fn far_place_unchecked(&mut self, i: usize, key: u128, cpu: u32) {
        debug_assert!(i < self.far_n && (cpu as usize) < self.nodes.len());
        // SAFETY: the caller's contract; `far_key` and `far_cpu` are longer than `far_n`.
        unsafe {
            *self.far_key.get_unchecked_mut(i) = key;
            *self.far_cpu.get_unchecked_mut(i) = cpu;
            self.nodes.get_unchecked_mut(cpu as usize).at = i as u32;
        }
    }

    /// Put CPU `cpu` with key `key` at far-heap position `i`.
    #[inline(always)]
    fn far_place(&mut self, i: usize, key: u128, cpu: u32) {
        self.far_key[i] = key;
        self.far_cpu[i] = cpu;
        self.nodes[cpu as usize].at = i as u32;
    }

    /// True when same-time actions simply run in scheduling order (no chooser consulted).
    #[inline]
    pub fn is_fifo(&self) -> bool {
        matches!(self.chooser, Chooser::Fifo)
    }

    /// Number of pending actions.
    pub fn len(&self) -> usize {
        self.heap.len() + self.slot_len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of pending actions held in CPU slots (counted: the hot paths keep no count).
    pub fn slot_len(&self) -> usize {
        self.slots.iter().map(|s| s.0.iter().filter(|e| e.action.is_some()).count()).sum()
    }

    /// Time of the earliest pending action. It leaves the CPU popped last unplaced (a CPU
    /// between its pop and its re-arm).
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        // Only the time is asked for: the least of the time words, without the full keys'
        // compares. A least time of `Time::MAX` may be no action at all (`NONE_KEY`).
        let mut t = (self.first_key >> 64) as Time;
        let p = self.pending;
        if p != NIL {
            t = t.min((self.node(p).key >> 64) as Time);
        }
        if let Some(h) = self.heap.peek() {
            t = t.min(h.time());
        }
        if t == Time::MAX {
            return self.peek_key_time();
        }
        Some(t)
    }

    /// True when no pending action is due at or before `t`:
    /// `peek_time().is_none_or(|q| t < q)`, looking no further than the first action found due
    /// by then (usually `first`, on a machine of many CPUs).
    #[inline]
    pub fn none_due_by(&self, t: Time) -> bool {
        if (self.first_key >> 64) as Time <= t {
            // At `Time::MAX` also when `first` is none (`NONE_KEY`'s time word is `Time::MAX`):
            // then ask the full keys.
            return t == Time::MAX && self.peek_time().is_none();
        }
        // From here on `t < Time::MAX`, so an empty slot's key is never due by `t`.
        let p = self.pending;
        if p != NIL && (self.node(p).key >> 64) as Time <= t {
            return false;
        }
        self.heap.peek().is_none_or(|h| h.time() > t)
    }

    /// [`ActionQueue::peek_time`] through the full keys.
    #[cold]
    fn peek_key_time(&self) -> Option<Time> {
        let (k, _) = self.least_cpu();
        let k = match self.heap.peek() {
            Some(h) if h.key < k => h.key,
            _ => k,
        };
        (k != NONE_KEY).then_some((k >> 64) as Time)
    }

    /// Time of the earliest pending action, like [`ActionQueue::peek_time`]; it also places the
    /// CPU popped last, which the next [`ActionQueue::pop`] would do anyway.
    #[inline]
    pub fn next_time(&mut self) -> Option<Time> {
        self.settle();
        self.peek_time()
    }

    /// The CPU whose action is likely to come out next, for a caller that prefetches that
    /// CPU's state while the current action runs; its slots' line is prefetched here. The
    /// earliest of the CPUs (the one popped last included) and the top of the heap of actions
    /// in flight (`owner` names the CPU of one; `u32::MAX`: none). Only a guess: what the
    /// current action schedules may come first. Changes nothing.
    #[inline]
    pub fn next_cpu_hint(&mut self, owner: impl Fn(&A) -> u32) -> Option<usize> {
        let (k, mut cpu) = self.least_cpu();
        match self.heap.peek() {
            Some(h) if h.key < k => cpu = owner(&h.action),
            _ if k == NONE_KEY => return None,
            _ => {}
        }
        let cpu = cpu as usize;
        let s = self.slots.get(cpu)?;
        super::prefetch::prefetch(s);
        Some(cpu)
    }

    /// [`ActionQueue::next_cpu_hint`] and a guess at the CPU after it: the earliest CPU of the
    /// ring if the first guess is another CPU (one popped last, or one an action in flight is
    /// for), else the next CPU in the first guess's bucket, else the CPU of the action in flight
    /// that comes first. Only a guess, like the first: it does not look past the bucket, nor
    /// compare that CPU with the actions in flight. Changes nothing.
    #[inline]
    pub fn next_cpu_hints(&mut self, owner: impl Fn(&A) -> u32 + Copy) -> (Option<usize>, Option<usize>) {
        let Some(h1) = self.next_cpu_hint(owner) else { return (None, None) };
        let f = self.first;
        let h2 = if f == NIL {
            NIL
        } else if h1 != f as usize {
            f
        } else {
            match self.node(f).next {
                NIL => self.heap.peek().map_or(NIL, |h| owner(&h.action)),
                n => n,
            }
        };
        if h2 == NIL || h2 as usize >= self.slots.len() {
            return (Some(h1), None);
        }
        // What popping it will touch: its slots, and its node (its bucket neighbour's pop
        // unlinks it from the head).
        super::prefetch::prefetch(&self.slots[h2 as usize]);
        super::prefetch::prefetch(self.nodes.as_ptr().wrapping_add(h2 as usize));
        (Some(h1), Some(h2 as usize))
    }

    /// Take the action of `cpu`'s slot `idx`.
    #[inline]
    fn take_slot(&mut self, cpu: usize, idx: usize) -> (Time, A) {
        let e = &mut self.slots[cpu].0[idx];
        let t = (e.key >> 64) as Time;
        let a = e.action.take().expect("a live slot");
        e.key = NONE_KEY;
        self.update(cpu);
        (t, a)
    }

    /// Take the earliest action of `cpu`, the earliest CPU (placed: the one popped last is
    /// settled), whose key is `k`; `cpu` becomes the one popped last.
    #[inline(always)]
    fn take_first_slot(&mut self, cpu: u32, k: u128) -> (Time, A) {
        debug_assert!(self.pending == NIL && self.first == cpu && self.node(cpu).key == k);
        let Node { next, at, bucket, .. } = *self.node(cpu);
        // The earliest CPU after this one, if the ring tells at once: the next in its bucket.
        let mut after = NIL;
        if at == IN_RING {
            // The earliest of the ring: the head of its bucket.
            debug_assert_eq!(self.node(cpu).prev, NIL);
            self.ring_remove_head(bucket as usize, next);
            after = next;
        } else {
            self.far_remove_at(at as usize);
        }
        let t = (k >> 64) as Time;
        self.advance(t.wrapping_shr(self.shift));
        debug_assert!((cpu as usize) < self.slots.len());
        // SAFETY: the CPUs placed are CPUs of this queue (below `slots.len()`).
        let s = unsafe { &mut self.slots.get_unchecked_mut(cpu as usize).0 };
        // `k` is one of the two keys, and its `seq` (the low word) is no other live key's (nor
        // `NONE_KEY`'s: 2^64 - 1 schedulings do not happen), so that word tells which.
        let idx = (s[0].key as u64 != k as u64) as usize;
        let other = s[idx ^ 1].key;
        let e = &mut s[idx];
        let a = e.action.take().expect("a live slot");
        e.key = NONE_KEY;
        let n = self.node_mut(cpu);
        (n.key, n.at) = (other, PENDING);
        self.pending = cpu;
        if after != NIL {
            // CPUs that came in from the far heap are later than every ring CPU.
            (self.first, self.first_key) = (after, self.node(after).key);
        } else {
            self.refresh_first();
        }
        self.count_pop();
        (t, a)
    }

    /// Take the next action. When several are due at the same instant and the chooser is not
    /// FIFO, the chooser picks among them (in `(time, seq)` order); the others stay queued with
    /// their original order.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, A)> {
        self.pop_by(Time::MAX)
    }

    /// Take the next action if it is due at or before `limit` ([`ActionQueue::pop`] after a
    /// [`ActionQueue::next_time`] no later than `limit`, in one pass).
    #[inline]
    pub fn pop_by(&mut self, limit: Time) -> Option<(Time, A)> {
        if !matches!(self.chooser, Chooser::Fifo) {
            if self.next_time()? > limit {
                return None;
            }
            return self.pop_chosen();
        }
        self.settle();
        let (k, c) = (self.first_key, self.first);
        match self.heap.peek() {
            Some(h) if h.key < k => {
                if h.time() > limit {
                    return None;
                }
                let e = self.heap.pop().expect("peeked");
                Some((e.time(), e.action))
            }
            // A time of at most `limit`, and a key (`NONE_KEY`'s time is `Time::MAX`).
            _ if (k >> 64) as Time <= limit && ((k >> 64) as Time != Time::MAX || k != NONE_KEY) => {
                Some(self.take_first_slot(c, k))
            }
            _ => None,
        }
    }

    /// [`ActionQueue::pop`] with a chooser: gather every action due at the earliest instant.
    fn pop_chosen(&mut self) -> Option<(Time, A)> {
        self.settle();
        let t = self.peek_time()?;
        let mut cands: Vec<(u64, Source<A>)> = Vec::new();
        while self.heap.peek().is_some_and(|e| e.time() == t) {
            let e = self.heap.pop().expect("peeked");
            cands.push((e.key as u64, Source::Heap(e)));
        }
        // The CPUs with a slot due at `t`: the head of the earliest bucket on (same-time keys
        // share a bucket), or the far heap's subheaps whose earliest is at `t`.
        let mut due = Vec::new();
        if self.ring_len > 0 {
            let mut c = self.ring_first();
            while c != NIL && (self.nodes[c as usize].key >> 64) as Time == t {
                due.push(c as usize);
                c = self.nodes[c as usize].next;
            }
        } else {
            let n = self.far_n;
            let mut todo = if n > 0 { vec![0usize] } else { Vec::new() };
            while let Some(i) = todo.pop() {
                if (self.far_key[i] >> 64) as Time != t {
                    continue;
                }
                due.push(self.far_cpu[i] as usize);
                todo.extend((4 * i + 1..(4 * i + 5).min(n)).rev());
            }
        }
        for cpu in due {
            for s in 0..NR_SLOTS {
                let e = &self.slots[cpu].0[s];
                if e.action.is_some() && (e.key >> 64) as Time == t {
                    cands.push((e.key as u64, Source::Slot(cpu, s)));
                }
            }
        }
        cands.sort_unstable_by_key(|c| c.0);
        let idx = if cands.len() > 1 {
            self.choice_points += 1;
            let owner_of = self.owner_of;
            let cands = &cands;
            let owner = |i: usize| match &cands[i].1 {
                Source::Heap(e) => owner_of.map_or(u32::MAX, |f| f(&e.action)),
                Source::Slot(cpu, _) => *cpu as u32,
            };
            self.chooser.choose(cands.len(), self.choice_points - 1, owner)
        } else {
            0
        };
        let mut chosen = None;
        for (n, (_, src)) in cands.into_iter().enumerate() {
            match src {
                Source::Heap(e) if n == idx => chosen = Some((e.time(), e.action)),
                Source::Heap(e) => self.heap.push(e),
                Source::Slot(cpu, s) if n == idx => {
                    chosen = Some(self.take_slot(cpu, s));
                    // Nothing is earlier than `t`: the window may start at its bucket.
                    self.advance(t.wrapping_shr(self.shift));
                }
                Source::Slot(..) => {}
            }
        }
        chosen
    }

    /// Rebuild the ring with buckets `2^shift` ns wide (tests: the order must not change).
    #[cfg(test)]
    fn set_width(&mut self, shift: u32) {
        let start = self.cur << self.shift;
        self.rebuild(start >> shift, shift);
    }

    /// The first time past the window (tests: keys right at its end).
    #[cfg(test)]
    fn window_end(&self) -> Time {
        (self.cur + self.mask + 1) << self.shift
    }

    /// Check the structure's invariants (tests).
    #[cfg(test)]
    fn check_invariants(&self) {
        let nr = self.nodes.len();
        let mut seen = vec![false; nr];
        for (c, n) in self.nodes.iter().enumerate() {
            assert_eq!(n.key, self.cpu_min(c), "key of cpu {c}");
            match n.at {
                NOT_QUEUED => assert_eq!(n.key, NONE_KEY, "cpu {c} has a live slot but is not queued"),
                PENDING => assert_eq!(self.pending, c as u32, "cpu {c} pending but not the one popped last"),
                _ => {}
            }
        }
        if self.pending != NIL {
            assert_eq!(self.nodes[self.pending as usize].at, PENDING);
        }
        // The ring: each bucket in key order, in its place of the window, counted and flagged.
        assert!(self.low >= self.cur, "low {} before the window's start {}", self.low, self.cur);
        let mut ring = 0;
        let mut ring_max = 0u128;
        for i in 0..=self.mask as usize {
            let [head, tail] = self.ends[i];
            assert_eq!(self.bits[i >> 6] >> (i & 63) & 1 == 1, head != NIL, "bit of bucket {i}");
            let (mut c, mut prev) = (head, NIL);
            while c != NIL {
                let n = self.nodes[c as usize];
                assert_eq!(n.at, IN_RING, "cpu {c} in bucket {i}");
                assert!(!std::mem::replace(&mut seen[c as usize], true), "cpu {c} twice");
                assert_eq!(n.prev, prev, "prev of cpu {c}");
                if prev != NIL {
                    assert!(self.nodes[prev as usize].key < n.key, "order in bucket {i}");
                }
                let b = self.bucket(n.key);
                assert_eq!((b & self.mask) as usize, i, "cpu {c} in the wrong bucket");
                assert_eq!(n.bucket as usize, i, "bucket index of cpu {c}");
                assert!(b >= self.low && b - self.cur <= self.mask, "cpu {c} outside the window");
                ring += 1;
                ring_max = ring_max.max(n.key);
                (prev, c) = (c, n.next);
            }
            assert_eq!(tail, prev, "tail of bucket {i}");
        }
        assert_eq!(ring, self.ring_len);
        assert!(ring > 0 || self.low == u64::MAX, "low {} of an empty ring", self.low);
        // The far heap: heap order, at or past the window's end, after every ring key.
        let n = self.far_n;
        assert!(self.far_key[n..].iter().all(|&k| k == NONE_KEY), "padding past the far heap");
        assert_eq!(self.far_bucket, self.bucket(self.far_key[0]), "the far root's bucket number");
        for i in 0..n {
            let c = self.far_cpu[i] as usize;
            assert_eq!(self.nodes[c].at, i as u32, "far position of cpu {c}");
            assert!(!std::mem::replace(&mut seen[c], true), "cpu {c} twice");
            let k = self.far_key[i];
            assert_eq!(k, self.nodes[c].key, "far key of cpu {c}");
            assert_ne!(k, NONE_KEY);
            assert!(self.bucket(k) - self.cur > self.mask, "far cpu {c} inside the window");
            assert!(ring == 0 || ring_max < k, "far cpu {c} before a ring cpu");
            for j in 4 * i + 1..(4 * i + 5).min(n) {
                assert!(k < self.far_key[j], "far heap order at {i} -> {j}");
            }
        }
        for (c, n) in self.nodes.iter().enumerate() {
            let placed = n.at != NOT_QUEUED && n.at != PENDING;
            assert_eq!(placed, seen[c], "cpu {c} placed ({}) but not found, or found but not placed", n.at);
        }
        let first = (0..nr as u32).filter(|&c| seen[c as usize]).min_by_key(|&c| self.nodes[c as usize].key);
        assert_eq!(self.first, first.unwrap_or(NIL), "first");
        assert_eq!(self.first_key, first.map_or(NONE_KEY, |c| self.nodes[c as usize].key), "first key");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_actions_are_fifo() {
        let mut q = ActionQueue::new();
        q.push(10, 'a');
        q.push(5, 'b');
        q.push(10, 'c');
        q.push(10, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, a)| a)).collect();
        assert_eq!(order, vec!['b', 'a', 'c', 'd']);
    }

    #[test]
    fn a_set_slot_replaces_its_action_and_takes_a_new_seq() {
        let mut q = ActionQueue::with_cpus(3);
        q.set(1, Slot::Step, 10, 'a');
        q.push(10, 'b');
        q.set(2, Slot::Timer, 10, 'c');
        // Re-arming moves 'a' behind 'b' and 'c' (a fresh seq), and 'a' is gone.
        q.set(1, Slot::Step, 10, 'A');
        q.set(0, Slot::Timer, 20, 'd');
        q.cancel(0, Slot::Timer);
        assert_eq!(q.len(), 3);
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, a)| a)).collect();
        assert_eq!(order, vec!['b', 'c', 'A']);
        assert!(q.is_empty());
    }

    /// Thousands of CPUs armed by one action (no pop between) at times crowded into one bucket
    /// of the starting width, out of order: the width narrows during the burst, so the
    /// placements do not each walk the crowd, and the order stays exact.
    #[test]
    fn a_burst_of_placements_narrows_the_width_without_a_pop() {
        let nr = 4096usize;
        let mut q: ActionQueue<u32> = ActionQueue::with_cpus(nr);
        let start = q.shift;
        let mut walked = 0u64;
        for c in 0..nr {
            let before = q.walks;
            // Scattered over 251 ns (one bucket of the starting width), not in CPU order.
            q.set(c, Slot::Step, 1_000 + (c as Time * 7919) % 251, c as u32);
            walked += q.walks.saturating_sub(before) as u64;
        }
        q.check_invariants();
        assert!(q.shift < start, "width still 2^{} ns", q.shift);
        // Without the look during the burst this walked about 4096^2 / 4 = 4.2M steps.
        assert!(walked < 200_000, "{walked} steps walked");
        // Set in CPU order: same-time CPUs come out in CPU order.
        let mut last = None;
        while let Some((t, c)) = q.pop() {
            assert!(last < Some((t, c)), "order broken at cpu {c}");
            last = Some((t, c));
        }
    }

    /// In the hold pattern (each CPU pops its step and re-arms it a period later, the CPUs
    /// staggered) the two hints name the CPUs of the next two pops, and asking for them changes
    /// no pop.
    #[test]
    fn next_cpu_hints_name_the_next_two_cpus_of_a_hold_pattern() {
        let nr = 64usize;
        let run = |hinted: bool| {
            let mut q: ActionQueue<u32> = ActionQueue::with_cpus(nr);
            for c in 0..nr {
                q.set(c, Slot::Step, 1 + 7 * c as Time, c as u32);
            }
            let (mut order, mut right, mut asked) = (Vec::new(), 0, 0);
            let mut expect: Option<(Option<usize>, Option<usize>)> = None;
            let mut prev2 = None;
            while let Some((t, c)) = q.pop() {
                if t > 20_000 {
                    break;
                }
                if let Some((h1, _)) = expect {
                    asked += 2;
                    right += (h1 == Some(c as usize)) as u32 + (prev2 == Some(c as usize)) as u32;
                }
                order.push((t, c));
                // As `Kernel::run` asks: after the pop, before the action re-arms.
                if hinted {
                    prev2 = expect.and_then(|e| e.1);
                    expect = Some(q.next_cpu_hints(|&a| a));
                }
                q.set(c as usize, Slot::Step, t + 1000 + (c as Time % 3), c);
            }
            (order, right, asked)
        };
        let (plain, _, _) = run(false);
        let (hinted, right, asked) = run(true);
        assert_eq!(plain, hinted, "hints changed the order");
        assert!(plain.len() > 1000);
        assert!(right * 10 >= asked * 9, "{right} of {asked} hints right");
    }

    /// The reference model: a list of `(time, seq, action)` live entries, with at most one per
    /// (CPU, slot) and the chooser applied to the entries due at the earliest time in
    /// `(time, seq)` order.
    /// A live entry of the model: time, seq, the (CPU, slot) it occupies if any, action.
    type ModelEntry = (u64, u64, Option<(usize, usize)>, u32);

    #[derive(Default)]
    struct Model {
        live: Vec<ModelEntry>,
        seq: u64,
    }

    impl Model {
        fn push(&mut self, t: u64, a: u32, slot: Option<(usize, usize)>) {
            if let Some(s) = slot {
                self.live.retain(|e| e.2 != Some(s));
            }
            self.live.push((t, self.seq, slot, a));
            self.seq += 1;
        }
        fn cancel(&mut self, s: (usize, usize)) {
            self.live.retain(|e| e.2 != Some(s));
        }
        fn pop(&mut self, ch: &mut Chooser, fifo: bool) -> Option<(u64, u32)> {
            self.live.sort_unstable_by_key(|e| (e.0, e.1));
            let t = self.live.first()?.0;
            let same = self.live.iter().take_while(|e| e.0 == t).count();
            let idx = if !fifo && same > 1 { ch.choose(same, 0, |_| u32::MAX) } else { 0 };
            let e = self.live.remove(idx);
            Some((e.0, e.3))
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(u64),
        Set(usize, bool, u64),
        Cancel(usize, bool),
        Pop,
        /// `next_time()`, which places the CPU popped last.
        Peek,
        /// Pop, and if the action was in a CPU's slot, set that CPU's step slot `t` later (as a
        /// CPU re-arms after its step; a late `t` places it behind every other CPU).
        PopRearm(u64),
        /// `pop_by(now + t)`: a pop only if the next action is due by then.
        PopBy(u64),
        /// Set a slot `2^e` ns on (far past the window).
        SetFar(usize, bool, u32),
        /// Set a slot at the window's end plus `d - 1` (just before, at, just past it).
        SetAtEnd(usize, bool, u64),
        /// Set the step slot of CPUs `c, c + 1, ...` (`n` of them) all at `now + t`.
        Burst(usize, usize, u64),
        /// Rebuild the ring with buckets `2^s` ns wide.
        Width(u32),
        /// Cancel the slot holding the earliest action, if a slot does.
        CancelMin,
        /// Pop everything.
        Drain,
        /// Set a slot `d` ns before the last pop (the simulator never does; the order must
        /// still be exact).
        SetPast(usize, bool, u64),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u64..30).prop_map(Op::Push),
            (0usize..64, any::<bool>(), 0u64..30).prop_map(|(c, s, t)| Op::Set(c, s, t)),
            (0usize..64, any::<bool>()).prop_map(|(c, s)| Op::Cancel(c, s)),
            Just(Op::Pop),
            Just(Op::Pop),
            Just(Op::Peek),
            (0u64..30).prop_map(Op::PopRearm),
            (0u64..10).prop_map(Op::PopBy),
            calendar_op(),
        ]
    }

    /// Ops that stress the calendar: far jumps, keys at the window's end, many same-time keys,
    /// width changes, a cancelled minimum, an emptied queue.
    fn calendar_op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            3 => (0usize..512, any::<bool>(), 6u32..44).prop_map(|(c, s, e)| Op::SetFar(c, s, e)),
            3 => (0usize..512, any::<bool>(), 0u64..3).prop_map(|(c, s, d)| Op::SetAtEnd(c, s, d)),
            2 => (0usize..512, 1usize..80, 0u64..30).prop_map(|(c, n, t)| Op::Burst(c, n, t)),
            2 => (0u32..24).prop_map(Op::Width),
            2 => Just(Op::CancelMin),
            1 => Just(Op::Drain),
            1 => (0usize..512, any::<bool>(), 1u64..5000).prop_map(|(c, s, d)| Op::SetPast(c, s, d)),
        ]
    }

    /// Ops for CPUs that take turns: mostly a pop and the popped CPU's re-arm, usually for
    /// after every other CPU (bottom-up sinks), sometimes near (the sink stops early).
    fn turns_op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (20u64..40).prop_map(Op::PopRearm),
            2 => (0u64..20).prop_map(Op::PopRearm),
            1 => (0usize..512, any::<bool>(), 0u64..40).prop_map(|(c, s, t)| Op::Set(c, s, t)),
            1 => (0usize..512, any::<bool>()).prop_map(|(c, s)| Op::Cancel(c, s)),
            1 => Just(Op::Peek),
            1 => (0u64..40).prop_map(Op::Push),
            1 => (0u64..10).prop_map(Op::PopBy),
            1 => calendar_op(),
        ]
    }

    /// Run `ops` on a queue with `nr_cpus` CPUs (an op's CPU taken modulo `nr_cpus`) and on the
    /// model, comparing every pop, the length and the next time after each op.
    fn check(
        ops: Vec<Op>,
        choices: Option<Vec<u32>>,
        nr_cpus: usize,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut q: ActionQueue<u32> = ActionQueue::with_cpus(nr_cpus);
        let fifo = choices.is_none();
        let mut mch = Chooser::Fifo;
        if let Some(c) = choices {
            q.chooser = Chooser::Replay { choices: c.clone(), next: 0 };
            mch = Chooser::Replay { choices: c, next: 0 };
        }
        let mut m = Model::default();
        let mut now = 0;
        let slot = |s: bool| if s { Slot::Timer } else { Slot::Step };
        // The CPU each action was set for (by action, which is the op's index).
        let mut cpu_of_action: Vec<Option<usize>> = Vec::new();
        for (n, op) in ops.into_iter().enumerate() {
            cpu_of_action.push(None);
            let a = n as u32;
            match op {
                // Like the simulator, never schedule into the past.
                Op::Push(t) => {
                    q.push(now + t, a);
                    m.push(now + t, a, None);
                }
                Op::Set(c, s, t) => {
                    let c = c % nr_cpus;
                    q.set(c, slot(s), now + t, a);
                    m.push(now + t, a, Some((c, s as usize)));
                    cpu_of_action[n] = Some(c);
                }
                Op::PopRearm(t) => {
                    let got = q.pop();
                    proptest::prop_assert_eq!(got, m.pop(&mut mch, fifo));
                    if let Some((pt, pa)) = got {
                        now = pt;
                        if let Some(c) = cpu_of_action[pa as usize] {
                            q.set(c, Slot::Step, now + t, a);
                            m.push(now + t, a, Some((c, 0)));
                            cpu_of_action[n] = Some(c);
                        }
                    }
                }
                Op::Cancel(c, s) => {
                    let c = c % nr_cpus;
                    q.cancel(c, slot(s));
                    m.cancel((c, s as usize));
                }
                Op::Peek => {
                    proptest::prop_assert_eq!(q.next_time(), m.live.iter().map(|e| e.0).min());
                }
                Op::PopBy(t) => {
                    let due = m.live.iter().map(|e| e.0).min().is_some_and(|d| d <= now + t);
                    let got = q.pop_by(now + t);
                    proptest::prop_assert_eq!(got, if due { m.pop(&mut mch, fifo) } else { None });
                    if let Some((t, _)) = got {
                        now = t;
                    }
                }
                Op::Pop => {
                    let got = q.pop();
                    proptest::prop_assert_eq!(got, m.pop(&mut mch, fifo));
                    if let Some((t, _)) = got {
                        now = t;
                    }
                }
                Op::SetFar(c, s, e) => {
                    let c = c % nr_cpus;
                    q.set(c, slot(s), now + (1 << e), a);
                    m.push(now + (1 << e), a, Some((c, s as usize)));
                    cpu_of_action[n] = Some(c);
                }
                Op::SetAtEnd(c, s, d) => {
                    let c = c % nr_cpus;
                    let t = (q.window_end() + d).saturating_sub(1).max(now);
                    q.set(c, slot(s), t, a);
                    m.push(t, a, Some((c, s as usize)));
                    cpu_of_action[n] = Some(c);
                }
                Op::Burst(c, k, t) => {
                    for i in 0..k.min(nr_cpus) {
                        let c = (c + i) % nr_cpus;
                        q.set(c, Slot::Step, now + t, a);
                        m.push(now + t, a, Some((c, 0)));
                    }
                }
                Op::Width(s) => q.set_width(s),
                Op::SetPast(c, s, d) => {
                    let c = c % nr_cpus;
                    q.set(c, slot(s), now.saturating_sub(d), a);
                    m.push(now.saturating_sub(d), a, Some((c, s as usize)));
                    cpu_of_action[n] = Some(c);
                }
                Op::CancelMin => {
                    m.live.sort_unstable_by_key(|e| (e.0, e.1));
                    if let Some(&(_, _, Some((c, s)), _)) = m.live.first() {
                        q.cancel(c, slot(s == 1));
                        m.cancel((c, s));
                    }
                }
                Op::Drain => {
                    while let Some(got) = q.pop() {
                        proptest::prop_assert_eq!(Some(got), m.pop(&mut mch, fifo));
                        now = got.0;
                        q.check_invariants();
                    }
                    proptest::prop_assert!(m.live.is_empty());
                }
            }
            q.check_invariants();
            proptest::prop_assert_eq!(q.len(), m.live.len());
            // Not after every op: the CPU popped last must also be placed by a pop itself.
            if n % 3 != 2 {
                let least = m.live.iter().map(|e| e.0).min();
                for t in [now, now + 1, now + 7, now + 40, Time::MAX - 1, Time::MAX] {
                    proptest::prop_assert_eq!(q.none_due_by(t), least.is_none_or(|l| t < l), "none due by {}", t);
                }
                proptest::prop_assert_eq!(q.peek_time(), least);
                q.check_invariants();
            }
        }
        while let Some(got) = q.pop() {
            proptest::prop_assert_eq!(Some(got), m.pop(&mut mch, fifo));
        }
        proptest::prop_assert!(m.live.is_empty());
        Ok(())
    }

    proptest::proptest! {
        /// Any interleaving of pushes and pops comes out in (time, push order) order.
        #[test]
        fn pops_follow_time_then_push_order(ops in proptest::collection::vec((0u64..40, proptest::bool::ANY), 1..300)) {
            let mut q = ActionQueue::new();
            let mut model: Vec<(u64, u64)> = Vec::new();
            for (n, (t, pop)) in ops.into_iter().enumerate() {
                if pop {
                    model.sort_unstable();
                    let want = if model.is_empty() { None } else { Some(model.remove(0)) };
                    proptest::prop_assert_eq!(q.pop().map(|(_, a)| a), want);
                } else {
                    q.push(t, (t, n as u64));
                    model.push((t, n as u64));
                }
                proptest::prop_assert_eq!(q.len(), model.len());
            }
        }

        /// Slots, re-arms, cancels and heap pushes against the reference model: FIFO order is
        /// `(time, seq)` with a re-armed slot taking a fresh seq and a replaced or cancelled
        /// action never coming out.
        #[test]
        fn slots_follow_the_reference_model(ops in proptest::collection::vec(op(), 1..400), nr_cpus in 1usize..6) {
            check(ops, None, nr_cpus)?;
        }

        /// The same on more CPUs (buckets shared, keys past the window).
        #[test]
        fn slots_follow_the_reference_model_on_many_cpus(ops in proptest::collection::vec(op(), 1..600), nr_cpus in 6usize..64) {
            check(ops, None, nr_cpus)?;
        }

        /// CPUs taking turns on machines up to a few hundred CPUs, every CPU armed first: the
        /// popped CPU's re-arm mostly goes behind every other (into a later bucket, or past the
        /// window).
        #[test]
        fn cpus_taking_turns_follow_the_reference_model(
            ops in proptest::collection::vec(turns_op(), 1..800),
            nr_cpus in 1usize..400,
            armed in 0usize..400,
        ) {
            let armed = armed.min(nr_cpus);
            let first: Vec<Op> = (0..armed).map(|c| Op::Set(c, c % 3 == 0, (c as u64 * 7) % 40)).collect();
            check(first.into_iter().chain(ops).collect(), None, nr_cpus)?;
        }

        /// The same with a replaying chooser: at each instant with several actions due it
        /// picks among them in `(time, seq)` order, as the model does.
        #[test]
        fn chooser_picks_among_due_actions_in_order(
            ops in proptest::collection::vec(op(), 1..400),
            choices in proptest::collection::vec(0u32..8, 0..60),
            nr_cpus in 1usize..40,
        ) {
            check(ops, Some(choices), nr_cpus)?;
        }
    }

    /// CPUs taking turns, each re-arming about `lead` ns after its pop: whatever width the ring
    /// starts with, it comes to one at which inserts seldom walk along a bucket and pops seldom
    /// skip runs of empty buckets, between 1/64 of the keys' spacing (`lead / cpus`) and twice it.
    #[test]
    fn the_width_follows_the_spacing_of_keys() {
        for (cpus, lead, start) in [(64u64, 6400u64, 20u32), (64, 6400, 0), (512, 1 << 20, 3)] {
            let mut q: ActionQueue<u32> = ActionQueue::with_cpus(cpus as usize);
            q.set_width(start);
            for c in 0..cpus {
                q.set(c as usize, Slot::Step, c * lead / cpus, c as u32);
            }
            for n in 0..40 * RESAMPLE_POPS as u64 {
                let (t, c) = q.pop().expect("every CPU re-arms");
                // A lead of 3/4 to 5/4 of `lead`, varying with the pop.
                q.set(c as usize, Slot::Step, t + lead * 3 / 4 + (n * 7919) % (lead / 2), c);
            }
            q.check_invariants();
            let spacing = (lead / cpus).ilog2();
            assert!((spacing - 6..=spacing + 1).contains(&q.shift), "{cpus} cpus, lead {lead}: shift {}", q.shift);
        }
    }

    /// Picks the candidate of the highest owner and remembers what it was shown.
    #[derive(Debug, Default)]
    struct Highest(Vec<(u64, Vec<u32>)>);

    impl ChoiceStrategy for Highest {
        fn choose(&mut self, point: u64, owners: &[u32]) -> usize {
            self.0.push((point, owners.to_vec()));
            (0..owners.len()).max_by_key(|&i| owners[i]).unwrap_or(0)
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn box_clone(&self) -> Box<dyn ChoiceStrategy> {
            Box::new(Highest(self.0.clone()))
        }
    }

    #[test]
    fn strategy_chooser_sees_owners_in_time_then_push_order() {
        let mut q = ActionQueue::new();
        q.owner_of = Some(|a: &(char, u32)| a.1);
        q.chooser = Chooser::Strategy(Box::new(Highest::default()));
        q.push(10, ('a', 2));
        q.push(10, ('b', 5));
        q.push(10, ('c', 1));
        q.push(3, ('z', 9));
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, a)| a.0)).collect();
        assert_eq!(order, vec!['z', 'b', 'a', 'c']);
        let Chooser::Strategy(s) = &q.chooser else { unreachable!() };
        let seen = &s.as_any().downcast_ref::<Highest>().unwrap().0;
        // Two choice points at t=10: {a, b, c} then {a, c}, each in push order.
        assert_eq!(seen, &vec![(0, vec![2, 5, 1]), (1, vec![2, 1])]);
    }

    /// Keys at the end of time: a slot due at `Time::MAX` is an action (not an empty slot's
    /// `NONE_KEY`), and with the window moved to the end of time they are still placed and
    /// come out in `(time, seq)` order.
    #[test]
    fn keys_at_the_end_of_time_keep_their_order() {
        let mut q = ActionQueue::with_cpus(3);
        q.set(0, Slot::Step, Time::MAX, 'a');
        q.push(Time::MAX, 'b');
        q.set(1, Slot::Timer, Time::MAX - 1, 'c');
        q.set(2, Slot::Step, Time::MAX - 300, 'd');
        q.check_invariants();
        assert_eq!(q.peek_time(), Some(Time::MAX - 300));
        // The window moves to the end of time; the far CPUs come inside it.
        assert_eq!(q.pop(), Some((Time::MAX - 300, 'd')));
        q.set(2, Slot::Step, Time::MAX, 'e');
        q.check_invariants();
        assert_eq!(q.peek_time(), Some(Time::MAX - 1));
        assert_eq!(q.pop_by(Time::MAX - 2), None);
        assert!(q.none_due_by(Time::MAX - 2) && !q.none_due_by(Time::MAX - 1) && !q.none_due_by(Time::MAX));
        let order: Vec<(Time, char)> = std::iter::from_fn(|| {
            let got = q.pop();
            q.check_invariants();
            got
        })
        .collect();
        assert_eq!(order, vec![(Time::MAX - 1, 'c'), (Time::MAX, 'a'), (Time::MAX, 'b'), (Time::MAX, 'e')]);
        assert_eq!(q.peek_time(), None);
        assert!(q.none_due_by(Time::MAX));
        assert!(q.is_empty());
    }

    #[test]
    fn replay_chooser_reorders_same_time_actions() {
        let mut q = ActionQueue::new();
        q.chooser = Chooser::Replay { choices: vec![2], next: 0 };
        q.push(10, 'a');
        q.push(10, 'b');
        q.push(10, 'c');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, a)| a)).collect();
        // First choice picks index 2 ('c'); afterwards FIFO among the rest.
        assert_eq!(order[0], 'c');
        assert_eq!(q.choice_points, 2);
        assert_eq!(&order[1..], &['a', 'b']);
    }

    #[test]
    fn replay_chooser_sees_slots_and_heap_in_seq_order() {
        let mut q = ActionQueue::with_cpus(4);
        q.chooser = Chooser::Replay { choices: vec![1, 1], next: 0 };
        q.set(3, Slot::Step, 10, 'a');
        q.push(10, 'b');
        q.set(0, Slot::Timer, 10, 'c');
        q.set(0, Slot::Step, 10, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, a)| a)).collect();
        // b (index 1 of a, b, c, d), then c (index 1 of a, c, d), then FIFO.
        assert_eq!(order, vec!['b', 'c', 'a', 'd']);
        assert_eq!(q.choice_points, 3);
    }
}
