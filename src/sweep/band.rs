//! `reproduce X --band`: every variant of an experiment over the named unknowns its answer
//! depends on ([`Plan::unknowns`]), with a stated design, and the tables that say how far the
//! answer moves: each row's band, the ratios between variants within one state of the
//! unknowns (what one boot of one machine compares), and which unknown moves which row.
//!
//! The design is deterministic: the default state (every unknown at its default: the point
//! answer), each unknown alone at each of its design values (the one-at-a-time points the
//! sensitivity table reads), and either the full grid of every unknown's design values (an
//! enumeration's every value, an interval's two sourced ends and its midpoint) or a Latin
//! hypercube of N points seeded by the experiment's seed (by default the grid when it is small,
//! else a hypercube of 24: [`Design::Auto`]). Points that put the machine in the
//! same state (the same [`crate::unknowns::Effect`] on every variant's machine) are one state.
//!
//! The runs go through the sweep machinery: each (state, variant, seed) is one
//! [`crate::sweep::GridRun`] whose JSON line carries its state and its figure ([`Plan::figure`]),
//! so a band shards like any sweep (`sweep` grids take `experiment = "X"` with `band = true`)
//! and [`analyze`] turns the lines, from one process or merged from shards, into the same
//! [`Report`]. Floats appear only in the report, after the runs.

use crate::experiments::Plan;
use crate::sweep::GridRun;
use crate::unknowns::{Axis, Effect};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How a band's states are chosen besides the default and the one-at-a-time points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// The grid when it has at most [`AUTO_GRID_MAX`] points, else a Latin hypercube of
    /// [`AUTO_LHS_POINTS`]: a band that finishes in minutes on two cores whatever the number of
    /// unknowns (ipistorm's five make a grid of 270 points, 3420 runs, about 20 minutes there).
    Auto,
    /// Every combination of the unknowns' design values.
    Grid,
    /// A Latin hypercube of N points: each unknown's range cut into N strata, each stratum
    /// used once (its midpoint; an enumeration's value at that fraction), the strata of each
    /// unknown in an order drawn from the experiment's seed.
    Lhs(usize),
}

/// The largest grid [`Design::Auto`] runs whole.
pub const AUTO_GRID_MAX: usize = 64;

/// The Latin hypercube's size when [`Design::Auto`]'s grid would be larger.
pub const AUTO_LHS_POINTS: usize = 24;

/// The most points a Latin hypercube may have.
pub const MAX_LHS_POINTS: usize = 10_000;

/// Seeds per state besides the default one, unless asked.
pub const DEFAULT_BAND_RUNS: usize = 2;

impl Design {
    /// `auto`, `grid` or `lhs:N`.
    pub fn parse(s: &str) -> Result<Design, String> {
        let bad = || format!("band design '{s}': expected auto, grid or lhs:N (N from 1 to {MAX_LHS_POINTS})");
        match s.trim() {
            "auto" => Ok(Design::Auto),
            "grid" => Ok(Design::Grid),
            t => {
                let n: usize = t.strip_prefix("lhs:").ok_or_else(bad)?.parse().map_err(|_| bad())?;
                if !(1..=MAX_LHS_POINTS).contains(&n) {
                    return Err(bad());
                }
                Ok(Design::Lhs(n))
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Design::Auto => "auto".into(),
            Design::Grid => "grid".into(),
            Design::Lhs(n) => format!("lhs:{n}"),
        }
    }
}

/// A band's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandOpts {
    pub design: Design,
    /// Seeds per state other than the default (at most the plan's own).
    pub runs: usize,
}

impl Default for BandOpts {
    fn default() -> Self {
        BandOpts { design: Design::Auto, runs: DEFAULT_BAND_RUNS }
    }
}

/// One point of the design: what kind of point it is and the unknowns it sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Point {
    /// `default`, `one-at-a-time`, `grid` or `lhs`.
    pub kind: String,
    /// `NAME=VALUE` of each unknown it sets.
    pub values: Vec<String>,
}

