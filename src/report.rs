//! Output formats: the mmtests-style comparison table, the breakdown tables and the JSON
//! documents. Floats appear only here, after the model has run.

use serde::Serialize;

/// One row of a comparison: a kernel variant over several seeds.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub variant: String,
    pub kernel: String,
    pub patches: Vec<String>,
    pub runs: usize,
    pub mean: f64,
    pub stddev: f64,
    pub normalized: f64,
    pub published: Option<f64>,
    /// Extra per-row fields (the breakdown).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A comparison across variants (`schedsim compare`, `schedsim reproduce`).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub experiment: String,
    pub machine: String,
    pub metric: String,
    pub unit: String,
    pub lower_is_better: bool,
    /// What the table's figure is and whose convention it follows (mmtests' AMean and sample
    /// standard deviation, perf stat's mean and standard error, perf report's shares of
    /// unhalted cycles, ...): the table's "Statistic" line.
    pub statistic: String,
    pub rows: Vec<CompareRow>,
    /// The command line of the workload, for the table's title.
    #[serde(skip)]
    pub title: String,
    /// Extra tables printed after the main one (already formatted).
    #[serde(skip)]
    pub notes: Vec<String>,
    /// The experiment's own main table (already formatted), printed under the header instead
    /// of the mmtests rows: a table whose rows are not variants of one metric (LKP's matrix of
    /// cells, each with its own unit).
    #[serde(skip)]
    pub table: Option<String>,
}

/// The statistic of an mmtests-style table: the mean over seeds, and beside it the sample
/// standard deviation (what mmtests' compare-kernels prints as AMean and its stddev).
pub const MMTESTS_AMEAN: &str = "AMean (mmtests: mean over seeds; stddev is the sample standard deviation)";

/// lkp-tests' stddev column of the `%change` table the 0-day robot publishes (lib/compare.rb,
/// `calc_avg_stddev()` and `show_perf_change()`): the standard deviation of lib/statistics.rb
/// (the population one, divided by n) in percent of the mean, shown as `± N%` only when it is
/// above 2%, N printed with `%d` (truncated). `Some(N)` when the table shows it; `None` when it
/// shows blanks: 2% or less, a single value (lkp-tests' -1), or a zero mean. The one rule for
/// every LKP-style table here (`sweep merge`'s `%change` table and `reproduce lkp-matrix`).
pub fn lkp_stddev_percent(v: &[f64]) -> Option<i64> {
    let pct = lkp_stddev_pct_exact(v)?;
    (pct > 2.0).then_some(pct as i64)
}

/// The percentage [`lkp_stddev_percent`] compares with 2% (population standard deviation in
/// percent of the mean), before truncation; `None` for a single value or a zero mean. For
/// JSON output, where the exact figure is kept.
pub fn lkp_stddev_pct_exact(v: &[f64]) -> Option<f64> {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 || mean == 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Some(var.sqrt() * 100.0 / mean)
}

/// lkp-tests' `%change`: `100 * mean / base - 100` rounded to one decimal; `None` for a zero
/// base (`get_compare_value()`, the same file).
pub fn lkp_change(base: f64, mean: f64) -> Option<f64> {
    (base != 0.0).then(|| ((100.0 * mean / base - 100.0) * 10.0).round() / 10.0)
}

/// perf stat `-r N`'s `+-`: the standard error of the mean (the sample standard deviation over
/// sqrt(n)) in percent of the mean (tools/perf/util/stat.c: `stddev_stats()`, and
/// `print_noise_pct()` in stat-display.c); 0 with fewer than two runs or a zero mean.
pub fn perf_stat_noise_pct(v: &[f64]) -> f64 {
    let (mean, sd) = mean_stddev(v);
    if v.len() < 2 || mean == 0.0 {
        return 0.0;
    }
    100.0 * sd / (v.len() as f64).sqrt() / mean
}

/// Arithmetic mean and sample standard deviation (mmtests' `calc_amean` and `calc_stddev`,
/// bin/lib/MMTests/Stat.pm: the sum of squared deviations over n - 1; mmtests prints NaN for a
/// single value, this 0).
pub fn mean_stddev(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var.sqrt())
}

/// Fill `normalized` against the first row.
pub fn normalize(rows: &mut [CompareRow]) {
    let base = rows.first().map(|r| r.mean).unwrap_or(1.0);
    for r in rows.iter_mut() {
        r.normalized = if base != 0.0 { r.mean / base } else { 0.0 };
    }
}

