//! schbench's options, latency histogram and report text, as of the 2021-12 version
//! (git.kernel.org/pub/scm/linux/kernel/git/mason/schbench.git, GitHub mirror masoncl/schbench,
//! commit 2eef447 "record the execution time in the matrix multiplication mode", 2021-12-03:
//! the last commit before the 2023 rewrite, and the version of thread 003, `schbench -m 2 -t 16`).
//! See docs/workloads.md §2.1.
//!
//! What this module reproduces, function by function of `schbench.c`:
//! - `parse_options()` (getopt_long, short options `"p:am:t:s:c:C:r:R:w:i:z:A:jn:F:"`):
//!   [`SchbenchOpts::parse`].
//! - `plat_val_to_idx()` / `plat_idx_to_val()` (the fio-derived "plat" buckets):
//!   [`plat_val_to_idx`], [`plat_idx_to_val`].
//! - `struct stats`, `add_lat()`, `combine_stats()`, the `memset` of `reset_thread_stats()`:
//!   [`Histogram`]; the worker-side adjustment `add_lat()` applies before bucketing is
//!   [`SchbenchOpts::recorded_latency`].
//! - `calc_percentiles()` with the `plist[]` table: [`PERCENTILES`], [`Histogram::percentile`],
//!   [`Histogram::percentile_rows`].
//! - `show_latencies()`: [`render_report`]; the warmup line of `sleep_for_runtime()`:
//!   [`WARMUP_MESSAGE`]. Everything in both goes to stderr.
//! - The once-a-second loop of `sleep_for_runtime()` (warmup reset, interval reports, `-z`
//!   resets, the stop): [`MainLoop`].
//! - glibc's `rand_r()`, which the message thread uses for its sleep jitter: [`rand_r`].
//!
//! All arithmetic is integer. The one place schbench uses doubles for the histogram,
//! `plist[j] / 100.0 * nr` in `calc_percentiles()`, is reproduced bit-exactly (IEEE-754
//! binary64, round-to-nearest-even, as x86-64/SSE2 evaluates it) with integer arithmetic in
//! [`percentile_threshold`].

use std::fmt;

/// Bits of each value kept exactly in a bucket group (`PLAT_BITS`).
pub const PLAT_BITS: u32 = 8;
/// Buckets per group (`PLAT_VAL`).
pub const PLAT_VAL: u32 = 1 << PLAT_BITS;
/// Number of bucket groups (`PLAT_GROUP_NR`).
pub const PLAT_GROUP_NR: u32 = 19;
/// Total number of buckets (`PLAT_NR`).
pub const PLAT_NR: usize = (PLAT_GROUP_NR * PLAT_VAL) as usize;

