//! A fixed-size set of CPU ids, the simulator's `struct cpumask`.
//!
//! Iteration is always in ascending CPU order (or the kernel's `for_each_cpu_wrap()` order),
//! so anything built on it is deterministic. The textual form is the kernel's cpulist format
//! (`/sys/devices/system/cpu/online`, `%*pbl`): "0-7,128-135".

use std::fmt;

const BITS: u32 = u64::BITS;

/// A bitset over CPU ids `0..nr_cpus`.
///
/// Two masks are equal only if they have the same `nr_cpus` and the same bits; all the
/// set operations require both operands to have the same `nr_cpus` (asserted).
///
/// Storage is a window of words: only words `lo..lo + words.len()` are kept, every word
/// outside the window is zero. A new mask stores nothing, and a mask grows its window as CPUs
/// are set (clearing never shrinks it), so a mask of a few nearby CPUs (an SMT core, an LLC, a
/// single CPU) costs a word or two instead of `nr_cpus` bits: the sched-domain spans and groups
/// and the per-CPU masks of a large machine would otherwise grow as CPUs^2 (issue 16).
/// Equality, ordering and hashing look at the bits only, never at the window.
#[derive(Clone, Default)]
pub struct CpuMask {
    /// Number of CPU ids the mask can hold (the kernel's `nr_cpu_ids`).
    nr_cpus: u32,
    /// The index of the first stored word.
    lo: u32,
    /// The stored words (not named `words`: they are not the dense words from CPU 0). Bit
    /// `cpu % 64` of word `cpu / 64 - lo` is set iff `cpu` is in the mask. Bits at or above
    /// `nr_cpus` are always clear.
    win: Vec<u64>,
}

impl CpuMask {
    /// An empty mask able to hold CPUs `0..nr_cpus` (it allocates nothing until a CPU is set).
    pub fn new(nr_cpus: u32) -> CpuMask {
        CpuMask { nr_cpus, lo: 0, win: Vec::new() }
    }

    /// The number of words a dense mask of `nr_cpus` CPUs has.
    fn nr_words(&self) -> u32 {
        self.nr_cpus.div_ceil(BITS)
    }

    /// Word `index` of the dense mask (zero outside the window).
    #[inline]
    pub fn word(&self, index: u32) -> u64 {
        let j = index.wrapping_sub(self.lo) as usize;
        if j < self.win.len() {
            self.win[j]
        } else {
            0
        }
    }

    /// One past the last stored word.
    fn hi(&self) -> u32 {
        self.lo + self.win.len() as u32
    }

    /// A mask with `words` stored from word `lo`, trimmed of zero words at both ends.
    fn from_window(nr_cpus: u32, lo: u32, mut words: Vec<u64>) -> CpuMask {
        let Some(first) = words.iter().position(|&w| w != 0) else {
            return CpuMask::new(nr_cpus);
        };
        let last = words.iter().rposition(|&w| w != 0).expect("a word is set");
        words.truncate(last + 1);
        words.drain(..first);
        CpuMask { nr_cpus, lo: lo + first as u32, win: words }
    }

    /// Widens the window to hold word `index`.
    fn cover(&mut self, index: u32) {
        if self.win.is_empty() {
            self.lo = index;
            self.win.push(0);
        } else if index < self.lo {
            let more = (self.lo - index) as usize;
            self.win.splice(0..0, std::iter::repeat_n(0, more));
            self.lo = index;
        } else if index >= self.hi() {
            self.win.resize((index - self.lo + 1) as usize, 0);
        }
    }

