//! schbench's options, main loop and report text as of the 2023 rewrite: masoncl/schbench at
//! 48aed1d (2023-04-21), the version LKP built for Chen Yu's 2024 matrix (docs/workloads.md
//! section 2.2). The model of its threads is [`super::schbench23`].
//!
//! What this module reproduces, function by function of that `schbench.c`:
//! - `parse_options()` (getopt_long, short options `"p:m:t:Cr:R:w:i:z:A:n:F:L"`) and the
//!   defaults `main()` fills in: [`Schbench23Opts::parse`], [`Schbench23Opts::workers_per_message_thread`].
//! - The histogram, `add_lat()` and `combine_stats()` are the 2021 version's, unchanged:
//!   [`super::schbench_stats::Histogram`].
//! - `calc_percentiles()` is the 2021 rule over a new `plist[]` of five entries (20, 50, 90,
//!   99, 99.9), of which each block prints a subset (`PLIST_FOR_LAT`, `PLIST_FOR_RPS`) with
//!   one entry starred: [`PLIST`], [`render_block`]. The band count of a printed row starts
//!   after the previous *computed* entry, printed or not (so the latency blocks' 50.0th row
//!   does not count the samples up to the unprinted 20.0th).
//! - `sleep_for_runtime()`: a sample of requests per second every round, interval reports of
//!   three blocks and `current rps`, the warmup and `-z` resets: [`MainLoop23`].
//! - The end of `main()`: the three final blocks and `average rps` ([`render_final`]), or in
//!   pipe mode the wakeup block and `avg worker transfer` ([`render_pipe_final`]).
//!
//! Where it differs from 2021: `min=, max=` is printed under every block; latencies of 0 us
//! are not recorded (`if (delta > 0)`), for requests as for wakeups; the requests-per-second
//! sample is a `double` converted to `unsigned int` by `add_lat()`'s parameter ([`Rps::sample`]).
//! Integer arithmetic throughout, except the two `%.2f` figures, which are computed in `f64`
//! exactly as the C code computes its doubles (output only).

use super::schbench_stats::{isqrt, sec_to_usec_as_int, Histogram};
use std::fmt::Write;

/// `plist[]` of 48aed1d, in tenths of a percent.
pub const PLIST: [u16; 5] = [200, 500, 900, 990, 999];
/// `PLIST_20 ... PLIST_999`: bit `i` selects `PLIST[i]`.
pub const PLIST_20: u8 = 1 << 0;
pub const PLIST_50: u8 = 1 << 1;
pub const PLIST_90: u8 = 1 << 2;
pub const PLIST_99: u8 = 1 << 3;
pub const PLIST_999: u8 = 1 << 4;
/// The rows of a latency block and of the RPS block.
pub const PLIST_FOR_LAT: u8 = PLIST_50 | PLIST_90 | PLIST_99 | PLIST_999;
pub const PLIST_FOR_RPS: u8 = PLIST_20 | PLIST_50 | PLIST_90;

/// `PIPE_TRANSFER_BUFFER`: the largest `-p`.
pub const PIPE_TRANSFER_BUFFER: u64 = 1024 * 1024;

/// The line `sleep_for_runtime()` prints when it zeroes the stats after the warmup.
pub const WARMUP_MESSAGE: &str = "warmup done, zeroing stats\n";

/// Render one block as `show_latencies()` prints it (to stderr): the header, the rows of
/// [`PLIST`] selected by `mask` (the one whose bit is `star` prefixed `"* "`), then
/// `min=, max=`. Formats: `"%s percentiles (%s) runtime %llu (s) (%lu total samples)\n"`,
/// `"\t%s%2.1fth: %-10u (%lu samples)\n"`, `"\t  min=%u, max=%u\n"`.
pub fn render_block(out: &mut String, label: &str, units: &str, runtime_s: u64, h: &Histogram, mask: u8, star: u8) {
    let _ = writeln!(out, "{label} percentiles ({units}) runtime {runtime_s} (s) ({} total samples)", h.nr_samples());
    for (i, (value, band)) in h.percentile_bands(&PLIST).into_iter().enumerate() {
        let bit = 1u8 << i;
        if mask & bit == 0 {
            continue;
        }
        let p = PLIST[i];
        let _ = writeln!(
            out,
            "\t{}{}.{}th: {:<10} ({} samples)",
            if bit == star { "* " } else { "  " },
            p / 10,
            p % 10,
            value,
            band
        );
    }
    let _ = writeln!(out, "\t  min={}, max={}", h.min(), h.max());
}

