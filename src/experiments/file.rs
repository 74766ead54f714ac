//! Experiments as data: a TOML experiment file names the variants' runs (a `[spec]` every
//! variant starts from, with a scenario file's keys, and per `[[variant]]` the fields that
//! differ and its published figure), and the tables its results make: the main table of the
//! workload's primary figure per variant (`Program::metric`, mean and standard deviation over
//! seeds, normalized to the first row) and `[[breakdown]]` tables of figures of each run's
//! `schedsim run --json` document, and `[[unknown]]` tables naming the unknowns its answer
//! depends on with the values a band takes of them (`reproduce --band`).
//! `experiments/ilb-polling.toml` is the built-in example; `schedsim reproduce FILE.toml` runs
//! a user's own.

use super::{Analysis, ExpOpts, Plan, Variant};
use crate::report::{mean_stddev, normalize, render_grid, CompareRow, Comparison};
use crate::run::RunResult;
use crate::spec::scenario::{apply_fields, from_table, line_of, FileTable};
use crate::unknowns::{Axis, Domain, Unknown};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: String,
    description: String,
    title: String,
    spec: toml::Spanned<FileTable>,
    #[serde(default)]
    variant: Vec<toml::Spanned<FileTable>>,
    #[serde(default)]
    breakdown: Vec<Breakdown>,
    focus: Option<RawFocus>,
    #[serde(default)]
    unknown: Vec<toml::Spanned<RawUnknown>>,
}

/// What the report's timelines show (`crate::focus`): `cpus` first, the window opening at the
/// first record of `event` (on `cpu` if given) at or after `after`, `span_us` long.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFocus {
    #[serde(default)]
    cpus: Vec<u32>,
    event: String,
    cpu: Option<u32>,
    #[serde(default = "default_after")]
    after: String,
    span_us: Option<u64>,
    why: String,
}

fn default_after() -> String {
    "start".into()
}

/// An `[[unknown]]` table: a named unknown the answer depends on and the values a band takes
/// of it: `values = [...]`, an interval `lo = ..., hi = ...`, or the row's own design with
/// `at = "CPU"` (the CPU part of its values; `schedsim list --unknowns`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUnknown {
    name: String,
    at: Option<String>,
    values: Option<Vec<String>>,
    lo: Option<String>,
    hi: Option<String>,
}

/// A table printed after the main one: a row per variant, a column per figure.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    pub title: String,
    /// The first column's header (the variants' labels).
    pub first: String,
    pub columns: Vec<Column>,
}

/// One figure: the mean over seeds of `value`, a path in the run's JSON document.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub header: String,
    /// `counters.NAME`, `workload.NAME` or `metric`.
    pub value: String,
    pub decimals: usize,
    /// The key of the figure in each row of `reproduce --json` (none: not there).
    pub json: Option<String>,
}

/// The tables of an experiment file.
#[derive(Debug, Clone)]
pub struct Tables {
    pub origin: String,
    pub breakdowns: Vec<Breakdown>,
}

fn read(text: &str, origin: &str) -> Result<RawFile, String> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        format!("{origin}:{line}: {}", e.message().replace('\n', " "))
    })
}

/// The file's description (for `list` and `--help`).
pub fn description(text: &str, name: &str) -> String {
    read(text, name).map(|f| f.description).unwrap_or_else(|e| format!("(unreadable experiment file: {e})"))
}