    /// A mask with every CPU `0..nr_cpus` set.
    pub fn full(nr_cpus: u32) -> CpuMask {
        let mut words = vec![u64::MAX; nr_cpus.div_ceil(BITS) as usize];
        let tail = nr_cpus % BITS;
        if tail != 0 {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << tail) - 1;
            }
        }
        CpuMask { nr_cpus, lo: 0, win: words }
    }

    /// A mask holding exactly one CPU (the kernel's `cpumask_of(cpu)`).
    pub fn of(cpu: u32, nr_cpus: u32) -> CpuMask {
        let mut mask = CpuMask::new(nr_cpus);
        mask.set(cpu);
        mask
    }

    /// The number of CPU ids this mask can hold.
    pub fn nr_cpus(&self) -> u32 {
        self.nr_cpus
    }

    /// Adds `cpu`. Panics if `cpu >= nr_cpus`.
    pub fn set(&mut self, cpu: u32) {
        assert!(cpu < self.nr_cpus, "cpu {cpu} out of range (nr_cpus {})", self.nr_cpus);
        let index = cpu / BITS;
        self.cover(index);
        self.win[(index - self.lo) as usize] |= 1u64 << (cpu % BITS);
    }

    /// Removes `cpu`. Panics if `cpu >= nr_cpus`.
    pub fn clear(&mut self, cpu: u32) {
        assert!(cpu < self.nr_cpus, "cpu {cpu} out of range (nr_cpus {})", self.nr_cpus);
        let j = (cpu / BITS).wrapping_sub(self.lo) as usize;
        if let Some(w) = self.win.get_mut(j) {
            *w &= !(1u64 << (cpu % BITS));
        }
    }

    /// Whether `cpu` is in the mask; false for any `cpu >= nr_cpus`.
    #[inline]
    pub fn test(&self, cpu: u32) -> bool {
        cpu < self.nr_cpus && self.word(cpu / BITS) & (1u64 << (cpu % BITS)) != 0
    }

    /// Number of CPUs in the mask (`cpumask_weight()`).
    pub fn weight(&self) -> u32 {
        self.win.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether no CPU is set.
    pub fn is_empty(&self) -> bool {
        self.win.iter().all(|&w| w == 0)
    }

    /// The lowest CPU in the mask (`cpumask_first()`), `None` if empty.
    pub fn first(&self) -> Option<u32> {
        self.next_from(0)
    }

    /// The lowest CPU `>= from` in the mask.
    pub fn next_from(&self, from: u32) -> Option<u32> {
        if from >= self.nr_cpus {
            return None;
        }
        let (index, word) = if from / BITS < self.lo {
            (self.lo, self.word(self.lo))
        } else {
            (from / BITS, self.word(from / BITS) & (u64::MAX << (from % BITS)))
        };
        self.scan_words(index, word, |i| self.word(i))
    }

    /// The lowest CPU `>= from` in `self` but not in `other` (`cpumask_next_andnot()`).
    pub fn next_andnot_from(&self, other: &CpuMask, from: u32) -> Option<u32> {
        self.check_same_size(other);
        if from >= self.nr_cpus || self.win.is_empty() {
            return None;
        }
        let index = (from / BITS).max(self.lo);
        let mut word = self.word(index) & !other.word(index);
        if index == from / BITS {
            word &= u64::MAX << (from % BITS);
        }
        self.scan_words(index, word, |i| self.word(i) & !other.word(i))
    }

    /// The first set bit from word `index` (already read as `word`) on, reading each later
    /// stored word through `next`.
    #[inline]
    fn scan_words(&self, mut index: u32, mut word: u64, next: impl Fn(u32) -> u64) -> Option<u32> {
        loop {
            if word != 0 {
                return Some(index * BITS + word.trailing_zeros());
            }
            index += 1;
            if index >= self.hi() {
                return None;
            }
            word = next(index);
        }
    }

    /// The lowest CPU in both masks (`cpumask_first_and()`), `None` if they do not intersect.
    pub fn first_and(&self, other: &CpuMask) -> Option<u32> {
        self.check_same_size(other);
        (self.lo.max(other.lo)..self.hi().min(other.hi())).find_map(|i| {
            let w = self.word(i) & other.word(i);
            (w != 0).then(|| i * BITS + w.trailing_zeros())
        })
    }

    /// The stored words: (the index of the first, the words); word `j` of the slice is the
    /// mask's word `first + j` (bit `cpu % 64` of word `cpu / 64`), and every other word is
    /// zero. For loops over a mask's words without visiting the empty ones.
    #[inline]
    pub fn stored_words(&self) -> (u32, &[u64]) {
        (self.lo, &self.win)
    }

    /// The CPUs in ascending order (`for_each_cpu()`).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let lo = self.lo;
        self.win.iter().enumerate().flat_map(move |(index, &word)| {
            let base = (lo + index as u32) * BITS;
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros();
                rest &= rest - 1;
                Some(base + bit)
            })
        })
    }

    /// The CPUs in the kernel's `for_each_cpu_wrap(cpu, mask, start)` order: the set CPUs
    /// `>= start` ascending, then the set CPUs `< start` ascending. `start` need not be set;
    /// a `start >= nr_cpus` behaves like 0.
    pub fn iter_wrap(&self, start: u32) -> impl Iterator<Item = u32> + '_ {
        let start = if start >= self.nr_cpus { 0 } else { start };
        let high = self.iter().skip_while(move |&cpu| cpu < start);
        let low = self.iter().take_while(move |&cpu| cpu < start);
        high.chain(low)
    }

    fn check_same_size(&self, other: &CpuMask) {
        assert_eq!(self.nr_cpus, other.nr_cpus, "cpumask size mismatch");
    }

    /// The words `lo..hi` of `self` combined with those of `other` by `f`, as a trimmed mask.
    fn combine(&self, other: &CpuMask, lo: u32, hi: u32, f: impl Fn(u64, u64) -> u64) -> CpuMask {
        self.check_same_size(other);
        let words = (lo..hi.max(lo)).map(|i| f(self.word(i), other.word(i))).collect();
        CpuMask::from_window(self.nr_cpus, lo, words)
    }

    /// CPUs in both masks (`cpumask_and()`).
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        self.combine(other, self.lo.max(other.lo), self.hi().min(other.hi()), |a, b| a & b)
    }

    /// CPUs in either mask (`cpumask_or()`).
    pub fn or(&self, other: &CpuMask) -> CpuMask {
        let (lo, hi) = self.union_window(other);
        self.combine(other, lo, hi, |a, b| a | b)
    }

    /// CPUs in `self` but not in `other` (`cpumask_andnot()`).
    pub fn andnot(&self, other: &CpuMask) -> CpuMask {
        self.combine(other, self.lo, self.hi(), |a, b| a & !b)
    }

    /// The smallest window holding both masks' stored words.
    fn union_window(&self, other: &CpuMask) -> (u32, u32) {
        match (self.win.is_empty(), other.win.is_empty()) {
            (true, true) => (0, 0),
            (true, false) => (other.lo, other.hi()),
            (false, true) => (self.lo, self.hi()),
            (false, false) => (self.lo.min(other.lo), self.hi().max(other.hi())),
        }
    }

    /// Adds every CPU of `other` to `self` in place.
    pub fn or_assign(&mut self, other: &CpuMask) {
        self.check_same_size(other);
        let Some(first) = other.win.iter().position(|&w| w != 0) else {
            return;
        };
        let last = other.win.iter().rposition(|&w| w != 0).expect("a word is set");
        self.cover(other.lo + first as u32);
        self.cover(other.lo + last as u32);
        for (j, &b) in other.win.iter().enumerate().take(last + 1).skip(first) {
            self.win[(other.lo + j as u32 - self.lo) as usize] |= b;
        }
    }

    /// Whether the masks share at least one CPU (`cpumask_intersects()`).
    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.check_same_size(other);
        (self.lo.max(other.lo)..self.hi().min(other.hi())).any(|i| self.word(i) & other.word(i) != 0)
    }

    /// Whether every CPU of `self` is in `other` (`cpumask_subset(self, other)`).
    pub fn is_subset(&self, other: &CpuMask) -> bool {
        self.check_same_size(other);
        self.win.iter().enumerate().all(|(j, &a)| a & !other.word(self.lo + j as u32) == 0)
    }

    /// The words from the first to the last set one: (index of the first, the words), or
    /// `None` for an empty mask. The mask's value without its window.
    fn trimmed(&self) -> Option<(u32, &[u64])> {
        let first = self.win.iter().position(|&w| w != 0)?;
        let last = self.win.iter().rposition(|&w| w != 0).expect("a word is set");
        Some((self.lo + first as u32, &self.win[first..=last]))
    }
}

