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
use crate::limits::MAX_CPUS;

/// Index of a modelled cache line.
pub type LineId = u32;

const MAX_SHARERS: usize = 6;
/// No CPU: machines have at most [`MAX_CPUS`] CPUs, so a CPU id fits in 16 bits below this.
const NONE: u16 = u16::MAX;
const _: () = assert!(MAX_CPUS <= NONE as u32);

/// One cache line's coherence state, 16 bytes so that a host cache line holds four and a
/// lookup touches one.
#[derive(Debug, Clone)]
#[repr(C, align(16))]
pub struct Line {
    /// `w[..MAX_SHARERS]`: the CPUs holding a valid copy, the owner first: `w[0]` is the CPU
    /// that wrote the line last (it holds the freshest copy). Unused slots are `NONE`. When
    /// more CPUs share it than fit, the last slot is replaced: the owner and the first readers
    /// stay. `w[NR]`: `NONE` minus how many slots are used. `w[WATCHER]`: `WATCHING` plus a
    /// CPU spinning or MONITOR-ing this line (woken when another CPU writes it), or `NONE`.
    /// Neither ever equals a CPU id, so the sharer test compares the whole entry at once.
    w: [u16; 8],
}

/// Bits per distance of [`Lines::count_blocks`]' packed miss counts: four distances (a miss is
/// never `Local`) in one `u64`.
const COUNT_BITS: u32 = 16;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

const NR: usize = MAX_SHARERS;
const WATCHER: usize = MAX_SHARERS + 1;
/// The watcher slot's tag: CPU ids stay below it.
const WATCHING: u16 = 0x8000;
const _: () = assert!(MAX_CPUS <= WATCHING as u32);

impl Line {
    /// Whether `cpu` holds a valid copy. Unused slots hold NONE, which is no CPU: all six
    /// are compared at once.
    #[inline(always)]
    fn holds(&self, cpu: u16) -> bool {
        self.w.iter().fold(false, |hit, &s| hit | (s == cpu))
    }

    fn nr(&self) -> usize {
        usize::from(NONE - self.w[NR])
    }

    /// `cpu` (which does not hold the line) fetches a copy: it joins the sharers, in the
    /// last slot when they are full.
    #[inline(always)]
    fn add_sharer(&mut self, cpu: u16) {
        // Without branches: the slot after the last, or the last when all are used.
        let v = self.w[NR];
        let free = v > NONE - MAX_SHARERS as u16;
        self.w[if free { usize::from(NONE - v) } else { MAX_SHARERS - 1 }] = cpu;
        self.w[NR] = v.wrapping_sub(u16::from(free));
    }
}

/// A machine whose core, LLC and socket counts are powers of two: the distance between two
/// CPUs follows from the XOR of their core numbers, which are bits of their ids, so a
/// transfer's distance needs no lookup of their places (a host cache miss on large machines,
/// where the places of 256 or more CPUs are read in no particular order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    /// The core of CPU `c` is `(c & core_mask) >> core_shift`.
    core_mask: u32,
    core_shift: u32,
    /// Its LLC is `core >> llc_shift`, its socket `core >> socket_shift`.
    llc_shift: u32,
    socket_shift: u32,
}

impl Shape {
    /// The shape of `topo`, if [`Shape::place`] gives its places exactly (checked for every
    /// CPU).
    fn of(topo: &Topology) -> Option<Shape> {
        let s = &topo.spec;
        let nr_cores = s.sockets.checked_mul(s.cores_per_socket)?;
        let pow2 = [nr_cores, s.cores_per_socket, s.cores_per_llc, s.threads_per_core];
        if !pow2.iter().all(|n| n.is_power_of_two()) {
            return None;
        }
        let (core_mask, core_shift) =
            if s.smt_siblings_adjacent { (u32::MAX, s.threads_per_core.trailing_zeros()) } else { (nr_cores - 1, 0) };
        let shape = Shape {
            core_mask,
            core_shift,
            llc_shift: s.cores_per_llc.trailing_zeros(),
            socket_shift: s.cores_per_socket.trailing_zeros(),
        };
        let places = topo.places();
        (places.len() == topo.nr_cpus as usize && (0..topo.nr_cpus).all(|c| shape.place(c) == places[c as usize]))
            .then_some(shape)
    }