/// The plan of an experiment file with options `o`.
pub fn plan(text: &str, origin: &str, o: &ExpOpts) -> Result<Plan, String> {
    let f = read(text, origin)?;
    if f.variant.is_empty() {
        return Err(format!("{origin}: no variants: add at least one [[variant]] table"));
    }
    let base = from_table(f.spec.get_ref(), text, origin, &[])?;
    let mut variants = Vec::new();
    for v in &f.variant {
        let line = line_of(text, v.span().start);
        let t = v.get_ref();
        let at = |m: String| format!("{origin}:{line}: [[variant]] {m}");
        let label = match t.get("label").map(|l| l.get_ref()) {
            Some(toml::Value::String(s)) => s.clone(),
            _ => return Err(at("needs label = \"NAME\"".into())),
        };
        let published = match t.get("published").map(|p| p.get_ref()) {
            None => None,
            Some(toml::Value::Float(x)) => Some(*x),
            Some(toml::Value::Integer(i)) => Some(*i as f64),
            Some(other) => return Err(at(format!("{label}: published = {other}: expected a number"))),
        };
        let mut spec = base.clone();
        apply_fields(&mut spec, t, text, origin, &["label", "published"])?;
        variants.push(Variant { label, spec, published });
    }
    for b in &f.breakdown {
        for c in &b.columns {
            let ok = c.value == "metric" || c.value.starts_with("counters.") || c.value.starts_with("workload.");
            if !ok {
                return Err(format!(
                    "{origin}: breakdown '{}', column '{}': value = \"{}\" is not counters.NAME, workload.NAME or metric",
                    b.title, c.header, c.value
                ));
            }
        }
    }
    let mut axes = Vec::new();
    for u in &f.unknown {
        let line = line_of(text, u.span().start);
        let at = |m: String| format!("{origin}:{line}: [[unknown]] {m}");
        let r = u.get_ref();
        let which = Unknown::from_name(&r.name).map_err(at)?;
        let axis = match (&r.values, &r.lo, &r.hi, &r.at) {
            (Some(v), None, None, None) => Axis::new(which, Domain::Values(v.clone())),
            (None, Some(lo), Some(hi), None) => Axis::new(which, Domain::Interval { lo: lo.clone(), hi: hi.clone() }),
            (None, None, None, a) => Axis::of(which, a.as_deref().unwrap_or("")),
            _ => {
                return Err(at(format!(
                    "{}: give values = [...], or lo = ... and hi = ..., or neither (the unknown's own design, \
                     with at = \"CPU\" where its values name one)",
                    r.name
                )))
            }
        };
        let axis = axis.map_err(at)?;
        if axes.iter().any(|a: &Axis| a.unknown == which) {
            return Err(at(format!("{}: named twice", r.name)));
        }
        axes.push(axis);
    }
    let machine = variants[0].spec.machine.clone();
    let tables = Tables { origin: origin.to_string(), breakdowns: f.breakdown };
    let mut p = Plan::new(&f.name, f.title, &machine, variants, o.runs, o, Analysis::File(tables))?;
    if let Some(fo) = f.focus {
        use crate::focus::{Anchor, Cpus, Focus, Match, Moment};
        let at = |e: String| format!("{origin}: [focus] {e}");
        let span_us = fo.span_us.unwrap_or(crate::focus::SPAN_NS / 1000);
        if !(1..=1_000_000).contains(&span_us) {
            return Err(at(format!("span_us = {span_us}: expected 1..=1000000")));
        }
        p.focus = Focus {
            cpus: Cpus::Listed(fo.cpus),
            instant: Moment {
                what: Match::parse(&fo.event).map_err(at)?,
                cpu: fo.cpu,
                after: Anchor::parse(&fo.after).map_err(at)?,
            },
            span_ns: span_us * 1000,
            why: fo.why,
        };
    }
    p.unknowns = axes;
    Ok(p)
}

impl Tables {
    /// The main table and the breakdowns.
    pub fn analyze(&self, p: &Plan, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
        let Some(first) = results.first().and_then(|rs| rs.first()) else {
            return Err(format!("{}: no runs", self.origin));
        };
        let m0 = first.workload.metric(&first.facts());
        let mut rows = Vec::new();
        let mut grids: Vec<Vec<Vec<String>>> = vec![Vec::new(); self.breakdowns.len()];
        for (v, rs) in p.variants.iter().zip(results) {
            let docs: Vec<serde_json::Value> = rs
                .iter()
                .map(|r| {
                    let f = r.facts();
                    serde_json::json!({
                        "counters": crate::output::counters_json(r),
                        "workload": r.workload.json(&f),
                        "metric": r.workload.metric(&f).value,
                    })
                })
                .collect();
            let mean_of = |c: &Column| -> Result<f64, String> {
                let mut sum = 0.0;
                for d in &docs {
                    let x = c.value.split('.').fold(d, |d, k| &d[k]);
                    sum += x.as_f64().ok_or_else(|| {
                        format!(
                            "{}: column '{}': {} is not a number in a run's JSON document ({x})",
                            self.origin, c.header, c.value
                        )
                    })?;
                }
                Ok(sum / docs.len().max(1) as f64)
            };
            let mut extra = serde_json::Map::new();
            for (b, grid) in self.breakdowns.iter().zip(grids.iter_mut()) {
                let mut row = vec![v.label.clone()];
                for c in &b.columns {
                    let x = mean_of(c)?;
                    if let Some(key) = &c.json {
                        extra.insert(key.clone(), serde_json::json!(x));
                    }
                    row.push(format!("{x:.*}", c.decimals));
                }
                grid.push(row);
            }
            let values: Vec<f64> = rs.iter().map(|r| r.workload.metric(&r.facts()).value).collect();
            let (mean, stddev) = mean_stddev(&values);
            let cfg = crate::linux::KernelConfig::resolve(&v.spec.kernel, &v.spec.patches, 250)?;
            rows.push(CompareRow {
                variant: v.label.clone(),
                kernel: cfg.label(),
                patches: cfg.patches.iter().map(|p| p.info().id.to_string()).collect(),
                runs: rs.len(),
                mean,
                stddev,
                normalized: 0.0,
                published: v.published,
                extra,
            });
        }
        normalize(&mut rows);
        let notes = self
            .breakdowns
            .iter()
            .zip(&grids)
            .map(|(b, grid)| {
                let mut h = vec![b.first.clone()];
                h.extend(b.columns.iter().map(|c| c.header.clone()));
                format!("{}\n{}", b.title, render_grid(&h, grid))
            })
            .collect();
        Ok(Comparison {
            table: None,
            experiment: p.experiment.clone(),
            machine: p.machine.clone(),
            metric: m0.name.into(),
            unit: m0.unit.into(),
            lower_is_better: m0.lower_is_better,
            statistic: crate::report::MMTESTS_AMEAN.into(),
            rows,
            title: p.title.clone(),
            notes,
        })
    }
}
