//! `reproduce X --calibrate`: the values of an experiment's named unknowns that best match its
//! controls (published figures of the baseline row that no variant changes in the model,
//! [`crate::experiments::Control`]), then every variant's prediction at those values with its
//! band over the unknowns not fitted (docs/unknowns.md §9).
//!
//! The search, stated and deterministic:
//! 1. **Which unknowns.** Each of the plan's axes alone at each of its band values
//!    ([`Axis::grid`]), the others not set; its score is the most it moves the controls from the
//!    default state, `max over values of sum over controls ((m - m_default) / spread)^2`. The
//!    `k = min(controls, axes)` highest scores above zero are fitted (ties: the axes' order); an
//!    unknown that moves no control is never fitted.
//! 2. **The grid** of the fitted unknowns' band values (every value of an enumeration; an
//!    interval's ends and midpoint), then [`ROUNDS`] rounds of coordinate refinement: in round
//!    `r` each fitted interval in turn tries the best point's value `± range / 2^(r+1)`, and
//!    moves only on a strictly lower loss.
//! 3. **The loss**: `sum over controls ((m - published) / spread)^2`, `m` the control's mean over
//!    the plan's seeds (the same seeds at every point).
//!
//! Only the baseline row runs in the search: [`search`] takes the baseline's run spec and the
//! controls, nothing else of the plan, so no figure of a patch's effect (a patched row, a
//! normalized or a published figure other than a control's) can enter a score, a loss or the
//! choice of unknowns. Points that put the machine in the same state
//! ([`crate::unknowns::Effect`]) are run once. The runs are ordinary deterministic runs on the
//! sweep's executor ([`crate::run::run_all_map`], as a band's); the predictions are a band
//! ([`super::band`]) of the plan with the fitted values set on every variant.

use crate::experiments::{Control, Plan};
use crate::spec::RunSpec;
use crate::unknowns::{Axis, Domain, Effect};
use serde::Serialize;
use serde_json::{json, Value};

/// Rounds of refinement after the grid.
pub const ROUNDS: u32 = 3;

/// An interval's positions are multiples of `1 / DEN` of its range.
const DEN: u64 = 1 << (ROUNDS + 1);

/// A position on one axis: an enumeration's index, or an interval's numerator over [`DEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coord {
    Index(usize),
    Frac(u64),
}

fn value_at(a: &Axis, c: Coord) -> String {
    match (&a.domain, c) {
        (Domain::Values(vs), Coord::Index(i)) => vs[i.min(vs.len() - 1)].clone(),
        (_, Coord::Frac(n)) => a.at(n, DEN),
        (Domain::Interval { lo, .. }, Coord::Index(_)) => lo.clone(),
    }
}

/// An axis's grid positions: every value of an enumeration, an interval's ends and midpoint.
fn grid_coords(a: &Axis) -> Vec<Coord> {
    match &a.domain {
        Domain::Values(vs) => (0..vs.len()).map(Coord::Index).collect(),
        Domain::Interval { .. } => vec![Coord::Frac(0), Coord::Frac(DEN / 2), Coord::Frac(DEN)],
    }
}

/// One point the search ran (or found already run in the same state).
#[derive(Debug, Clone, Serialize)]
pub struct Evaluated {
    /// `default`, `sensitivity`, `grid` or `refine N`.
    pub stage: String,
    /// `NAME=VALUE` of each unknown set.
    pub values: Vec<String>,
    /// Each control's mean.
    pub means: Vec<f64>,
    pub loss: f64,
}

/// How much one unknown alone moves the controls, and whether it is fitted.
#[derive(Debug, Clone, Serialize)]
pub struct Selection {
    pub unknown: String,
    /// The most it alone moves the controls from the default state, in squared spreads.
    pub score: f64,
    pub fitted: bool,
}

/// One control at the default state and at the optimum.
#[derive(Debug, Clone, Serialize)]
pub struct ControlFit {
    pub name: String,
    pub unit: String,
    pub published: f64,
    pub spread: f64,
    pub spread_source: String,
    pub source: String,
    pub default: f64,
    pub fitted: f64,
    /// (fitted - published) / spread.
    pub residual: f64,
}

/// A calibration's result.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub experiment: String,
    /// The baseline row, the only one the search ran.
    pub row: String,
    pub seeds: Vec<u64>,
    pub rounds: u32,
    pub selection: Vec<Selection>,
    pub controls: Vec<ControlFit>,
    /// `NAME=VALUE` of each fitted unknown that applies at the optimum (set on every variant
    /// for the predictions).
    pub fitted: Vec<String>,
    /// Fitted unknowns that change nothing at the optimum (e.g. a host poll window in a guest
    /// that polls itself): left unset.
    pub inert: Vec<String>,
    pub loss: f64,
    pub default_loss: f64,
    /// Every point in the order the search took them.
    pub points: Vec<Evaluated>,
    /// Distinct machine states run, and runs.
    pub states: usize,
    pub runs: usize,
}