fn pct_imp(c: &Comparison, r: &CompareRow, i: usize) -> String {
    if i == 0 {
        return "[baseline]".into();
    }
    let n = r.normalized;
    let imp = if c.lower_is_better { (1.0 - n) * 100.0 } else { (n - 1.0) * 100.0 };
    format!("[{imp:.2}%]")
}

/// Render the mmtests-style table (as AMD's ipistorm reports look).
pub fn render_table(c: &Comparison) -> String {
    let mut s = String::new();
    let bar = "=".repeat(98);
    s.push_str(&bar);
    s.push('\n');
    s.push_str(&format!("Test          : {}\n", c.title));
    s.push_str(&format!("Machine       : {}\n", c.machine));
    s.push_str(&format!("Units         : Normalized {} ({} in {})\n", c.metric, c.metric, c.unit));
    s.push_str(&format!(
        "Interpretation: {}\n",
        if c.lower_is_better { "Lower is better" } else { "Higher is better" }
    ));
    s.push_str(&format!("Statistic     : {}\n", c.statistic));
    s.push_str(&bar);
    s.push('\n');
    if let Some(t) = &c.table {
        s.push_str(t);
        for n in &c.notes {
            s.push('\n');
            s.push_str(n);
        }
        return s;
    }
    let kw = c.rows.iter().map(|r| r.variant.len() + r.kernel.len() + 3).max().unwrap_or(10).max(20);
    s.push_str(&format!(
        "{:<kw$}  {:>12}  {:>10}  {:>4}  {:>24}  {:>9}\n",
        "kernel:",
        format!("{}({})", c.metric, c.unit),
        "stddev",
        "runs",
        "normalized [pct imp]",
        "published"
    ));
    for (i, r) in c.rows.iter().enumerate() {
        let name = format!("{} ({})", r.variant, r.kernel);
        let norm = format!("{:.2} {}", r.normalized, pct_imp(c, r, i));
        let publ = r.published.map_or("-".to_string(), |p| format!("{p:.2}"));
        s.push_str(&format!(
            "{:<kw$}  {:>12.3}  {:>10.3}  {:>4}  {:>24}  {:>9}\n",
            name, r.mean, r.stddev, r.runs, norm, publ
        ));
    }
    for n in &c.notes {
        s.push('\n');
        s.push_str(n);
    }
    s
}

/// Render a simple aligned table: a header row and data rows.
pub fn render_grid(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut w = vec![0usize; cols];
    for (i, h) in header.iter().enumerate() {
        w[i] = h.len();
    }
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            w[i] = w[i].max(c.len());
        }
    }
    let mut s = String::new();
    let line = |s: &mut String, cells: &[String]| {
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!("{:<width$}", c, width = w[i]));
            } else {
                s.push_str(&format!("  {:>width$}", c, width = w[i]));
            }
        }
        s.push('\n');
    };
    line(&mut s, header);
    for r in rows {
        line(&mut s, r);
    }
    s
}

/// `perf stat`'s default block for a program's run: task-clock, context switches, migrations
/// and elapsed time.
pub fn perf_stat_text(cmd: &str, task_clock_ns: u64, switches: u64, migrations: u64, elapsed_ns: u64) -> String {
    let msec = task_clock_ns as f64 / 1e6;
    let (int, frac) = (task_clock_ns / 1_000_000, task_clock_ns % 1_000_000 / 10_000);
    let per_sec = |n: u64| n as f64 / (task_clock_ns.max(1) as f64 / 1e9) / 1e3;
    let mut o = format!("\n Performance counter stats for '{cmd}':\n\n");
    o.push_str(&format!(
        "{:>18} msec task-clock                       #  {:>7.3} CPUs utilized\n",
        format!("{}.{frac:02}", thousands(int)),
        msec / (elapsed_ns.max(1) as f64 / 1e6)
    ));
    o.push_str(&format!(
        "{:>18}      context-switches                 #  {:>7.3} K/sec\n",
        thousands(switches),
        per_sec(switches)
    ));
    o.push_str(&format!(
        "{:>18}      cpu-migrations                   #  {:>7.3} K/sec\n",
        thousands(migrations),
        per_sec(migrations)
    ));
    o.push_str(&format!("\n{:>18.9} seconds time elapsed\n", elapsed_ns as f64 / 1e9));
    o
}

/// One counter of a [`PerfStat`] block: its mean over the runs and the standard error of that
/// mean (what `perf stat -r` prints after `+-`, as a percentage of the mean).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerfCounter {
    pub mean: f64,
    pub stderr: f64,
}

