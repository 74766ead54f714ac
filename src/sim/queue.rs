//! The action queue: per-CPU slots in an indexed heap of CPUs, plus a small heap for everything
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
//! (interrupts on their way, workload actions), which go to a 4-ary heap. The earliest CPU is
//! the root of an indexed 4-ary heap of the CPUs with a live slot, keyed by their earliest
//! slot: changing a slot moves only that CPU up or down, and the CPU just popped is settled
//! lazily, once for its pop and its re-arm together (see [`ActionQueue`]).

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

/// Positions allocated past the last CPU, so that every heap position with a child has four.
const HEAP_PAD: usize = 4;

/// `pos` of a CPU that is not in the CPU heap.
const NOT_QUEUED: u32 = u32::MAX;

/// Where a candidate of a choice point lives.
enum Source<A> {
    Heap(Entry<A>),
    Slot(usize, usize),
}

/// The queue of pending actions.
///
/// The CPUs with a live slot are kept in an indexed 4-ary min-heap keyed by their earliest
/// slot (`cpu_key`, `cpu_of`, `pos`). Popping a CPU's slot leaves the CPU at the root with its
/// new earliest key and marks the root stale (`root_stale`) instead of sifting it down at once:
/// the CPU that ran usually sets its next step before the queue is asked for its next action,
/// and then one sift serves both the pop and the re-arm (when every CPU is busy the re-armed
/// CPU usually sinks to the bottom: hackbench on 256 CPUs sifts 3.7 of 4 levels per pop).
/// While the root is stale every other position keeps heap order (sift-ups stop below the
/// root), so the earliest key is the least of the root and its four children; the run-ahead
/// peek computes that least child and the settle reuses it (`child_pos`).
#[derive(Debug)]
pub struct ActionQueue<A> {
    /// Each CPU's slots.
    slots: Vec<CpuSlots<A>>,
    /// The CPU heap: `cpu_key[i]` is the earliest slot key of CPU `cpu_of[i]` for `i < n`;
    /// children of `i` are `4i + 1 ..= 4i + 4`. Both are allocated for every CPU plus
    /// [`HEAP_PAD`], and `cpu_key` is `NONE_KEY` from `n` on, so that every position below `n`
    /// has four children to compare (a missing child never wins) and the root and its four
    /// children can be read without a length check.
    cpu_key: Vec<u128>,
    cpu_of: Vec<u32>,
    /// Number of CPUs in the heap.
    n: usize,
    /// Heap position of each CPU (`NOT_QUEUED`: no live slot).
    pos: Vec<u32>,
    /// The root's key may be later than its children's (see above).
    root_stale: bool,
    /// While the root is stale: the heap position (1 to 4) of its least child, whose key is
    /// `child_key`, once [`ActionQueue::peek_time`] has looked (0: not known). The run-ahead
    /// test peeks between a CPU's pop and its re-arm, and the root's sift-down then starts from
    /// it instead of comparing the same four children again. Any change below the root
    /// ([`ActionQueue::update_slow`]) and every settle forget it.
    child_pos: u32,
    child_key: u128,
    live_slots: usize,
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
/// the bounds check). Two rounds that pick an
/// index, and the key read back by it, is shorter than carrying (index, key) pairs through each
/// round.
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
        ActionQueue {
            slots,
            cpu_key: vec![NONE_KEY; nr_cpus + HEAP_PAD],
            cpu_of: vec![NOT_QUEUED; nr_cpus + HEAP_PAD],
            n: 0,
            pos: vec![NOT_QUEUED; nr_cpus],
            root_stale: false,
            child_pos: 0,
            child_key: NONE_KEY,
            live_slots: 0,
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
        let e = &mut self.slots[cpu].0[slot as usize];
        if e.action.is_none() {
            // At most two per CPU: no overflow.
            self.live_slots = self.live_slots.wrapping_add(1);
        }
        *e = SlotEntry { key: ((time as u128) << 64) | seq as u128, action: Some(action) };
        self.update(cpu);
    }