/// A state of the unknowns: the machine set-up of one or more design points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct State {
    /// `NAME=VALUE` of each unknown set (its first point's).
    pub values: Vec<String>,
    /// The design points that put the machine in this state.
    pub points: Vec<Point>,
}

/// The axes a band runs over: the plan's unknowns but those every variant already sets
/// (`--unknown`, which fixes them, or a calibration's fitted values), with a note for each one
/// left out.
pub fn axes(plan: &Plan) -> (Vec<Axis>, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = Vec::new();
    for a in &plan.unknowns {
        let name = a.unknown.name();
        match plan.variants.first().and_then(|v| v.spec.unknowns.iter().find(|(n, _)| n == name)) {
            Some((_, v)) => {
                notes.push(format!("{name} is fixed at {v} (--unknown or a calibration): not a dimension of the band"))
            }
            None => out.push(a.clone()),
        }
    }
    (out, notes)
}

/// The design points, in order: the default, one at a time, then the design's own.
fn points(axes: &[Axis], design: Design, seed: u64) -> Vec<Point> {
    let nv = |a: &Axis, v: &str| format!("{}={v}", a.unknown.name());
    let mut pts = vec![Point { kind: "default".into(), values: vec![] }];
    for a in axes {
        for v in a.grid() {
            pts.push(Point { kind: "one-at-a-time".into(), values: vec![nv(a, &v)] });
        }
    }
    let grid_points = axes.iter().fold(1usize, |n, a| n.saturating_mul(a.grid().len()));
    let design = match design {
        Design::Auto if grid_points <= AUTO_GRID_MAX => Design::Grid,
        Design::Auto => Design::Lhs(AUTO_LHS_POINTS),
        d => d,
    };
    match design {
        // (Auto is resolved above.)
        Design::Grid | Design::Auto => {
            let mut combos: Vec<Vec<String>> = vec![Vec::new()];
            for a in axes {
                combos = combos
                    .into_iter()
                    .flat_map(|c| {
                        a.grid().into_iter().map(move |v| {
                            let mut c = c.clone();
                            c.push(nv(a, &v));
                            c
                        })
                    })
                    .collect();
            }
            if !axes.is_empty() {
                pts.extend(combos.into_iter().map(|values| Point { kind: "grid".into(), values }));
            }
        }
        Design::Lhs(n) => {
            // One permutation of the strata per axis (Fisher-Yates on the seed's stream).
            let perms: Vec<Vec<u64>> = (0..axes.len())
                .map(|i| {
                    let mut rng = crate::sim::rng::Prng::new(seed, 0x6c68_7300 + i as u64);
                    let mut p: Vec<u64> = (0..n as u64).collect();
                    for j in (1..p.len()).rev() {
                        p.swap(j, rng.below(j as u64 + 1) as usize);
                    }
                    p
                })
                .collect();
            if !axes.is_empty() {
                for i in 0..n {
                    let values =
                        axes.iter().zip(&perms).map(|(a, p)| nv(a, &a.at(2 * p[i] + 1, 2 * n as u64))).collect();
                    pts.push(Point { kind: "lhs".into(), values });
                }
            }
        }
    }
    pts
}

/// A band's layout: the unknowns it runs over, its states, and notes on unknowns left out.
#[derive(Debug, Clone)]
pub struct Layout {
    pub axes: Vec<Axis>,
    pub states: Vec<State>,
    pub notes: Vec<String>,
}

/// A variant's machine, background and own unknowns: what a state's effect is resolved on.
type Setup = (String, Option<String>, Vec<(String, String)>);

