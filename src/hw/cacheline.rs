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

/// One cache line's coherence state.
#[derive(Debug, Clone)]
pub struct Line {
    /// The CPU that wrote the line last (it holds the freshest copy).
    owner: u32,
    /// CPUs holding a valid copy (owner included). When more CPUs share it than fit, the
    /// farthest sharer is kept, which is what decides the cost of the next invalidation.
    sharers: [u32; MAX_SHARERS],
    nr: u8,
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
        self.lines.push(Line { owner: home, sharers, nr: 1, watcher: NONE });
        id
    }

    pub fn watcher(&self, line: LineId) -> Option<u32> {
        let w = self.lines[line as usize].watcher;
        (w != NONE).then_some(w)
    }

    pub fn set_watcher(&mut self, line: LineId, cpu: Option<u32>) {
        self.lines[line as usize].watcher = cpu.unwrap_or(NONE);
    }

    /// `cpu` reads the line. Returns the distance the data travelled, or `None` on a hit.
    #[inline]
    pub fn read(&mut self, line: LineId, cpu: u32, topo: &Topology) -> Option<Distance> {
        let l = &mut self.lines[line as usize];
        if l.sharers[..l.nr as usize].contains(&cpu) {
            return None;
        }
        let d = topo.distance(l.owner, cpu);
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
        l.owner = cpu;
        l.sharers = [NONE; MAX_SHARERS];
        l.sharers[0] = cpu;
        l.nr = 1;
        far
    }
}
