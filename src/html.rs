//! The self-contained HTML report (`reproduce X --html FILE`, `run ... --html FILE`): one file,
//! no network, every plot an inline SVG drawn with `plotters`' SVG backend.
//!
//! Per experiment: the comparison chart (each variant's normalized mean with its spread, the
//! published figure marked), the distribution over seeds (when the experiment exports its
//! per-seed values as `samples`), and, from a re-run of each variant's first seed with a trace
//! window: wakeup-latency CDFs (when there are wakeups), a per-CPU timeline of the window
//! (running task, idle state, hard IRQs and softirqs, IPIs as arrows from sender to receiver),
//! and the per-CPU phase breakdown. Floats live here and in `report`, never in the model.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use plotters::prelude::*;

use crate::focus::{Cpus as FocusCpus, Focus, Match, Trigger};
use crate::linux::engine::Phase;
use crate::report::Comparison;
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::trace::{Event, Record, TaskInfo, TraceSink, Vector};

/// CPUs shown in a timeline at most (those of interest, then the busiest in the window).
const TIMELINE_CPUS: usize = 12;

/// The records of one run's context window (the narrow window lies inside it), and each CPU's
/// state when it opens.
#[derive(Debug, Default, Clone)]
pub struct Window {
    pub start_ns: u64,
    pub len_ns: u64,
    /// The narrow window: its start and length (inside the context window).
    pub narrow_start_ns: u64,
    pub narrow_len_ns: u64,
    /// The record that opened the window (`None`: the trigger never fired; the window is the
    /// first one after the trigger's anchor).
    pub trigger: Option<Record>,
    pub records: Vec<Record>,
    /// Targets of each `ipi_send_cpumask` record in `records` (by record index).
    pub mask_targets: BTreeMap<usize, Vec<u32>>,
    /// Per CPU at the window's start: current pid and idle state (None = not in a state).
    pub initial: Vec<(u32, Option<u32>)>,
    pub comms: BTreeMap<u32, String>,
}

/// Apply a record to the per-CPU state (current task, idle state) a window starts from.
fn advance(state: &mut [(u32, Option<u32>)], r: &Record) {
    let c = r.cpu as usize;
    if c >= state.len() {
        return;
    }
    match r.event {
        Event::SchedSwitch { next_pid, .. } => state[c].0 = next_pid,
        Event::CpuIdle { state: s, .. } => state[c].1 = if s == u32::MAX { None } else { Some(s) },
        _ => {}
    }
}

/// A [`TraceSink`] that keeps one window around the first record its [`Trigger`] matches: it
/// holds the last stretch of records before it (a ring as long as the context window's lead),
/// so the window opens before the instant. Memory: one context window.
pub struct WindowSink {
    w: Arc<Mutex<Window>>,
    trigger: Trigger,
    /// The context window's lead and length.
    lead_ns: u64,
    len_ns: u64,
    ring: std::collections::VecDeque<(Record, Option<Vec<u32>>)>,
    /// Per-CPU state at the ring's oldest record.
    state: Vec<(u32, Option<u32>)>,
    opened: bool,
}

impl WindowSink {
    pub fn new(nr_cpus: u32, trigger: Trigger) -> (WindowSink, Arc<Mutex<Window>>) {
        let lead_ns = trigger.lead_ns * crate::focus::CONTEXT;
        let len_ns = trigger.span_ns * crate::focus::CONTEXT;
        let w = Window { len_ns, narrow_len_ns: trigger.span_ns, ..Default::default() };
        let a = Arc::new(Mutex::new(w));
        let sink = WindowSink {
            w: a.clone(),
            trigger,
            lead_ns,
            len_ns,
            ring: Default::default(),
            state: vec![(0, None); nr_cpus as usize],
            opened: false,
        };
        (sink, a)
    }

    /// Open the window at `t0`, the instant: the ring's records from the context window's start
    /// become its first records.
    fn open(&mut self, w: &mut Window, t0: u64, by: Option<Record>) {
        self.opened = true;
        w.trigger = by;
        w.start_ns = t0.saturating_sub(self.lead_ns);
        w.narrow_start_ns = t0.saturating_sub(self.trigger.lead_ns);
        while let Some((r, _)) = self.ring.front() {
            if r.ts_ns >= w.start_ns {
                break;
            }
            let (r, _) = self.ring.pop_front().expect("front");
            advance(&mut self.state, &r);
        }
        w.initial = self.state.clone();
        for (r, targets) in self.ring.drain(..) {
            if let Some(t) = targets {
                let i = w.records.len();
                w.mask_targets.insert(i, t);
            }
            w.records.push(r);
        }
    }
}

impl TraceSink for WindowSink {
    fn funcs(&mut self, _names: &[String]) {}

    fn tasks(&mut self, new: &[TaskInfo]) {
        let mut w = self.w.lock().expect("no panics hold the lock");
        for t in new {
            w.comms.insert(t.pid, t.comm.clone());
        }
    }