/// The states of a band of `plan`: its design points, those that put every variant's machine
/// in the same state merged into one. State 0 is the default (nothing set).
pub fn states(plan: &Plan, design: Design) -> Result<Layout, String> {
    if plan.unknowns.is_empty() {
        return Err(format!(
            "experiment '{}' names no unknowns: nothing to band over (an experiment file names them in [[unknown]] tables)",
            plan.experiment
        ));
    }
    let (axes, notes) = axes(plan);
    // Each distinct machine and background of the variants, and their own unknowns.
    let mut setups: Vec<Setup> = Vec::new();
    for v in &plan.variants {
        let key = (v.spec.machine.clone(), v.spec.background.clone(), v.spec.unknowns.clone());
        if !setups.contains(&key) {
            setups.push(key);
        }
    }
    let mut resolved = Vec::new();
    for (machine, bg, own) in &setups {
        let m = crate::run::machine(machine)?;
        let bg = crate::run::background(bg.as_deref().unwrap_or(&m.background))?;
        resolved.push((m, bg, own));
    }
    // A point's effect on every set-up, and the values of it that change anything on one.
    let effect = |values: &[String]| -> Result<(Vec<Effect>, Vec<String>), String> {
        let mut effects = Vec::new();
        let mut active = vec![false; values.len()];
        for (m, bg, own) in &resolved {
            let mut set = (*own).clone();
            for nv in values {
                crate::unknowns::set_in(&mut set, nv, "band")?;
            }
            let (e, applied) = crate::unknowns::resolve(&set, m, bg)?;
            for (i, nv) in values.iter().enumerate() {
                active[i] |= applied.iter().any(|a| a.active && nv.split_once('=').is_some_and(|(n, _)| n == a.name));
            }
            effects.push(e);
        }
        let kept = values.iter().zip(&active).filter(|(_, a)| **a).map(|(v, _)| v.clone()).collect();
        Ok((effects, kept))
    };
    let mut states: Vec<(Vec<Effect>, State)> = Vec::new();
    for p in points(&axes, design, plan.seed) {
        let (e, kept) = effect(&p.values).map_err(|e| format!("experiment '{}', band: {e}", plan.experiment))?;
        match states.iter_mut().find(|(k, _)| *k == e) {
            Some((_, s)) => s.points.push(p),
            // The state's unknowns: the point's, without those that change nothing here.
            None => states.push((e, State { values: kept, points: vec![p] })),
        }
    }
    Ok(Layout { axes, states: states.into_iter().map(|(_, s)| s).collect(), notes })
}

/// What every line of a band shares (its experiment, design and axes), and what its state's
/// lines share.
#[derive(Debug)]
pub struct BandTag {
    pub state: usize,
    pub variant: usize,
    /// Which of the state's seeds: 0 for the plan's first seed.
    pub seed_index: usize,
    /// The line's `band` object without the figure: the experiment's and the state's parts.
    pub info: Arc<Value>,
    /// The run's figure.
    pub figure: fn(&crate::run::RunResult) -> crate::workload::Metric,
}

impl Clone for BandTag {
    fn clone(&self) -> Self {
        BandTag {
            state: self.state,
            variant: self.variant,
            seed_index: self.seed_index,
            info: self.info.clone(),
            figure: self.figure,
        }
    }
}

impl BandTag {
    /// The line's `band` object, with the run's figure.
    pub fn line(&self, r: &crate::run::RunResult) -> Value {
        let m = (self.figure)(r);
        let mut v = (*self.info).clone();
        v["variant"] = json!(self.variant);
        v["seed_index"] = json!(self.seed_index);
        v["figure"] = json!({"name": m.name, "unit": m.unit, "lower_is_better": m.lower_is_better, "value": m.value});
        v
    }
}