/// The bucket of a latency value in microseconds (`plat_val_to_idx()`).
///
/// Values below 512 (most significant bit at position 8 or lower) are their own bucket.
/// Above that, a value whose most significant bit is at position `msb` drops its
/// `msb - 8` low bits ("error bits"): the group starts at index `(msb - 7) * 256` and the
/// 256 buckets of the group are indexed by the 8 bits below the most significant one.
/// Indexes past the last bucket are clamped to it, so every value of 2^26 us (about 67 s)
/// or more lands in bucket `PLAT_NR - 1`.
pub fn plat_val_to_idx(val: u32) -> usize {
    let msb = if val == 0 { 0 } else { 31 - val.leading_zeros() };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as usize;
    let offset = ((PLAT_VAL - 1) & (val >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value schbench prints for a bucket (`plat_idx_to_val()`); `None` past the last bucket
/// (where schbench prints "idx N is too large" and exits).
///
/// Buckets below 512 stand for their own value. Above, bucket `k` of group `g` (error bits
/// `e = g - 1`, width `2^e`) covers `2^(e+8) + k*2^e ..= 2^(e+8) + (k+1)*2^e - 1` and prints
/// the midpoint rounded up, `2^(e+8) + k*2^e + 2^(e-1)`. schbench computes
/// `base + (k + 0.5) * (1 << e)` in double and truncates; since `e >= 1` there the product is
/// an exact integer, so the integer form is identical.
pub fn plat_idx_to_val(idx: usize) -> Option<u32> {
    if idx >= PLAT_NR {
        return None;
    }
    let idx = idx as u32;
    if idx < (PLAT_VAL << 1) {
        return Some(idx);
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u32 << (error_bits + PLAT_BITS);
    let k = idx % PLAT_VAL;
    Some(base + (k << error_bits) + (1 << (error_bits - 1)))
}

/// The inclusive range of latency values (usec) that fall into a bucket; `None` past the end.
/// The last bucket also collects every larger value (the clamp of [`plat_val_to_idx`]), which
/// this range does not show.
pub fn plat_idx_range(idx: usize) -> Option<(u32, u32)> {
    plat_idx_to_val(idx)?;
    let idx = idx as u32;
    if idx < (PLAT_VAL << 1) {
        return Some((idx, idx));
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let lo = (1u32 << (error_bits + PLAT_BITS)) + ((idx % PLAT_VAL) << error_bits);
    Some((lo, lo + ((1 << error_bits) - 1)))
}

/// One entry of schbench's percentile list (`plist[]`), in tenths of a percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentile {
    /// The percentile times ten: 999 is the 99.9th.
    pub permille: u16,
    /// Printed with a leading `"* "` (the entry at `PLIST_P99`, the 99.0th).
    pub starred: bool,
}

/// The percentiles that version prints, in order (`plist[]`), with the 99.0th (`PLIST_P99`,
/// index 4) starred. (`PLIST_P95`, index 3, is only used by `calc_p99()` for the `-R`/`-a`
/// stdout summaries, never marked in the block.)
pub const PERCENTILES: [Percentile; 7] = [
    Percentile { permille: 500, starred: false },
    Percentile { permille: 750, starred: false },
    Percentile { permille: 900, starred: false },
    Percentile { permille: 950, starred: false },
    Percentile { permille: 990, starred: true },
    Percentile { permille: 995, starred: false },
    Percentile { permille: 999, starred: false },
];

/// The line `sleep_for_runtime()` prints (to stderr) when it zeroes the stats after the warmup.
pub const WARMUP_MESSAGE: &str = "warmup done, zeroing stats\n";

/// The per-thread latency histogram (`struct stats`), and the sum of several of them.
///
/// Bucket counters are 32-bit and wrap like schbench's `unsigned int plat[]`; the sample
/// count is 64-bit. `min` uses 0 as "unset", exactly as `add_lat()` and `combine_stats()` do.
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    plat: Box<[u32]>,
    nr_samples: u64,
    max: u32,
    min: u32,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nonzero: Vec<(usize, u32)> =
            self.plat.iter().enumerate().filter(|(_, &c)| c != 0).map(|(i, &c)| (i, c)).collect();
        f.debug_struct("Histogram")
            .field("nr_samples", &self.nr_samples)
            .field("min", &self.min)
            .field("max", &self.max)
            .field("buckets(idx, count)", &nonzero)
            .finish()
    }
}

/// One printed percentile line: what [`render_report`] shows for one entry of [`PERCENTILES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PercentileRow {
    pub percentile: Percentile,
    /// The bucket value printed (usec).
    pub value: u32,
    /// The "(N samples)" figure: samples in the buckets after the previous row's bucket up to
    /// and including this row's (the first row counts from bucket 0). Rows that land in the
    /// same bucket as the previous one show 0.
    pub band_samples: u64,
}

impl Histogram {
    /// An empty histogram (all zero, as `memset` leaves `struct stats`).
    pub fn new() -> Self {
        Histogram { plat: vec![0; PLAT_NR].into_boxed_slice(), nr_samples: 0, max: 0, min: 0 }
    }

    /// Record one latency sample of `usec` microseconds: the bookkeeping part of `add_lat()`
    /// (max, min with 0 meaning unset, bucket, count). The value is first truncated to 32 bits
    /// as `add_lat()`'s `unsigned int` parameter does (irrelevant below 71 minutes). The
    /// `- cputime` adjustment that `add_lat()` applies before this is
    /// [`SchbenchOpts::recorded_latency`].
    pub fn add(&mut self, usec: u64) {
        let us = usec as u32;
        if us > self.max {
            self.max = us;
        }
        if self.min == 0 || us < self.min {
            self.min = us;
        }
        let idx = plat_val_to_idx(us);
        self.plat[idx] = self.plat[idx].wrapping_add(1);
        self.nr_samples += 1;
    }

    /// Fold `other` into `self` (`combine_stats()`), including its quirk on `min`: an `other`
    /// with no samples (min 0) sets `self.min` to 0, and the next non-empty one then replaces
    /// it outright. The result therefore depends on the order of the merges; schbench folds the
    /// workers of message thread 0 in creation order, then those of message thread 1, and so on
    /// (`combine_message_thread_stats()`), starting from an all-zero `struct stats`.
    pub fn merge(&mut self, other: &Histogram) {
        for (d, s) in self.plat.iter_mut().zip(other.plat.iter()) {
            *d = d.wrapping_add(*s);
        }
        self.nr_samples += other.nr_samples;
        if other.max > self.max {
            self.max = other.max;
        }
        if self.min == 0 || other.min < self.min {
            self.min = other.min;
        }
    }

    /// Zero everything (the `memset` in `reset_thread_stats()`).
    pub fn reset(&mut self) {
        self.plat.iter_mut().for_each(|c| *c = 0);
        self.nr_samples = 0;
        self.max = 0;
        self.min = 0;
    }

    /// Number of samples recorded (`nr_samples`).
    pub fn nr_samples(&self) -> u64 {
        self.nr_samples
    }

    /// The smallest sample (0 if none), as schbench tracks it (see [`Histogram::merge`]).
    pub fn min(&self) -> u64 {
        self.min as u64
    }

    /// The largest sample (0 if none).
    pub fn max(&self) -> u64 {
        self.max as u64
    }

    /// The count in one bucket (0 past the end).
    pub fn bucket(&self, idx: usize) -> u32 {
        self.plat.get(idx).copied().unwrap_or(0)
    }

    /// The value schbench prints for the `permille`/10-th percentile (`calc_percentiles()`):
    /// the value of the first bucket at which the running count reaches
    /// [`percentile_threshold`]`(permille, nr_samples)`. `permille` above 1000 is taken as
    /// 1000. With no samples every percentile is 0 (bucket 0), as schbench prints.
    /// Note that `percentile(0)` is always 0 (a threshold of 0 is met at bucket 0).
    pub fn percentile(&self, permille: u16) -> u64 {
        let threshold = percentile_threshold(permille.min(1000), self.nr_samples);
        self.first_bucket_reaching(threshold).0 as u64
    }

    /// Value and cumulative count of the first bucket whose cumulative count reaches
    /// `threshold`. If none does (only possible if a 32-bit bucket wrapped), the last bucket.
    fn first_bucket_reaching(&self, threshold: u64) -> (u32, u64) {
        let mut sum: u64 = 0;
        for (i, &c) in self.plat.iter().enumerate() {
            sum += c as u64;
            if sum >= threshold {
                return (plat_idx_to_val(i).unwrap_or(0), sum);
            }
        }
        (plat_idx_to_val(PLAT_NR - 1).unwrap_or(0), sum)
    }

    /// The seven rows of the report block (`calc_percentiles()` over [`PERCENTILES`]).
    pub fn percentile_rows(&self) -> [PercentileRow; PERCENTILES.len()] {
        let mut prev_cum = 0u64;
        PERCENTILES.map(|p| {
            let threshold = percentile_threshold(p.permille, self.nr_samples);
            let (value, cum) = self.first_bucket_reaching(threshold);
            let band = cum - prev_cum;
            prev_cum = cum;
            PercentileRow { percentile: p, value, band_samples: band }
        })
    }

    /// `calc_percentiles()` over any list of percentiles (in tenths, non-decreasing): for each,
    /// the printed bucket value and the band count (samples after the previous entry's bucket
    /// up to and including this one's; the first entry counts from bucket 0). The 2023 version
    /// (48aed1d) computes every entry of its `plist[]` this way and prints only some of them,
    /// so a printed row's band starts after the previous *computed* entry, printed or not.
    pub fn percentile_bands(&self, permilles: &[u16]) -> Vec<(u32, u64)> {
        let mut prev_cum = 0u64;
        permilles
            .iter()
            .map(|&p| {
                let threshold = percentile_threshold(p.min(1000), self.nr_samples);
                let (value, cum) = self.first_bucket_reaching(threshold);
                let band = cum - prev_cum;
                prev_cum = cum;
                (value, band)
            })
            .collect()
    }

    /// This histogram's buckets with another count, min and max: how a histogram whose buckets
    /// were summed in one place takes the per-thread fields `combine_stats()` folded in
    /// thread order (bucket sums do not depend on the order; `min` does, see [`Histogram::merge`]).
    pub fn with_summary(mut self, nr_samples: u64, min: u32, max: u32) -> Histogram {
        self.nr_samples = nr_samples;
        self.min = min;
        self.max = max;
        self
    }
}

/// Render one latency block exactly as `show_latencies()` prints it (to stderr): the header,
/// one line per entry of [`PERCENTILES`], then min/max. `runtime_s` is what schbench passes:
/// whole seconds since the start for an interval report (`runtime_delta / USEC_PER_SEC`, see
/// [`MainLoop`]), the `-r` value for the final one.
///
/// Layout (C formats `"\t%s%2.1fth: %-10u (%lu samples)\n"` and `"\t  min=%u, max=%u\n"`):
/// a tab, `"* "` for the starred row or two spaces otherwise, the percentile with one decimal,
/// `"th: "`, the value left-justified in 10 columns, a space, `"(N samples)"`. The percentile
/// is printed from its tenths directly: `%2.1f` of the double nearest to `permille/10` always
/// gives those digits, and the width 2 never pads since the text has at least 3 characters.
pub fn render_report(h: &Histogram, runtime_s: u64) -> String {
    use fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "Latency percentiles (usec) runtime {} (s) ({} total samples)", runtime_s, h.nr_samples());
    for row in h.percentile_rows() {
        let p = row.percentile;
        let _ = writeln!(
            out,
            "\t{}{}.{}th: {:<10} ({} samples)",
            if p.starred { "* " } else { "  " },
            p.permille / 10,
            p.permille % 10,
            row.value,
            row.band_samples
        );
    }
    let _ = writeln!(out, "\t  min={}, max={}", h.min(), h.max());
    out
}