    fn write(&mut self, records: &[Record], masks: &[crate::hw::cpumask::CpuMask]) -> std::io::Result<()> {
        let w = self.w.clone();
        let mut w = w.lock().expect("no panics hold the lock");
        for r in records {
            let targets = match r.event {
                Event::IpiSendCpumask { mask, .. } => {
                    Some(masks.get(mask as usize).map(|m| m.iter().collect()).unwrap_or_default())
                }
                _ => None,
            };
            if !self.opened {
                let hit = r.ts_ns >= self.trigger.from_ns
                    && self.trigger.cpu.is_none_or(|c| c == r.cpu)
                    && self.trigger.what.hits(r, |p| w.comms.get(&p).cloned());
                self.ring.push_back((*r, targets.clone()));
                if hit {
                    // A window at a given time (any record) opens at that time exactly; one at
                    // an event, at the event.
                    let t0 = if self.trigger.what == Match::Any { self.trigger.from_ns } else { r.ts_ns };
                    let by = (self.trigger.what != Match::Any).then_some(*r);
                    self.open(&mut w, t0, by);
                    continue;
                }
                // Keep only the context window's lead.
                while let Some((old, _)) = self.ring.front() {
                    if old.ts_ns + self.lead_ns >= r.ts_ns {
                        break;
                    }
                    let (old, _) = self.ring.pop_front().expect("front");
                    advance(&mut self.state, &old);
                }
                continue;
            }
            if r.ts_ns >= w.start_ns + self.len_ns {
                break;
            }
            if let Some(t) = targets {
                let i = w.records.len();
                w.mask_targets.insert(i, t);
            }
            w.records.push(*r);
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> std::io::Result<u64> {
        let w = self.w.clone();
        let mut w = w.lock().expect("no panics hold the lock");
        if !self.opened {
            // The trigger never fired: the window after its anchor, as far as the run went.
            let t0 = self.ring.front().map_or(self.trigger.from_ns, |(r, _)| r.ts_ns.max(self.trigger.from_ns));
            self.open(&mut w, t0 + self.trigger.lead_ns, None);
        }
        Ok(w.records.len() as u64)
    }

    fn abort(self: Box<Self>) {}
}

/// One variant's detail run (its first seed, re-run with a window).
pub struct Detail {
    pub label: String,
    pub run: RunResult,
    pub window: Window,
    /// The focus the window was chosen by, and the rule as text.
    pub focus: Focus,
    pub rule: String,
}

/// Re-run `spec` keeping the window `focus` names. `first` is a run of the same spec already
/// made (the variant's first seed), whose figures anchor the focus (the middle of the run, its
/// first WARN); the re-run is the same run, so the instant is found again in its trace.
/// `reference` is another variant's run whose anchor stands in when `first` never reached it.
pub fn detail(
    label: &str,
    spec: &RunSpec,
    focus: &Focus,
    first: Option<&RunResult>,
    reference: Option<&RunResult>,
) -> Result<Detail, String> {
    let nr = crate::run::machine(&spec.machine)?.topo.nr_cpus;
    let (trigger, rule) = focus.trigger(first, reference);
    let (sink, win) = WindowSink::new(nr, trigger);
    let (run, _) = crate::run::execute_with_sink(spec, Box::new(sink), 0)?;
    let window = win.lock().expect("no panics hold the lock").clone();
    Ok(Detail { label: label.to_string(), run, window, focus: focus.clone(), rule })
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

pub type Plot = Result<String, String>;

fn perr<E: std::fmt::Debug>(e: E) -> String {
    format!("plot: {e:?}")
}

/// Horizontal bars: each variant's mean with mean ± stddev, the published figure as a red
/// diamond. Normalized to the first variant when the published figures are (the first one is
/// 1.0, as in ipistorm); in the metric's own units otherwise (schbench's p99.9 in us).
fn comparison_chart(c: &Comparison) -> Plot {
    let n = c.rows.len();
    let normalized = c.rows.first().and_then(|r| r.published).is_some_and(|p| (p - 1.0).abs() < 1e-9);
    // (value, spread, published) per row, in the chart's units.
    let vals: Vec<(f64, f64, Option<f64>)> = c
        .rows
        .iter()
        .map(|r| {
            if normalized {
                let sd = if r.mean != 0.0 { r.stddev / r.mean * r.normalized } else { 0.0 };
                (r.normalized, sd, r.published)
            } else {
                (r.mean, r.stddev, r.published)
            }
        })
        .collect();
    let mut svg = String::new();
    {
        let h = 80 + 34 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (900, h)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let xmax = vals.iter().map(|&(v, sd, p)| (v + sd).max(p.unwrap_or(0.0))).fold(1e-9f64, f64::max) * 1.1;
        let labels: Vec<String> = c.rows.iter().map(|r| r.variant.clone()).collect();
        let caption = if normalized {
            format!("{} normalized to {} (bar: mean, line: ± stddev, red ◆: published)", c.metric, labels[0])
        } else {
            format!("{} in {} (bar: mean, line: ± stddev, red ◆: published)", c.metric, c.unit)
        };
        let mut ch = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
            .map_err(perr)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| row_label(&labels, *y))
            .x_desc(format!(
                "{} {} ({})",
                if normalized { "normalized" } else { "" },
                c.metric,
                if c.lower_is_better { "lower is better" } else { "higher is better" }
            ))
            .draw()
            .map_err(perr)?;
        for (i, &(v, sd, published)) in vals.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            ch.draw_series(std::iter::once(Rectangle::new([(0.0, y + 0.2), (v, y + 0.8)], color(i).mix(0.8).filled())))
                .map_err(perr)?;
            if sd > 0.0 {
                ch.draw_series(std::iter::once(PathElement::new(
                    vec![(v - sd, y + 0.5), (v + sd, y + 0.5)],
                    BLACK.stroke_width(2),
                )))
                .map_err(perr)?;
            }
            if let Some(p) = published {
                ch.draw_series(std::iter::once(Polygon::new(
                    vec![(p, y + 0.25), (p + xmax * 0.012, y + 0.5), (p, y + 0.75), (p - xmax * 0.012, y + 0.5)],
                    RED.filled(),
                )))
                .map_err(perr)?;
            }
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

/// Per-seed values as points per variant, with each variant's mean as a tick.
fn seed_distribution(c: &Comparison) -> Option<Plot> {
    let samples: Vec<Vec<f64>> = c
        .rows
        .iter()
        .map(|r| {
            r.extra
                .get("samples")
                .and_then(|v| v.as_array())
                .map_or(Vec::new(), |a| a.iter().filter_map(|x| x.as_f64()).collect())
        })
        .collect();
    if samples.iter().all(|s| s.is_empty()) {
        return None;
    }
    let mut svg = String::new();
    let res = (|| -> Result<(), String> {
        let n = c.rows.len();
        let h = 80 + 34 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (900, h)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let all = samples.iter().flatten();
        let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-9);
        let labels: Vec<String> = c.rows.iter().map(|r| r.variant.clone()).collect();
        let mut ch = ChartBuilder::on(&root)
            .caption(format!("{} per seed ({}): one dot per seed, | = mean", c.metric, c.unit), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..n as f64)
            .map_err(perr)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| row_label(&labels, *y))
            .x_desc(c.unit.clone())
            .draw()
            .map_err(perr)?;
        for (i, s) in samples.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            ch.draw_series(s.iter().enumerate().map(|(k, &x)| {
                // A small deterministic vertical spread so equal values stay visible.
                let dy = (k as f64 % 5.0 - 2.0) * 0.06;
                Circle::new((x, y + dy), 4, color(i).filled())
            }))
            .map_err(perr)?;
            if !s.is_empty() {
                let m = s.iter().sum::<f64>() / s.len() as f64;
                ch.draw_series(std::iter::once(PathElement::new(
                    vec![(m, y - 0.35), (m, y + 0.35)],
                    BLACK.stroke_width(2),
                )))
                .map_err(perr)?;
            }
        }
        root.present().map_err(perr)?;
        Ok(())
    })();
    Some(res.map(|_| svg))
}

/// Wakeup latency CDFs, one line per variant (first seed).
fn latency_cdf(details: &[Detail]) -> Option<Plot> {
    let curves: Vec<(String, Vec<(f64, f64)>)> = details
        .iter()
        .filter(|d| !d.run.stats.wakeup_latency.is_empty())
        .map(|d| {
            let h = &d.run.stats.wakeup_latency;
            let total = h.len() as f64;
            let mut acc = 0u64;
            let pts = h
                .iter_recorded()
                .map(|v| {
                    acc += v.count_at_value();
                    (h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0, acc as f64 / total)
                })
                .collect();
            (d.label.clone(), pts)
        })
        .collect();
    if curves.is_empty() {
        return None;
    }
    let mut svg = String::new();
    let res = (|| -> Result<(), String> {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        // Up to the largest p99.9 so one outlier does not flatten the curves.
        let hists = || details.iter().map(|d| &d.run.stats.wakeup_latency).filter(|h| !h.is_empty());
        let xmax = hists().map(|h| h.max() as f64 / 1000.0).fold(0.01, f64::max) * 1.2;
        let xmin = hists().map(|h| h.min() as f64 / 1000.0).fold(f64::MAX, f64::min).max(0.01) / 1.2;
        let mut ch = ChartBuilder::on(&root)
            .caption("wakeup latency CDF, sched_waking to running (first seed of each variant)", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d((xmin..xmax).log_scale(), 0f64..1.0)
            .map_err(perr)?;
        ch.configure_mesh().x_desc("µs (log scale)").y_desc("fraction of wakeups").draw().map_err(perr)?;
        for (i, (label, pts)) in curves.iter().enumerate() {
            let c = color(i);
            let mut step = Vec::with_capacity(pts.len() * 2 + 1);
            let mut prev = 0.0;
            step.push((xmin, 0.0));
            for &(x, y) in pts {
                step.push((x, prev));
                step.push((x, y));
                prev = y;
            }
            step.push((xmax, prev));
            ch.draw_series(LineSeries::new(step, c.stroke_width(2)))
                .map_err(perr)?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        ch.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(perr)?;
        root.present().map_err(perr)?;
        Ok(())
    })();
    Some(res.map(|_| svg))
}

/// One CPU's segments in a window.
#[derive(Default)]
struct Lanes {
    /// (start, end, pid) of tasks other than idle.
    tasks: Vec<(f64, f64, u32)>,
    /// (start, end, state) in an idle state.
    idle: Vec<(f64, f64, u32)>,
    irq: Vec<(f64, f64)>,
    softirq: Vec<(f64, f64)>,
    /// A cross-CPU function call's callback running (`csd_function_entry` to `_exit`).
    csd: Vec<(f64, f64)>,
}

/// Colours of the timeline's marks (tests look for them in the SVG: see `MARKS`).
const IPI: RGBColor = RGBColor(0, 0, 255);
const KICK: RGBColor = RGBColor(0, 150, 60);
const MIGRATION: RGBColor = RGBColor(230, 110, 0);
const WARN: RGBColor = RGBColor(200, 0, 0);
const STACKING: RGBColor = RGBColor(20, 20, 20);
const BACKGROUND_TASK: RGBColor = RGBColor(200, 205, 215);

/// The marks a timeline draws and the colour of each, as the SVG writes it: an IPI arrow, a
/// polling kick (no IPI), a migration or push, a WARN, the first stacking wakeup.
pub const MARKS: &[(&str, &str)] = &[
    ("ipi", "#0000FF"),
    ("polling-kick", "#00963C"),
    ("migration", "#E66E00"),
    ("warn", "#C80000"),
    ("stacking", "#141414"),
];

/// An arrow between two CPUs: (time sent, from, time arrived, to), µs into the window.
type Arrow = (f64, u32, f64, u32);

/// Everything drawn in one timeline: lanes per CPU, arrows and markers, in µs from its start.
struct Drawing {
    lanes: Vec<Lanes>,
    /// IPIs, polling kicks and migrations.
    ipis: Vec<Arrow>,
    kicks: Vec<Arrow>,
    migrations: Vec<Arrow>,
    warns: Vec<(f64, u32)>,
    busy: Vec<u32>,
}

/// The records of `w` from `from` for `len` ns (the narrow window or the whole context one),
/// with each CPU's state at `from`.
fn draw_window(w: &Window, from: u64, len: u64) -> Drawing {
    let us = |t: u64| (t.saturating_sub(from)) as f64 / 1000.0;
    let end = len as f64 / 1000.0;
    let nr = w.initial.len();
    let mut state = w.initial.clone();
    let first = w.records.iter().position(|r| r.ts_ns >= from).unwrap_or(w.records.len());
    for r in &w.records[..first] {
        advance(&mut state, r);
    }
    let mut lanes: Vec<Lanes> = (0..nr).map(|_| Lanes::default()).collect();
    let mut cur: Vec<(u32, f64)> = state.iter().map(|&(p, _)| (p, 0.0)).collect();
    let mut idle: Vec<Option<(u32, f64)>> = state.iter().map(|&(_, s)| s.map(|s| (s, 0.0))).collect();
    let mut irq_open: Vec<Vec<f64>> = vec![Vec::new(); nr];
    let mut sirq_open: Vec<Option<f64>> = vec![None; nr];
    let mut csd_open: Vec<Option<f64>> = vec![None; nr];
    let mut pending: Vec<Vec<(f64, u32)>> = vec![Vec::new(); nr];
    let mut kicked: Vec<Vec<(f64, u32)>> = vec![Vec::new(); nr];
    let mut d = Drawing {
        lanes: Vec::new(),
        ipis: Vec::new(),
        kicks: Vec::new(),
        migrations: Vec::new(),
        warns: Vec::new(),
        busy: vec![0; nr],
    };
    for (i, r) in w.records.iter().enumerate().skip(first) {
        if r.ts_ns >= from + len {
            break;
        }
        let c = r.cpu as usize;
        if c >= nr {
            continue;
        }
        let t = us(r.ts_ns);
        match r.event {
            Event::SchedSwitch { next_pid, .. } => {
                let (pid, s) = cur[c];
                if pid != 0 {
                    lanes[c].tasks.push((s, t, pid));
                }
                cur[c] = (next_pid, t);
            }
            Event::CpuIdle { state, .. } => {
                if state == u32::MAX {
                    if let Some((st, s)) = idle[c].take() {
                        lanes[c].idle.push((s, t, st));
                    }
                    // A polling kick lands when the target leaves its idle state.
                    for (ts, from_cpu) in kicked[c].drain(..) {
                        d.kicks.push((ts, from_cpu, t, c as u32));
                    }
                } else {
                    idle[c] = Some((state, t));
                }
            }
            Event::VectorEntry { vector } => {
                irq_open[c].push(t);
                if vector != Vector::LocalTimer && !pending[c].is_empty() {
                    let (ts, from_cpu) = pending[c].remove(0);
                    d.ipis.push((ts, from_cpu, t, c as u32));
                }
            }
            Event::VectorExit { .. } => {
                if let Some(s) = irq_open[c].pop() {
                    lanes[c].irq.push((s, t));
                }
            }
            Event::SoftirqEntry { .. } => sirq_open[c] = Some(t),
            Event::SoftirqExit { .. } => {
                if let Some(s) = sirq_open[c].take() {
                    lanes[c].softirq.push((s, t));
                }
            }
            Event::IpiSendCpu { cpu: target, .. } if (target as usize) < nr => {
                pending[target as usize].push((t, r.cpu));
            }
            Event::IpiSendCpumask { .. } => {
                for &target in w.mask_targets.get(&i).into_iter().flatten() {
                    if (target as usize) < nr {
                        pending[target as usize].push((t, r.cpu));
                    }
                }
            }
            Event::SchedWakeIdleWithoutIpi { cpu: target } if (target as usize) < nr => {
                kicked[target as usize].push((t, r.cpu));
            }
            Event::SchedMigrateTask { orig_cpu, dest_cpu, .. } => d.migrations.push((t, orig_cpu, t, dest_cpu)),
            Event::Warning { .. } => d.warns.push((t, r.cpu)),
            Event::CsdFunctionEntry { .. } => csd_open[c] = Some(t),
            Event::CsdFunctionExit { .. } => {
                if let Some(s) = csd_open[c].take() {
                    lanes[c].csd.push((s, t));
                }
            }
            _ => {}
        }
        d.busy[c] += 1;
    }
    for c in 0..nr {
        let (pid, s) = cur[c];
        if pid != 0 {
            lanes[c].tasks.push((s, end, pid));
        }
        if let Some((st, s)) = idle[c] {
            lanes[c].idle.push((s, end, st));
        }
        for &s in &irq_open[c] {
            lanes[c].irq.push((s, end));
        }
        if let Some(s) = sirq_open[c] {
            lanes[c].softirq.push((s, end));
        }
        if let Some(s) = csd_open[c] {
            lanes[c].csd.push((s, end));
        }
        // A kick whose target never left idle in the window: drawn to the window's end.
        for (ts, from_cpu) in kicked[c].drain(..) {
            d.kicks.push((ts, from_cpu, end, c as u32));
        }
    }
    d.lanes = lanes;
    d
}

/// The CPU a record points at besides its own (an IPI's or a wakeup's target, a migration's
/// destination), if any.
fn target_of(r: &Record) -> Option<u32> {
    match r.event {
        Event::IpiSendCpu { cpu, .. } | Event::CsdQueueCpu { cpu, .. } | Event::SchedWakeIdleWithoutIpi { cpu } => {
            Some(cpu)
        }
        Event::SchedWaking { target_cpu, .. } | Event::SchedWakeup { target_cpu, .. } => Some(target_cpu),
        Event::SchedMigrateTask { dest_cpu, .. } => Some(dest_cpu),
        _ => None,
    }
}

/// The CPUs a detail's timeline shows, in CPU order, and those of interest among them: the
/// focus's CPUs (or where the workload's tasks ran), the CPU of the record that opened the
/// window and its target, then the busiest CPUs of the window up to [`TIMELINE_CPUS`].
fn timeline_cpus(d: &Detail, dr: &Drawing) -> (Vec<usize>, Vec<usize>) {
    let nr = dr.lanes.len();
    let mut interest: Vec<usize> = match &d.focus.cpus {
        FocusCpus::Listed(v) => v.iter().map(|&c| c as usize).filter(|&c| c < nr).collect(),
        FocusCpus::WorkloadTasks => {
            (0..nr).filter(|&c| dr.lanes[c].tasks.iter().any(|t| d.run.workload_pids.contains(&t.2))).collect()
        }
    };
    if let Some(r) = &d.window.trigger {
        interest.push(r.cpu as usize);
        interest.extend(target_of(r).map(|c| c as usize));
    }
    // What the window is about: a stacking wakeup's CPU, a migration's two ends.
    let w = &d.window;
    if let Some((t, c, _)) = d.run.stats.first_stacking {
        if t >= w.start_ns && t < w.start_ns + w.len_ns {
            interest.push(c as usize);
        }
    }
    for &(_, a, _, b) in &dr.migrations {
        interest.extend([a as usize, b as usize]);
    }
    interest.retain(|&c| c < nr);
    interest.sort();
    interest.dedup();
    interest.truncate(TIMELINE_CPUS);
    let mut order = interest.clone();
    let mut rest: Vec<usize> =
        (0..nr).filter(|&c| !order.contains(&c) && (dr.busy[c] > 0 || !dr.lanes[c].tasks.is_empty())).collect();
    rest.sort_by_key(|&c| std::cmp::Reverse(dr.busy[c]));
    order.extend(rest.into_iter().take(TIMELINE_CPUS.saturating_sub(order.len())));
    if order.is_empty() {
        order = (0..nr.min(4)).collect();
    }
    order.sort();
    (order, interest)
}

/// The per-CPU timeline of a detail run: its narrow window, or the context window around it.
fn timeline(d: &Detail, context: bool) -> Plot {
    let w = &d.window;
    let (from, len) = if context { (w.start_ns, w.len_ns) } else { (w.narrow_start_ns, w.narrow_len_ns) };
    let dr = draw_window(w, from, len);
    let end = len as f64 / 1000.0;
    let (order, interest) = timeline_cpus(d, &dr);
    let row: BTreeMap<usize, f64> = order.iter().enumerate().map(|(i, &c)| (c, (order.len() - 1 - i) as f64)).collect();
    let n = order.len();
    let workload = |pid: u32| d.run.workload_pids.contains(&pid);
    let mut pids: Vec<u32> =
        order.iter().flat_map(|&c| dr.lanes[c].tasks.iter().map(|t| t.2)).filter(|&p| workload(p)).collect();
    pids.sort();
    pids.dedup();
    let stacking = d.run.stats.first_stacking.filter(|&(t, _, _)| t >= from && t < from + len);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 130 + 40 * n.max(5) as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let labels: Vec<String> = order
            .iter()
            .rev()
            .map(|&c| if interest.contains(&c) { format!("CPU{c} *") } else { format!("CPU{c}") })
            .collect();
        let mut ch = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{}: {:.0} µs from {:.3} ms ({}; * = CPU of interest)",
                    d.label,
                    end,
                    from as f64 / 1e6,
                    if context { "context" } else { "around the instant" }
                ),
                ("sans-serif", 14),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..end * 1.28, 0f64..n as f64)
            .map_err(perr)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&|x| if *x <= end { format!("{x:.0}") } else { String::new() })
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| {
                let i = (y - 0.5).round();
                if (y - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                    labels[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_desc("µs into the window")
            .draw()
            .map_err(perr)?;
        for &c in &order {
            let y = row[&c];
            let l = &dr.lanes[c];
            ch.draw_series(l.idle.iter().map(|&(s, e, st)| {
                let g = 215u8.saturating_sub(25 * st.min(4) as u8);
                Rectangle::new([(s, y + 0.1), (e, y + 0.9)], RGBColor(g, g, g).filled())
            }))
            .map_err(perr)?;
            ch.draw_series(l.tasks.iter().map(|&(s, e, pid)| {
                let fill = match pids.iter().position(|&p| p == pid) {
                    Some(k) => color(k).mix(0.75).filled(),
                    None => BACKGROUND_TASK.filled(),
                };
                Rectangle::new([(s, y + 0.1), (e, y + 0.9)], fill)
            }))
            .map_err(perr)?;
            ch.draw_series(
                l.softirq
                    .iter()
                    .map(|&(s, e)| Rectangle::new([(s, y + 0.1), (e, y + 0.4)], RGBColor(255, 150, 0).filled())),
            )
            .map_err(perr)?;
            ch.draw_series(l.irq.iter().map(|&(s, e)| Rectangle::new([(s, y + 0.6), (e, y + 0.9)], RED.filled())))
                .map_err(perr)?;
            ch.draw_series(
                l.csd
                    .iter()
                    .map(|&(s, e)| Rectangle::new([(s, y + 0.42), (e, y + 0.58)], RGBColor(120, 0, 160).filled())),
            )
            .map_err(perr)?;
        }
        let arrow_sets: [(&Vec<Arrow>, RGBColor); 3] =
            [(&dr.ipis, IPI), (&dr.kicks, KICK), (&dr.migrations, MIGRATION)];
        for (set, col) in arrow_sets {
            for &(t0, from_cpu, t1, to) in set {
                let (Some(&y0), Some(&y1)) = (row.get(&(from_cpu as usize)), row.get(&(to as usize))) else {
                    continue;
                };
                let (y0, y1) = (y0 + 0.5, y1 + 0.5);
                ch.draw_series(std::iter::once(PathElement::new(vec![(t0, y0), (t1, y1)], col.stroke_width(2))))
                    .map_err(perr)?;
                let dir = if y1 < y0 { 1.0 } else { -1.0 };
                let dx = end * 0.004;
                ch.draw_series(std::iter::once(Polygon::new(
                    vec![(t1, y1), (t1 - dx, y1 + dir * 0.18), (t1 + dx * 0.3, y1 + dir * 0.18)],
                    col.filled(),
                )))
                .map_err(perr)?;
            }
        }
        for &(t, c) in &dr.warns {
            if let Some(&y) = row.get(&(c as usize)) {
                ch.draw_series(std::iter::once(Cross::new((t, y + 0.5), 8, WARN.stroke_width(3)))).map_err(perr)?;
            }
        }
        if let Some((t, c, _)) = stacking {
            let t = (t - from) as f64 / 1000.0;
            if let Some(&y) = row.get(&(c as usize)) {
                ch.draw_series(std::iter::once(TriangleMarker::new((t, y + 0.95), 9, STACKING.filled())))
                    .map_err(perr)?;
            }
        }
        // The legend: the workload's tasks by name, then what every other mark means.
        for (k, pid) in pids.iter().enumerate().take(8) {
            let name = w.comms.get(pid).cloned().unwrap_or_else(|| "?".into());
            let c = color(k);
            ch.draw_series(std::iter::once(Rectangle::new([(0.0, -1.0), (0.0, -1.0)], c.filled())))
                .map_err(perr)?
                .label(format!("{name}-{pid}"))
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.mix(0.75).filled()));
        }
        let boxes: [(&str, RGBColor); 5] = [
            ("other task (background)", BACKGROUND_TASK),
            ("idle state (darker: deeper)", RGBColor(165, 165, 165)),
            ("hard IRQ", RED),
            ("softirq", RGBColor(255, 150, 0)),
            ("csd callback", RGBColor(120, 0, 160)),
        ];
        for (label, c) in boxes {
            ch.draw_series(std::iter::once(Rectangle::new([(0.0, -1.0), (0.0, -1.0)], c.filled())))
                .map_err(perr)?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        let lines: [(&str, RGBColor); 3] =
            [("IPI", IPI), ("polling kick (no IPI)", KICK), ("migration / push", MIGRATION)];
        for (label, c) in lines {
            ch.draw_series(std::iter::once(PathElement::new(vec![(0.0, -1.0), (0.0, -1.0)], c)))
                .map_err(perr)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2)));
        }
        ch.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(perr)?;
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