/// The runs of a band of `plan`, in sweep order: the default state over the plan's seeds, then
/// each other state over `o.runs` seeds (at most the plan's), variant after variant. Each
/// state's first run is built once here, so a bad state fails before anything runs. `index0`
/// is the first run's position in the grid.
pub fn runs(plan: &Plan, o: &BandOpts, index0: usize) -> Result<Vec<GridRun>, String> {
    let Layout { axes, states, notes } = states(plan, o.design)?;
    let band_runs = o.runs.clamp(1, plan.runs.max(1));
    let common = json!({
        "experiment": plan.experiment,
        "design": o.design.name(),
        "axes": axes.iter().map(Axis::describe).collect::<Vec<_>>(),
        "notes": notes,
        "variants": plan.variants.iter().map(|v| v.label.clone()).collect::<Vec<_>>(),
        "published": plan.variants.iter().map(|v| v.published).collect::<Vec<_>>(),
        "point_runs": plan.runs,
        "band_runs": band_runs,
    });
    let mut out = Vec::new();
    for (si, st) in states.iter().enumerate() {
        let mut info = common.clone();
        info["state"] = json!(si);
        info["values"] = json!(st.values);
        info["points"] = json!(st.points);
        let info = Arc::new(info);
        let seeds = if si == 0 { plan.runs } else { band_runs };
        for (vi, v) in plan.variants.iter().enumerate() {
            let mut spec = v.spec.clone();
            for nv in &st.values {
                spec.set("unknown", nv)?;
            }
            if vi == 0 {
                crate::run::build(&spec).map_err(|e| {
                    format!("experiment '{}', band state {si} ({}): {e}", plan.experiment, st.values.join(" "))
                })?;
            }
            let label = crate::sweep::variant_label(vi, &spec);
            for i in 0..seeds {
                let mut s = spec.clone();
                s.seed = plan.seed + i as u64;
                out.push(GridRun {
                    index: index0 + out.len(),
                    group: format!("band {}", plan.experiment),
                    variant: label.clone(),
                    experiment: Some(plan.experiment.clone()),
                    spec: s,
                    band: Some(BandTag {
                        state: si,
                        variant: vi,
                        seed_index: i,
                        info: info.clone(),
                        figure: plan.figure,
                    }),
                });
            }
        }
    }
    Ok(out)
}

/// Run a band's runs on `jobs` threads: the default state's results per variant (in seed
/// order, for the experiment's own table) and every run's sweep line (in run order).
pub fn execute(
    plan: &Plan,
    runs: &[GridRun],
    jobs: usize,
) -> Result<(Vec<Vec<crate::run::RunResult>>, Vec<Value>), String> {
    let specs: Vec<crate::spec::RunSpec> = runs.iter().map(|r| r.spec.clone()).collect();
    let out = crate::run::run_all_map(&specs, jobs, |i, r| {
        let line = crate::sweep::run_line_value(&runs[i], &r);
        let keep = runs[i].band.as_ref().is_some_and(|b| b.state == 0);
        (keep.then_some(r), line)
    })?;
    let mut point: Vec<Vec<crate::run::RunResult>> = plan.variants.iter().map(|_| Vec::new()).collect();
    let mut lines = Vec::with_capacity(out.len());
    for ((r, line), run) in out.into_iter().zip(runs) {
        if let (Some(r), Some(b)) = (r, &run.band) {
            point[b.variant].push(r);
        }
        lines.push(line);
    }
    Ok((point, lines))
}

/// One row's band: its figure normalized to the point answer's baseline, at the default state
/// and at its lowest and highest over the states.
#[derive(Debug, Clone, Serialize)]
pub struct BandRow {
    pub variant: String,
    pub point: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub min_state: usize,
    pub max_state: usize,
    /// The same in the figure's own unit.
    pub point_value: Option<f64>,
    pub min_value: f64,
    pub max_value: f64,
}

/// One variant's ratio to the baseline within each state (state 0: the point answer's).
#[derive(Debug, Clone, Serialize)]
pub struct RatioRow {
    pub variant: String,
    pub point: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub min_state: usize,
    pub max_state: usize,
    /// The published ratio of the row (its published figure over the first row's), beside:
    /// a check, never an input.
    pub published: Option<f64>,
    /// The ratio in every state (`None` where a state's runs are missing).
    pub per_state: Vec<Option<f64>>,
}

/// One value of one unknown alone, in one row.
#[derive(Debug, Clone, Serialize)]
pub struct SensitivityPoint {
    /// The value; `(not set)` for the default state.
    pub value: String,
    pub state: usize,
    /// The row's normalized figure there.
    pub normalized: Option<f64>,
    /// The row's ratio to the baseline in that state.
    pub ratio: Option<f64>,
}