impl PartialEq for CpuMask {
    fn eq(&self, other: &CpuMask) -> bool {
        self.nr_cpus == other.nr_cpus && self.trimmed() == other.trimmed()
    }
}

impl Eq for CpuMask {}

impl std::hash::Hash for CpuMask {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.nr_cpus.hash(state);
        self.trimmed().hash(state);
    }
}

impl Ord for CpuMask {
    /// `nr_cpus` first, then the dense words compared lexicographically (word 0 first): the
    /// order of the `(nr_cpus, words)` pair a dense mask would have.
    fn cmp(&self, other: &CpuMask) -> std::cmp::Ordering {
        self.nr_cpus.cmp(&other.nr_cpus).then_with(|| {
            let (lo, hi) = self.union_window(other);
            (lo..hi).map(|i| self.word(i).cmp(&other.word(i))).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
        })
    }
}

impl PartialOrd for CpuMask {
    fn partial_cmp(&self, other: &CpuMask) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for CpuMask {
    /// As the dense form: `CpuMask { nr_cpus: 8, words: [5] }`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<u64> = (0..self.nr_words()).map(|i| self.word(i)).collect();
        f.debug_struct("CpuMask").field("nr_cpus", &self.nr_cpus).field("words", &words).finish()
    }
}

impl fmt::Display for CpuMask {
    /// The cpulist form: ascending comma-separated ranges, "" for an empty mask.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cpus = self.iter().peekable();
        let mut first = true;
        while let Some(lo) = cpus.next() {
            let mut hi = lo;
            while cpus.peek() == Some(&(hi + 1)) {
                hi += 1;
                cpus.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

/// Parses a cpulist ("8", "0-3,8", "0-7,128-135") into a mask of `nr_cpus` CPUs.
///
/// Accepts surrounding whitespace and an empty string (the empty mask). Rejects empty
/// elements, non-numbers, reversed ranges and CPUs `>= nr_cpus`; the error names the
/// offending element.
pub fn parse_cpulist(s: &str, nr_cpus: u32) -> Result<CpuMask, String> {
    let mut mask = CpuMask::new(nr_cpus);
    let s = s.trim();
    if s.is_empty() {
        return Ok(mask);
    }
    for element in s.split(',') {
        let element = element.trim();
        if element.is_empty() {
            return Err(format!("cpulist `{s}`: empty element"));
        }
        let parse_cpu = |text: &str| -> Result<u32, String> {
            let cpu: u32 = text
                .trim()
                .parse()
                .map_err(|_| format!("cpulist `{s}`: `{element}`: `{}` is not a CPU number", text.trim()))?;
            if cpu >= nr_cpus {
                return Err(format!(
                    "cpulist `{s}`: `{element}`: CPU {cpu} out of range (machine has {nr_cpus} CPUs, 0-{})",
                    nr_cpus.saturating_sub(1)
                ));
            }
            Ok(cpu)
        };
        let (lo, hi) = match element.split_once('-') {
            Some((lo, hi)) => (parse_cpu(lo)?, parse_cpu(hi)?),
            None => {
                let cpu = parse_cpu(element)?;
                (cpu, cpu)
            }
        };
        if lo > hi {
            return Err(format!("cpulist `{s}`: `{element}`: range start {lo} is above its end {hi}"));
        }
        for cpu in lo..=hi {
            mask.set(cpu);
        }
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_clear_test_weight() {
        let mut m = CpuMask::new(130);
        assert!(m.is_empty());
        assert_eq!(m.first(), None);
        m.set(129);
        m.set(3);
        m.set(64);
        assert_eq!(m.weight(), 3);
        assert!(m.test(64) && m.test(3) && m.test(129));
        assert!(!m.test(4) && !m.test(500));
        assert_eq!(m.first(), Some(3));
        m.clear(3);
        assert_eq!(m.first(), Some(64));
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![64, 129]);
    }

    #[test]
    fn full_masks_tail_bits() {
        assert_eq!(CpuMask::full(4).weight(), 4);
        assert_eq!(CpuMask::full(64).weight(), 64);
        assert_eq!(CpuMask::full(65).weight(), 65);
        assert_eq!(CpuMask::full(256).to_string(), "0-255");
        assert_eq!(CpuMask::full(0).weight(), 0);
    }

    #[test]
    fn wrap_order_matches_for_each_cpu_wrap() {
        let m = parse_cpulist("1,3,5,7", 8).unwrap();
        assert_eq!(m.iter_wrap(4).collect::<Vec<_>>(), vec![5, 7, 1, 3]);
        assert_eq!(m.iter_wrap(3).collect::<Vec<_>>(), vec![3, 5, 7, 1]);
        assert_eq!(m.iter_wrap(0).collect::<Vec<_>>(), vec![1, 3, 5, 7]);
        assert_eq!(m.iter_wrap(99).collect::<Vec<_>>(), vec![1, 3, 5, 7]);
    }

    #[test]
    fn set_operations() {
        let a = parse_cpulist("0-7", 16).unwrap();
        let b = parse_cpulist("4-11", 16).unwrap();
        assert_eq!(a.and(&b).to_string(), "4-7");
        assert_eq!(a.or(&b).to_string(), "0-11");
        assert_eq!(a.andnot(&b).to_string(), "0-3");
        assert!(a.intersects(&b));
        assert!(!a.intersects(&parse_cpulist("8-15", 16).unwrap()));
        assert!(a.and(&b).is_subset(&a));
        assert!(!a.is_subset(&b));
        assert!(CpuMask::new(16).is_subset(&a));
    }

    #[test]
    fn cpulist_round_trip() {
        for text in ["", "8", "0-3,8", "0-7,128-135", "0,2,4-5,255"] {
            let m = parse_cpulist(text, 256).unwrap();
            assert_eq!(m.to_string(), text);
            assert_eq!(parse_cpulist(&m.to_string(), 256).unwrap(), m);
        }
        assert_eq!(parse_cpulist(" 3-4 , 1 ", 8).unwrap().to_string(), "1,3-4");
    }

    #[test]
    fn cpulist_errors_name_the_problem() {
        let err = parse_cpulist("0-3,x", 8).unwrap_err();
        assert!(err.contains("`x` is not a CPU number"), "{err}");
        let err = parse_cpulist("9", 8).unwrap_err();
        assert!(err.contains("CPU 9 out of range"), "{err}");
        let err = parse_cpulist("5-2", 8).unwrap_err();
        assert!(err.contains("range start 5 is above its end 2"), "{err}");
        let err = parse_cpulist("1,,2", 8).unwrap_err();
        assert!(err.contains("empty element"), "{err}");
    }

    /// The dense words a mask of `nr` CPUs holding `cpus` has (the reference model).
    fn dense(cpus: &[bool]) -> Vec<u64> {
        let mut w = vec![0u64; cpus.len().div_ceil(64)];
        for (c, _) in cpus.iter().enumerate().filter(|(_, &b)| b) {
            w[c / 64] |= 1 << (c % 64);
        }
        w
    }

    fn build(nr: u32, ops: &[(bool, u32)]) -> (CpuMask, Vec<bool>) {
        let mut m = CpuMask::new(nr);
        let mut r = vec![false; nr as usize];
        for &(set, c) in ops {
            let c = c % nr;
            if set {
                m.set(c);
            } else {
                m.clear(c);
            }
            r[c as usize] = set;
        }
        (m, r)
    }

    fn check(m: &CpuMask, r: &[bool]) {
        let nr = r.len() as u32;
        let want: Vec<u32> = (0..nr).filter(|&c| r[c as usize]).collect();
        assert_eq!(m.iter().collect::<Vec<_>>(), want);
        assert_eq!(m.weight() as usize, want.len());
        assert_eq!(m.is_empty(), want.is_empty());
        for c in 0..nr + 2 {
            assert_eq!(m.test(c), c < nr && r[c as usize]);
            assert_eq!(m.next_from(c), want.iter().copied().find(|&x| x >= c));
        }
        assert_eq!(format!("{m:?}"), format!("CpuMask {{ nr_cpus: {nr}, words: {:?} }}", dense(r)));
    }

    proptest::proptest! {
        /// The windowed mask against a dense reference: every query, every set operation,
        /// and equality, order and hash by value whatever the windows.
        #[test]
        fn windowed_mask_matches_dense_reference(
            nr in 1u32..400,
            a_ops in proptest::collection::vec((proptest::bool::weighted(0.7), 0u32..400), 0..12),
            b_ops in proptest::collection::vec((proptest::bool::weighted(0.7), 0u32..400), 0..12),
        ) {
            let (a, ra) = build(nr, &a_ops);
            let (b, rb) = build(nr, &b_ops);
            check(&a, &ra);
            check(&b, &rb);
            let zip = |f: fn(bool, bool) -> bool| -> Vec<bool> { ra.iter().zip(&rb).map(|(&x, &y)| f(x, y)).collect() };
            check(&a.and(&b), &zip(|x, y| x && y));
            check(&a.or(&b), &zip(|x, y| x || y));
            check(&a.andnot(&b), &zip(|x, y| x && !y));
            let mut c = a.clone();
            c.or_assign(&b);
            check(&c, &zip(|x, y| x || y));
            assert_eq!(a.intersects(&b), ra.iter().zip(&rb).any(|(&x, &y)| x && y));
            assert_eq!(a.is_subset(&b), ra.iter().zip(&rb).all(|(&x, &y)| !x || y));
            assert_eq!(a == b, ra == rb);
            assert_eq!(a.cmp(&b), dense(&ra).cmp(&dense(&rb)));
            // The same bits through another window are the same mask.
            let rebuilt = parse_cpulist(&a.to_string(), nr).unwrap();
            assert_eq!(rebuilt, a);
            assert_eq!(rebuilt.cmp(&a), std::cmp::Ordering::Equal);
            let hash = |m: &CpuMask| {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                m.hash(&mut h);
                h.finish()
            };
            assert_eq!(hash(&rebuilt), hash(&a));
            assert_eq!(a.first_and(&b), (0..nr).find(|&x| ra[x as usize] && rb[x as usize]));
            let (lo, ws) = a.stored_words();
            let from_words: Vec<u32> = ws
                .iter()
                .enumerate()
                .flat_map(|(j, &w)| (0..64).filter(move |b| w >> b & 1 != 0).map(move |b| (lo + j as u32) * 64 + b))
                .collect();
            assert_eq!(from_words, a.iter().collect::<Vec<_>>());
            for from in [0, nr / 3, nr / 2, nr - 1, nr] {
                let want = (from..nr).find(|&x| ra[x as usize] && !rb[x as usize]);
                assert_eq!(a.next_andnot_from(&b, from), want);
            }
            let wrap: Vec<u32> = a.iter_wrap(nr / 2).collect();
            let mut want: Vec<u32> = (nr / 2..nr).chain(0..nr / 2).filter(|&x| ra[x as usize]).collect();
            want.dedup();
            assert_eq!(wrap, want);
        }
    }

    #[test]
    fn a_single_cpu_mask_stores_one_word() {
        let m = CpuMask::of(4000, 8192);
        assert_eq!(m.win.len(), 1);
        assert_eq!(CpuMask::new(8192).win.len(), 0);
        assert_eq!(m.and(&CpuMask::full(8192)).win.len(), 1);
    }
}
