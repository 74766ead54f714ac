//! The action queue: a 4-ary min-heap keyed by `(time, seq)`.
//!
//! `seq` is a monotonic insertion counter, so actions due at the same instant come out in the
//! order they were scheduled (FIFO) unless a [`Chooser`] other than FIFO picks another one.

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

/// A 4-ary min-heap of entries. Half the depth of a binary heap, and a node's children share
/// a cache line or two: the queue holds a few hundred actions on 256-CPU runs and every
/// simulated action passes through it.
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
    fn is_empty(&self) -> bool {
        self.v.is_empty()
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
/// choice at all (it is never consulted), so the common path costs nothing.
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

/// The queue of pending actions.
#[derive(Debug)]
pub struct ActionQueue<A> {
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

impl<A> ActionQueue<A> {
    pub fn new() -> Self {
        ActionQueue {
            heap: QuadHeap::with_capacity(1024),
            seq: 0,
            chooser: Chooser::Fifo,
            choice_points: 0,
            owner_of: None,
        }
    }

    /// Schedule `action` at absolute time `time`.
    #[inline]
    pub fn push(&mut self, time: Time, action: A) {
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry { key: ((time as u128) << 64) | seq as u128, action });
    }

    /// True when same-time actions simply run in scheduling order (no chooser consulted).
    #[inline]
    pub fn is_fifo(&self) -> bool {
        matches!(self.chooser, Chooser::Fifo)
    }

    /// Number of pending actions.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Time of the earliest pending action.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time())
    }

    /// Take the next action. When several are due at the same instant and the chooser is not
    /// FIFO, the chooser picks among them; the others stay queued with their original order.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, A)> {
        let first = self.heap.pop()?;
        if matches!(self.chooser, Chooser::Fifo) {
            return Some((first.time(), first.action));
        }
        let t = first.time();
        let mut same = vec![first];
        while self.heap.peek().is_some_and(|e| e.time() == t) {
            same.push(self.heap.pop().expect("peeked"));
        }
        if same.len() == 1 {
            let e = same.pop().expect("one");
            return Some((e.time(), e.action));
        }
        self.choice_points += 1;
        let owner_of = self.owner_of;
        let owner = |i: usize| owner_of.map_or(u32::MAX, |f| f(&same[i].action));
        let idx = self.chooser.choose(same.len(), self.choice_points - 1, owner);
        let chosen = same.swap_remove(idx);
        for e in same {
            self.heap.push(e);
        }
        Some((chosen.time(), chosen.action))
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
}