/// How far one unknown alone moves one row: the row's normalized figure and its ratio to the
/// baseline as the unknown takes each of its design values, every other unknown at its default.
#[derive(Debug, Clone, Serialize)]
pub struct SensitivityCell {
    pub variant: String,
    pub unknown: String,
    pub values: Vec<SensitivityPoint>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub ratio_min: Option<f64>,
    pub ratio_max: Option<f64>,
}

/// One state with its figures.
#[derive(Debug, Clone, Serialize)]
pub struct StateReport {
    pub state: usize,
    pub values: Vec<String>,
    pub points: Vec<Point>,
    /// Seeds per variant found.
    pub runs: Vec<usize>,
    /// The mean figure of each variant (`None`: no runs).
    pub means: Vec<Option<f64>>,
}

/// A band's tables.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub experiment: String,
    pub design: String,
    pub axes: Vec<String>,
    pub notes: Vec<String>,
    pub figure: String,
    pub unit: String,
    pub variants: Vec<String>,
    pub point_runs: usize,
    pub band_runs: usize,
    /// The default state's first variant over the band's seeds, in the figure's unit: what
    /// every figure is normalized to.
    pub baseline: Option<f64>,
    pub states: Vec<StateReport>,
    pub band: Vec<BandRow>,
    pub ratios: Vec<RatioRow>,
    pub sensitivity: Vec<SensitivityCell>,
}

fn min_max(v: impl Iterator<Item = (usize, f64)>) -> Option<(f64, usize, f64, usize)> {
    v.fold(None, |acc, (s, x)| match acc {
        None => Some((x, s, x, s)),
        Some((lo, ls, hi, hs)) => {
            let (lo, ls) = if x < lo { (x, s) } else { (lo, ls) };
            let (hi, hs) = if x > hi { (x, s) } else { (hi, hs) };
            Some((lo, ls, hi, hs))
        }
    })
}

