//! A small coherence model for the hot kernel words that cross CPUs.
//!
//! Each modelled cache line remembers which CPUs hold a valid copy. Reading a line this CPU
//! does not hold costs one transfer from the last writer; writing a line others hold costs the
//! invalidation of the farthest holder (and the data transfer if this CPU had no copy). The
//! caller turns the returned [`Distance`] into nanoseconds with the machine's measured
//! transfer latencies ([`super::HwCosts::line`]).
//!
//! Which kernel variables share a line is decided by whoever allocates them: two variables
//! given the same [`LineId`] false-share, as the unaligned per-CPU flag of the softirq RFC does.

use super::topology::{Distance, Topology};

/// Index of a modelled cache line.
pub type LineId = u32;

const MAX_SHARERS: usize = 6;
const NONE: u32 = u32::MAX;

/// One cache line's coherence state, 32 bytes so that a host cache line holds two and a
/// lookup touches one.
#[derive(Debug, Clone)]
#[repr(C, align(32))]
pub struct Line {
    /// CPUs holding a valid copy, the owner first: `sharers[0]` is the CPU that wrote the
    /// line last (it holds the freshest copy). Unused slots are `NONE`. When more CPUs share
    /// it than fit, the farthest sharer is kept, which is what decides the cost of the next
    /// invalidation.
    sharers: [u32; MAX_SHARERS],
    nr: u32,
    /// A CPU spinning or MONITOR-ing this line, woken when another CPU writes it.
    pub watcher: u32,
}

/// All modelled lines of a run.
#[derive(Debug, Default)]
pub struct Lines {
    lines: Vec<Line>,
}

impl Lines {
    /// A new line, initially owned by `home` (the CPU that initialised the variable).
    pub fn alloc(&mut self, home: u32) -> LineId {
        let id = self.lines.len() as LineId;
        let mut sharers = [NONE; MAX_SHARERS];
        sharers[0] = home;
        self.lines.push(Line { sharers, nr: 1, watcher: NONE });
        id
    }

    pub fn watcher(&self, line: LineId) -> Option<u32> {
        let w = self.lines[line as usize].watcher;
        (w != NONE).then_some(w)
    }

    pub fn set_watcher(&mut self, line: LineId, cpu: Option<u32>) {
        self.lines[line as usize].watcher = cpu.unwrap_or(NONE);
    }

    /// Ask the host to cache `line`'s entry ahead of a read or write of it (no effect on the
    /// model; see [`crate::sim::prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, line: LineId) {
        crate::sim::prefetch::prefetch(self.lines.as_ptr().wrapping_add(line as usize));
    }

    /// `cpu` reads the line. Returns the distance the data travelled, or `None` on a hit.
    #[inline]
    pub fn read(&mut self, line: LineId, cpu: u32, topo: &Topology) -> Option<Distance> {
        let l = &mut self.lines[line as usize];
        // Unused slots hold NONE, which is no CPU: all six can be compared at once.
        if l.sharers.iter().fold(false, |hit, &s| hit | (s == cpu)) {
            return None;
        }
        let d = topo.distance(l.sharers[0], cpu);
        if (l.nr as usize) < MAX_SHARERS {
            l.sharers[l.nr as usize] = cpu;
            l.nr += 1;
        } else {
            // Keep the set bounded: replace the nearest sharer (to the owner) with this CPU.
            l.sharers[MAX_SHARERS - 1] = cpu;
        }
        Some(d)
    }

    /// `cpu` writes the line (a store or an atomic read-modify-write). Returns the farthest
    /// distance among the copies that had to be fetched or invalidated, or `None` if this CPU
    /// already held the only copy.
    #[inline]
    pub fn write(&mut self, line: LineId, cpu: u32, topo: &Topology) -> Option<Distance> {
        let l = &mut self.lines[line as usize];
        let mut far: Option<Distance> = None;
        for &s in &l.sharers[..l.nr as usize] {
            if s != cpu {
                let d = topo.distance(s, cpu);
                far = Some(far.map_or(d, |f| f.max(d)));
            }
        }
        l.sharers = [NONE; MAX_SHARERS];
        l.sharers[0] = cpu;
        l.nr = 1;
        far
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::topology::TopologySpec;

    #[test]
    fn a_line_is_half_a_host_cache_line() {
        assert_eq!(std::mem::size_of::<Line>(), 32);
    }

    #[test]
    fn reads_hit_after_a_miss_until_a_write_and_the_set_stays_bounded() {
        let topo = Topology::new(&TopologySpec::new(2, 1, 4, 4, 2)).unwrap();
        let mut lines = Lines::default();
        let l = lines.alloc(0);
        assert_eq!(lines.read(l, 0, &topo), None);
        assert_eq!(lines.read(l, 1, &topo), Some(topo.distance(0, 1)));
        assert_eq!(lines.read(l, 1, &topo), None);
        // Fill past MAX_SHARERS: the last slot is replaced, the owner stays.
        for c in 2..10 {
            assert_eq!(lines.read(l, c, &topo), Some(topo.distance(0, c)));
        }
        assert_eq!(lines.read(l, 9, &topo), None);
        assert_eq!(lines.read(l, 8, &topo), Some(topo.distance(0, 8)));
        assert_eq!(lines.read(l, 0, &topo), None);
        // A write by CPU 3 invalidates the farthest copy and leaves it the only holder.
        let far = (0..5).chain([8]).map(|c| topo.distance(c, 3)).max();
        assert_eq!(lines.write(l, 3, &topo), far);
        assert_eq!(lines.read(l, 1, &topo), Some(topo.distance(3, 1)));
        assert_eq!(lines.write(l, 1, &topo), Some(topo.distance(3, 1)));
        assert_eq!(lines.write(l, 1, &topo), None);
    }
}
