//! The host's floor under `bench --scaling`'s growth figure: what an idealised simulator pays
//! per action on this host once its per-CPU state no longer fits the caches (docs/scaling.md,
//! "The host's floor"). Not a model of anything; it never touches the simulator.
//!
//! Each action belongs to one of N simulated CPUs, visited in a fixed shuffled order that
//! repeats (as nanosleep's CPUs come round on a large machine). It reads one word of each of L
//! host cache lines of that CPU's state, spread over its work (`--work`: iterations of four
//! independent chains of one-cycle operations, the instructions of a step whose data is in
//! cache), and writes two of the lines. `--chase D` makes lines 1..=D reachable only through
//! the line before (as a `Cpu` names its current task and the task its modelled flag line).
//! With prefetching, the lines of the CPU two actions ahead whose addresses need no other read
//! are requested before the action, and the first chased line one action ahead (reading the
//! first line for it), as `Kernel::run` does. The lines lie either in one block per CPU
//! (`block`) or each in its own array of N lines (`split`, like the model's `Cpu`, running
//! frame, queue slot, task, entity and modelled-line arrays); `--spread S` puts S lines
//! between two CPUs' entries of a split array (65: each entry on a 4 KB page of its own, as
//! for state that sits inside larger per-CPU or per-task blocks); `--huge` asks for 2 MB pages
//! (`madvise(MADV_HUGEPAGE)`; the kernel's `transparent_hugepage` must not be `never`).
//!
//! Usage:
//!   cargo run --release --example host_floor -- [--sizes 8,4096] [--lines 0,15,30]
//!       [--chase 0,2] [--work 35] [--spread 1] [--huge] [--actions 4000000] [--rounds 5]
//!
//! Prints ns/action for each size, layout, prefetching, L and D (median of the rounds; each
//! round runs every case once, so a host that slows down and recovers does not pair a quiet
//! run with a busy one) and the growth from the smallest size to the largest (median of the
//! rounds' own ratios, as `bench --scaling` computes it).

use schedsim::cli::bench::median;
use std::hint::black_box;
use std::time::Instant;

/// One host cache line of simulated per-CPU state.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; 8]);

#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Block,
    Split,
}

/// A transparent huge page.
const HUGE: usize = 2 << 20;

/// The state of N CPUs, L lines each, in one of the two layouts.
struct State {
    layout: Layout,
    nr: usize,
    lines: usize,
    /// `Block`: CPU c's line j at c * L + j. `Split`: line j of CPU c at j * (N + pad) + c,
    /// each array padded by a few lines so that the arrays do not alias in the cache.
    mem: Vec<Line>,
    /// Lines 1..=chase of an action are found by reading the line before (its word 4 holds
    /// the next one's index), like a `Cpu` naming its current task and the task its line.
    chase: usize,
    /// Split layout: host lines from one CPU's line to the next in an array (1: packed; 64: a
    /// 4 KB page per CPU, as when each CPU's block is a page or more of other data).
    spread: usize,
}