    /// Empty `cpu`'s `slot` (its action will not run).
    #[inline]
    pub fn cancel(&mut self, cpu: usize, slot: Slot) {
        let e = &mut self.slots[cpu].0[slot as usize];
        if e.action.take().is_some() {
            e.key = NONE_KEY;
            self.live_slots = self.live_slots.wrapping_sub(1);
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

    /// Put `cpu`'s new earliest key into the CPU heap.
    #[inline(always)]
    fn update(&mut self, cpu: usize) {
        let k = self.cpu_min(cpu);
        let p = self.pos[cpu];
        if p == 0 {
            // The root: leave it stale until the next pop (see the type's doc).
            self.cpu_key[0] = k;
            self.root_stale = true;
            return;
        }
        self.update_slow(cpu, p, k);
    }

    /// [`ActionQueue::update`] of a CPU not at the root.
    #[inline(never)]
    fn update_slow(&mut self, cpu: usize, p: u32, k: u128) {
        self.child_pos = 0;
        if p == NOT_QUEUED {
            if k != NONE_KEY {
                let i = self.n;
                self.n += 1;
                self.place(i, k, cpu as u32);
                self.sift_up(i);
            }
            return;
        }
        let i = p as usize;
        if k == NONE_KEY {
            self.remove_at(i);
            return;
        }
        let old = self.cpu_key[i];
        self.cpu_key[i] = k;
        if k < old {
            self.sift_up(i);
        } else {
            self.sift_down(i);
        }
    }

    /// Take the CPU at heap position `i` out of the CPU heap.
    fn remove_at(&mut self, i: usize) {
        let cpu = self.cpu_of[i] as usize;
        self.pos[cpu] = NOT_QUEUED;
        let last = self.n - 1;
        let (k, c) = (self.cpu_key[last], self.cpu_of[last]);
        self.n = last;
        self.cpu_key[last] = NONE_KEY;
        if i == last {
            return;
        }
        let old = self.cpu_key[i];
        self.place(i, k, c);
        if i != 0 && k < old {
            self.sift_up(i);
        } else {
            self.sift_down(i);
        }
    }

    /// Move the entry at `i` up to its place. Never into the root while it is stale: the
    /// subheaps below it keep their order and the root's sift-down settles both.
    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let floor = if self.root_stale { 4 } else { 0 };
        let (k, c) = (self.cpu_key[i], self.cpu_of[i]);
        while i > floor {
            let parent = (i - 1) / 4;
            // SAFETY: `parent < i < n`, and heap positions below `n` hold CPUs of this queue.
            unsafe {
                let pk = *self.cpu_key.get_unchecked(parent);
                if pk < k {
                    break;
                }
                let pc = *self.cpu_of.get_unchecked(parent);
                self.place_unchecked(i, pk, pc);
            }
            i = parent;
        }
        self.place(i, k, c);
    }

    /// The smallest child of heap position `i` (which must have one, `4i + 1 < n`) and its key.
    /// The padding makes four children to compare; a missing one is `NONE_KEY` and never the
    /// smallest.
    #[inline(always)]
    fn min_child(&self, i: usize) -> (usize, u128) {
        // Heap positions are below `cpu_key.len()`, so index arithmetic cannot overflow.
        let first = i.wrapping_mul(4).wrapping_add(1);
        debug_assert!(first < self.n && first + 4 <= self.cpu_key.len());
        // SAFETY: `first < n` (the caller's condition) and `cpu_key` has `HEAP_PAD` (4)
        // positions past the last CPU, so `first + 3 < n + 4 <= cpu_key.len()`.
        let ch = unsafe { &*(self.cpu_key.as_ptr().add(first) as *const [u128; 4]) };
        let j = least_of_four(ch);
        (first.wrapping_add(j), ch[j & 3])
    }

    /// Move the entry at `i` down to its place.
    #[inline]
    fn sift_down(&mut self, i: usize) {
        let (k, c) = (self.cpu_key[i], self.cpu_of[i]);
        self.sift_down_from(i, k, c);
    }

    /// Sift CPU `c` with key `k`, which is to go at position `i` or below, down to its place.
    #[inline(always)]
    fn sift_down_from(&mut self, mut i: usize, k: u128, c: u32) {
        let n = self.n;
        // A live key: the padding's `NONE_KEY` children never win against it.
        debug_assert_ne!(k, NONE_KEY);
        while i.wrapping_mul(4).wrapping_add(1) < n {
            let (m, mk) = self.min_child(i);
            if k < mk {
                break;
            }
            debug_assert!(m < n);
            // SAFETY: `m < n` (a child that is smaller than a live key is live), and `i < m`.
            unsafe {
                let mc = *self.cpu_of.get_unchecked(m);
                self.place_unchecked(i, mk, mc);
            }
            i = m;
        }
        debug_assert!(i < n && (c as usize) < self.pos.len());
        // SAFETY: `i` is the start (below `n`) or a live child; `c` is a CPU of this queue.
        unsafe { self.place_unchecked(i, k, c) };
    }

    /// Put CPU `cpu` with key `key` at heap position `i`.
    #[inline(always)]
    fn place(&mut self, i: usize, key: u128, cpu: u32) {
        self.cpu_key[i] = key;
        self.cpu_of[i] = cpu;
        self.pos[cpu as usize] = i as u32;
    }

    /// [`ActionQueue::place`] without bounds checks, for the sift loops.
    ///
    /// # Safety
    /// `i < n` and `cpu` is a CPU of this queue (`cpu < pos.len()`).
    #[inline(always)]
    unsafe fn place_unchecked(&mut self, i: usize, key: u128, cpu: u32) {
        debug_assert!(i < self.n && (cpu as usize) < self.pos.len());
        // SAFETY: the caller's contract; `cpu_key` and `cpu_of` are longer than `n`.
        unsafe {
            *self.cpu_key.get_unchecked_mut(i) = key;
            *self.cpu_of.get_unchecked_mut(i) = cpu;
            *self.pos.get_unchecked_mut(cpu as usize) = i as u32;
        }
    }

    /// Restore heap order at a stale root (taking its CPU out if it has no live slot left).
    #[inline(always)]
    fn settle_root(&mut self) {
        if self.root_stale {
            self.settle_stale_root();
        }
    }

    /// [`ActionQueue::settle_root`] of a stale root.
    #[inline(never)]
    fn settle_stale_root(&mut self) {
        let (m, mk) = self.root_child_min();
        self.root_stale = false;
        self.child_pos = 0;
        let k = self.cpu_key[0];
        if k == NONE_KEY {
            self.remove_at(0);
        } else if mk < k {
            // The least child moves up to the root; the old root sinks on from its place.
            debug_assert!((1..=4).contains(&m) && m < self.n);
            // SAFETY: a child that is smaller than a live key is live, so `0 < m < n`, and
            // heap positions below `n` hold CPUs of this queue.
            unsafe {
                let c = *self.cpu_of.get_unchecked(0);
                let mc = *self.cpu_of.get_unchecked(m);
                self.place_unchecked(0, mk, mc);
                self.sift_down_from(m, k, c);
            }
        }
    }

    /// The least child of a stale root (position and key; a missing child is `NONE_KEY`), from
    /// `child_pos` when known.
    #[inline(always)]
    fn root_child_min(&mut self) -> (usize, u128) {
        debug_assert!(self.root_stale && self.n > 0);
        if self.child_pos != 0 {
            return (self.child_pos as usize, self.child_key);
        }
        debug_assert!(self.cpu_key.len() >= 5);
        // SAFETY: a stale root means a CPU, so `cpu_key` has its four padding positions past
        // it: positions 1 to 4 exist.
        let ch = unsafe { &*(self.cpu_key.as_ptr().add(1) as *const [u128; 4]) };
        let j = least_of_four(ch);
        let mk = ch[j & 3];
        self.child_pos = 1 + j as u32;
        self.child_key = mk;
        (1 + j, mk)
    }

    /// The earliest key of the CPU heap (`NONE_KEY` if empty), settled or not.
    #[inline]
    fn cpu_heap_min(&mut self) -> u128 {
        let k = self.cpu_key[0];
        if !self.root_stale {
            return k;
        }
        k.min(self.root_child_min().1)
    }

    /// True when same-time actions simply run in scheduling order (no chooser consulted).
    #[inline]
    pub fn is_fifo(&self) -> bool {
        matches!(self.chooser, Chooser::Fifo)
    }

    /// Number of pending actions.
    pub fn len(&self) -> usize {
        self.heap.len() + self.live_slots
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of pending actions held in CPU slots.
    pub fn slot_len(&self) -> usize {
        self.live_slots
    }

    /// Time of the earliest pending action. It leaves a stale root unsettled (a CPU between
    /// its pop and its re-arm) but remembers its least child for the settle.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        let k = self.cpu_heap_min();
        let k = match self.heap.peek() {
            Some(h) if h.key < k => h.key,
            _ => k,
        };
        (k != NONE_KEY).then_some((k >> 64) as Time)
    }

    /// Time of the earliest pending action, like [`ActionQueue::peek_time`]; it also settles
    /// the CPU heap's root, which the next [`ActionQueue::pop`] would do anyway (for a caller
    /// that peeks right before each pop).
    #[inline]
    pub fn next_time(&mut self) -> Option<Time> {
        self.settle_root();
        let k = self.cpu_key[0];
        let k = match self.heap.peek() {
            Some(h) if h.key < k => h.key,
            _ => k,
        };
        (k != NONE_KEY).then_some((k >> 64) as Time)
    }

    /// The CPU whose action is likely to come out next, for a caller that prefetches that
    /// CPU's state while the current action runs; its slots' line is prefetched here. The
    /// earliest of the CPU heap's root (with its children while the root is stale) and the
    /// top of the heap of actions in flight (`owner` names the CPU of one; `u32::MAX`: none).
    /// Only a guess: what the current action schedules may come first. Changes nothing.
    #[inline]
    pub fn next_cpu_hint(&mut self, owner: impl Fn(&A) -> u32) -> Option<usize> {
        let (mut k, mut cpu) = (NONE_KEY, NOT_QUEUED);
        if self.n > 0 {
            (k, cpu) = (self.cpu_key[0], self.cpu_of[0]);
            if self.root_stale {
                // Remembered for the settle that follows (see `root_child_min`).
                let (m, mk) = self.root_child_min();
                if mk < k {
                    (k, cpu) = (mk, self.cpu_of[m]);
                }
            }
        }
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

    /// Take the action of `cpu`'s slot `idx`.
    #[inline]
    fn take_slot(&mut self, cpu: usize, idx: usize) -> (Time, A) {
        let e = &mut self.slots[cpu].0[idx];
        let t = (e.key >> 64) as Time;
        let a = e.action.take().expect("a live slot");
        e.key = NONE_KEY;
        // A live slot was counted: no underflow.
        self.live_slots = self.live_slots.wrapping_sub(1);
        self.update(cpu);
        (t, a)
    }

    /// Take the earliest action of the CPU at the (settled) root of the CPU heap, whose key is
    /// `k`: [`ActionQueue::take_slot`] and [`ActionQueue::update`] for a CPU known to be at
    /// the root, which is left stale.
    #[inline(always)]
    fn take_root_slot(&mut self, k: u128) -> (Time, A) {
        debug_assert!(!self.root_stale && self.n > 0 && self.cpu_key[0] == k);
        let cpu = self.cpu_of[0] as usize;
        let s = &mut self.slots[cpu].0;
        let idx = (s[0].key != k) as usize;
        // `k` is one of the two keys, so this is the other.
        let other = s[0].key ^ s[1].key ^ k;
        let e = &mut s[idx];
        let a = e.action.take().expect("a live slot");
        e.key = NONE_KEY;
        self.live_slots = self.live_slots.wrapping_sub(1);
        self.cpu_key[0] = other;
        self.root_stale = true;
        ((k >> 64) as Time, a)
    }

    /// Take the next action. When several are due at the same instant and the chooser is not
    /// FIFO, the chooser picks among them (in `(time, seq)` order); the others stay queued with
    /// their original order.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, A)> {
        if !matches!(self.chooser, Chooser::Fifo) {
            return self.pop_chosen();
        }
        self.settle_root();
        let k = self.cpu_key[0];
        match self.heap.peek() {
            Some(h) if h.key < k => {
                let e = self.heap.pop().expect("peeked");
                Some((e.time(), e.action))
            }
            _ if k != NONE_KEY => Some(self.take_root_slot(k)),
            _ => None,
        }
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
        self.settle_root();
        let k = self.cpu_key[0];
        match self.heap.peek() {
            Some(h) if h.key < k => {
                if h.time() > limit {
                    return None;
                }
                let e = self.heap.pop().expect("peeked");
                Some((e.time(), e.action))
            }
            _ if k != NONE_KEY && (k >> 64) as Time <= limit => Some(self.take_root_slot(k)),
            _ => None,
        }
    }

    /// [`ActionQueue::pop`] with a chooser: gather every action due at the earliest instant.
    fn pop_chosen(&mut self) -> Option<(Time, A)> {
        self.settle_root();
        let t = self.peek_time()?;
        let mut cands: Vec<(u64, Source<A>)> = Vec::new();
        while self.heap.peek().is_some_and(|e| e.time() == t) {
            let e = self.heap.pop().expect("peeked");
            cands.push((e.key as u64, Source::Heap(e)));
        }
        // The CPUs with a slot due at `t`: walk the subheaps whose earliest is at `t`.
        let n = self.n;
        let mut todo = if n > 0 { vec![0usize] } else { Vec::new() };
        while let Some(i) = todo.pop() {
            if (self.cpu_key[i] >> 64) as Time != t {
                continue;
            }
            let cpu = self.cpu_of[i] as usize;
            for s in 0..NR_SLOTS {
                let e = &self.slots[cpu].0[s];
                if e.action.is_some() && (e.key >> 64) as Time == t {
                    cands.push((e.key as u64, Source::Slot(cpu, s)));
                }
            }
            todo.extend((4 * i + 1..(4 * i + 5).min(n)).rev());
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
                Source::Slot(cpu, s) if n == idx => chosen = Some(self.take_slot(cpu, s)),
                Source::Slot(..) => {}
            }
        }
        chosen
    }