// ---------------------------------------------------------------------------------------------
// Exact IEEE-754 binary64 arithmetic, in integers, for calc_percentiles()'s threshold.

/// A non-negative binary floating value `m * 2^e` (exact; `m < 2^53` once rounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dyadic {
    m: u128,
    e: i32,
}

/// Round `m * 2^e` (plus a fraction below the last bit of `m` if `sticky`) to 53 significant
/// bits, ties to even. Callers pass `sticky` only when `m` has at least 55 bits.
fn round53(m: u128, e: i32, sticky: bool) -> Dyadic {
    if m == 0 {
        return Dyadic { m: 0, e: 0 };
    }
    let bits = 128 - m.leading_zeros();
    if bits <= 53 {
        return Dyadic { m, e };
    }
    let shift = bits - 53;
    let mut kept = m >> shift;
    let rem = m & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let mut e = e + shift as i32;
    if rem > half || (rem == half && (sticky || kept & 1 == 1)) {
        kept += 1;
        if kept == 1u128 << 53 {
            kept >>= 1;
            e += 1;
        }
    }
    Dyadic { m: kept, e }
}

/// `num / den` correctly rounded to binary64 (both positive, `den < 2^70`).
fn div53(num: u128, den: u128) -> Dyadic {
    let nb = (128 - num.leading_zeros()) as i32;
    let db = (128 - den.leading_zeros()) as i32;
    // Scale so the integer quotient has at least 55 bits: rounding then sees a guard bit and
    // the remainder becomes the sticky bit.
    let s = (55 + db - nb).max(0);
    let n = num << s;
    round53(n / den, -s, n % den != 0)
}

/// The running count at which `calc_percentiles()` takes a percentile: the smallest integer
/// `sum` with `(double)sum >= plist[j] / 100.0 * nr`, where `plist[j]` is the double literal
/// `permille/10` (e.g. `99.9`) and `nr` is converted to double.
///
/// Every step is rounded as binary64 does it (round to nearest, ties to even; no x87 extended
/// precision, no contraction, as gcc -O2 builds it on x86-64), so the result equals
/// `ceil(p / 100.0 * nr)`. This matters: `99.9 / 100.0` rounds up to 0.99900000000000011, so
/// with 1000 samples the 99.9th percentile is taken at the 1000th sample, not the 999th.
/// Running sums are below 2^45 (4864 32-bit buckets), so their conversion to double is exact.
pub fn percentile_threshold(permille: u16, nr: u64) -> u64 {
    if permille == 0 || nr == 0 {
        return 0;
    }
    // The literal: the double nearest permille/10.
    let p = div53(permille as u128, 10);
    // p / 100.0
    let frac = if p.e >= 0 { div53(p.m << p.e, 100) } else { div53(p.m, 100u128 << (-p.e)) };
    // (double)nr
    let n = round53(nr as u128, 0, false);
    // frac * nr
    let prod = round53(frac.m * n.m, frac.e + n.e, false);
    // ceil
    let v = if prod.e >= 0 {
        prod.m << prod.e
    } else if -prod.e >= 128 {
        1
    } else {
        let sh = (-prod.e) as u32;
        (prod.m + ((1u128 << sh) - 1)) >> sh
    };
    v.min(u64::MAX as u128) as u64
}

// ---------------------------------------------------------------------------------------------
// Options.

/// schbench's command-line options (`parse_options()`), with that version's defaults.
///
/// Fields hold the values schbench ends up using, after its interactions: `-p` zeroes
/// sleeptime, cputime, warmup and message cputime unless `-s`/`-c`/`-w` are also given (in any
/// order); `-a` and `-A` zero the warmup unless `-w` is given; `-A` sets 10 requests/s if none
/// were set yet (so `-A 50 -R 100` gives 100 but `-R 100 -A 50` also gives 100, and `-A 50`
/// alone gives 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchbenchOpts {
    /// `-m`/`--message-threads` (default 2).
    pub message_threads: u64,
    /// `-t`/`--threads`: workers per message thread (default 16).
    pub worker_threads: u64,
    /// `-r`/`--runtime` seconds (default 30; 0 runs forever).
    pub runtime_s: u64,
    /// `-s`/`--sleeptime` usec (default 30000): the message thread's sleep after its spin,
    /// plus a jitter of `rand_r() % (sleeptime / 4)`. 0: the message thread never waits.
    pub sleeptime_usec: u64,
    /// The message thread's spin (default 30000 usec). `-C`/`--message_cputime` is accepted but
    /// has no effect in this version (it assigns the variable to itself), so this is 30000,
    /// or 0 with `-p`.
    pub message_cputime_usec: u64,
    /// `-c`/`--cputime` usec (default 30000): each worker's spin per loop.
    pub cputime_usec: u64,
    /// `-w`/`--warmuptime` seconds (default 5); 0: no warmup reset.
    pub warmup_s: u64,
    /// `-i`/`--intervaltime` seconds (default 10) between interval reports.
    pub interval_s: u64,
    /// `-z`/`--zerotime` seconds (default 0 = never) between stat resets.
    pub zerotime_s: u64,
    /// `-F` KB (default 1536): matrix footprint when `-n` is set. (`--cache_footprint` is
    /// accepted but ignored: schbench maps it to `'f'`, which nothing handles.)
    pub cache_footprint_kb: u64,
    /// `-n`/`--operations` (default 0): matrix multiplications per loop instead of the spin.
    pub operations: u64,
    /// `-a`/`--auto`: grow the worker count until p99 reaches 2 ms (stdout summaries).
    pub autobench: bool,
    /// `-j`/`--jitter`: each spin lasts `rand_r(seed = pthread_self()) % spin + 1` usec; the
    /// seed is re-taken per call, so the jittered length is fixed per thread.
    pub jitter: bool,
    /// `-A`/`--auto-rps` target busy percentage (0 = off).
    pub auto_rps: u64,
    /// `-p`/`--pipe` bytes (0 = off), clamped to 1 MiB as schbench does (it prints
    /// "pipe size too big, using 1048576" to stderr).
    pub pipe_bytes: u64,
    /// `-R`/`--rps` total requests per second (0 = off); each message thread gets
    /// `requests_per_sec / message_threads` ([`SchbenchOpts::rps_per_message_thread`]).
    pub requests_per_sec: u64,
}