/// The baseline row's runs at sets of unknowns, each distinct state once.
struct Runner<'a> {
    base: &'a RunSpec,
    controls: &'a [Control],
    seeds: Vec<u64>,
    jobs: usize,
    machine: crate::hw::Machine,
    background: crate::background::Profile,
    /// Each state run so far and its control means.
    done: Vec<(Effect, Vec<f64>)>,
    runs: usize,
    /// Each control's figure name and unit (from the first run).
    names: Vec<(&'static str, &'static str)>,
}

impl<'a> Runner<'a> {
    fn new(base: &'a RunSpec, controls: &'a [Control], seeds: Vec<u64>, jobs: usize) -> Result<Runner<'a>, String> {
        let machine = crate::run::machine(&base.machine)?;
        let background = crate::run::background(base.background.as_deref().unwrap_or(&machine.background))?;
        Ok(Runner { base, controls, seeds, jobs, machine, background, done: Vec::new(), runs: 0, names: Vec::new() })
    }

    /// The state a point puts the machine in.
    fn effect(&self, values: &[String]) -> Result<Effect, String> {
        let mut set = self.base.unknowns.clone();
        for nv in values {
            crate::unknowns::set_in(&mut set, nv, "calibrate")?;
        }
        Ok(crate::unknowns::resolve(&set, &self.machine, &self.background)?.0)
    }

    /// The control means at each point (run in parallel, the states not run before).
    fn eval(&mut self, points: &[Vec<String>]) -> Result<Vec<Vec<f64>>, String> {
        let effects: Vec<Effect> = points.iter().map(|p| self.effect(p)).collect::<Result<_, _>>()?;
        let mut new: Vec<usize> = Vec::new();
        for (i, e) in effects.iter().enumerate() {
            if !self.done.iter().any(|(d, _)| d == e) && !new.iter().any(|&j| effects[j] == *e) {
                new.push(i);
            }
        }
        let mut specs = Vec::new();
        for &i in &new {
            let mut spec = self.base.clone();
            for nv in &points[i] {
                spec.set("unknown", nv)?;
            }
            for &s in &self.seeds {
                let mut sp = spec.clone();
                sp.seed = s;
                specs.push(sp);
            }
        }
        if !specs.is_empty() {
            crate::run::build(&specs[0])?;
        }
        let controls = self.controls;
        let figures = crate::run::run_all_map(&specs, self.jobs, |_, r| {
            controls.iter().map(|c| (c.figure)(&r)).map(|m| (m.value, m.name, m.unit)).collect::<Vec<_>>()
        })?;
        if let (true, Some(f)) = (self.names.is_empty(), figures.first()) {
            self.names = f.iter().map(|x| (x.1, x.2)).collect();
        }
        self.runs += specs.len();
        let n = self.seeds.len();
        for (k, &i) in new.iter().enumerate() {
            let runs = &figures[k * n..(k + 1) * n];
            let means = (0..controls.len()).map(|c| runs.iter().map(|f| f[c].0).sum::<f64>() / n as f64).collect();
            self.done.push((effects[i].clone(), means));
        }
        Ok(effects
            .iter()
            .map(|e| self.done.iter().find(|(d, _)| d == e).map(|(_, m)| m.clone()).unwrap_or_default())
            .collect())
    }
}