impl PerfCounter {
    /// The mean and its standard error over `v` (0 with fewer than two values), as perf's
    /// `stddev_stats()` computes them (tools/perf/util/stat.c).
    pub fn of(v: &[f64]) -> PerfCounter {
        let n = v.len() as f64;
        if v.is_empty() {
            return PerfCounter { mean: 0.0, stderr: 0.0 };
        }
        let mean = v.iter().sum::<f64>() / n;
        let stderr = if v.len() < 2 {
            0.0
        } else {
            let m2: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
            (m2 / (n - 1.0) / n).sqrt()
        };
        PerfCounter { mean, stderr }
    }

    /// perf's `( +- P% )` column: empty for a single run or no spread, as perf leaves it.
    fn noise(&self, runs: usize) -> String {
        let pct = if self.mean != 0.0 { 100.0 * self.stderr / self.mean } else { 0.0 };
        if runs > 1 && pct != 0.0 {
            format!("  ( +-{pct:>6.2}% )")
        } else {
            String::new()
        }
    }
}

/// A `perf stat -a [-r N]` block (tools/perf/util/stat-display.c's standard output, as perf
/// 6.x prints it): task-clock (msec, summed over the CPUs: with `-a` every CPU's clock runs
/// for the whole run), context-switches, cpu-migrations, cycles (unhalted only, as the
/// hardware event counts), then the elapsed time with its standard error when `runs` > 1.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfStat {
    /// What the header names: `system wide` for `-a`.
    pub target: String,
    pub runs: usize,
    pub task_clock_ns: PerfCounter,
    pub context_switches: PerfCounter,
    pub cpu_migrations: PerfCounter,
    pub cycles: PerfCounter,
    pub elapsed_ns: PerfCounter,
}

/// `n` with thousands separators (perf's `%'.0f` in a C locale with grouping).
fn thousands(n: u64) -> String {
    let d = n.to_string();
    let mut o = String::new();
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            o.push(',');
        }
        o.push(ch);
    }
    o
}