impl Default for SchbenchOpts {
    fn default() -> Self {
        SchbenchOpts {
            message_threads: 2,
            worker_threads: 16,
            runtime_s: 30,
            sleeptime_usec: 30000,
            message_cputime_usec: 30000,
            cputime_usec: 30000,
            warmup_s: 5,
            interval_s: 10,
            zerotime_s: 0,
            cache_footprint_kb: 1536,
            operations: 0,
            autobench: false,
            jitter: false,
            auto_rps: 0,
            pipe_bytes: 0,
            requests_per_sec: 0,
        }
    }
}

/// Largest `-p` value (`PIPE_TRANSFER_BUFFER`).
pub const PIPE_TRANSFER_BUFFER: u64 = 1024 * 1024;

struct OptSpec {
    /// The value getopt_long returns (`'f'` for `--cache_footprint`, `'H'` for `--help`).
    key: char,
    /// Also accepted as a short option.
    short: bool,
    long: &'static str,
    takes_arg: bool,
    /// What the argument is, for error messages.
    what: &'static str,
}

/// `(key, also short, long name, takes an argument, what the argument is)`.
const fn opt(key: char, short: bool, long: &'static str, arg: bool, what: &'static str) -> OptSpec {
    OptSpec { key, short, long, takes_arg: arg, what }
}

const OPTS: &[OptSpec] = &[
    opt('a', true, "auto", false, ""),
    opt('j', true, "jitter", false, ""),
    opt('p', true, "pipe", true, "a transfer size in bytes"),
    opt('m', true, "message-threads", true, "a number of message threads (at least 1)"),
    opt('t', true, "threads", true, "a number of worker threads per message thread"),
    opt('r', true, "runtime", true, "a runtime in seconds (0 = forever)"),
    opt('R', true, "rps", true, "a number of requests per second"),
    opt('A', true, "auto-rps", true, "a target CPU busy percentage"),
    opt('s', true, "sleeptime", true, "a sleep time in usec (0, or at least 4)"),
    opt('C', true, "message_cputime", true, "a message thread think time in usec"),
    opt('c', true, "cputime", true, "a worker think time in usec"),
    opt('f', false, "cache_footprint", true, "a cache footprint in KB"),
    opt('F', true, "", true, "a cache footprint in KB"),
    opt('n', true, "operations", true, "a number of operations"),
    opt('w', true, "warmuptime", true, "a warmup time in seconds"),
    opt('i', true, "intervaltime", true, "a report interval in seconds"),
    opt('z', true, "zerotime", true, "a stats-zeroing interval in seconds"),
    opt('H', false, "help", false, ""),
];

fn opt_name(spec: &OptSpec) -> String {
    match (spec.short, spec.long.is_empty()) {
        (true, false) => format!("-{} (--{})", spec.key, spec.long),
        (true, true) => format!("-{}", spec.key),
        _ => format!("--{}", spec.long),
    }
}

/// A non-negative decimal integer that fits schbench's `int` (schbench itself uses `atoi()`,
/// which silently takes "2x" as 2 and "x" as 0; here those are errors).
fn parse_num(spec: &OptSpec, v: &str) -> Result<u64, String> {
    let ok = !v.is_empty() && v.len() <= 10 && v.bytes().all(|b| b.is_ascii_digit());
    match v.parse::<u64>() {
        Ok(n) if ok && n <= i32::MAX as u64 => Ok(n),
        _ => Err(format!(
            "schbench: option {} expects {} as a non-negative integer up to {}, got '{}'",
            opt_name(spec),
            spec.what,
            i32::MAX,
            v
        )),
    }
}

const USAGE_HINT: &str = "options: -m -t -r -s -c -C -w -i -z -F -n -a -j -A -p -R (see --help in schbench)";

impl SchbenchOpts {
    /// Parse schbench's arguments (without the program name), as its `getopt_long()` loop
    /// does: short options with the value attached (`-m2`) or in the next argument (even one
    /// starting with `-`), flags grouped (`-aj`, `-ajm2`), long options as `--name=value` or
    /// `--name value`, unambiguous abbreviations of long names (`--thr 8`), `--` ending the
    /// options. Non-option arguments are an error ("Extra arguments"), as in schbench.
    ///
    /// Where schbench would print its usage and exit (unknown option, missing argument,
    /// `--help`) or crash, this returns an error naming the option and what it expects.
    /// Deliberately stricter than schbench: values must be plain non-negative integers
    /// (schbench's `atoi()` accepts junk, and silently drops negative `-s`/`-c`/`-w`);
    /// `-m 0` is refused (schbench divides by it); `-s 1..3` is refused unless `-p` is set
    /// (`sleeptime / 4` is then a zero modulus); with `-R`, `-t` below 2 is refused
    /// (`worker_threads * 2 / 3` is a divisor).
    pub fn parse(args: &[&str]) -> Result<Self, String> {
        let mut o = SchbenchOpts::default();
        let mut found_sleeptime = None;
        let mut found_cputime = None;
        let mut found_warmuptime = None;
        let mut extra: Option<&str> = None;

        let mut i = 0;
        while i < args.len() {
            let arg = args[i];
            i += 1;
            if arg == "--" {
                if extra.is_none() && i < args.len() {
                    extra = Some(args[i]);
                }
                break;
            }
            if let Some(body) = arg.strip_prefix("--") {
                let (name, inline) = match body.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (body, None),
                };
                let spec = find_long(name)?;
                let value = if spec.takes_arg {
                    match inline {
                        Some(v) => Some(v),
                        None if i < args.len() => {
                            i += 1;
                            Some(args[i - 1])
                        }
                        None => {
                            return Err(format!(
                                "schbench: option --{} requires an argument ({}); {}",
                                spec.long, spec.what, USAGE_HINT
                            ))
                        }
                    }
                } else {
                    if inline.is_some() {
                        return Err(format!(
                            "schbench: option --{} doesn't allow an argument; {}",
                            spec.long, USAGE_HINT
                        ));
                    }
                    None
                };
                o.apply(spec, value, &mut found_sleeptime, &mut found_cputime, &mut found_warmuptime)?;
            } else if arg.len() > 1 && arg.starts_with('-') {
                let chars: Vec<char> = arg[1..].chars().collect();
                let mut k = 0;
                while k < chars.len() {
                    let c = chars[k];
                    k += 1;
                    let spec = OPTS
                        .iter()
                        .find(|s| s.short && s.key == c)
                        .ok_or_else(|| format!("schbench: invalid option -- '{}'; {}", c, USAGE_HINT))?;
                    let value = if spec.takes_arg {
                        let rest: String = chars[k..].iter().collect();
                        k = chars.len();
                        if !rest.is_empty() {
                            Some(rest)
                        } else if i < args.len() {
                            i += 1;
                            Some(args[i - 1].to_string())
                        } else {
                            return Err(format!(
                                "schbench: option {} requires an argument ({}); {}",
                                opt_name(spec),
                                spec.what,
                                USAGE_HINT
                            ));
                        }
                    } else {
                        None
                    };
                    o.apply(spec, value.as_deref(), &mut found_sleeptime, &mut found_cputime, &mut found_warmuptime)?;
                }
            } else if extra.is_none() {
                // GNU getopt moves non-options to the end; schbench then rejects the first.
                extra = Some(arg);
            }
        }