/// The search over `axes` that fits the baseline row `base` (over `seeds`) to `controls`: it
/// is given nothing else of the experiment. Returns the calibration without its experiment's
/// and row's names.
pub fn search(
    base: &RunSpec,
    controls: &[Control],
    axes: &[Axis],
    seeds: Vec<u64>,
    jobs: usize,
) -> Result<Calibration, String> {
    if controls.is_empty() {
        return Err("no controls to calibrate on".into());
    }
    if let Some(c) = controls.iter().find(|c| !(c.spread > 0.0 && c.spread.is_finite() && c.published.is_finite())) {
        return Err(format!(
            "a control's published value and spread must be finite, the spread positive (published {}, spread {})",
            c.published, c.spread
        ));
    }
    let mut r = Runner::new(base, controls, seeds.clone(), jobs)?;
    let loss = |m: &[f64]| crate::experiments::controls::loss(controls, m);
    let mut points: Vec<Evaluated> = Vec::new();
    let mut record = |stage: &str, values: &[Vec<String>], means: &[Vec<f64>]| {
        for (v, m) in values.iter().zip(means) {
            points.push(Evaluated { stage: stage.into(), values: v.clone(), means: m.clone(), loss: loss(m) });
        }
    };
    // 1. The default state and each unknown alone at each of its band values.
    let nv = |a: &Axis, c: Coord| format!("{}={}", a.unknown.name(), value_at(a, c));
    let mut alone: Vec<Vec<String>> = vec![Vec::new()];
    let mut owner: Vec<usize> = vec![usize::MAX];
    for (i, a) in axes.iter().enumerate() {
        for c in grid_coords(a) {
            alone.push(vec![nv(a, c)]);
            owner.push(i);
        }
    }
    let m = r.eval(&alone)?;
    record("default", &alone[..1], &m[..1]);
    record("sensitivity", &alone[1..], &m[1..]);
    let default = m[0].clone();
    let mut score = vec![0f64; axes.len()];
    for (p, o) in m.iter().zip(&owner).skip(1) {
        let s: f64 = controls.iter().zip(p).zip(&default).map(|((c, x), d)| ((x - d) / c.spread).powi(2)).sum();
        score[*o] = score[*o].max(s);
    }
    let mut order: Vec<usize> = (0..axes.len()).filter(|&i| score[i] > 0.0).collect();
    order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
    order.truncate(controls.len());
    order.sort_unstable();
    let chosen: Vec<&Axis> = order.iter().map(|&i| &axes[i]).collect();
    let selection = axes
        .iter()
        .enumerate()
        .map(|(i, a)| Selection { unknown: a.unknown.name().into(), score: score[i], fitted: order.contains(&i) })
        .collect();
    // 2. The grid of the chosen unknowns' band values.
    let at = |cs: &[Coord]| -> Vec<String> { chosen.iter().zip(cs).map(|(a, c)| nv(a, *c)).collect() };
    let mut combos: Vec<Vec<Coord>> = vec![Vec::new()];
    for a in &chosen {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                grid_coords(a).into_iter().map(move |x| {
                    let mut c = c.clone();
                    c.push(x);
                    c
                })
            })
            .collect();
    }
    let mut best: (Vec<Coord>, Vec<f64>, f64) = (Vec::new(), default.clone(), loss(&default));
    if !chosen.is_empty() {
        let values: Vec<Vec<String>> = combos.iter().map(|c| at(c)).collect();
        let m = r.eval(&values)?;
        record("grid", &values, &m);
        best = (combos[0].clone(), m[0].clone(), loss(&m[0]));
        for (c, m) in combos.iter().zip(&m).skip(1) {
            if loss(m) < best.2 {
                best = (c.clone(), m.clone(), loss(m));
            }
        }
        // 3. Refinement: each interval in turn, at a halving step.
        for round in 1..=ROUNDS {
            let step = DEN >> (round + 1);
            for (i, a) in chosen.iter().enumerate() {
                let Coord::Frac(x) = best.0[i] else { continue };
                if !matches!(a.domain, Domain::Interval { .. }) {
                    continue;
                }
                let cands: Vec<Vec<Coord>> = [x.checked_sub(step), Some(x + step).filter(|y| *y <= DEN)]
                    .into_iter()
                    .flatten()
                    .map(|y| {
                        let mut c = best.0.clone();
                        c[i] = Coord::Frac(y);
                        c
                    })
                    .collect();
                let values: Vec<Vec<String>> = cands.iter().map(|c| at(c)).collect();
                let m = r.eval(&values)?;
                record(&format!("refine {round}"), &values, &m);
                for (c, m) in cands.iter().zip(&m) {
                    if loss(m) < best.2 {
                        best = (c.clone(), m.clone(), loss(m));
                    }
                }
            }
        }
    }
    // The fitted values without those that change nothing, last first: each is dropped only if
    // the state without it is the same (two values can each be redundant given the other, as a
    // halted guest and a haltpoll guest that polls 0 ns, so never both).
    let mut fitted = if chosen.is_empty() { Vec::new() } else { at(&best.0) };
    let state = r.effect(&fitted)?;
    let mut inert = Vec::new();
    for i in (0..fitted.len()).rev() {
        let mut without = fitted.clone();
        let v = without.remove(i);
        if r.effect(&without)? == state {
            fitted = without;
            inert.insert(0, v);
        }
    }
    let controls_fit = controls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (name, unit) = r.names.get(i).copied().unwrap_or(("", ""));
            ControlFit {
                name: name.into(),
                unit: unit.into(),
                published: c.published,
                spread: c.spread,
                spread_source: c.spread_source.into(),
                source: c.source.into(),
                default: default[i],
                fitted: best.1[i],
                residual: c.residual(best.1[i]),
            }
        })
        .collect();
    Ok(Calibration {
        experiment: String::new(),
        row: String::new(),
        seeds,
        rounds: ROUNDS,
        selection,
        controls: controls_fit,
        fitted,
        inert,
        loss: best.2,
        default_loss: loss(&default),
        points,
        states: r.done.len(),
        runs: r.runs,
    })
}