/// The three blocks of an interval report or of the end (wakeup, request, RPS).
pub fn render_three(out: &mut String, runtime_s: u64, wakeup: &Histogram, request: &Histogram, rps: &Histogram) {
    render_block(out, "Wakeup Latencies", "usec", runtime_s, wakeup, PLIST_FOR_LAT, PLIST_99);
    render_block(out, "Request Latencies", "usec", runtime_s, request, PLIST_FOR_LAT, PLIST_99);
    render_block(out, "RPS", "requests", runtime_s, rps, PLIST_FOR_RPS, PLIST_50);
}

/// The end of `main()` outside pipe mode: the three blocks with the `-r` runtime, then
/// `average rps: %.2f` of `(double)loop_count / runtime`.
pub fn render_final(out: &mut String, runtime_s: u64, w: &Histogram, r: &Histogram, rps: &Histogram, loops: u64) {
    render_three(out, runtime_s, w, r, rps);
    let _ = writeln!(out, "average rps: {}", c_fixed2(loops as f64 / runtime_s as f64));
}

/// The end of `main()` in pipe mode: the wakeup block with the 20.0th row too, then
/// `avg worker transfer: %.2f ops/sec %.2f%s/s`. `loop_runtime_us` is the sum of the workers'
/// own runtimes (`td->runtime`); the byte rate is integer arithmetic in schbench, then
/// `pretty_size()` divides it by 1024 while it is at least 1024.
pub fn render_pipe_final(
    out: &mut String,
    runtime_s: u64,
    w: &Histogram,
    loops: u64,
    loop_runtime_us: u64,
    bytes: u64,
) {
    render_block(out, "Wakeup Latencies", "usec", runtime_s, w, PLIST_20 | PLIST_FOR_LAT, PLIST_99);
    let ops = (loops.wrapping_mul(1_000_000)) as f64 / loop_runtime_us as f64;
    // An integer division by zero would kill schbench; the model has no such run (every
    // worker runs a while), and prints 0 for it.
    let per_sec = loops.wrapping_mul(bytes).wrapping_mul(1_000_000).checked_div(loop_runtime_us).unwrap_or(0);
    let (v, unit) = pretty_size(per_sec as f64);
    let _ = writeln!(out, "avg worker transfer: {} ops/sec {}{unit}/s", c_fixed2(ops), c_fixed2(v));
}

/// `pretty_size()`: divide by 1024 while the number is at least 1024 and a larger unit exists.
pub fn pretty_size(mut n: f64) -> (f64, &'static str) {
    const UNITS: [&str; 7] = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut divs = 0;
    while n >= 1024.0 && divs + 1 < UNITS.len() {
        divs += 1;
        n /= 1024.0;
    }
    (n, UNITS[divs])
}

/// glibc's `%.2f`: the exact value rounded to two decimals, ties to even (Rust's `{:.2}` does
/// the same for finite values); a NaN from 0/0 prints `-nan` (x86's default NaN has the sign
/// bit set), infinities `inf`/`-inf`.
pub fn c_fixed2(x: f64) -> String {
    if x.is_nan() {
        if x.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        }
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:.2}")
    }
}

/// One requests-per-second figure of `sleep_for_runtime()`:
/// `(double)((loop_count - last_loop_count) * USEC_PER_SEC) / delta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rps {
    /// Requests completed since the last round.
    pub loops: u64,
    /// Microseconds since the last round (0 is possible at the first round).
    pub delta_us: u64,
}