impl State {
    fn new(layout: Layout, nr: usize, lines: usize, chase: usize, spread: usize, huge: bool) -> State {
        let len = match layout {
            Layout::Block => nr * lines,
            Layout::Split => lines * (nr * spread + 17),
        };
        let len = len.max(1);
        let mut mem: Vec<Line> = Vec::with_capacity(len);
        if huge {
            // Ask for 2 MB pages for the whole 2 MB-aligned part of the block, before any page
            // of it is touched.
            let (start, end) = (mem.as_ptr() as usize, mem.as_ptr() as usize + len * 64);
            let (a, b) = ((start + HUGE - 1) & !(HUGE - 1), end & !(HUGE - 1));
            if b > a {
                // SAFETY: the range lies inside the vector's allocation; madvise only sets a
                // hint on it.
                unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE) };
            }
        }
        // Touch every line so that the pages exist before timing.
        mem.extend((0..len).map(|i| Line([i as u64, 0, 0, 0, 0, 0, 0, 0])));
        let mut s = State { layout, nr, lines, mem, chase: chase.min(lines.saturating_sub(1)), spread };
        for cpu in 0..nr {
            for j in 0..s.chase {
                let (from, to) = (s.index(cpu, j), s.index(cpu, j + 1));
                s.mem[from].0[4] = to as u64;
            }
        }
        s
    }

    #[inline(always)]
    fn index(&self, cpu: usize, j: usize) -> usize {
        match self.layout {
            Layout::Block => cpu * self.lines + j,
            Layout::Split => j * (self.nr * self.spread + 17) + cpu * self.spread,
        }
    }

    /// Two actions ahead: every line whose address is known without reading another (the
    /// first, and those past the chased ones).
    #[inline(always)]
    fn prefetch(&self, cpu: usize) {
        for j in 0..self.lines {
            if j == 0 || j > self.chase {
                schedsim::sim::prefetch::prefetch(self.mem.as_ptr().wrapping_add(self.index(cpu, j)));
            }
        }
    }

    /// One action ahead: the first chased line, read from the first line (requested an action
    /// earlier), as `Kernel::prefetch_cpu_deep` reads a `Cpu` for what it points to.
    #[inline(always)]
    fn prefetch_deep(&self, cpu: usize) {
        if self.chase > 0 {
            let next = self.mem[self.index(cpu, 0)].0[4] as usize;
            schedsim::sim::prefetch::prefetch(self.mem.as_ptr().wrapping_add(next));
        }
    }
}