        if let Some(v) = found_sleeptime {
            o.sleeptime_usec = v;
        }
        if let Some(v) = found_cputime {
            o.cputime_usec = v;
        }
        if let Some(v) = found_warmuptime {
            o.warmup_s = v;
        }
        if let Some(e) = extra {
            return Err(format!("schbench: Error Extra arguments '{}'", e));
        }
        if o.message_threads == 0 {
            return Err("schbench: option -m (--message-threads) expects at least 1 message thread, got 0".into());
        }
        if o.pipe_bytes == 0 && (1..4).contains(&o.sleeptime_usec) {
            return Err(format!(
                "schbench: option -s (--sleeptime) expects 0 or at least 4 usec (its jitter is rand() % (sleeptime / 4)), got {}",
                o.sleeptime_usec
            ));
        }
        if o.rps_mode() && o.worker_threads < 2 {
            return Err(format!(
                "schbench: option -t (--threads) expects at least 2 workers with -R (workers * 2 / 3 are woken per batch), got {}",
                o.worker_threads
            ));
        }
        Ok(o)
    }

    fn apply(
        &mut self,
        spec: &OptSpec,
        value: Option<&str>,
        found_sleeptime: &mut Option<u64>,
        found_cputime: &mut Option<u64>,
        found_warmuptime: &mut Option<u64>,
    ) -> Result<(), String> {
        let num = |v: Option<&str>| parse_num(spec, v.unwrap_or(""));
        match spec.key {
            'a' => {
                self.autobench = true;
                self.warmup_s = 0;
            }
            'j' => self.jitter = true,
            'A' => {
                self.auto_rps = num(value)?;
                self.warmup_s = 0;
                if self.requests_per_sec == 0 {
                    self.requests_per_sec = 10;
                }
            }
            'p' => {
                self.pipe_bytes = num(value)?.min(PIPE_TRANSFER_BUFFER);
                self.sleeptime_usec = 0;
                self.cputime_usec = 0;
                self.warmup_s = 0;
                self.message_cputime_usec = 0;
            }
            's' => *found_sleeptime = Some(num(value)?),
            'c' => *found_cputime = Some(num(value)?),
            'C' => {
                // Validated, then dropped: schbench assigns message_cputime to itself.
                num(value)?;
            }
            'w' => *found_warmuptime = Some(num(value)?),
            'm' => self.message_threads = num(value)?,
            't' => self.worker_threads = num(value)?,
            'r' => self.runtime_s = num(value)?,
            'i' => self.interval_s = num(value)?,
            'z' => self.zerotime_s = num(value)?,
            'R' => self.requests_per_sec = num(value)?,
            'n' => self.operations = num(value)?,
            'F' => self.cache_footprint_kb = num(value)?,
            'f' => {
                // --cache_footprint: getopt returns 'f', which schbench's switch ignores.
                num(value)?;
            }
            _ => return Err(format!("schbench: --help: schbench prints its usage and exits; {}", USAGE_HINT)),
        }
        Ok(())
    }

    /// Requests per second each message thread generates (`requests_per_sec /= message_threads`
    /// in `main()`). RPS mode is on only if this is non-zero: `-R 1 -m 2` runs the normal mode.
    pub fn rps_per_message_thread(&self) -> u64 {
        self.requests_per_sec / self.message_threads.max(1)
    }

    /// Whether the workers are driven by `run_rps_thread()` rather than `run_msg_thread()`.
    pub fn rps_mode(&self) -> bool {
        self.rps_per_message_thread() != 0
    }

    /// Side of the square matrices multiplied per operation (0: spin mode): with `-n`,
    /// `sqrt(F * 1024 / 3 / sizeof(long))` truncated (an integer square root here, identical
    /// for every value an `int` `-F` can give).
    pub fn matrix_size(&self) -> u64 {
        if self.operations == 0 {
            return 0;
        }
        isqrt(self.cache_footprint_kb * 1024 / 3 / 8)
    }

    /// The sample a worker records for a measured `delta_usec` (`add_lat()` as the worker
    /// calls it), or `None` when it records nothing.
    ///
    /// Normal mode: `delta` is from the message thread's wake timestamp to just after the
    /// worker's spin; a `delta` of 0 is skipped; otherwise, unless in matrix mode, `cputime` is
    /// subtracted, giving 1 when `delta <= cputime`. RPS mode: `delta` is from the request's
    /// creation to the end of its work and is always recorded, with the same subtraction.
    /// `delta` is first truncated to 32 bits (the `unsigned int` parameter).
    pub fn recorded_latency(&self, delta_usec: u64) -> Option<u64> {
        if !self.rps_mode() && delta_usec == 0 {
            return None;
        }
        let us = delta_usec as u32;
        if self.matrix_size() != 0 {
            return Some(us as u64);
        }
        if us as u64 > self.cputime_usec {
            Some((us as u64 - self.cputime_usec) as u32 as u64)
        } else {
            Some(1)
        }
    }

    /// The largest jitter added to the message thread's sleep (exclusive): the sleep is
    /// `sleeptime + rand_r(&seed) % (sleeptime / 4)` usec, `seed` starting at `pthread_self()`.
    pub fn max_sleep_jitter_usec(&self) -> u64 {
        self.sleeptime_usec / 4
    }
}

fn find_long(name: &str) -> Result<&'static OptSpec, String> {
    let named = || OPTS.iter().filter(|s| !s.long.is_empty());
    if let Some(s) = named().find(|s| s.long == name) {
        return Ok(s);
    }
    let cands: Vec<&OptSpec> = named().filter(|s| s.long.starts_with(name)).collect();
    match cands.len() {
        1 if !name.is_empty() => Ok(cands[0]),
        0 | 1 => Err(format!("schbench: unrecognized option '--{}'; {}", name, USAGE_HINT)),
        _ => Err(format!(
            "schbench: option '--{}' is ambiguous; possibilities: {}",
            name,
            cands.iter().map(|s| format!("'--{}'", s.long)).collect::<Vec<_>>().join(" ")
        )),
    }
}

pub(crate) fn isqrt(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let mut x = n;
    let mut y = x.div_ceil(2);
    while y < x {
        x = y;
        y = (x + n / x) / 2;
    }
    x
}

// ---------------------------------------------------------------------------------------------
// The main thread's loop.