impl Rps {
    /// The double schbench computes. With `delta` 0 it is 0/0 = NaN or +inf (x86 SSE gives the
    /// default NaN, sign bit set, for 0/0).
    pub fn value(&self) -> f64 {
        let num = self.loops.wrapping_mul(1_000_000);
        if self.delta_us == 0 {
            return if num == 0 { -f64::NAN.abs() } else { f64::INFINITY };
        }
        num as f64 / self.delta_us as f64
    }

    /// What `add_lat(&rps_stats, rps)` records: the double converted to `unsigned int`. gcc
    /// on x86-64 converts with a 64-bit `cvttsd2si` and keeps the low 32 bits, so NaN and
    /// infinity (0x8000000000000000) give 0. Exact in integers: both operands are below 2^53
    /// and a non-integer quotient is at least `1/delta` away from the next integer, far more
    /// than the division's rounding, so truncating the double is the integer quotient.
    pub fn sample(&self) -> u32 {
        if self.delta_us == 0 {
            return 0;
        }
        let q = self.loops.wrapping_mul(1_000_000) / self.delta_us;
        q as u32
    }
}

/// What one round of `sleep_for_runtime()` does, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tick23 {
    /// The runtime is up: this is the last round (it still takes its sample and may report).
    pub done: bool,
    /// Print [`WARMUP_MESSAGE`] and zero every statistic (no sample this round).
    pub warmup_reset: bool,
    /// Add this sample to the RPS histogram (before any report of this round).
    pub rps: Option<Rps>,
    /// Print the three blocks with this runtime (whole seconds since the start), then
    /// `current rps: %.2f` of this round's [`Rps`].
    pub report_runtime_s: Option<u64>,
    /// `-z`: zero every statistic (after any report of this round).
    pub zero_reset: bool,
}

/// `sleep_for_runtime()`'s timing logic; feed it each round's `gettimeofday()` (whole
/// microseconds) and the sum of the workers' `loop_count`. The `seconds * USEC_PER_SEC`
/// products are `int` arithmetic in schbench and wrap above 2147 s, as in the 2021 version.
#[derive(Debug, Clone)]
pub struct MainLoop23 {
    runtime_usec: u64,
    warmup_usec: u64,
    interval_usec: u64,
    zero_usec: u64,
    warmup_enabled: bool,
    pipe: bool,
    warmup_done: bool,
    start_us: u64,
    last_calc_us: u64,
    last_rps_calc_us: u64,
    zero_time_us: u64,
    last_loop_count: u64,
}

impl MainLoop23 {
    /// The loop of a run with options `o`, whose `gettimeofday(&start)` read `start_us`.
    pub fn new(o: &Schbench23Opts, start_us: u64) -> Self {
        MainLoop23 {
            runtime_usec: sec_to_usec_as_int(o.runtime_s),
            warmup_usec: sec_to_usec_as_int(o.warmup_s),
            interval_usec: sec_to_usec_as_int(o.interval_s),
            zero_usec: sec_to_usec_as_int(o.zerotime_s),
            warmup_enabled: o.requests_per_sec == 0 && o.pipe_bytes == 0 && o.warmup_s != 0,
            pipe: o.pipe_bytes != 0,
            warmup_done: false,
            start_us,
            last_calc_us: start_us,
            last_rps_calc_us: start_us,
            zero_time_us: start_us,
            last_loop_count: 0,
        }
    }