    /// CPU `c`'s core number.
    #[inline(always)]
    fn core(self, c: u32) -> u64 {
        u64::from((c & self.core_mask) >> self.core_shift)
    }

    /// The packed place ([`Topology::places`]) of a CPU whose core number is `core`.
    fn spread(self, core: u64) -> u64 {
        ((core >> self.socket_shift) << 48) | ((core >> self.llc_shift) << 32) | core
    }

    /// CPU `c`'s packed place.
    fn place(self, c: u32) -> u64 {
        self.spread(self.core(c))
    }
}

/// The misses of [`Lines::count_blocks`] by distance, packed: 16 bits per distance but `Local`
/// (a miss is never local: the reader's own lines are not read, and a line a CPU owns it
/// holds). Sums of several calls stay exact while they count fewer than 65536 misses of a
/// distance ([`MissCounts::plus`] checks it in debug builds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MissCounts(u64);

impl MissCounts {
    /// The misses of both, each field summed (overflow of a field panics).
    #[inline]
    pub fn plus(self, o: MissCounts) -> MissCounts {
        // A field that overflowed would carry into the next (or out of the top): callers
        // bound their sums (a balancing walk reads at most five lines of each CPU).
        debug_assert!(
            (0..4).all(|f| ((self.0 >> (COUNT_BITS * f)) & COUNT_MASK) + ((o.0 >> (COUNT_BITS * f)) & COUNT_MASK)
                <= COUNT_MASK),
            "MissCounts: more than {COUNT_MASK} misses of one distance"
        );
        MissCounts(self.0.wrapping_add(o.0))
    }

    /// The counts by distance, indexed by `Distance as usize`.
    #[inline]
    pub fn by_distance(self) -> [u64; 5] {
        std::array::from_fn(|d| if d == 0 { 0 } else { (self.0 >> (COUNT_BITS * (d as u32 - 1))) & COUNT_MASK })
    }
}

/// Per-CPU lines allocated together: CPU `c`'s block is the `width` lines from
/// `first + stride * c` (see [`Lines::read_blocks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerCpuLines {
    pub first: LineId,
    pub stride: u32,
    pub width: u32,
}

/// All modelled lines of a run.
#[derive(Debug)]
pub struct Lines {
    lines: Vec<Line>,
    /// The machine's shape when distances follow from core numbers (see
    /// [`Lines::for_topology`]).
    shape: Option<Shape>,
    /// The distance between two different CPUs whose keys ([`Lines::key`]) XOR to `x`, by
    /// `x.leading_zeros()`: it depends on nothing else, and grows with `x`.
    by_lz: [Distance; 65],
    /// [`Lines::count_blocks`]' increment for a key XOR with that many leading zeros: one in
    /// the packed field of its distance.
    count_by_lz: [u64; 65],
}

impl Default for Lines {
    /// Lines for a run whose distances come from the topology's places.
    fn default() -> Lines {
        Lines::with_shape(None)
    }
}

impl Lines {
    /// No lines yet, for a run on `topo`: on a machine of power-of-two counts, distances are
    /// computed from the CPU ids instead of read from the topology's places. The same
    /// distances either way (the places the shape implies are checked against the
    /// topology's).
    pub fn for_topology(topo: &Topology) -> Lines {
        Lines::with_shape(Shape::of(topo))
    }

    fn with_shape(shape: Option<Shape>) -> Lines {
        let by_lz = std::array::from_fn(|lz| {
            // A key XOR with `lz` leading zeros, as a XOR of places (`Distance::apart` too
            // depends on its argument's leading zeros only).
            let x = if lz == 64 { 0 } else { 1u64 << (63 - lz) };
            Distance::apart(shape.map_or(x, |s| s.spread(x)))
        });
        // A miss is never `Local` (two different CPUs), so field `d - 1` counts distance `d`.
        let count_by_lz = std::array::from_fn(|lz| 1u64 << (COUNT_BITS * (by_lz[lz] as u32).saturating_sub(1)));
        Lines { lines: Vec::new(), shape, by_lz, count_by_lz }
    }

    /// CPU `c`'s distance key: its core number when the shape is known, else its packed
    /// place. Two different CPUs are [`Lines::apart`] by the XOR of their keys.
    #[inline(always)]
    fn key(shape: Option<Shape>, places: &[u64], c: u32) -> u64 {
        match shape {
            Some(s) => s.core(c),
            None => places[c as usize],
        }
    }

