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
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct CpuMask {
    /// Number of CPU ids the mask can hold (the kernel's `nr_cpu_ids`).
    nr_cpus: u32,
    /// Bit `cpu % 64` of word `cpu / 64` is set iff `cpu` is in the mask. Bits at or above
    /// `nr_cpus` are always clear.
    words: Vec<u64>,
}

impl CpuMask {
    /// An empty mask able to hold CPUs `0..nr_cpus`.
    pub fn new(nr_cpus: u32) -> CpuMask {
        CpuMask { nr_cpus, words: vec![0; nr_cpus.div_ceil(BITS) as usize] }
    }

    /// A mask with every CPU `0..nr_cpus` set.
    pub fn full(nr_cpus: u32) -> CpuMask {
        let mut mask = CpuMask::new(nr_cpus);
        for word in mask.words.iter_mut() {
            *word = u64::MAX;
        }
        let tail = nr_cpus % BITS;
        if tail != 0 {
            if let Some(last) = mask.words.last_mut() {
                *last = (1u64 << tail) - 1;
            }
        }
        mask
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
        self.words[(cpu / BITS) as usize] |= 1u64 << (cpu % BITS);
    }

    /// Removes `cpu`. Panics if `cpu >= nr_cpus`.
    pub fn clear(&mut self, cpu: u32) {
        assert!(cpu < self.nr_cpus, "cpu {cpu} out of range (nr_cpus {})", self.nr_cpus);
        self.words[(cpu / BITS) as usize] &= !(1u64 << (cpu % BITS));
    }

    /// Whether `cpu` is in the mask; false for any `cpu >= nr_cpus`.
    pub fn test(&self, cpu: u32) -> bool {
        cpu < self.nr_cpus && self.words[(cpu / BITS) as usize] & (1u64 << (cpu % BITS)) != 0
    }

    /// Number of CPUs in the mask (`cpumask_weight()`).
    pub fn weight(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether no CPU is set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The lowest CPU in the mask (`cpumask_first()`), `None` if empty.
    pub fn first(&self) -> Option<u32> {
        self.next_from(0)
    }

    /// The lowest CPU in both masks (`cpumask_first_and()`), `None` if they do not intersect.
    pub fn first_and(&self, other: &CpuMask) -> Option<u32> {
        self.check_same_size(other);
        let (index, w) = self.words.iter().zip(&other.words).map(|(a, b)| a & b).enumerate().find(|&(_, w)| w != 0)?;
        Some(index as u32 * BITS + w.trailing_zeros())
    }

    /// The lowest CPU `>= from` in the mask.
    pub fn next_from(&self, from: u32) -> Option<u32> {
        if from >= self.nr_cpus {
            return None;
        }
        let mut index = (from / BITS) as usize;
        let mut word = self.words[index] & (u64::MAX << (from % BITS));
        loop {
            if word != 0 {
                return Some(index as u32 * BITS + word.trailing_zeros());
            }
            index += 1;
            if index == self.words.len() {
                return None;
            }
            word = self.words[index];
        }
    }

    /// The mask's 64-bit words: bit `cpu % 64` of word `cpu / 64` is `cpu`.
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The CPUs in ascending order (`for_each_cpu()`).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(index, &word)| {
            let base = index as u32 * BITS;
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

    /// CPUs in both masks (`cpumask_and()`).
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        self.check_same_size(other);
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect();
        CpuMask { nr_cpus: self.nr_cpus, words }
    }

    /// CPUs in either mask (`cpumask_or()`).
    pub fn or(&self, other: &CpuMask) -> CpuMask {
        self.check_same_size(other);
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a | b).collect();
        CpuMask { nr_cpus: self.nr_cpus, words }
    }

    /// CPUs in `self` but not in `other` (`cpumask_andnot()`).
    pub fn andnot(&self, other: &CpuMask) -> CpuMask {
        self.check_same_size(other);
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a & !b).collect();
        CpuMask { nr_cpus: self.nr_cpus, words }
    }

    /// Adds every CPU of `other` to `self` in place.
    pub fn or_assign(&mut self, other: &CpuMask) {
        self.check_same_size(other);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Whether the masks share at least one CPU (`cpumask_intersects()`).
    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.check_same_size(other);
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `other` (`cpumask_subset(self, other)`).
    pub fn is_subset(&self, other: &CpuMask) -> bool {
        self.check_same_size(other);
        self.words.iter().zip(&other.words).all(|(a, b)| a & !b == 0)
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
}