/// Stacked bars of where each CPU's time went (the busiest CPUs of the first seed).
fn phase_breakdown(d: &Detail) -> Plot {
    let ph = &d.run.stats.phase_ns;
    let total = |c: usize| ph[c].iter().sum::<u64>().max(1) as f64;
    let active = |c: usize| ph[c].iter().sum::<u64>() - ph[c][Phase::IdleState as usize];
    // CPUs that spent at least 1% of their time outside an idle state.
    let mut order: Vec<usize> = (0..ph.len()).filter(|&c| active(c) as f64 >= 0.01 * total(c)).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(active(c)));
    order.truncate(TIMELINE_CPUS);
    if order.is_empty() {
        order = (0..ph.len().min(2)).collect();
    }
    order.sort();
    let n = order.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 110 + 30 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let labels: Vec<String> = order.iter().rev().map(|c| format!("CPU{c}")).collect();
        let mut ch = ChartBuilder::on(&root)
            .caption(
                format!("{}: where each CPU's time went (CPUs busy >= 1% of the run, first seed)", d.label),
                ("sans-serif", 14),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..130.0, 0f64..n as f64)
            .map_err(perr)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .x_labels(6)
            .x_label_formatter(&|x| if *x <= 100.0 { format!("{x:.0}%") } else { String::new() })
            .y_label_formatter(&|y| {
                let i = (y - 0.5).round();
                if (y - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                    labels[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(perr)?;
        for (pi, p) in Phase::ALL.iter().enumerate() {
            let rects: Vec<_> = order
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let y = (n - 1 - i) as f64;
                    let before: u64 = ph[c][..*p as usize].iter().sum();
                    let x0 = before as f64 / total(c) * 100.0;
                    let x1 = (before + ph[c][*p as usize]) as f64 / total(c) * 100.0;
                    Rectangle::new([(x0, y + 0.15), (x1, y + 0.85)], color(pi).filled())
                })
                .collect();
            let col = color(pi);
            ch.draw_series(rects)
                .map_err(perr)?
                .label(p.name())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
        }
        ch.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(perr)?;
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

pub fn figure(out: &mut String, title: &str, svg: Plot) {
    out.push_str(&format!("<figure><figcaption>{}</figcaption>\n", esc(title)));
    match svg {
        Ok(s) => out.push_str(&s),
        Err(e) => out.push_str(&format!("<p class=err>{}</p>", esc(&e))),
    }
    out.push_str("</figure>\n");
}

/// The section of one experiment (or one `run`): its table, then the plots.
pub fn section(c: &Comparison, details: &[Detail]) -> String {
    let mut s = String::new();
    s.push_str(&format!("<section><h2>{}</h2>\n", esc(&c.experiment)));
    // The table as the terminal shows it (its notes included).
    s.push_str(&format!("<pre>{}</pre>\n", esc(&crate::report::render_table(c))));
    if !c.rows.is_empty() {
        figure(&mut s, "Comparison", comparison_chart(c));
    }
    match seed_distribution(c) {
        Some(p) => figure(&mut s, "Distribution over seeds", p),
        None => s.push_str(
            "<p>(This experiment does not export per-seed values; the comparison chart shows mean ± stddev.)</p>\n",
        ),
    }
    match latency_cdf(details) {
        Some(p) => figure(&mut s, "Wakeup latency", p),
        None => s.push_str("<p>(No task wakeups were measured in these runs: no latency CDF.)</p>\n"),
    }
    for d in details {
        timelines(&mut s, d);
    }
    for d in details {
        figure(&mut s, &format!("Phases: {}", d.label), phase_breakdown(d));
    }
    s.push_str("</section>\n");
    s
}

/// A detail's two timelines (around the instant, and its context) and the rule that chose
/// the window.
fn timelines(s: &mut String, d: &Detail) {
    figure(s, &format!("Timeline: {}", d.label), timeline(d, false));
    s.push_str(&format!("<p class=rule>{}</p>\n", esc(&d.rule)));
    figure(s, &format!("Timeline (context): {}", d.label), timeline(d, true));
}

/// One row of a band plot: a variant's label, its value in the default state, its band
/// (lowest and highest over the states) and, when the sources give one, the published figure.
pub struct BandBar {
    pub label: String,
    pub point: Option<f64>,
    pub lo: f64,
    pub hi: f64,
    pub published: Option<f64>,
}

/// Each variant's band as a horizontal bar from its lowest to its highest value over the
/// states, its default state's value as a black tick, the published figure as a red diamond.
pub fn band_chart(bars: &[BandBar], caption: &str, x_desc: &str) -> Plot {
    let n = bars.len();
    let mut svg = String::new();
    {
        let h = 80 + 34 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (900, h)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let xmax = bars.iter().map(|b| b.hi.max(b.published.unwrap_or(0.0))).fold(1e-9f64, f64::max) * 1.1;
        let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
        let mut ch = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
            .map_err(perr)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| row_label(&labels, *y))
            .x_desc(x_desc)
            .draw()
            .map_err(perr)?;
        for (i, b) in bars.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let w = (b.hi - b.lo).max(xmax * 0.003);
            ch.draw_series(std::iter::once(Rectangle::new(
                [(b.lo, y + 0.3), (b.lo + w, y + 0.7)],
                color(i).mix(0.6).filled(),
            )))
            .map_err(perr)?;
            if let Some(p) = b.point {
                ch.draw_series(std::iter::once(PathElement::new(
                    vec![(p, y + 0.15), (p, y + 0.85)],
                    BLACK.stroke_width(3),
                )))
                .map_err(perr)?;
            }
            if let Some(p) = b.published {
                ch.draw_series(std::iter::once(Polygon::new(
                    vec![(p, y + 0.25), (p + xmax * 0.012, y + 0.5), (p, y + 0.75), (p - xmax * 0.012, y + 0.5)],
                    RED.filled(),
                )))
                .map_err(perr)?;
            }
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

/// The section of one `run`: its output, then the plots of its detail run.
pub fn section_run(c: &Comparison, details: &[Detail]) -> String {
    let mut s = String::new();
    s.push_str(&format!("<section><h2>{}</h2>\n", esc(&c.experiment)));
    for n in &c.notes {
        s.push_str(&format!("<pre>{}</pre>\n", esc(n)));
    }
    match latency_cdf(details) {
        Some(p) => figure(&mut s, "Wakeup latency", p),
        None => s.push_str("<p>(No task wakeups were measured in this run: no latency CDF.)</p>\n"),
    }
    for d in details {
        timelines(&mut s, d);
        figure(&mut s, &format!("Phases: {}", d.label), phase_breakdown(d));
    }
    s.push_str("</section>\n");
    s
}

/// The whole page.
pub fn page(title: &str, sections: &[String]) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n");
    s.push_str(&format!("<title>{}</title>\n", esc(title)));
    s.push_str(
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:1150px}pre{background:#f6f6f6;padding:.6em;\
         overflow-x:auto;font-size:12px}figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}\
         .err{color:#b00}</style>\n</head><body>\n",
    );
    s.push_str(&format!("<h1>{}</h1>\n", esc(title)));
    s.push_str("<p>Generated by schedsim. Every figure comes from the model running; the published figures are marked where the experiment has them.</p>\n");
    for sec in sections {
        s.push_str(sec);
    }
    s.push_str("</body></html>\n");
    s
}

/// Write `html` to `path`, completely or not at all.
pub fn write(path: &std::path::Path, html: &str) -> Result<(), String> {
    use std::io::Write;
    let err = |e: std::io::Error| format!("cannot write report {}: {e}", path.display());
    let mut o = crate::trace::sink::Output::create(path).map_err(err)?;
    o.w().write_all(html.as_bytes()).map_err(err)?;
    o.commit().map_err(err)
}

/// The label of the horizontal row whose centre is at `y` (rows are drawn top to bottom, the
/// first label on top); empty between rows.
fn row_label(labels: &[String], y: f64) -> String {
    let n = labels.len();
    let i = (y - 0.5).round();
    if (y - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
        labels[n - 1 - i as usize].clone()
    } else {
        String::new()
    }
}

/// The calibration report (`machine --from-host --calibrate --html FILE`): the summary, every
/// software cost of this host beside the model's default, and each measured path's
/// distribution (tracing overhead removed) with its median and p10..p90.
pub fn calibration_page(b: &crate::calibrate::bundle::Bundle, o: &crate::calibrate::Output) -> String {
    let mut s = String::new();
    s.push_str("<section><h2>Summary</h2>\n");
    s.push_str(&format!("<pre>{}</pre>\n", esc(&o.summary)));
    figure(&mut s, "Software path costs: the model's default and this host's (log scale)", cost_bars(o));
    hw_table(&mut s, b, o);
    s.push_str("</section>\n");
    halt_curves_section(&mut s, o);
    s.push_str("<section><h2>Measured paths</h2>\n");
    let sol = &o.solution;
    for (p, m) in &sol.paths {
        if m.n() == 0 {
            continue;
        }
        let fields: Vec<String> = sol
            .costs
            .iter()
            .filter(|c| c.path == Some(*p))
            .map(|c| format!("{} {} ns (default {})", c.name, c.ns, c.default_ns))
            .chain(sol.hw.iter().filter(|h| h.path == *p).map(|h| format!("[costs] {} {}..{} ns", h.key, h.lo, h.hi)))
            .collect();
        let title = format!(
            "{}: n {}, median {} ns (raw {}), p10-p90 {}-{} ns{}",
            p.label(),
            m.n(),
            m.median(),
            m.raw_median,
            m.q(100),
            m.q(900),
            if fields.is_empty() {
                " (a check: no cost solved from it)".to_string()
            } else {
                format!("; solves {}", fields.join(", "))
            }
        );
        figure(&mut s, &title, path_histogram(m));
    }
    s.push_str("</section>\n");
    page(&format!("Calibration of this host (Linux {})", b.meta.kernel), &[s])
}

/// The measured hardware costs beside what `machine --from-host` wrote for them (the model's
/// default for this host).
fn hw_table(s: &mut String, b: &crate::calibrate::bundle::Bundle, o: &crate::calibrate::Output) {
    let sol = &o.solution;
    if sol.hw.is_empty() {
        return;
    }
    s.push_str("<h3>Hardware costs</h3>\n<table><tr><th>key</th><th>machine --from-host (uncalibrated)</th><th>this host</th><th>samples</th><th>how</th></tr>\n");
    for h in &sol.hw {
        let measured =
            if h.lo == h.hi { h.median.to_string() } else { format!("[{}, {}] (median {})", h.lo, h.hi, h.median) };
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            h.key,
            esc(&host_value(&b.host, h.key).unwrap_or_else(|| "-".into())),
            measured,
            h.samples,
            esc(&h.method)
        ));
    }
    s.push_str("</table>\n");
}