/// A fixed shuffle of 0..n (xorshift64, seed 1): the order the CPUs' actions come in.
fn shuffled(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// `iters` iterations of four independent chains of one-cycle operations: about 9 instructions
/// an iteration at an IPC near 4, like the model's steps whose data is in cache (about 700
/// instructions in 40-60 ns on this host).
#[inline(always)]
fn work(acc: &mut [u64; 4], iters: usize) {
    for i in 0..iters as u64 {
        acc[0] = acc[0].rotate_left(5) ^ i;
        acc[1] = acc[1].rotate_left(7).wrapping_add(i);
        acc[2] = acc[2].rotate_left(11) ^ acc[0];
        acc[3] = acc[3].rotate_left(13).wrapping_add(acc[1]);
    }
}

/// Runs `actions` actions and returns the wall time per action, ns. An action reads its CPU's
/// lines one by one, spread over its work (a step reads state as its code gets to it), then
/// writes two of them.
fn run(s: &mut State, order: &[usize], actions: usize, iters: usize, prefetch: bool) -> f64 {
    let n = order.len();
    let mut acc = [1u64, 2, 3, 4];
    // The work between reads: `iters` in all, whatever the number of lines.
    let chunks: Vec<usize> = (0..s.lines).map(|j| iters * (j + 1) / s.lines - iters * j / s.lines).collect();
    let t = Instant::now();
    // Positions in `order` of this action and the next two, wrapped by hand (a `%` per
    // action would cost a division).
    let wrap = |i: usize| if i + 1 == n { 0 } else { i + 1 };
    let (mut at, mut at1) = (0, wrap(0));
    for _ in 0..actions {
        let at2 = wrap(at1);
        if prefetch {
            s.prefetch(order[at2]);
            s.prefetch_deep(order[at1]);
        }
        let cpu = order[at];
        (at, at1) = (at1, at2);
        if s.lines == 0 {
            work(&mut acc, iters);
        }
        let mut chased = 0;
        for (j, &chunk) in chunks.iter().enumerate() {
            let line = if j == 0 || j > s.chase { s.index(cpu, j) } else { chased };
            let w = &s.mem[line].0;
            acc[0] ^= w[0];
            chased = w[4] as usize;
            work(&mut acc, chunk);
        }
        if s.lines > 0 {
            let (first, last) = (s.index(cpu, 0), s.index(cpu, s.lines - 1));
            s.mem[first].0[1] = acc[2];
            s.mem[last].0[2] = acc[3];
        }
    }
    black_box(acc);
    t.elapsed().as_nanos() as f64 / actions as f64
}

fn list(arg: &str, what: &str) -> Vec<usize> {
    let parsed: Result<Vec<usize>, _> = arg.split(',').map(|x| x.trim().parse::<usize>()).collect();
    match parsed {
        Ok(v) if !v.is_empty() => v,
        _ => {
            eprintln!("host_floor: {what} {arg:?}: expected comma-separated whole numbers");
            std::process::exit(2);
        }
    }
}

fn number(arg: Option<String>, what: &str) -> usize {
    match arg.as_deref().map(str::parse::<usize>) {
        Some(Ok(v)) if v > 0 => v,
        _ => {
            eprintln!("host_floor: {what}: expected a number above 0");
            std::process::exit(2);
        }
    }
}

fn main() {
    let (mut sizes, mut lines, mut chases, mut iters, mut actions, mut rounds, mut spread) =
        (vec![8, 4096], vec![0, 15, 30], vec![0, 2], 35usize, 4_000_000usize, 5usize, 1usize);
    let mut huge = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sizes" => sizes = list(&args.next().unwrap_or_default(), "--sizes"),
            "--lines" => lines = list(&args.next().unwrap_or_default(), "--lines"),
            "--chase" => chases = list(&args.next().unwrap_or_default(), "--chase"),
            "--work" => iters = number(args.next(), "--work"),
            "--actions" => actions = number(args.next(), "--actions"),
            "--rounds" => rounds = number(args.next(), "--rounds"),
            "--spread" => spread = number(args.next(), "--spread"),
            "--huge" => huge = true,
            other => {
                eprintln!("host_floor: unknown argument {other:?} (see the file's header for usage)");
                std::process::exit(2);
            }
        }
    }
    if sizes.contains(&0) {
        eprintln!("host_floor: --sizes: a size of 0 CPUs has no actions");
        std::process::exit(2);
    }
    // The largest state a case allocates (split layout, largest size and line count), at most
    // 4 GiB, so that a large argument is an error rather than an allocation failure.
    let largest = sizes.iter().max().and_then(|&n| {
        let l = *lines.iter().max()?;
        n.checked_mul(spread)?.checked_add(17)?.checked_mul(l)?.checked_mul(64)
    });
    if largest.is_none_or(|b| b > 4 << 30) {
        eprintln!("host_floor: --sizes x --lines x --spread needs more than 4 GiB of state: expected less");
        std::process::exit(2);
    }
    // The rows: layout, prefetching, lines, chased lines.
    let mut rows = Vec::new();
    for layout in [Layout::Block, Layout::Split] {
        for pf in [true, false] {
            for &l in &lines {
                for &d in &chases {
                    if d == 0 || d < l {
                        rows.push((layout, pf, l, d));
                    }
                }
            }
        }
    }
    if rows.is_empty() {
        eprintln!("host_floor: every --chase is at least every --lines: nothing to measure");
        std::process::exit(2);
    }
    // times[row][size][round]
    let mut times = vec![vec![Vec::new(); sizes.len()]; rows.len()];
    for _ in 0..rounds {
        for (ri, &(layout, pf, l, d)) in rows.iter().enumerate() {
            for (si, &n) in sizes.iter().enumerate() {
                let mut s = State::new(layout, n, l, d, spread, huge);
                let order = shuffled(n);
                // A pass over every CPU warms what fits, then the timed run.
                run(&mut s, &order, n.max(10_000), iters, pf);
                times[ri][si].push(run(&mut s, &order, actions, iters, pf));
            }
        }
    }
    let last = sizes.len() - 1;
    println!(
        "host floor: {actions} actions per run, --work {iters}, median of {rounds} rounds; ns/action, and the growth {} -> {} CPUs",
        sizes[0], sizes[last]
    );
    print!("{:<6} {:<9} {:>5} {:>6}", "layout", "prefetch", "lines", "chased");
    for n in &sizes {
        print!(" {:>9}", format!("{n} CPUs"));
    }
    println!(" {:>8}", "growth");
    for (ri, &(layout, pf, l, d)) in rows.iter().enumerate() {
        let name = if layout == Layout::Block { "block" } else { "split" };
        print!("{:<6} {:<9} {:>5} {:>6}", name, if pf { "2 ahead" } else { "none" }, l, d);
        for per_size in &times[ri] {
            print!(" {:>9.1}", median(per_size.clone()));
        }
        let ratios: Vec<f64> = times[ri][last].iter().zip(&times[ri][0]).map(|(big, small)| big / small).collect();
        println!(" {:>7.2}x", median(ratios));
    }
}