/// The band of one experiment from its sweep lines (any order; each line's `band` object
/// says its state and variant). Errors name what a line lacks.
pub fn analyze(lines: &[&Value]) -> Result<Report, String> {
    let first = lines.first().ok_or("a band with no runs")?;
    let b0 = &first["band"];
    let strs = |v: &Value| -> Vec<String> {
        v.as_array().map_or(Vec::new(), |a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
    };
    let variants = strs(&b0["variants"]);
    let nv = variants.len();
    if nv == 0 {
        return Err(format!("band of {}: the lines name no variants", b0["experiment"]));
    }
    // state -> (values, points, per-variant figures)
    type Acc = (Vec<String>, Vec<Point>, Vec<Vec<f64>>);
    let mut by_state: BTreeMap<usize, Acc> = BTreeMap::new();
    // Every state over the same seeds, the first `band_runs`: differences between states are
    // then the unknowns', not more seeds' (the default state's other seeds are the point
    // answer's only).
    let band_runs = b0["band_runs"].as_u64().unwrap_or(u64::MAX);
    for l in lines {
        let b = &l["band"];
        if b["seed_index"].as_u64().is_some_and(|i| i >= band_runs) {
            continue;
        }
        let (Some(s), Some(v), Some(x)) =
            (b["state"].as_u64(), b["variant"].as_u64(), b.pointer("/figure/value").and_then(Value::as_f64))
        else {
            return Err(format!("band line {}: expected band.state, band.variant and band.figure.value", l["key"]));
        };
        let e = by_state.entry(s as usize).or_insert_with(|| {
            let points = b["points"].as_array().map_or(Vec::new(), |a| {
                a.iter().filter_map(|p| serde_json::from_value::<Point>(p.clone()).ok()).collect()
            });
            (strs(&b["values"]), points, vec![Vec::new(); nv])
        });
        if (v as usize) < nv {
            e.2[v as usize].push(x);
        }
    }
    let mean = |xs: &[f64]| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
    let states: Vec<StateReport> = by_state
        .iter()
        .map(|(s, (values, points, figs))| StateReport {
            state: *s,
            values: values.clone(),
            points: points.clone(),
            runs: figs.iter().map(Vec::len).collect(),
            means: figs.iter().map(|f| mean(f)).collect(),
        })
        .collect();
    let at = |s: usize| states.iter().find(|x| x.state == s);
    let baseline = at(0).and_then(|s| s.means[0]).filter(|b| *b != 0.0);
    let base_or_one = baseline.unwrap_or(1.0);
    let norm = |x: f64| x / base_or_one;
    let ratio = |st: &StateReport, v: usize| match (st.means[v], st.means[0]) {
        (Some(x), Some(b)) if b != 0.0 => Some(x / b),
        _ => None,
    };
    let mut band = Vec::new();
    let mut ratios = Vec::new();
    // A published ratio: the row's published figure over the first row's.
    let published: Vec<Option<f64>> =
        b0["published"].as_array().map_or(vec![None; nv], |a| a.iter().map(Value::as_f64).collect());
    let published: Vec<Option<f64>> = published
        .iter()
        .map(|p| match (p, published.first().copied().flatten()) {
            (Some(p), Some(b)) if b != 0.0 => Some(p / b),
            _ => None,
        })
        .collect();
    for (v, name) in variants.iter().enumerate() {
        let point_value = at(0).and_then(|s| s.means[v]);
        if let Some((lo, ls, hi, hs)) = min_max(states.iter().filter_map(|s| s.means[v].map(|x| (s.state, x)))) {
            band.push(BandRow {
                variant: name.clone(),
                point: point_value.map(norm),
                min: norm(lo),
                max: norm(hi),
                min_state: ls,
                max_state: hs,
                point_value,
                min_value: lo,
                max_value: hi,
            });
        }
        if v == 0 {
            continue;
        }
        let per_state: Vec<Option<f64>> = states.iter().map(|s| ratio(s, v)).collect();
        if let Some((lo, ls, hi, hs)) =
            min_max(states.iter().zip(&per_state).filter_map(|(s, r)| r.map(|r| (s.state, r))))
        {
            ratios.push(RatioRow {
                variant: name.clone(),
                point: at(0).and_then(|s| ratio(s, v)),
                min: lo,
                max: hi,
                min_state: ls,
                max_state: hs,
                published: published.get(v).copied().flatten(),
                per_state,
            });
        }
    }
    // Sensitivity: per unknown in the axes' order, the default state (the unknown not set) and
    // its one-at-a-time points.
    let axis_names: Vec<String> =
        strs(&b0["axes"]).iter().map(|a| a.split(':').next().unwrap_or("").trim().to_string()).collect();
    let mut sensitivity = Vec::new();
    for (v, name) in variants.iter().enumerate() {
        for u in &axis_names {
            let point = |value: &str, st: &StateReport| SensitivityPoint {
                value: value.to_string(),
                state: st.state,
                normalized: st.means[v].map(norm),
                ratio: ratio(st, v),
            };
            let mut values: Vec<SensitivityPoint> = at(0).map(|st| point("(not set)", st)).into_iter().collect();
            for st in &states {
                for p in st.points.iter().filter(|p| p.kind == "one-at-a-time") {
                    if let Some(val) = p.values.first().and_then(|nv| nv.strip_prefix(&format!("{u}="))) {
                        values.push(point(val, st));
                    }
                }
            }
            let range = |sel: fn(&SensitivityPoint) -> Option<f64>| {
                min_max(values.iter().filter_map(sel).map(|x| (0, x))).map(|(lo, _, hi, _)| (lo, hi))
            };
            let n = range(|x| x.normalized);
            let r = if v == 0 { None } else { range(|x| x.ratio) };
            sensitivity.push(SensitivityCell {
                variant: name.clone(),
                unknown: u.clone(),
                values,
                min: n.map(|x| x.0),
                max: n.map(|x| x.1),
                ratio_min: r.map(|x| x.0),
                ratio_max: r.map(|x| x.1),
            });
        }
    }
    let fl = first.pointer("/band/figure").cloned().unwrap_or(Value::Null);
    Ok(Report {
        experiment: b0["experiment"].as_str().unwrap_or("").to_string(),
        design: b0["design"].as_str().unwrap_or("").to_string(),
        axes: strs(&b0["axes"]),
        notes: strs(&b0["notes"]),
        figure: fl["name"].as_str().unwrap_or("figure").to_string(),
        unit: fl["unit"].as_str().unwrap_or("").to_string(),
        variants,
        point_runs: b0["point_runs"].as_u64().unwrap_or(0) as usize,
        band_runs: b0["band_runs"].as_u64().unwrap_or(0) as usize,
        baseline,
        states,
        band,
        ratios,
        sensitivity,
    })
}

/// The band's tables as text (what `reproduce --band` prints after the point answer, and
/// `merge` for a band's lines).
pub fn render(r: &Report) -> String {
    use crate::report::render_grid;
    let f3 = |x: f64| format!("{x:.3}");
    let opt = |x: Option<f64>| x.map_or("-".to_string(), f3);
    let s = |n: usize| format!("s{n}");
    let mut named: Vec<usize> = Vec::new();
    let mut o = String::new();
    let count = |k: &str| r.states.iter().flat_map(|s| &s.points).filter(|p| p.kind == k).count();
    // `auto` names what it resolved to by the points it made.
    let design = match r.design.as_str() {
        "grid" => format!("grid of {} points", count("grid")),
        "auto" if count("lhs") == 0 => format!("grid (auto) of {} points", count("grid")),
        d => format!("Latin hypercube ({d}) of {} points", count("lhs")),
    };
    o.push_str(&format!(
        "\nBand of {} over its unknowns: the default state, {} one-at-a-time points and a {design}; {} distinct states\n",
        r.experiment,
        count("one-at-a-time"),
        r.states.len()
    ));
    for a in &r.axes {
        o.push_str(&format!("  {a}\n"));
    }
    for n in &r.notes {
        o.push_str(&format!("  note: {n}\n"));
    }
    let seeds =
        if r.band_runs == 1 { "its first seed".to_string() } else { format!("its first {} seeds", r.band_runs) };
    o.push_str(&format!(
        "State s0 (every unknown at its default) is the point answer (the table above, over {} seeds); here every \
         state, s0 too, is taken over {seeds}, the same in every state.\n",
        r.point_runs
    ));
    let base = r.baseline.map_or("-".into(), |b| format!("{b:.3} {}", r.unit));
    o.push_str(&format!(
        "\n{} of each row normalized to {} at s0 ({base}): at s0, and its band over the states\n",
        r.figure, r.variants[0]
    ));
    let rows: Vec<Vec<String>> = r
        .band
        .iter()
        .map(|b| {
            named.extend([b.min_state, b.max_state]);
            vec![b.variant.clone(), opt(b.point), f3(b.min), f3(b.max), s(b.min_state), s(b.max_state)]
        })
        .collect();
    let h = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    o.push_str(&render_grid(&h(&["variant", "s0", "min", "max", "at min", "at max"]), &rows));
    if !r.ratios.is_empty() {
        o.push_str(&format!(
            "\nRatios within one state: each row's {} over {}'s in the same state (what one boot of one machine compares)\n",
            r.figure, r.variants[0]
        ));
        let rows: Vec<Vec<String>> = r
            .ratios
            .iter()
            .map(|x| {
                named.extend([x.min_state, x.max_state]);
                vec![
                    x.variant.clone(),
                    opt(x.point),
                    f3(x.min),
                    f3(x.max),
                    s(x.min_state),
                    s(x.max_state),
                    x.published.map_or("-".into(), |p| format!("{p:.3}")),
                ]
            })
            .collect();
        o.push_str(&render_grid(&h(&["variant", "s0", "min", "max", "at min", "at max", "published"]), &rows));
    }
    let axes: Vec<String> = {
        let mut a: Vec<String> = Vec::new();
        for c in &r.sensitivity {
            if !a.contains(&c.unknown) {
                a.push(c.unknown.clone());
            }
        }
        a
    };
    let range = |lo: Option<f64>, hi: Option<f64>| match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo:.3}..{hi:.3}"),
        _ => "-".into(),
    };
    for (title, ratio) in [
        (
            format!(
                "Sensitivity: each row's normalized {} as one unknown alone takes its values (not set, s0, and each design value; the others not set), min..max",
                r.figure
            ),
            false,
        ),
        (format!("Sensitivity of the ratios within one state (over {}), min..max", r.variants[0]), true),
    ] {
        let rows: Vec<Vec<String>> = r
            .variants
            .iter()
            .skip(usize::from(ratio))
            .map(|v| {
                let mut row = vec![v.clone()];
                for u in &axes {
                    let c = r.sensitivity.iter().find(|c| &c.variant == v && &c.unknown == u);
                    row.push(c.map_or("-".into(), |c| {
                        if ratio {
                            range(c.ratio_min, c.ratio_max)
                        } else {
                            range(c.min, c.max)
                        }
                    }));
                }
                row
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut header = vec!["variant".to_string()];
        header.extend(axes.iter().cloned());
        o.push_str(&format!("\n{title}\n"));
        o.push_str(&render_grid(&header, &rows));
    }
    named.sort_unstable();
    named.dedup();
    o.push_str("\nStates named above (NAME=VALUE of each unknown set; s0: none):\n");
    for n in named {
        if let Some(st) = r.states.iter().find(|x| x.state == n) {
            let v =
                if st.values.is_empty() { "(every unknown at its default)".to_string() } else { st.values.join(" ") };
            o.push_str(&format!("  s{n:<5} {v}\n"));
        }
    }
    o
}

/// The JSON fields `reproduce --band --json` adds to an experiment's document: `band` (the
/// design, the states with their figures, and each row's band), `ratios` and `sensitivity`.
pub fn json_fields(r: &Report) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(
        "band".into(),
        json!({
            "experiment": r.experiment,
            "design": r.design,
            "axes": r.axes,
            "notes": r.notes,
            "figure": r.figure,
            "unit": r.unit,
            "point_runs": r.point_runs,
            "band_runs": r.band_runs,
            "baseline": r.baseline,
            "rows": r.band,
            "states": r.states,
        }),
    );
    m.insert("ratios".into(), json!(r.ratios));
    m.insert("sensitivity".into(), json!(r.sensitivity));
    m
}