impl PerfStat {
    pub fn text(&self) -> String {
        let runs = if self.runs > 1 { format!(" ({} runs)", self.runs) } else { String::new() };
        let mut o = format!("\n Performance counter stats for '{}'{runs}:\n\n", self.target);
        let tc = self.task_clock_ns.mean;
        let ns = tc.round() as u64;
        let per_sec = |n: f64| n / (tc.max(1.0) / 1e9) / 1e3;
        let metric = |m: String| format!("{m:<38}");
        o.push_str(&format!(
            "{:>18} msec task-clock                       #  {}{}\n",
            format!("{}.{:02}", thousands(ns / 1_000_000), ns % 1_000_000 / 10_000),
            metric(format!("{:>7.3} CPUs utilized", tc / self.elapsed_ns.mean.max(1.0))),
            self.task_clock_ns.noise(self.runs)
        ));
        for (name, c) in [("context-switches", &self.context_switches), ("cpu-migrations", &self.cpu_migrations)] {
            o.push_str(&format!(
                "{:>18}      {name:<32} #  {}{}\n",
                thousands(c.mean.round() as u64),
                metric(format!("{:>7.3} K/sec", per_sec(c.mean))),
                c.noise(self.runs)
            ));
        }
        o.push_str(&format!(
            "{:>18}      {:<32} #  {}{}\n",
            thousands(self.cycles.mean.round() as u64),
            "cycles",
            metric(format!("{:>7.3} GHz", self.cycles.mean / tc.max(1.0))),
            self.cycles.noise(self.runs)
        ));
        let (avg, sd) = (self.elapsed_ns.mean / 1e9, self.elapsed_ns.stderr / 1e9);
        if self.runs > 1 && sd > 0.0 {
            // perf shows at most two more digits than the standard error's first.
            let prec = if sd > 1.0 { 2 } else { (-sd.log10()).ceil() as usize + 2 };
            o.push_str(&format!(
                "\n {avg:>17.prec$} +- {sd:.prec$} seconds time elapsed{}\n",
                self.elapsed_ns.noise(self.runs)
            ));
        } else {
            o.push_str(&format!("\n {avg:>17.9} seconds time elapsed\n"));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &str, mean: f64) -> CompareRow {
        CompareRow {
            variant: v.into(),
            kernel: "v6.10".into(),
            patches: vec![],
            runs: 3,
            mean,
            stddev: 0.5,
            normalized: 0.0,
            published: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn table_has_mmtests_header_and_pct_imp() {
        let mut rows = vec![row("baseline", 100.0), row("sm_idle", 25.0)];
        normalize(&mut rows);
        let c = Comparison {
            table: None,
            experiment: "ipistorm".into(),
            machine: "m".into(),
            metric: "time".into(),
            unit: "ms".into(),
            lower_is_better: true,
            statistic: "AMean".into(),
            rows,
            title: "ipistorm".into(),
            notes: vec![],
        };
        let t = render_table(&c);
        assert!(t.contains("Interpretation: Lower is better"));
        assert!(t.contains("Statistic     : AMean"));
        assert!(t.contains("1.00 [baseline]"));
        assert!(t.contains("0.25 [75.00%]"));
    }

    #[test]
    fn perf_stat_block_prints_the_runs_mean_and_standard_error_as_perf_does() {
        let c = PerfCounter::of(&[1.0, 2.0, 3.0]);
        assert_eq!(c.mean, 2.0);
        assert!((c.stderr - (1.0f64 / 3.0).sqrt()).abs() < 1e-12, "the standard error of the mean");
        let b = PerfStat {
            target: "system wide".into(),
            runs: 2,
            task_clock_ns: PerfCounter::of(&[16e9, 16e9]),
            context_switches: PerfCounter::of(&[5_000_000.0, 6_000_000.0]),
            cpu_migrations: PerfCounter::of(&[150_000.0, 150_000.0]),
            cycles: PerfCounter::of(&[30e9, 32e9]),
            elapsed_ns: PerfCounter::of(&[1.9e9, 2.1e9]),
        };
        let t = b.text();
        assert!(t.starts_with("\n Performance counter stats for 'system wide' (2 runs):\n\n"), "{t}");
        assert!(t.contains("     16,000.00 msec task-clock "), "{t}");
        assert!(t.contains("# 8.000 CPUs utilized") || t.contains("#    8.000 CPUs utilized"), "{t}");
        assert!(t.contains("         5,500,000      context-switches"), "{t}");
        assert!(t.contains("( +-  9.09% )"), "switches: stderr 500000 of 5.5 M: {t}");
        assert!(!t.lines().any(|l| l.contains("cpu-migrations") && l.contains("+-")), "no spread, no column: {t}");
        assert!(t.contains("    31,000,000,000      cycles"), "{t}");
        // Elapsed: 2.0 s +- 0.1 s; perf shows two more digits than the error's first.
        assert!(t.contains("\n             2.000 +- 0.100 seconds time elapsed  ( +-  5.00% )\n"), "{t}");
        let one = PerfStat { runs: 1, elapsed_ns: PerfCounter::of(&[2e9]), ..b };
        assert!(one.text().contains("\n       2.000000000 seconds time elapsed\n"), "{}", one.text());
        assert!(!one.text().contains("+-"));
    }

    #[test]
    fn the_published_tools_statistics_on_hand_computed_data() {
        // 2 4 4 4 5 5 7 9: mean 5, squared deviations sum to 32.
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        // mmtests: sample stddev sqrt(32/7) = 2.13809.
        let (m, sd) = mean_stddev(&v);
        assert_eq!(m, 5.0);
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // LKP: population stddev sqrt(32/8) = 2, 40% of 5.
        assert_eq!(lkp_stddev_percent(&v), Some(40));
        // Truncated, not rounded: 10, 11.9 -> mean 10.95, population sd 0.95, 8.67%.
        assert_eq!(lkp_stddev_percent(&[10.0, 11.9]), Some(8));
        // 2% and under: blanks. 100, 104: sd 2 of 102 (1.96%); 100, 105: 2.44%, shown as 2.
        assert_eq!(lkp_stddev_percent(&[100.0, 101.0]), None);
        assert_eq!(lkp_stddev_percent(&[100.0, 104.0]), None);
        assert_eq!(lkp_stddev_percent(&[100.0, 105.0]), Some(2));
        assert_eq!(lkp_stddev_percent(&[3.0]), None);
        assert!((lkp_stddev_pct_exact(&[100.0, 104.0]).unwrap() - 200.0 / 102.0).abs() < 1e-12);
        assert_eq!(lkp_change(8.0, 9.0), Some(12.5));
        assert_eq!(lkp_change(3.0, 2.0), Some(-33.3));
        assert_eq!(lkp_change(0.0, 2.0), None);
        // perf stat: standard error sqrt(32/7)/sqrt(8) = 0.75593, 15.119% of 5.
        assert!((perf_stat_noise_pct(&v) - 100.0 * (32.0f64 / 7.0 / 8.0).sqrt() / 5.0).abs() < 1e-9);
        assert_eq!(perf_stat_noise_pct(&[3.0]), 0.0);
    }

    #[test]
    fn mean_and_sample_stddev() {
        let (m, s) = mean_stddev(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((s - 1.0).abs() < 1e-12);
    }
}