/// What the main thread does at one of its once-a-second checks (`sleep_for_runtime()`), in
/// this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TickActions {
    /// Runtime is up: set `stopping`, post each message thread and join them, then print the
    /// final report ([`render_report`] of all workers' merged stats with `runtime_s` = `-r`).
    /// When set, nothing else in this struct is.
    pub stop: bool,
    /// Print [`WARMUP_MESSAGE`] and zero every worker's stats.
    pub warmup_reset: bool,
    /// Merge every worker's stats (not zeroing them, so each report covers everything since
    /// the last reset) and print a report with this runtime (whole seconds since the start). In RPS mode schbench also prints `rps: %.2f` (stdout).
    pub report_runtime_s: Option<u64>,
    /// `-z`: zero every worker's stats (after any report of this same tick).
    pub zero_reset: bool,
}

/// The main thread's timing logic (`sleep_for_runtime()`): it takes a timestamp at the start,
/// then loops: timestamp, decide ([`MainLoop::tick`]), `sleep(1)`. Feed it the elapsed time
/// of each check, measured as schbench does (whole microseconds since its start timestamp).
///
/// The comparisons are schbench's: stop when `elapsed >= runtime`; warmup when
/// `elapsed > warmup` (strict), once; a report when `elapsed - last_report >= interval`, but
/// not in the tick that does the warmup reset; a `-z` reset when `elapsed - last_zero > zerotime`
/// (strict), where the warmup reset also counts as a zeroing. Because `sleep(1)` always
/// overshoots a little, the warmup normally happens at the 5th check; with checks at exact
/// whole seconds it would happen at the 6th. The `seconds * 1000000` products are `int`
/// arithmetic in schbench and wrap for values above 2147 s (the wrapped, sign-extended value is
/// what it compares against); that is reproduced.
#[derive(Debug, Clone)]
pub struct MainLoop {
    runtime_usec: u64,
    warmup_usec: u64,
    interval_usec: u64,
    zero_usec: u64,
    warmup_enabled: bool,
    pipe: bool,
    warmup_done: bool,
    last_calc: u64,
    zero_time: u64,
}

pub(crate) fn sec_to_usec_as_int(s: u64) -> u64 {
    (s as i32).wrapping_mul(1_000_000) as i64 as u64
}

impl MainLoop {
    pub fn new(o: &SchbenchOpts) -> Self {
        MainLoop {
            runtime_usec: sec_to_usec_as_int(o.runtime_s),
            warmup_usec: sec_to_usec_as_int(o.warmup_s),
            interval_usec: sec_to_usec_as_int(o.interval_s),
            zero_usec: sec_to_usec_as_int(o.zerotime_s),
            warmup_enabled: !o.rps_mode() && o.pipe_bytes == 0 && o.warmup_s != 0,
            pipe: o.pipe_bytes != 0,
            warmup_done: false,
            last_calc: 0,
            zero_time: 0,
        }
    }

    /// One check at `elapsed_usec` since the loop's start (non-decreasing between calls).
    pub fn tick(&mut self, elapsed_usec: u64) -> TickActions {
        let mut a = TickActions::default();
        if self.runtime_usec != 0 && elapsed_usec >= self.runtime_usec {
            a.stop = true;
            return a;
        }
        if self.warmup_enabled && !self.warmup_done && elapsed_usec > self.warmup_usec {
            self.warmup_done = true;
            a.warmup_reset = true;
            self.zero_time = elapsed_usec;
        } else if !self.pipe && elapsed_usec.saturating_sub(self.last_calc) >= self.interval_usec {
            a.report_runtime_s = Some(elapsed_usec / 1_000_000);
            self.last_calc = elapsed_usec;
        }
        if self.zero_usec != 0 && elapsed_usec.saturating_sub(self.zero_time) > self.zero_usec {
            self.zero_time = elapsed_usec;
            a.zero_reset = true;
        }
        a
    }
}

