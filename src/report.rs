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

/// Arithmetic mean and sample standard deviation.
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
    let thousands = |n: u64| {
        let d = n.to_string();
        let mut o = String::new();
        for (i, ch) in d.chars().enumerate() {
            if i > 0 && (d.len() - i) % 3 == 0 {
                o.push(',');
            }
            o.push(ch);
        }
        o
    };
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
    fn mean_and_sample_stddev() {
        let (m, s) = mean_stddev(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((s - 1.0).abs() < 1e-12);
    }
}