    /// Check the CPU heap's invariants (tests).
    #[cfg(test)]
    fn check_invariants(&self) {
        let n = self.n;
        if self.child_pos != 0 {
            assert!(self.root_stale, "a least child remembered for a settled root");
            let p = self.child_pos as usize;
            let least = self.cpu_key[1..5].iter().copied().min().expect("four");
            assert_eq!((self.cpu_key[p], self.child_key), (least, least), "remembered least child");
        }
        assert!(self.cpu_key[n..].iter().all(|&k| k == NONE_KEY), "padding past the heap");
        for i in 0..n {
            let c = self.cpu_of[i] as usize;
            assert_eq!(self.pos[c], i as u32, "pos of cpu {c}");
            assert_eq!(self.cpu_key[i], self.cpu_min(c), "key of cpu {c}");
            if i == 0 && self.root_stale {
                continue;
            }
            assert_ne!(self.cpu_key[i], NONE_KEY, "cpu {c} queued without a live slot");
            for j in 4 * i + 1..(4 * i + 5).min(n) {
                assert!(self.cpu_key[i] < self.cpu_key[j], "heap order at {i} -> {j}");
            }
        }
        let queued = self.pos.iter().filter(|&&p| p != NOT_QUEUED).count();
        assert_eq!(queued, n);
        for c in 0..self.pos.len() {
            if self.pos[c] == NOT_QUEUED {
                assert_eq!(self.cpu_min(c), NONE_KEY, "cpu {c} has a live slot but is not queued");
            }
        }
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
        /// `next_time()`, which settles the CPU heap's root.
        Peek,
        /// Pop, and if the action was in a CPU's slot, set that CPU's step slot `t` later (as a
        /// CPU re-arms after its step; a late `t` sinks it to the bottom of the CPU heap).
        PopRearm(u64),
        /// `pop_by(now + t)`: a pop only if the next action is due by then.
        PopBy(u64),
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
            }
            q.check_invariants();
            proptest::prop_assert_eq!(q.len(), m.live.len());
            // Not after every op: a stale root's settle must also find its least child itself.
            if n % 3 != 2 {
                proptest::prop_assert_eq!(q.peek_time(), m.live.iter().map(|e| e.0).min());
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

        /// The same on more CPUs, so that the CPU heap is several levels deep.
        #[test]
        fn slots_follow_the_reference_model_on_many_cpus(ops in proptest::collection::vec(op(), 1..600), nr_cpus in 6usize..64) {
            check(ops, None, nr_cpus)?;
        }

        /// CPUs taking turns on machines up to a few hundred CPUs (a CPU heap five levels
        /// deep), every CPU armed first: the popped CPU's re-arm mostly sinks to the bottom.
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