/// glibc's `rand_r()` (three steps of the ANSI C LCG, 11 + 10 + 10 bits), which the message
/// thread uses for its sleep jitter and `-j` for spin lengths. schbench seeds it with
/// `pthread_self()` (an address), so a simulation chooses its own seeds.
pub fn rand_r(seed: &mut u32) -> u32 {
    let mut next = *seed;
    next = next.wrapping_mul(1103515245).wrapping_add(12345);
    let mut result = (next / 65536) % 2048;
    next = next.wrapping_mul(1103515245).wrapping_add(12345);
    result = (result << 10) ^ ((next / 65536) % 1024);
    next = next.wrapping_mul(1103515245).wrapping_add(12345);
    result = (result << 10) ^ ((next / 65536) % 1024);
    *seed = next;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucketing written the way schbench writes it, with its double arithmetic, as an
    /// independent reference.
    fn ref_idx_to_val(idx: u32) -> u32 {
        if idx < 512 {
            return idx;
        }
        let error_bits = (idx >> 8) - 1;
        let base = 1u32 << (error_bits + 8);
        let k = idx % 256;
        (base as f64 + ((k as f64 + 0.5) * (1u32 << error_bits) as f64)) as u32
    }

    #[test]
    fn buckets_exact_below_512() {
        for v in 0..512u32 {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), Some(v));
        }
    }

    #[test]
    fn buckets_at_group_boundaries() {
        // (value, bucket, printed value)
        let cases: &[(u32, usize, u32)] = &[
            (511, 511, 511),
            (512, 512, 513),
            (513, 512, 513),
            (514, 513, 515),
            (1022, 767, 1023),
            (1023, 767, 1023),
            (1024, 768, 1026),
            (1027, 768, 1026),
            (1028, 769, 1030),
            (2047, 1023, 2046),
            (2048, 1024, 2052),
            (3360, 1024 + 164, 3364),
            (3367, 1024 + 164, 3364),
            (3368, 1024 + 165, 3372),
            (12544, 1536 + 136, 12560),
            (12575, 1536 + 136, 12560),
            ((1 << 25) - 1, 4607, (1 << 25) - (1 << 15)),
            (1 << 25, 4608, (1 << 25) + (1 << 16)),
            ((1 << 26) - 1, 4863, 67043328),
            (1 << 26, 4863, 67043328),
            (u32::MAX, 4863, 67043328),
        ];
        for &(v, idx, printed) in cases {
            assert_eq!(plat_val_to_idx(v), idx, "value {v}");
            assert_eq!(plat_idx_to_val(idx), Some(printed), "idx {idx}");
        }
        assert_eq!(plat_idx_to_val(PLAT_NR), None);
        assert_eq!(plat_idx_range(1024 + 164), Some((3360, 3367)));
        assert_eq!(plat_idx_range(4863), Some((66977792, 67108863)));
    }

    #[test]
    fn bucket_round_trips() {
        for idx in 0..PLAT_NR {
            let v = plat_idx_to_val(idx).unwrap();
            assert_eq!(v, ref_idx_to_val(idx as u32), "idx {idx}");
            assert_eq!(plat_val_to_idx(v), idx, "idx {idx} -> {v}");
            let (lo, hi) = plat_idx_range(idx).unwrap();
            assert!(lo <= v && v <= hi);
            assert_eq!(plat_val_to_idx(lo), idx);
            assert_eq!(plat_val_to_idx(hi), idx);
            if lo > 0 {
                assert_eq!(plat_val_to_idx(lo - 1), idx - 1);
            }
        }
        // Every value up to 2^22 falls in the bucket whose range contains it.
        for v in (0..1u32 << 22).step_by(7) {
            let (lo, hi) = plat_idx_range(plat_val_to_idx(v)).unwrap();
            assert!(lo <= v && v <= hi, "{v}");
        }
    }

    #[test]
    fn threshold_matches_binary64() {
        let nrs: Vec<u64> = (0..3000u64)
            .chain([
                9999,
                10000,
                8123,
                123456,
                1 << 40,
                (1 << 53) - 1,
                1 << 53,
                (1 << 53) + 1,
                (1 << 60) + 12345,
                u64::MAX,
            ])
            .collect();
        for permille in 0..=1000u16 {
            let p = permille as f64 / 10.0;
            for &nr in &nrs {
                let want = (p / 100.0 * nr as f64).ceil();
                let got = percentile_threshold(permille, nr);
                assert_eq!(got as f64, want, "permille {permille} nr {nr}");
            }
        }
        // plist's literals.
        let lits = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9f64];
        for (lit, p) in lits.iter().zip(PERCENTILES) {
            for nr in [1000u64, 7777, 8191, 100_000] {
                let want = (lit / 100.0 * nr as f64).ceil() as u64;
                assert_eq!(percentile_threshold(p.permille, nr), want);
            }
        }
        // The rounding that matters: 99.9/100.0*1000 is just above 999.
        assert_eq!(percentile_threshold(999, 1000), 1000);
        assert_eq!(percentile_threshold(990, 1000), 990);
        assert_eq!(percentile_threshold(995, 1000), 995);
    }

    fn hist_of(samples: &[(u64, u32)]) -> Histogram {
        let mut h = Histogram::new();
        for &(v, n) in samples {
            for _ in 0..n {
                h.add(v);
            }
        }
        h
    }

    fn rows(h: &Histogram) -> Vec<(u32, u64)> {
        h.percentile_rows().iter().map(|r| (r.value, r.band_samples)).collect()
    }

    #[test]
    fn percentiles_of_1_to_1000() {
        let mut h = Histogram::new();
        for v in 1..=1000 {
            h.add(v);
        }
        assert_eq!(h.nr_samples(), 1000);
        assert_eq!((h.min(), h.max()), (1, 1000));
        assert_eq!(rows(&h), vec![(500, 500), (751, 251), (901, 150), (951, 50), (991, 40), (995, 4), (1001, 5)]);
        assert_eq!(h.percentile(999), 1001);
        assert_eq!(h.percentile(500), 500);
        assert_eq!(h.percentile(0), 0);
        assert_eq!(h.percentile(1000), 1001);
        assert_eq!(h.percentile(5000), 1001);
    }

    #[test]
    fn percentiles_bimodal() {
        let h = hist_of(&[(9, 900), (27, 80), (3361, 15), (12550, 5)]);
        assert_eq!(rows(&h), vec![(9, 900), (9, 0), (9, 0), (27, 80), (3364, 15), (3364, 0), (12560, 5)]);
        assert_eq!((h.min(), h.max()), (9, 12550));
    }

    #[test]
    fn empty_histogram() {
        let h = Histogram::new();
        assert!(rows(&h).iter().all(|&r| r == (0, 0)));
        assert_eq!(
            render_report(&h, 10),
            "Latency percentiles (usec) runtime 10 (s) (0 total samples)\n\
             \t  50.0th: 0          (0 samples)\n\
             \t  75.0th: 0          (0 samples)\n\
             \t  90.0th: 0          (0 samples)\n\
             \t  95.0th: 0          (0 samples)\n\
             \t* 99.0th: 0          (0 samples)\n\
             \t  99.5th: 0          (0 samples)\n\
             \t  99.9th: 0          (0 samples)\n\
             \t  min=0, max=0\n"
        );
    }

    #[test]
    fn merge_and_reset() {
        let a = hist_of(&[(5, 3), (700, 2)]);
        let b = hist_of(&[(9, 4), (70000, 1)]);
        let mut m = Histogram::new();
        m.merge(&a);
        m.merge(&b);
        let all = hist_of(&[(5, 3), (700, 2), (9, 4), (70000, 1)]);
        assert_eq!(m, all);
        assert_eq!(m.nr_samples(), 10);
        assert_eq!((m.min(), m.max()), (5, 70000));
        assert_eq!(m.bucket(plat_val_to_idx(700)), 2);

        // combine_stats()'s min quirk: an empty worker in between makes the min the next one's.
        let empty = Histogram::new();
        let c = hist_of(&[(7, 1)]);
        let mut q = Histogram::new();
        q.merge(&a);
        q.merge(&empty);
        assert_eq!(q.min(), 0);
        q.merge(&c);
        assert_eq!(q.min(), 7);
        let mut q2 = Histogram::new();
        q2.merge(&a);
        q2.merge(&c);
        q2.merge(&empty);
        assert_eq!(q2.min(), 0);

        m.reset();
        assert_eq!(m, Histogram::new());
    }

    #[test]
    fn golden_report() {
        let h = hist_of(&[(9, 900), (27, 80), (3361, 15), (12550, 5)]);
        let want = "Latency percentiles (usec) runtime 30 (s) (1000 total samples)\n\
                    \t  50.0th: 9          (900 samples)\n\
                    \t  75.0th: 9          (0 samples)\n\
                    \t  90.0th: 9          (0 samples)\n\
                    \t  95.0th: 27         (80 samples)\n\
                    \t* 99.0th: 3364       (15 samples)\n\
                    \t  99.5th: 3364       (0 samples)\n\
                    \t  99.9th: 12560      (5 samples)\n\
                    \t  min=9, max=12550\n";
        assert_eq!(render_report(&h, 30), want);
        // Values wider than the column are not cut.
        let big = hist_of(&[(u32::MAX as u64, 1)]);
        assert!(render_report(&big, 1).contains("\t  50.0th: 67043328   (1 samples)\n"));
        assert!(render_report(&big, 1).ends_with("\t  min=4294967295, max=4294967295\n"));
    }

    #[test]
    fn parse_defaults_and_forms() {
        let d = SchbenchOpts::parse(&[]).unwrap();
        assert_eq!(d, SchbenchOpts::default());
        assert_eq!(SchbenchOpts::parse(&["-m", "2", "-t", "16"]).unwrap(), d);
        let o = SchbenchOpts::parse(&["-m4", "--threads=8", "--runtime", "60", "-aj", "-i", "3"]).unwrap();
        assert_eq!((o.message_threads, o.worker_threads, o.runtime_s, o.interval_s), (4, 8, 60, 3));
        assert!(o.autobench && o.jitter);
        assert_eq!(o.warmup_s, 0);
        let o = SchbenchOpts::parse(&["-w", "7", "-a"]).unwrap();
        assert_eq!(o.warmup_s, 7);
        let o = SchbenchOpts::parse(&["-ajm3", "--thr", "5", "--warm=2"]).unwrap();
        assert_eq!((o.message_threads, o.worker_threads, o.warmup_s), (3, 5, 2));
        assert_eq!(o.recorded_latency(0), None);
        assert_eq!(o.recorded_latency(30_009), Some(9));
        assert_eq!(o.recorded_latency(29_000), Some(1));
    }

    #[test]
    fn parse_interactions() {
        let o = SchbenchOpts::parse(&["-p", "4096"]).unwrap();
        assert_eq!(
            (o.pipe_bytes, o.sleeptime_usec, o.cputime_usec, o.warmup_s, o.message_cputime_usec),
            (4096, 0, 0, 0, 0)
        );
        let o = SchbenchOpts::parse(&["-s", "100", "-c", "5", "-p", "99999999", "-C", "7"]).unwrap();
        assert_eq!(
            (o.pipe_bytes, o.sleeptime_usec, o.cputime_usec, o.message_cputime_usec),
            (PIPE_TRANSFER_BUFFER, 100, 5, 0)
        );
        let o = SchbenchOpts::parse(&["-C", "5"]).unwrap();
        assert_eq!(o.message_cputime_usec, 30000);
        let o = SchbenchOpts::parse(&["--cache_footprint", "64", "-n", "1"]).unwrap();
        assert_eq!(o.cache_footprint_kb, 1536);
        assert_eq!(o.matrix_size(), 256);
        assert_eq!(o.recorded_latency(40_000), Some(40_000));
        let o = SchbenchOpts::parse(&["-F", "64", "-n", "1"]).unwrap();
        assert_eq!(o.matrix_size(), 52);
        assert_eq!(SchbenchOpts::parse(&["-A", "50"]).unwrap().requests_per_sec, 10);
        assert_eq!(SchbenchOpts::parse(&["-R", "100", "-A", "50"]).unwrap().requests_per_sec, 100);
        assert_eq!(SchbenchOpts::parse(&["-A", "50", "-R", "0"]).unwrap().requests_per_sec, 0);
        let o = SchbenchOpts::parse(&["-R", "1"]).unwrap();
        assert!(!o.rps_mode());
        let o = SchbenchOpts::parse(&["-R", "1000"]).unwrap();
        assert!(o.rps_mode());
        assert_eq!(o.rps_per_message_thread(), 500);
        assert_eq!(o.recorded_latency(0), Some(1));
    }

    #[test]
    fn parse_errors() {
        let err = |a: &[&str]| SchbenchOpts::parse(a).unwrap_err();
        let e = err(&["-m", "two"]);
        assert!(e.contains("-m (--message-threads)") && e.contains("'two'"), "{e}");
        assert!(err(&["-t", "-5"]).contains("-t (--threads)"));
        assert!(err(&["-r"]).contains("requires an argument"));
        assert!(err(&["--runtime"]).contains("requires an argument"));
        assert!(err(&["-x"]).contains("invalid option -- 'x'"));
        assert!(err(&["-f", "5"]).contains("invalid option -- 'f'"));
        assert!(err(&["--bogus"]).contains("unrecognized option '--bogus'"));
        assert!(err(&["--r", "5"]).contains("ambiguous"));
        assert!(err(&["--message", "5"]).contains("ambiguous"));
        assert!(err(&["--auto=1"]).contains("doesn't allow an argument"));
        assert!(err(&["--help"]).contains("usage"));
        assert!(err(&["-m", "2", "foo"]).contains("Extra arguments 'foo'"));
        assert!(err(&["--", "-m"]).contains("Extra arguments '-m'"));
        assert!(err(&["-m", "0"]).contains("at least 1"));
        assert!(err(&["-s", "3"]).contains("-s (--sleeptime)"));
        assert!(SchbenchOpts::parse(&["-s", "3", "-p", "1"]).is_ok());
        assert!(SchbenchOpts::parse(&["-s", "0"]).is_ok());
        assert!(err(&["-R", "100", "-t", "1"]).contains("-t (--threads)"));
        assert!(err(&["-r", "2147483648"]).contains("up to 2147483647"));
        assert!(SchbenchOpts::parse(&["-r", "2147483647"]).is_ok());
    }

    #[test]
    fn main_loop_schedule() {
        let o = SchbenchOpts::default();
        // sleep(1) overshoots by ~60 us each time.
        let mut ml = MainLoop::new(&o);
        let mut log = vec![];
        for k in 0..40u64 {
            let a = ml.tick(k * 1_000_060);
            if a != TickActions::default() {
                log.push((k, a));
            }
            if a.stop {
                break;
            }
        }
        let warm = TickActions { warmup_reset: true, ..Default::default() };
        let rep = |s| TickActions { report_runtime_s: Some(s), ..Default::default() };
        let stop = TickActions { stop: true, ..Default::default() };
        assert_eq!(log, vec![(5, warm), (10, rep(10)), (20, rep(20)), (30, stop)]);
        // Exact whole-second checks: warmup only at the 6th.
        let mut ml = MainLoop::new(&o);
        assert!(!ml.tick(5_000_000).warmup_reset);
        assert!(ml.tick(6_000_000).warmup_reset);
        // Huge runtimes wrap as int arithmetic: -r 3000 never stops.
        let o = SchbenchOpts::parse(&["-r", "3000"]).unwrap();
        let mut ml = MainLoop::new(&o);
        assert!(!ml.tick(3_000_000_000).stop);
        // -z 3 with -w 0: zeroing at 4, 8, ...; reports every 10 s still.
        let o = SchbenchOpts::parse(&["-z", "3", "-w", "0"]).unwrap();
        let mut ml = MainLoop::new(&o);
        let z: Vec<u64> = (0..12).filter(|&k| ml.tick(k * 1_000_000).zero_reset).collect();
        assert_eq!(z, vec![4, 8]);
    }

    #[test]
    fn rand_r_matches_glibc() {
        // glibc: unsigned s = 1; rand_r(&s) x3 -> 476707713 1186278907 505671508
        let mut s = 1u32;
        let got: Vec<u32> = (0..3).map(|_| rand_r(&mut s)).collect();
        assert_eq!(got, vec![476707713, 1186278907, 505671508]);
        let mut s = 12345u32;
        let got: Vec<u32> = (0..3).map(|_| rand_r(&mut s)).collect();
        assert_eq!(got, vec![1036784229, 1520991917, 1373464794]);
    }
}