/// The value `machine --from-host` wrote for `key` (an idle-state key: the HLT state's).
fn host_value(host: &str, key: &str) -> Option<String> {
    let idle_key = matches!(key, "wake_ns" | "timer_wake_ns");
    let mut hlt = false;
    for l in host.lines() {
        let t = l.trim_start();
        if t.starts_with('[') {
            hlt = false;
        }
        if t.starts_with("kind") && t.contains("\"hlt\"") {
            hlt = true;
        }
        if idle_key && !hlt {
            continue;
        }
        if let Some(v) = t.strip_prefix(key).and_then(|r| r.trim_start().strip_prefix('=')) {
            return Some(v.split('#').next().unwrap_or("").trim().to_string());
        }
    }
    None
}

/// The halted vCPU's wake by the length of the halt: `halt_wake_extra_ns` (the host's part)
/// and `halt_refill_extra_ns` (the guest's), each point with its band, as a table and a plot.
/// The model's default is no curve (a halted CPU wakes in the state's flat `wake_ns`,
/// `timer_wake_ns`).
fn halt_curves_section(s: &mut String, o: &crate::calibrate::Output) {
    let sol = &o.solution;
    let curves = [("halt_wake_extra_ns", &sol.halt_curve), ("halt_refill_extra_ns", &sol.refill_curve)];
    if curves.iter().all(|(_, c)| c.is_none()) {
        return;
    }
    s.push_str("<section><h2>The halted vCPU's wake by halt length</h2>\n");
    s.push_str(
        "<p>What a wake costs beyond the short halts' median, by how long the CPU had been halted \
         (the HLT state's curves; the model's default has none: every halted wake costs the \
         state's flat <code>wake_ns</code> / <code>timer_wake_ns</code>).</p>\n",
    );
    for (key, c) in curves {
        let Some(c) = c else {
            s.push_str(&format!("<p>{key}: not measured (no usable band of long halts).</p>\n"));
            continue;
        };
        let [n, halt, med] = c.base;
        s.push_str(&format!(
            "<h3>{key}</h3>\n<p>zero: the {n} short halts of the calibration set (median halt {} us, median figure {} ns); {} samples in {} bands.</p>\n",
            halt / 1000,
            med,
            c.samples,
            c.bands.len()
        ));
        s.push_str("<table><tr><th>band</th><th>samples</th><th>median halt (us)</th><th>figure p25 / median / p75 (ns)</th><th>extra (ns)</th></tr>\n");
        s.push_str(&format!(
            "<tr><td>short halts</td><td>{n}</td><td>{}</td><td>{med}</td><td>0</td></tr>\n",
            halt / 1000
        ));
        for (b, p) in c.bands.iter().zip(c.points.iter().skip(1)) {
            let hi = if b.hi_ns == u64::MAX { "up".to_string() } else { format!("{} ms", b.hi_ns as f64 / 1e6) };
            s.push_str(&format!(
                "<tr><td>{} ms to {hi}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td><td>{}</td></tr>\n",
                b.lo_ns as f64 / 1e6,
                b.samples,
                b.halt_median / 1000,
                b.late[0],
                b.late[1],
                b.late[2],
                p[1]
            ));
        }
        s.push_str("</table>\n");
        figure(
            s,
            &format!("{key}: extra against the halt (log scale; the model interpolates linearly between the points, flat outside them)"),
            halt_curve_plot(c),
        );
    }
    s.push_str("</section>\n");
}