    /// One round at `now_us` with `loop_count` requests completed so far.
    pub fn tick(&mut self, now_us: u64, loop_count: u64) -> Tick23 {
        let mut a = Tick23::default();
        let runtime_delta = now_us.saturating_sub(self.start_us);
        if self.runtime_usec != 0 && runtime_delta >= self.runtime_usec {
            a.done = true;
        }
        if self.warmup_enabled && runtime_delta > self.warmup_usec && !self.warmup_done {
            self.warmup_done = true;
            a.warmup_reset = true;
            self.zero_time_us = now_us;
        } else if !self.pipe {
            let rps = Rps {
                loops: loop_count.wrapping_sub(self.last_loop_count),
                delta_us: now_us.saturating_sub(self.last_rps_calc_us),
            };
            self.last_loop_count = loop_count;
            self.last_rps_calc_us = now_us;
            a.rps = Some(rps);
            if now_us.saturating_sub(self.last_calc_us) >= self.interval_usec {
                self.last_calc_us = now_us;
                a.report_runtime_s = Some(runtime_delta / 1_000_000);
            }
        }
        if self.zero_usec != 0 && now_us.saturating_sub(self.zero_time_us) > self.zero_usec {
            self.zero_time_us = now_us;
            a.zero_reset = true;
        }
        a
    }
}

// ---------------------------------------------------------------------------------------------
// Options.

/// schbench 48aed1d's command-line options (`parse_options()`), with that version's defaults,
/// after its interactions: `-A` and `-p` zero the warmup unless `-w` is given (in any order);
/// `-A` sets 10 requests/s if none were set yet; `-C` implies `-L`; a runtime below 30 s
/// forces the warmup to 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schbench23Opts {
    /// `-m`/`--message-threads` (default 1).
    pub message_threads: u64,
    /// `-t`/`--threads` as given (default 0: `main()` makes it `ceil(nprocs / m)`, see
    /// [`Schbench23Opts::workers_per_message_thread`]).
    pub worker_threads: u64,
    /// `-r`/`--runtime` seconds (default 30; 0 runs forever).
    pub runtime_s: u64,
    /// `-w`/`--warmuptime` seconds (default 0 = no warmup reset).
    pub warmup_s: u64,
    /// `-i`/`--intervaltime` seconds (default 10).
    pub interval_s: u64,
    /// `-z`/`--zerotime` seconds (default 0 = never).
    pub zerotime_s: u64,
    /// `-F` KB (default 256): the matrices' footprint. (`--cache_footprint` is accepted and
    /// ignored: it maps to `'f'`, which nothing handles, as in 2021.)
    pub cache_footprint_kb: u64,
    /// `-n`/`--operations` (default 5): matrix multiplications per request.
    pub operations: u64,
    /// `-A`/`--auto-rps` target busy percentage (0 = off).
    pub auto_rps: u64,
    /// `-p`/`--pipe` bytes (0 = off), clamped to [`PIPE_TRANSFER_BUFFER`].
    pub pipe_bytes: u64,
    /// `-p` was above the limit: schbench printed "pipe size too big, using 1048576".
    pub pipe_clamped: bool,
    /// `-R`/`--rps` requests per second in total (0 = off).
    pub requests_per_sec: u64,
    /// `-C`/`--calibrate`.
    pub calibrate: bool,
    /// `-L`/`--no-locking`, or implied by `-C`.
    pub skip_locking: bool,
}

impl Default for Schbench23Opts {
    fn default() -> Self {
        Schbench23Opts {
            message_threads: 1,
            worker_threads: 0,
            runtime_s: 30,
            warmup_s: 0,
            interval_s: 10,
            zerotime_s: 0,
            cache_footprint_kb: 256,
            operations: 5,
            auto_rps: 0,
            pipe_bytes: 0,
            pipe_clamped: false,
            requests_per_sec: 0,
            calibrate: false,
            skip_locking: false,
        }
    }
}

/// The long options: (name, key, takes an argument). `--cache_footprint` returns `'f'` and
/// `--help` a key of its own (`HELP_LONG_OPT`), neither of them a short option.
const LONG: &[(&str, char, bool)] = &[
    ("pipe", 'p', true),
    ("message-threads", 'm', true),
    ("threads", 't', true),
    ("runtime", 'r', true),
    ("rps", 'R', true),
    ("auto-rps", 'A', true),
    ("cache_footprint", 'f', true),
    ("calibrate", 'C', false),
    ("no-locking", 'L', false),
    ("operations", 'n', true),
    ("warmuptime", 'w', true),
    ("intervaltime", 'i', true),
    ("zerotime", 'z', true),
    ("help", 'H', false),
];