/// The band of an experiment (`reproduce --band`): its tables as text, each row's band of its
/// normalized figure, and the band of each variant's ratio to the baseline within one state.
pub fn section_html(r: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!("<section><h2>{} over its unknowns</h2>\n", crate::html::esc(&r.experiment)));
    s.push_str(&format!("<pre>{}</pre>\n", crate::html::esc(&render(r))));
    let bars: Vec<crate::html::BandBar> = r
        .band
        .iter()
        .map(|b| crate::html::BandBar {
            label: b.variant.clone(),
            point: b.point,
            lo: b.min,
            hi: b.max,
            published: None,
        })
        .collect();
    let caption = format!(
        "{} normalized to {} at s0 (bar: band over {} states, |: s0, the point answer)",
        r.figure,
        r.variants[0],
        r.states.len()
    );
    crate::html::figure(
        &mut s,
        "Band of each row",
        crate::html::band_chart(&bars, &caption, &format!("normalized {}", r.figure)),
    );
    if !r.ratios.is_empty() {
        let bars: Vec<crate::html::BandBar> = r
            .ratios
            .iter()
            .map(|x| crate::html::BandBar {
                label: x.variant.clone(),
                point: x.point,
                lo: x.min,
                hi: x.max,
                published: x.published,
            })
            .collect();
        let caption = format!(
            "{} over {} within one state (bar: band over the states, |: s0, red ◆: published)",
            r.figure, r.variants[0]
        );
        crate::html::figure(
            &mut s,
            "Ratios within one state",
            crate::html::band_chart(&bars, &caption, &format!("ratio of {}", r.figure)),
        );
    }
    s.push_str("</section>\n");
    s
}