    /// The distance between two different CPUs whose keys XOR to `x`.
    #[inline(always)]
    fn apart(by_lz: &[Distance; 65], x: u64) -> Distance {
        by_lz[x.leading_zeros() as usize]
    }

    /// A new line, initially owned by `home` (the CPU that initialised the variable).
    pub fn alloc(&mut self, home: u32) -> LineId {
        assert!(home < MAX_CPUS, "line home CPU {home} beyond MAX_CPUS");
        let id = self.lines.len() as LineId;
        let mut w = [NONE; 8];
        w[0] = home as u16;
        w[NR] = NONE - 1;
        self.lines.push(Line { w });
        id
    }

    pub fn watcher(&self, line: LineId) -> Option<u32> {
        let w = self.lines[line as usize].w[WATCHER];
        (w != NONE).then_some(u32::from(w - WATCHING))
    }

    pub fn set_watcher(&mut self, line: LineId, cpu: Option<u32>) {
        self.lines[line as usize].w[WATCHER] = cpu.map_or(NONE, |c| WATCHING + c as u16);
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
        if l.holds(cpu as u16) {
            return None;
        }
        // The owner is not `cpu` (it would hold the line).
        let owner = l.w[0];
        l.add_sharer(cpu as u16);
        let (shape, places) = (self.shape, topo.places());
        let x = Lines::key(shape, places, u32::from(owner)) ^ Lines::key(shape, places, cpu);
        Some(Lines::apart(&self.by_lz, x))
    }

    /// `reader` reads line `first + c` for every CPU `c` but itself of a CPU mask given by its
    /// stored words (`words[j]` holds CPUs `64 * (lo + j)` onwards), in ascending `c`, and
    /// `miss` gets the distance of each read that missed, in that order. The same as
    /// [`Lines::read`] of each of those lines in turn, with the reader's place looked up once
    /// and the lines visited in address order (for a run of per-CPU lines allocated together).
    #[inline]
    pub fn read_each(
        &mut self,
        first: LineId,
        lo: u32,
        words: &[u64],
        reader: u32,
        topo: &Topology,
        miss: impl FnMut(Distance),
    ) {
        self.read_blocks(PerCpuLines { first, stride: 1, width: 1 }, lo, words, |_| !0, reader, topo, miss)
    }