fn halt_curve_plot(c: &crate::calibrate::solve::HaltCurveSolved) -> Plot {
    let pts: Vec<(f64, f64)> =
        c.points.iter().map(|[h, e]| ((*h).max(1) as f64 / 1000.0, *e as f64 / 1000.0)).collect();
    let x_lo = pts.iter().map(|p| p.0).fold(f64::MAX, f64::min).max(1.0) / 2.0;
    let x_hi = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(x_lo * 4.0) * 2.0;
    let y_hi = pts.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 260)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let mut ch = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..y_hi)
            .map_err(perr)?;
        ch.configure_mesh().x_desc("halt (us)").y_desc("extra (us)").draw().map_err(perr)?;
        ch.draw_series(LineSeries::new(pts.iter().copied(), color(1).stroke_width(2))).map_err(perr)?;
        ch.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color(1).filled()))).map_err(perr)?;
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

fn cost_bars(o: &crate::calibrate::Output) -> Plot {
    let costs = &o.solution.costs;
    let n = costs.len();
    let mut svg = String::new();
    {
        let h = 60 + 22 * n as u32;
        let root = SVGBackend::with_string(&mut svg, (900, h)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let hi = costs.iter().map(|c| c.ns.max(c.default_ns)).max().unwrap_or(1).max(10) as f64 * 2.0;
        let labels: Vec<String> = costs.iter().map(|c| c.name.to_string()).collect();
        let mut ch = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(170)
            .build_cartesian_2d((1f64..hi).log_scale(), 0f64..n as f64)
            .map_err(perr)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| row_label(&labels, *y))
            .x_desc("ns (blue: model default, orange: this host; hatched: default x k, not measured)")
            .draw()
            .map_err(perr)?;
        for (i, c) in costs.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let d = c.default_ns.max(1) as f64;
            let v = c.ns.max(1) as f64;
            ch.draw_series(std::iter::once(Rectangle::new([(1.0, y + 0.52), (d, y + 0.88)], color(0).filled())))
                .map_err(perr)?;
            let style = if c.how == crate::calibrate::solve::How::Scaled {
                color(1).stroke_width(2)
            } else {
                color(1).filled()
            };
            ch.draw_series(std::iter::once(Rectangle::new([(1.0, y + 0.12), (v, y + 0.48)], style))).map_err(perr)?;
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

fn path_histogram(m: &crate::calibrate::solve::Measured) -> Plot {
    let lo = m.q(10) as f64;
    let hi = (m.q(990) as f64).max(lo + 1.0);
    const BINS: usize = 60;
    let w = (hi - lo) / BINS as f64;
    let mut counts = [0u64; BINS];
    for &v in &m.sorted {
        let x = v as f64;
        if x < lo || x > hi {
            continue;
        }
        let i = (((x - lo) / w) as usize).min(BINS - 1);
        counts[i] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 220)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let mut ch = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(lo..hi, 0f64..top)
            .map_err(perr)?;
        ch.configure_mesh()
            .x_desc("ns (p1..p99; black: median, grey: p10 and p90)")
            .y_desc("samples")
            .draw()
            .map_err(perr)?;
        ch.draw_series(counts.iter().enumerate().map(|(i, &c)| {
            let x0 = lo + i as f64 * w;
            Rectangle::new([(x0, 0.0), (x0 + w, c as f64)], color(0).filled())
        }))
        .map_err(perr)?;
        for (q, style) in [
            (500, BLACK.stroke_width(2)),
            (100, RGBColor(150, 150, 150).stroke_width(1)),
            (900, RGBColor(150, 150, 150).stroke_width(1)),
        ] {
            let x = m.q(q) as f64;
            ch.draw_series(std::iter::once(PathElement::new(vec![(x, 0.0), (x, top)], style))).map_err(perr)?;
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}