const SHORT: &str = "p:m:t:Cr:R:w:i:z:A:n:F:L";

const USAGE_HINT: &str = "options: -m -t -r -w -i -z -F -n -C -L -p -R -A (see --help in schbench)";

/// The option's name for errors, and what its argument is.
fn describe(key: char) -> (&'static str, &'static str) {
    match key {
        'p' => ("-p (--pipe)", "a transfer size in bytes"),
        'm' => ("-m (--message-threads)", "a number of message threads (at least 1)"),
        't' => ("-t (--threads)", "a number of worker threads per message thread (0: one per CPU)"),
        'r' => ("-r (--runtime)", "a runtime in seconds"),
        'R' => ("-R (--rps)", "a number of requests per second"),
        'A' => ("-A (--auto-rps)", "a target CPU busy percentage"),
        'f' => ("--cache_footprint", "a cache footprint in KB"),
        'n' => ("-n (--operations)", "a number of matrix multiplications per request"),
        'F' => ("-F", "a cache footprint in KB"),
        'w' => ("-w (--warmuptime)", "a warmup time in seconds"),
        'i' => ("-i (--intervaltime)", "a report interval in seconds"),
        'z' => ("-z (--zerotime)", "a stats-zeroing interval in seconds"),
        _ => ("?", "a value"),
    }
}

/// A non-negative decimal integer that fits schbench's `int` (schbench uses `atoi()`, which
/// takes "2x" as 2 and "x" as 0; here both are errors).
fn parse_num(key: char, v: &str) -> Result<u64, String> {
    let ok = !v.is_empty() && v.len() <= 10 && v.bytes().all(|b| b.is_ascii_digit());
    match v.parse::<u64>() {
        Ok(n) if ok && n <= i32::MAX as u64 => Ok(n),
        _ => {
            let (name, what) = describe(key);
            Err(format!(
                "schbench: option {name} expects {what} as a non-negative integer up to {}, got '{v}'",
                i32::MAX
            ))
        }
    }
}

impl Schbench23Opts {
    /// Parse schbench's arguments (without the program name) as its `getopt_long()` loop does
    /// (short options clustered or with the value attached, `--name=value`, `--name value`,
    /// unique prefixes of long names, `--` ending the options). Where schbench prints its
    /// usage and exits (an unknown option, a missing argument, `--help`, an extra argument)
    /// this returns an error naming the option. Stricter than schbench: values must be plain
    /// non-negative integers, and `-m 0` is refused (schbench divides by it).
    pub fn parse(args: &[&str]) -> Result<Self, String> {
        let opts = super::hackbench::getopt(args, SHORT, LONG, "schbench").map_err(|e| {
            if let Some(a) = e.strip_prefix("schbench: unexpected argument ") {
                format!("schbench: Error Extra arguments {a}")
            } else {
                format!("{e}; {USAGE_HINT}")
            }
        })?;
        let mut o = Schbench23Opts::default();
        let mut found_warmuptime: Option<u64> = None;
        for (key, value) in opts {
            let num = || parse_num(key, value.as_deref().unwrap_or(""));
            match key {
                'C' => o.calibrate = true,
                'L' => o.skip_locking = true,
                'A' => {
                    o.auto_rps = num()?;
                    o.warmup_s = 0;
                    if o.requests_per_sec == 0 {
                        o.requests_per_sec = 10;
                    }
                }
                'p' => {
                    let v = num()?;
                    o.pipe_clamped = v > PIPE_TRANSFER_BUFFER;
                    o.pipe_bytes = v.min(PIPE_TRANSFER_BUFFER);
                    o.warmup_s = 0;
                }
                'w' => found_warmuptime = Some(num()?),
                'm' => o.message_threads = num()?,
                't' => o.worker_threads = num()?,
                'r' => o.runtime_s = num()?,
                'i' => o.interval_s = num()?,
                'z' => o.zerotime_s = num()?,
                'R' => o.requests_per_sec = num()?,
                'n' => o.operations = num()?,
                'F' => o.cache_footprint_kb = num()?,
                'f' => {
                    // --cache_footprint: validated, then dropped (nothing handles 'f').
                    num()?;
                }
                _ => return Err(format!("schbench: --help: schbench prints its usage and exits; {USAGE_HINT}")),
            }
        }
        if let Some(w) = found_warmuptime {
            o.warmup_s = w;
        }
        if o.calibrate {
            o.skip_locking = true;
        }
        if o.runtime_s < 30 {
            o.warmup_s = 0;
        }
        if o.message_threads == 0 {
            return Err("schbench: option -m (--message-threads) expects at least 1 message thread, got 0".into());
        }
        Ok(o)
    }