/// Calibrate `plan` on its controls: the search over its axes (those no `--unknown` fixes) on
/// its baseline row only, over the plan's seeds.
pub fn calibrate(plan: &Plan, jobs: usize) -> Result<Calibration, String> {
    if plan.controls.is_empty() {
        return Err(format!(
            "experiment '{}' names no controls: nothing to calibrate on (docs/unknowns.md §9 says which experiments have controls)",
            plan.experiment
        ));
    }
    let (axes, _) = super::band::axes(plan);
    let base = &plan.variants.first().ok_or("an experiment with no variants")?.spec;
    let seeds = (0..plan.runs.max(1) as u64).map(|i| plan.seed + i).collect();
    let mut c = search(base, &plan.controls, &axes, seeds, jobs)
        .map_err(|e| format!("experiment '{}', calibrate: {e}", plan.experiment))?;
    c.experiment = plan.experiment.clone();
    c.row = plan.variants[0].label.clone();
    Ok(c)
}

/// The plan of the predictions: every variant with the fitted unknowns set (so a band of it
/// runs over the unknowns not fitted).
pub fn fixed(plan: &Plan, c: &Calibration) -> Result<Plan, String> {
    let mut p = plan.clone();
    for v in &mut p.variants {
        for nv in &c.fitted {
            v.spec.set("unknown", nv)?;
        }
    }
    Ok(p)
}

/// The calibration as text (what `reproduce --calibrate` prints before the predictions).
pub fn render(c: &Calibration) -> String {
    use crate::report::render_grid;
    let h = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let names: Vec<&str> = c.controls.iter().map(|x| x.name.as_str()).collect();
    let mut o = format!(
        "Calibration of {} on its controls: {}'s published {} (docs/unknowns.md §9)\n",
        c.experiment,
        c.row,
        names.join(", ")
    );
    o.push_str(&format!(
        "Search: each unknown alone at its band values scores the most it moves the controls from the default state \
         (sum of squared differences in spreads); the {} highest above zero are fitted (at most one per control); the \
         grid of their band values, then {} rounds of refinement of each interval (steps of 1/4, 1/8, ... of its range); \
         loss: sum over controls of ((simulated - published) / spread)^2; only {} runs, over seeds {}..{}.\n",
        c.controls.len(),
        c.rounds,
        c.row,
        c.seeds.first().copied().unwrap_or(0),
        c.seeds.last().copied().unwrap_or(0),
    ));
    o.push_str("\nWhich unknowns move the controls (score: squared spreads)\n");
    let rows: Vec<Vec<String>> = c
        .selection
        .iter()
        .map(|s| vec![s.unknown.clone(), format!("{:.3}", s.score), if s.fitted { "yes" } else { "no" }.into()])
        .collect();
    o.push_str(&render_grid(&h(&["unknown", "score", "fitted"]), &rows));
    o.push_str("\nThe controls at the default state and at the optimum (residual: (fitted - published) / spread)\n");
    let rows: Vec<Vec<String>> = c
        .controls
        .iter()
        .map(|x| {
            vec![
                format!("{} ({})", x.name, x.unit),
                format!("{}", x.published),
                format!("{}", x.spread),
                format!("{:.2}", x.default),
                format!("{:.2}", x.fitted),
                format!("{:+.2}", x.residual),
            ]
        })
        .collect();
    o.push_str(&render_grid(&h(&["control", "published", "spread", "default", "fitted", "residual"]), &rows));
    let fitted = if c.fitted.is_empty() { "(nothing: the default state)".to_string() } else { c.fitted.join(" ") };
    o.push_str(&format!(
        "Fitted: {fitted}; loss {:.3} (default state {:.3}); {} points, {} distinct states, {} runs\n",
        c.loss,
        c.default_loss,
        c.points.len(),
        c.states,
        c.runs
    ));
    if !c.inert.is_empty() {
        o.push_str(&format!("  change nothing at the optimum (left unset): {}\n", c.inert.join(" ")));
    }
    let mut sources: Vec<(&str, &str)> = Vec::new();
    for x in &c.controls {
        if !sources.contains(&(x.source.as_str(), x.spread_source.as_str())) {
            sources.push((&x.source, &x.spread_source));
        }
    }
    for (s, sp) in sources {
        o.push_str(&format!("  published: {s}\n  spread: {sp}\n"));
    }
    o.push_str(
        "\nPredictions: every variant with the fitted unknowns set (the table below), and its band over the unknowns not fitted\n",
    );
    o
}

/// `reproduce --calibrate --json`'s `calibration` field.
pub fn json_value(c: &Calibration) -> Value {
    json!(c)
}