    /// [`Lines::read_each`] over per-CPU blocks of lines: for every CPU `c` but `reader` of the
    /// mask (its stored words ANDed with `filter(word index)`, a word of another mask of the
    /// same numbering), the lines `run.first + run.stride * c + j` for `j` in `0..run.width`,
    /// CPU by CPU in ascending order, each line of a block in order.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn read_blocks(
        &mut self,
        run: PerCpuLines,
        lo: u32,
        words: &[u64],
        filter: impl Fn(usize) -> u64,
        reader: u32,
        topo: &Topology,
        miss: impl FnMut(Distance),
    ) {
        let Lines { lines, shape, by_lz, .. } = self;
        let lines = &mut lines[run.first as usize..];
        // One loop for each way of finding keys, so the choice is made once per run.
        match *shape {
            Some(s) => Lines::read_run(lines, run, lo, words, filter, reader, |c| s.core(c), by_lz, miss),
            None => {
                let places = topo.places();
                Lines::read_run(lines, run, lo, words, filter, reader, |c| places[c as usize], by_lz, miss)
            }
        }
    }

    /// [`Lines::read_blocks`] on the lines from the run's first, with `key` giving a CPU's
    /// distance key ([`Lines::key`]).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn read_run(
        lines: &mut [Line],
        run: PerCpuLines,
        lo: u32,
        words: &[u64],
        filter: impl Fn(usize) -> u64,
        reader: u32,
        key: impl Fn(u32) -> u64,
        by_lz: &[Distance; 65],
        mut miss: impl FnMut(Distance),
    ) {
        let rp = key(reader);
        let r = reader as u16;
        let (stride, width) = (run.stride as usize, run.width as usize);
        for (j, &w) in words.iter().enumerate() {
            let i = lo as usize + j;
            let base = i * 64;
            let w = w & filter(i);
            // The reader's own lines are not remote reads.
            let mut rest = if reader as usize / 64 == i { w & !(1 << (reader % 64)) } else { w };
            while rest != 0 {
                let c = base + rest.trailing_zeros() as usize;
                rest &= rest - 1;
                for l in &mut lines[c * stride..c * stride + width] {
                    if l.holds(r) {
                        continue;
                    }
                    let x = key(u32::from(l.w[0])) ^ rp;
                    l.add_sharer(r);
                    miss(Lines::apart(by_lz, x));
                }
            }
        }
    }

    /// [`Lines::read_blocks`] of blocks of `W` lines (`run.width == W`) with the misses counted
    /// by distance instead of handed over one by one, packed: field `d - 1` of the returned
    /// [`MissCounts`] holds the reads that missed at distance `d`. The lines end in the same
    /// state as after [`Lines::read_blocks`]. A balancing walk charges its transfers by distance
    /// (one draw per distance), so it needs only these counts; they are kept in one register (a
    /// 16-bit field per distance) instead of an array in memory, whose increments would wait
    /// for each other through the store, and the block's width is a constant, so its lines are
    /// visited without a loop.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn count_blocks<const W: usize>(
        &mut self,
        run: PerCpuLines,
        lo: u32,
        words: &[u64],
        filter: impl Fn(usize) -> u64,
        reader: u32,
        topo: &Topology,
    ) -> MissCounts {
        debug_assert_eq!(run.width as usize, W, "count_blocks: a block of {} lines read as {W}", run.width);
        // Every field must hold the run's reads: at most `W` lines of each CPU.
        const { assert!(W as u64 * MAX_CPUS as u64 <= COUNT_MASK) };
        let Lines { lines, shape, count_by_lz, .. } = self;
        let lines = &mut lines[run.first as usize..];
        let stride = run.stride as usize;
        MissCounts(match *shape {
            Some(s) => Lines::count_run::<W>(lines, stride, lo, words, filter, reader, |c| s.core(c), count_by_lz),
            None => {
                let places = topo.places();
                Lines::count_run::<W>(lines, stride, lo, words, filter, reader, |c| places[c as usize], count_by_lz)
            }
        })
    }

    /// [`Lines::read_run`] of `W`-line blocks with the misses counted in packed fields
    /// ([`Lines::count_blocks`]).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn count_run<const W: usize>(
        lines: &mut [Line],
        stride: usize,
        lo: u32,
        words: &[u64],
        filter: impl Fn(usize) -> u64,
        reader: u32,
        key: impl Fn(u32) -> u64,
        inc: &[u64; 65],
    ) -> u64 {
        let rp = key(reader);
        let r = reader as u16;
        let mut packed = 0u64;
        for (j, &w) in words.iter().enumerate() {
            let i = lo as usize + j;
            let base = i * 64;
            let w = w & filter(i);
            // The reader's own lines are not remote reads.
            let mut rest = if reader as usize / 64 == i { w & !(1 << (reader % 64)) } else { w };
            while rest != 0 {
                let c = base + rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let block: &mut [Line; W] = (&mut lines[c * stride..c * stride + W]).try_into().unwrap();
                let mut visit = |l: &mut Line| {
                    if !l.holds(r) {
                        let x = key(u32::from(l.w[0])) ^ rp;
                        l.add_sharer(r);
                        packed = packed.wrapping_add(inc[x.leading_zeros() as usize]);
                    }
                };
                // Unrolled: the compiler keeps a loop over a block of three lines.
                if W >= 1 {
                    visit(&mut block[0]);
                }
                if W >= 2 {
                    visit(&mut block[1]);
                }
                if W >= 3 {
                    visit(&mut block[2]);
                }
                for l in block.iter_mut().skip(3) {
                    visit(l);
                }
            }
        }
        packed
    }

    /// Whether `cpu` holds `line` alone and no CPU watches it: a write by `cpu` then changes
    /// nothing and costs nothing ([`Lines::write_watched`] would return `(None, None)`).
    #[inline(always)]
    pub fn owned_alone(&self, line: LineId, cpu: u32) -> bool {
        // One holder means the other sharer slots are unused (`alloc` and `write` clear them,
        // `add_sharer` fills them in order).
        let w = &self.lines[line as usize].w;
        w[0] == cpu as u16 && w[NR] == NONE - 1 && w[WATCHER] == NONE
    }

    /// `cpu` writes the line (a store or an atomic read-modify-write). Returns the farthest
    /// distance among the copies that had to be fetched or invalidated, or `None` if this CPU
    /// already held the only copy.
    #[inline]
    pub fn write(&mut self, line: LineId, cpu: u32, topo: &Topology) -> Option<Distance> {
        self.write_watched(line, cpu, topo).0
    }

    /// [`Lines::write`], also returning the line's watcher.
    #[inline]
    pub fn write_watched(&mut self, line: LineId, cpu: u32, topo: &Topology) -> (Option<Distance>, Option<u32>) {
        let (shape, places, by_lz) = (self.shape, topo.places(), &self.by_lz);
        let l = &mut self.lines[line as usize];
        let place = |c: u16| Lines::key(shape, places, u32::from(c));
        let c = cpu as u16;
        // The farthest copy is the one whose key differs most (the distance grows with the
        // XOR), so one classification of the largest XOR.
        let owner = l.w[0];
        let far = if l.w[NR] == NONE - 1 {
            // The common case: one holder. The writer's place is found only when the holder
            // is another CPU (a write to a line this CPU owns alone costs nothing).
            (owner != c).then(|| Lines::apart(by_lz, place(owner) ^ place(c)))
        } else {
            let cp = place(c);
            let mut far_x = 0u64;
            let mut any = false;
            for &s in &l.w[..l.nr().min(MAX_SHARERS)] {
                if s != c {
                    any = true;
                    far_x = far_x.max(place(s) ^ cp);
                }
            }
            any.then(|| Lines::apart(by_lz, far_x))
        };
        let w = l.w[WATCHER];
        l.w = [c, NONE, NONE, NONE, NONE, NONE, NONE - 1, w];
        (far, (w != NONE).then_some(u32::from(w.wrapping_sub(WATCHING))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::cpumask::CpuMask;
    use crate::hw::topology::TopologySpec;

    #[test]
    fn a_line_is_a_quarter_of_a_host_cache_line() {
        assert_eq!(std::mem::size_of::<Line>(), 16);
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

    /// The coherence model as first written (32-bit CPU ids, `Topology::distance` per
    /// sharer), which the packed entry and the run read must reproduce exactly.
    #[derive(Clone)]
    struct Plain {
        sharers: Vec<Vec<u32>>,
        watcher: Vec<Option<u32>>,
    }

    impl Plain {
        fn read(&mut self, line: usize, cpu: u32, topo: &Topology) -> Option<Distance> {
            let s = &mut self.sharers[line];
            if s.contains(&cpu) {
                return None;
            }
            let d = topo.distance(s[0], cpu);
            if s.len() < MAX_SHARERS {
                s.push(cpu);
            } else {
                s[MAX_SHARERS - 1] = cpu;
            }
            Some(d)
        }

        fn write(&mut self, line: usize, cpu: u32, topo: &Topology) -> Option<Distance> {
            let s = &mut self.sharers[line];
            let far = s.iter().filter(|&&c| c != cpu).map(|&c| topo.distance(c, cpu)).max();
            *s = vec![cpu];
            far
        }
    }

    /// Random reads, writes, watcher changes and span reads on several machine shapes give
    /// the same distances, in the same order, and the same watchers as the plain model.
    #[test]
    fn packed_lines_and_run_reads_match_the_plain_model() {
        let mut kvm = TopologySpec::new(2, 2, 8, 4, 2);
        kvm.smt_siblings_adjacent = true;
        for spec in [
            TopologySpec::new(2, 1, 64, 8, 2),
            TopologySpec::new(4, 1, 16, 4, 2),
            TopologySpec::new(1, 1, 3, 3, 1),
            kvm,
        ] {
            let topo = Topology::new(&spec).unwrap();
            // With the places read from the topology and, where the shape allows, computed.
            for mut lines in [Lines::default(), Lines::for_topology(&topo)] {
                check_against_plain(&topo, &mut lines);
            }
        }
    }

    /// One machine's random operations on `lines` against the plain model.
    fn check_against_plain(topo: &Topology, lines: &mut Lines) {
        let nr = topo.nr_cpus;
        let mut rng = crate::sim::rng::Prng::new(16, u64::from(nr));
        // A few lines first, so the run of per-CPU lines does not start at 0.
        let extra = 3;
        let mut plain = Plain { sharers: Vec::new(), watcher: Vec::new() };
        for c in (0..extra).chain(0..nr).chain(0..extra) {
            assert_eq!(lines.alloc(c % nr) as usize, plain.sharers.len());
            plain.sharers.push(vec![c % nr]);
            plain.watcher.push(None);
        }
        let n = plain.sharers.len() as u64;
        for _ in 0..20_000 {
            let cpu = rng.range(0, u64::from(nr) - 1) as u32;
            let line = rng.range(0, n - 1) as usize;
            match rng.range(0, 9) {
                0..=3 => assert_eq!(lines.read(line as LineId, cpu, topo), plain.read(line, cpu, topo)),
                4..=6 => {
                    let alone = lines.owned_alone(line as LineId, cpu);
                    let before = lines.lines[line].w;
                    let want = (plain.write(line, cpu, topo), plain.watcher[line]);
                    assert_eq!(lines.write_watched(line as LineId, cpu, topo), want);
                    // A write to a line held alone and unwatched changes nothing.
                    assert_eq!(alone, want == (None, None) && before[WATCHER] == NONE);
                    if alone {
                        assert_eq!(lines.lines[line].w, before);
                    }
                }
                7 => {
                    let w = (rng.range(0, 1) == 0).then_some(cpu);
                    lines.set_watcher(line as LineId, w);
                    plain.watcher[line] = w;
                    assert_eq!(lines.watcher(line as LineId), w);
                }
                _ => {
                    // A span: a random subset of the CPUs, sometimes all of them.
                    let all = rng.range(0, 3) == 0;
                    let mut span = CpuMask::new(nr);
                    for c in 0..nr {
                        if all || rng.range(0, 2) == 0 {
                            span.set(c);
                        }
                    }
                    let (lo, ws) = span.stored_words();
                    let mut got = Vec::new();
                    lines.read_each(extra, lo, ws, cpu, topo, |d| got.push(d));
                    let want: Vec<Distance> = span
                        .iter()
                        .filter(|&c| c != cpu)
                        .filter_map(|c| plain.read((extra + c) as usize, cpu, topo))
                        .collect();
                    assert_eq!(got, want);
                }
            }
        }
    }

    /// Block reads (several lines per CPU, every `stride`-th block, filtered by a second mask)
    /// give the same distances, in the same order, as plain reads of those lines.
    #[test]
    fn block_reads_match_plain_reads_line_by_line() {
        let topo = Topology::new(&TopologySpec::new(2, 1, 16, 4, 2)).unwrap();
        let nr = topo.nr_cpus;
        let (stride, width, first) = (3u32, 2u32, 5u32);
        for mut lines in [Lines::default(), Lines::for_topology(&topo)] {
            let mut plain = Plain { sharers: Vec::new(), watcher: Vec::new() };
            for i in 0..first + stride * nr {
                let home = i % nr;
                assert_eq!(lines.alloc(home) as usize, plain.sharers.len());
                plain.sharers.push(vec![home]);
                plain.watcher.push(None);
            }
            let n = plain.sharers.len() as u64;
            let mut rng = crate::sim::rng::Prng::new(31, u64::from(nr));
            for _ in 0..5_000 {
                let cpu = rng.range(0, u64::from(nr) - 1) as u32;
                if rng.range(0, 2) != 0 {
                    let line = rng.range(0, n - 1) as usize;
                    assert_eq!(lines.write(line as LineId, cpu, &topo), plain.write(line, cpu, &topo));
                    continue;
                }
                let (mut span, mut other) = (CpuMask::new(nr), CpuMask::new(nr));
                for c in 0..nr {
                    if rng.range(0, 2) != 0 {
                        span.set(c);
                    }
                    if rng.range(0, 1) != 0 {
                        other.set(c);
                    }
                }
                let (lo, ws) = span.stored_words();
                let run = PerCpuLines { first, stride, width };
                let mut got = Vec::new();
                let counted = rng.range(0, 1) == 1;
                if !counted {
                    lines.read_blocks(run, lo, ws, |i| other.word(i as u32), cpu, &topo, |d| got.push(d));
                } else {
                    // Counted: the same reads, the misses as counts by distance.
                    let counts = lines.count_blocks::<2>(run, lo, ws, |i| other.word(i as u32), cpu, &topo);
                    let again = lines.count_blocks::<2>(run, lo, ws, |i| other.word(i as u32), cpu, &topo);
                    assert_eq!(again, MissCounts::default(), "read again at once: every line hits");
                    got = by_distance(&counts.plus(again).by_distance());
                }
                let mut want = Vec::new();
                for c in span.iter().filter(|&c| c != cpu && other.test(c)) {
                    for j in 0..width {
                        want.extend(plain.read((first + stride * c + j) as usize, cpu, &topo));
                    }
                }
                if counted {
                    // Counts keep no order: nearest first.
                    want.sort();
                }
                assert_eq!(got, want);
            }
        }
    }

    /// Counts by distance as the distances, nearest first.
    fn by_distance(counts: &[u64; 5]) -> Vec<Distance> {
        use Distance::*;
        [Local, Smt, Llc, Socket, Remote]
            .into_iter()
            .zip(counts)
            .flat_map(|(d, &n)| std::iter::repeat_n(d, n as usize))
            .collect()
    }

    /// A counted walk over the largest machine's every CPU, four lines each, fits its fields;
    /// a sum past a field's capacity is refused (debug builds).
    #[test]
    #[cfg(debug_assertions)]
    fn miss_counts_add_by_field_and_refuse_overflow() {
        let a = MissCounts(1 | (2 << COUNT_BITS) | (COUNT_MASK << (3 * COUNT_BITS)));
        let b = MissCounts(5 | (7 << (2 * COUNT_BITS)));
        assert_eq!(a.plus(b).by_distance(), [0, 6, 2, 7, COUNT_MASK]);
        let full = std::panic::catch_unwind(|| a.plus(MissCounts(1 << (3 * COUNT_BITS))));
        assert!(full.is_err(), "the Remote field would overflow");
    }

    /// A counted walk over the largest machine's every CPU, four lines each, fits its fields.
    #[test]
    fn counted_reads_fit_the_largest_machine() {
        let spec = TopologySpec::new(8, 1, 512, 8, 2);
        let topo = Topology::new(&spec).unwrap();
        assert_eq!(topo.nr_cpus, MAX_CPUS);
        let mut lines = Lines::for_topology(&topo);
        let width = 4;
        for c in 0..MAX_CPUS * width {
            lines.alloc(c / width);
        }
        let span = CpuMask::full(MAX_CPUS);
        let (lo, ws) = span.stored_words();
        let run = PerCpuLines { first: 0, stride: width, width };
        let counts = lines.count_blocks::<4>(run, lo, ws, |_| !0, 0, &topo).by_distance();
        assert_eq!(counts.iter().sum::<u64>(), u64::from((MAX_CPUS - 1) * width));
        assert_eq!(counts[Distance::Smt as usize], u64::from(width), "CPU 0's sibling");
        assert_eq!(counts[Distance::Local as usize], 0);
    }

    /// Distances follow from CPU ids on machines of power-of-two counts (SMT siblings adjacent
    /// or not), from the topology's places otherwise, and equal the topology's either way.
    #[test]
    fn distances_are_computed_on_power_of_two_machines() {
        let mut kvm = TopologySpec::new(2, 2, 8, 4, 2);
        kvm.smt_siblings_adjacent = true;
        let epyc = crate::hw::preset("epyc-7763-2s").unwrap().topo;
        for (topo, computed) in [
            (Topology::new(&TopologySpec::new(2, 1, 64, 8, 2)).unwrap(), true),
            (Topology::new(&kvm).unwrap(), true),
            (epyc, true),
            (Topology::new(&TopologySpec::new(1, 1, 3, 3, 1)).unwrap(), false),
            (Topology::new(&TopologySpec::new(2, 1, 12, 4, 2)).unwrap(), false),
        ] {
            let lines = Lines::for_topology(&topo);
            assert_eq!(lines.shape.is_some(), computed, "{:?}", topo.spec);
            let places = topo.places();
            for a in 0..topo.nr_cpus {
                for b in (0..topo.nr_cpus).filter(|&b| b != a) {
                    let x = Lines::key(lines.shape, places, a) ^ Lines::key(lines.shape, places, b);
                    assert_eq!(Lines::apart(&lines.by_lz, x), topo.distance(a, b), "CPUs {a} and {b}");
                }
            }
        }
    }
}