    /// Workers per message thread: `-t`, or when it is 0 `(nprocs + m - 1) / m` (`main()`
    /// then prints "setting worker threads to N").
    pub fn workers_per_message_thread(&self, nprocs: u32) -> u64 {
        if self.worker_threads == 0 {
            (nprocs as u64).div_ceil(self.message_threads.max(1))
        } else {
            self.worker_threads
        }
    }

    /// Requests per second each message thread generates (`requests_per_sec /=
    /// message_threads`); RPS mode is on only when this is not 0.
    pub fn rps_per_message_thread(&self) -> u64 {
        self.requests_per_sec / self.message_threads.max(1)
    }

    /// Side of the square matrices: `sqrt(F * 1024 / 3 / sizeof(unsigned long))` truncated
    /// (an integer square root here, identical for every value an `int` `-F` gives: the
    /// argument is below 2^53, and the square root of a non-square is farther from an integer
    /// than the double's rounding).
    pub fn matrix_size(&self) -> u64 {
        isqrt(self.cache_footprint_kb * 1024 / 3 / 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist_of(samples: &[(u64, u32)]) -> Histogram {
        let mut h = Histogram::new();
        for &(v, n) in samples {
            for _ in 0..n {
                h.add(v);
            }
        }
        h
    }

    #[test]
    fn defaults_and_interactions() {
        let d = Schbench23Opts::parse(&[]).unwrap();
        assert_eq!(d, Schbench23Opts::default());
        assert_eq!((d.message_threads, d.worker_threads, d.runtime_s, d.warmup_s), (1, 0, 30, 0));
        assert_eq!((d.cache_footprint_kb, d.operations, d.interval_s), (256, 5, 10));
        assert_eq!(d.matrix_size(), 104);
        assert_eq!(d.workers_per_message_thread(128), 128);
        let o = Schbench23Opts::parse(&["-m", "3", "-t0"]).unwrap();
        assert_eq!(o.workers_per_message_thread(128), 43);
        let o = Schbench23Opts::parse(&["-m2", "--threads=16", "--run", "300", "-w", "7"]).unwrap();
        assert_eq!((o.message_threads, o.worker_threads, o.runtime_s, o.warmup_s), (2, 16, 300, 7));
        // A runtime below 30 s drops the warmup.
        assert_eq!(Schbench23Opts::parse(&["-w", "7", "-r", "29"]).unwrap().warmup_s, 0);
        // -p zeroes the warmup unless -w says otherwise, in either order.
        assert_eq!(Schbench23Opts::parse(&["-w", "5", "-p", "64"]).unwrap().warmup_s, 5);
        let o = Schbench23Opts::parse(&["-p", "99999999"]).unwrap();
        assert_eq!((o.pipe_bytes, o.pipe_clamped), (PIPE_TRANSFER_BUFFER, true));
        // -A sets 10 requests/s unless -R came first.
        assert_eq!(Schbench23Opts::parse(&["-A", "50"]).unwrap().requests_per_sec, 10);
        assert_eq!(Schbench23Opts::parse(&["-R", "100", "-A", "50"]).unwrap().requests_per_sec, 100);
        // -C implies -L.
        let o = Schbench23Opts::parse(&["-C"]).unwrap();
        assert!(o.calibrate && o.skip_locking);
        assert!(Schbench23Opts::parse(&["--no-lock"]).unwrap().skip_locking);
        assert_eq!(Schbench23Opts::parse(&["--cache_footprint", "64"]).unwrap().cache_footprint_kb, 256);
        assert_eq!(Schbench23Opts::parse(&["-F", "64"]).unwrap().matrix_size(), 52);
        assert_eq!(Schbench23Opts::parse(&["-R", "1000", "-m", "3"]).unwrap().rps_per_message_thread(), 333);
        assert_eq!(Schbench23Opts::parse(&["-R", "2", "-m", "3"]).unwrap().rps_per_message_thread(), 0);
    }

    #[test]
    fn errors_name_the_option() {
        let err = |a: &[&str]| Schbench23Opts::parse(a).unwrap_err();
        let e = err(&["-m", "two"]);
        assert!(e.contains("-m (--message-threads)") && e.contains("'two'"), "{e}");
        assert!(err(&["-t", "-5"]).contains("-t (--threads)"));
        assert!(err(&["-F", "1e3"]).contains("-F expects a cache footprint"));
        assert!(err(&["-n", "99999999999"]).contains("-n (--operations)"));
        assert!(err(&["-r"]).contains("requires an argument"));
        assert!(err(&["-s", "5"]).contains("invalid option -- 's'"));
        assert!(err(&["-c", "5"]).contains("invalid option -- 'c'"));
        assert!(err(&["--bogus"]).contains("unrecognized option '--bogus'"));
        assert!(err(&["--calibrate=1"]).contains("doesn't allow an argument"));
        assert!(err(&["--help"]).contains("usage"));
        assert!(err(&["-m", "2", "foo"]).contains("Extra arguments 'foo'"));
        assert!(err(&["-m", "0"]).contains("-m (--message-threads)"));
    }

    #[test]
    fn blocks_print_their_rows_with_bands_from_the_previous_computed_entry() {
        // 100 samples: 1..=100 us. Thresholds 20, 50, 90, 99, 100: values 20, 50, 90, 99, 100.
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.add(v);
        }
        let mut out = String::new();
        render_block(&mut out, "Wakeup Latencies", "usec", 30, &h, PLIST_FOR_LAT, PLIST_99);
        assert_eq!(
            out,
            "Wakeup Latencies percentiles (usec) runtime 30 (s) (100 total samples)\n\
             \t  50.0th: 50         (30 samples)\n\
             \t  90.0th: 90         (40 samples)\n\
             \t* 99.0th: 99         (9 samples)\n\
             \t  99.9th: 100        (1 samples)\n\
             \t  min=1, max=100\n"
        );
        let mut out = String::new();
        render_block(&mut out, "RPS", "requests", 10, &h, PLIST_FOR_RPS, PLIST_50);
        assert_eq!(
            out,
            "RPS percentiles (requests) runtime 10 (s) (100 total samples)\n\
             \t  20.0th: 20         (20 samples)\n\
             \t* 50.0th: 50         (30 samples)\n\
             \t  90.0th: 90         (40 samples)\n\
             \t  min=1, max=100\n"
        );
        // An empty histogram: every row 0, min and max 0.
        let mut out = String::new();
        render_block(&mut out, "RPS", "requests", 1, &Histogram::new(), PLIST_FOR_RPS, PLIST_50);
        assert!(out.ends_with("\t  90.0th: 0          (0 samples)\n\t  min=0, max=0\n"), "{out}");
    }

    #[test]
    fn bucketed_values_print_bucket_midpoints() {
        // 17000 rps lands in the bucket 16960..17023 (width 64: 17000 >> 6 << 6), printed as its
        // midpoint 16992.
        let h = hist_of(&[(0, 1), (17000, 30)]);
        let bands = h.percentile_bands(&PLIST);
        assert_eq!(bands[0], (16992, 31));
        // add_lat()'s min quirk: a 0 sample leaves min "unset", the next one replaces it.
        assert_eq!((h.min(), h.max()), (17000, 17000));
    }

    #[test]
    fn rps_samples_truncate_like_the_c_conversion() {
        let r = Rps { loops: 17_345, delta_us: 1_000_061 };
        assert_eq!(r.sample(), 17_343);
        assert_eq!(r.value(), 17_345_000_000f64 / 1_000_061f64);
        assert_eq!(c_fixed2(r.value()), "17343.94");
        assert_eq!(Rps { loops: 0, delta_us: 0 }.sample(), 0);
        assert_eq!(c_fixed2(Rps { loops: 0, delta_us: 0 }.value()), "-nan");
        assert_eq!(c_fixed2(Rps { loops: 3, delta_us: 0 }.value()), "inf");
        // glibc rounds exact ties to even.
        assert_eq!(c_fixed2(0.125), "0.12");
        assert_eq!(c_fixed2(0.375), "0.38");
        assert_eq!(c_fixed2(2.5 / 1000.0 * 1000.0), "2.50");
    }

    #[test]
    fn main_loop_rounds() {
        let o = Schbench23Opts::parse(&["-r", "30"]).unwrap();
        let mut ml = MainLoop23::new(&o, 1_000);
        // sleep(1) overshoots by 60 us a round.
        let mut reports = vec![];
        let mut samples = 0;
        for k in 0..40u64 {
            let a = ml.tick(1_000 + k * 1_000_060, k * 100);
            assert!(!a.warmup_reset && !a.zero_reset);
            samples += a.rps.is_some() as u32;
            if let Some(r) = a.report_runtime_s {
                reports.push(r);
            }
            if a.done {
                assert_eq!(k, 30);
                break;
            }
        }
        // A sample every round, the first over 0 us; reports at 10, 20 and the last round.
        assert_eq!(samples, 31);
        assert_eq!(reports, vec![10, 20, 30]);
        let mut ml = MainLoop23::new(&o, 0);
        assert_eq!(ml.tick(0, 0).rps, Some(Rps { loops: 0, delta_us: 0 }));
        assert_eq!(ml.tick(1_000_060, 1000).rps, Some(Rps { loops: 1000, delta_us: 1_000_060 }));

        // A warmup: no sample in its round, later ones do; -z resets after it.
        let o = Schbench23Opts::parse(&["-r", "60", "-w", "5", "-z", "3"]).unwrap();
        let mut ml = MainLoop23::new(&o, 0);
        let log: Vec<(u64, Tick23)> = (0..12u64).map(|k| (k, ml.tick(k * 1_000_060, k))).collect();
        let warm: Vec<u64> = log.iter().filter(|(_, a)| a.warmup_reset).map(|(k, _)| *k).collect();
        let zero: Vec<u64> = log.iter().filter(|(_, a)| a.zero_reset).map(|(k, _)| *k).collect();
        assert_eq!(warm, vec![5]);
        assert!(log[5].1.rps.is_none() && log[6].1.rps.is_some());
        // -z counts from the start, then from each reset (the warmup's too): rounds 3, 8, 11.
        assert_eq!(zero, vec![3, 8, 11]);
        // Pipe mode: no samples, no reports.
        let o = Schbench23Opts::parse(&["-p", "64"]).unwrap();
        let mut ml = MainLoop23::new(&o, 0);
        assert_eq!(ml.tick(20_000_000, 5), Tick23::default());
    }

    #[test]
    fn pipe_final_figures() {
        let h = hist_of(&[(7, 10)]);
        let mut out = String::new();
        render_pipe_final(&mut out, 30, &h, 657_000, 120_000_000, 65_536);
        assert!(out.starts_with("Wakeup Latencies percentiles (usec) runtime 30 (s) (10 total samples)\n\t  20.0th: 7"));
        // 657000 loops over 120 s of worker time: 5475 ops/s; x 64 KiB = 358,809,600 B/s.
        assert!(out.ends_with("avg worker transfer: 5475.00 ops/sec 342.19MB/s\n"), "{out}");
        assert_eq!(pretty_size(1023.0), (1023.0, "B"));
        assert_eq!(pretty_size(2048.0), (2.0, "KB"));
    }
}
