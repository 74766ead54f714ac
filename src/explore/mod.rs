//! The interleaving explorer (`schedsim explore`): run one scenario many times, each run
//! perturbing what the model is free to choose, and report the kernel rules that break.
//!
//! Two things are free in a run:
//! - **the order of same-time actions**: when several actions are due at one instant the queue
//!   asks its [`Chooser`](crate::sim::Chooser) which goes first ([`crate::sim::queue`]); a
//!   strategy ([`strategy::Kind`]: uniform random, PCT, delay-bounded) decides here;
//! - **the jitter draws**: every hardware latency that has a sourced range (cache-line
//!   transfers, IPI delivery, idle-state exits; `src/hw/presets`) is drawn uniformly inside it
//!   from the CPU's jitter stream. A run perturbs them by re-seeding a CPU's stream after boot
//!   (a per-CPU *salt*): each draw is still uniform in the same range, only which value comes
//!   out changes. The draws of the workload and of the background activity are not perturbed.
//!
//! Run `i`'s perturbation derives only from `(seed, i)`, and runs execute in parallel (rayon) but
//! are reported in run-index order, so the output is the same for any `--jobs`.
//!
//! A *finding* is the first rule a run violates: a modelled kernel `WARN` or an invariant of
//! the checkers. It is minimized (delta debugging over the perturbed choices and salts, keeping
//! those without which the same rule no longer fires), re-run with the trace on for an ftrace
//! excerpt around the instant, and printed with a replay token: `schedsim run ... --replay
//! TOKEN` runs exactly that perturbation ([`token`]).

pub mod strategy;

use crate::linux::Kernel;
use crate::run::{self, RunWorld};
pub use crate::sim::Perturbation;
use crate::sim::Prng;
use crate::spec::RunSpec;
use strategy::{Explorer, Kind};

/// A violated rule: what a finding reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id (kebab case), e.g. `warn-do-softirq-post-smp-call-flush`.
    pub rule: String,
    /// The kernel rule it encodes (file, function, condition).
    pub kernel_rule: String,
    /// The first instant it was violated (ns since boot).
    pub time_ns: u64,
    /// The CPU it concerns.
    pub cpu: u32,
    pub detail: String,
}

/// The first rule the run violated, if any: the earliest violation the checkers saw (a
/// modelled WARN firing is one, `Rule::Warn`).
pub fn first_finding(k: &Kernel) -> Option<Finding> {
    let v = k.checks.as_deref()?.first_violation()?;
    Some(Finding {
        rule: v.rule.name().to_string(),
        kernel_rule: v.rule.kernel_rule().to_string(),
        time_ns: v.time_ns,
        cpu: v.cpu,
        detail: v.detail.clone(),
    })
}

/// How to explore.
#[derive(Debug, Clone)]
pub struct Options {
    pub strategy: Kind,
    /// Number of perturbed runs.
    pub budget: u64,
    /// PCT's bug depth, or the delay bound.
    pub depth: u32,
    /// Perturb the jitter streams too (every CPU's, each run).
    pub jitter: bool,
    /// Parallel runs (rayon threads).
    pub jobs: usize,
    /// Stop at the first run with a finding (runs after it are not reported).
    pub stop_at_first: bool,
    /// The most runs the minimization of one finding may take.
    pub minimize_runs: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            strategy: Kind::Random,
            budget: 100,
            depth: 3,
            jitter: true,
            jobs: 1,
            stop_at_first: false,
            minimize_runs: 200,
        }
    }
}

/// The most runs `--budget` may ask for.
pub const MAX_BUDGET: u64 = 1_000_000;

/// Runs per batch and worker thread: results are gathered batch by batch in run-index order.
/// The batch size changes nothing in the report: every run is reported, or with
/// [`Options::stop_at_first`] the runs up to the first finding.
const BATCH_PER_JOB: u64 = 4;

/// One explored run.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub run: u64,
    pub choice_points: u64,
    pub actions: u64,
    pub finding: Option<Finding>,
    /// Choices off FIFO and re-seeded CPUs of the run.
    pub perturbed: (usize, usize),
    /// A hash of the run's perturbation (its token), to tell runs apart.
    pub perturbation_hash: u64,
    /// The perturbation itself, kept only for a run with a finding (a run's list of choices
    /// can be long; a large budget keeps only the counts).
    pub perturbation: Option<Perturbation>,
}

/// A distinct rule found, with its minimized reproduction.
#[derive(Debug, Clone)]
pub struct Found {
    /// The first run (index) that violated it, and how many runs did.
    pub first_run: u64,
    pub hits: u64,
    /// The finding as the minimized perturbation reproduces it.
    pub finding: Finding,
    pub perturbation: Perturbation,
    /// Items of the unminimized perturbation, and runs spent minimizing.
    pub original_len: usize,
    pub minimize_runs: u64,
    /// True if minimization stopped at its run limit before being 1-minimal.
    pub minimize_cut: bool,
    /// ftrace text around the instant.
    pub excerpt: String,
    /// Hash of the whole trace of the minimized run (`run::trace_hash`).
    pub trace_hash: u64,
}

/// The result of an exploration.
#[derive(Debug, Clone)]
pub struct Report {
    /// Choice points of the unperturbed run (PCT's and delay's index range), and its finding.
    pub base_points: u64,
    pub base_finding: Option<Finding>,
    pub outcomes: Vec<Outcome>,
    pub found: Vec<Found>,
}

fn jitter_salts(seed: u64, run: u64, nr: u32) -> Vec<(u32, u32)> {
    let mut r = Prng::new(seed ^ 0x7177_E500_0000_0000, run.wrapping_mul(2));
    (0..nr).map(|c| (c, (r.next_u64() >> 32) as u32 | 1)).collect()
}

/// Run `spec` under a perturbation: `jitter`'s re-seeded streams and `strategy`'s choices,
/// with every checker on (the modelled WARNs report through them too).
fn run_with(spec: &RunSpec, jitter: &[(u32, u32)], strategy: Explorer) -> Result<RunWorld, String> {
    let mut s = spec.clone();
    s.replay = None;
    let mut w = run::build(&s)?;
    w.perturb(jitter, Box::new(strategy))?;
    w.k.enable_checks();
    w.run(s.limit_ns);
    Ok(w)
}

fn outcome(run: u64, k: &Kernel, jitter: Vec<(u32, u32)>) -> Outcome {
    let p = Perturbation { picks: Explorer::picks_of(&k.q.chooser), jitter };
    let finding = first_finding(k);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in p.token().bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    Outcome {
        run,
        choice_points: k.q.choice_points,
        actions: k.actions,
        perturbed: (p.picks.len(), p.jitter.len()),
        perturbation_hash: h,
        perturbation: finding.is_some().then_some(p),
        finding,
    }
}

/// Run the perturbation `p` and return its first finding.
pub fn replay(spec: &RunSpec, p: &Perturbation) -> Result<Option<Finding>, String> {
    let k = run_with(spec, &p.jitter, Explorer::replay(p.picks.clone()))?;
    Ok(first_finding(&k))
}

fn pool(jobs: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| format!("cannot start {jobs} worker threads: {e}"))
}

/// Explore `spec` (its seed is every run's seed; perturbations derive from it and the run index).
pub fn explore(spec: &RunSpec, o: &Options) -> Result<Report, String> {
    explore_with(spec, o, &mut |_, _| {})
}

/// [`explore`], calling `progress(runs done, runs with a finding)` after each batch of runs
/// (the command line times the first finding with it; the model never sees it).
pub fn explore_with(spec: &RunSpec, o: &Options, progress: &mut dyn FnMut(u64, u64)) -> Result<Report, String> {
    if !(1..=MAX_BUDGET).contains(&o.budget) {
        return Err(format!("--budget {} is out of range (1..={MAX_BUDGET})", o.budget));
    }
    if o.depth == 0 || o.depth > 1000 {
        return Err(format!("--depth {} is out of range (1..=1000)", o.depth));
    }
    let pool = pool(o.jobs)?;
    // The unperturbed run: its choice points are the index range of PCT's and delay's draws.
    let base = run_with(spec, &[], Explorer::replay(Vec::new()))?;
    let base_points = base.q.choice_points;
    let base_finding = first_finding(&base);
    let nr = base.m.topo.nr_cpus;
    drop(base);
    let seed = spec.seed;
    let one = |i: u64| -> Result<Outcome, String> {
        let jitter = if o.jitter { jitter_salts(seed, i, nr) } else { Vec::new() };
        let strat = Explorer::new(o.strategy, seed, i, nr, base_points, o.depth);
        let k = run_with(spec, &jitter, strat)?;
        Ok(outcome(i, &k, jitter))
    };
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut start = 0;
    let batch = BATCH_PER_JOB * o.jobs.max(1) as u64;
    while start < o.budget {
        let end = (start + batch).min(o.budget);
        let batch: Vec<Result<Outcome, String>> = pool.install(|| {
            use rayon::prelude::*;
            (start..end).into_par_iter().map(one).collect()
        });
        for r in batch {
            outcomes.push(r?);
        }
        start = end;
        progress(outcomes.len() as u64, outcomes.iter().filter(|x| x.finding.is_some()).count() as u64);
        if o.stop_at_first {
            if let Some(i) = outcomes.iter().position(|x| x.finding.is_some()) {
                // Runs after the first finding depend on the batch size: not reported.
                outcomes.truncate(i + 1);
                break;
            }
        }
    }
    // Distinct rules in order of first appearance.
    let mut found: Vec<Found> = Vec::new();
    let mut firsts: Vec<(String, usize, u64)> = Vec::new();
    for (i, x) in outcomes.iter().enumerate() {
        if let Some(f) = &x.finding {
            match firsts.iter_mut().find(|(r, _, _)| *r == f.rule) {
                Some(e) => e.2 += 1,
                None => firsts.push((f.rule.clone(), i, 1)),
            }
        }
    }
    for (rule, i, hits) in firsts {
        let x = &outcomes[i];
        let original = x.perturbation.as_ref().expect("kept for a run with a finding");
        let (p, runs, cut) = minimize(spec, original, &rule, o.minimize_runs, &pool)?;
        let (finding, excerpt, hash) = excerpt(spec, &p)?;
        let Some(finding) = finding else {
            return Err(format!("internal: the minimized perturbation of rule {rule} no longer violates it"));
        };
        found.push(Found {
            first_run: x.run,
            hits,
            finding,
            original_len: original.len(),
            perturbation: p,
            minimize_runs: runs,
            minimize_cut: cut,
            excerpt,
            trace_hash: hash,
        });
    }
    Ok(Report { base_points, base_finding, outcomes, found })
}

#[derive(Debug, Clone, Copy)]
enum Item {
    Pick(u64, u32),
    Salt(u32, u32),
}

fn perturbation_of(items: &[Item]) -> Perturbation {
    let mut p = Perturbation::default();
    for it in items {
        match *it {
            Item::Pick(a, b) => p.picks.push((a, b)),
            Item::Salt(a, b) => p.jitter.push((a, b)),
        }
    }
    p
}

/// Delta debugging (Zeller and Hildebrandt, TSE 2002, `ddmin`): the smallest subset of the
/// perturbation's items found under which the first violated rule is still `rule`. Candidate
/// subsets of a round run in parallel; the first that holds in the algorithm's order is taken,
/// so the result does not depend on the number of threads. Returns the subset, the runs the
/// sequential algorithm would have spent, and whether `limit` cut it short.
fn minimize(
    spec: &RunSpec,
    p: &Perturbation,
    rule: &str,
    limit: u64,
    pool: &rayon::ThreadPool,
) -> Result<(Perturbation, u64, bool), String> {
    let holds = |items: &[Item]| -> Result<bool, String> {
        let q = perturbation_of(items);
        Ok(replay(spec, &q)?.is_some_and(|f| f.rule == rule))
    };
    let mut spent = 1u64;
    if holds(&[])? {
        return Ok((Perturbation::default(), spent, false));
    }
    let mut c: Vec<Item> =
        p.picks.iter().map(|&(a, b)| Item::Pick(a, b)).chain(p.jitter.iter().map(|&(a, b)| Item::Salt(a, b))).collect();
    let mut n = 2usize;
    while c.len() >= 2 {
        let chunk = c.len().div_ceil(n);
        let parts: Vec<Vec<Item>> = c.chunks(chunk).map(|s| s.to_vec()).collect();
        let n_parts = parts.len();
        // Subsets first, then complements (only when there are more than two parts).
        let mut cands: Vec<(Vec<Item>, bool)> = parts.iter().map(|s| (s.clone(), true)).collect();
        if n_parts > 2 {
            for i in 0..n_parts {
                let comp: Vec<Item> =
                    parts.iter().enumerate().filter(|(j, _)| *j != i).flat_map(|(_, s)| s.clone()).collect();
                cands.push((comp, false));
            }
        }
        let mut taken = None;
        let mut at = 0;
        let width = pool.current_num_threads().max(1);
        while at < cands.len() && taken.is_none() {
            if spent >= limit {
                return Ok((perturbation_of(&c), spent, true));
            }
            let end = (at + width).min(cands.len()).min(at + (limit - spent) as usize);
            let res: Vec<Result<bool, String>> = pool.install(|| {
                use rayon::prelude::*;
                cands[at..end].par_iter().map(|(s, _)| holds(s)).collect()
            });
            for (j, r) in res.into_iter().enumerate() {
                spent += 1;
                if r? {
                    taken = Some(at + j);
                    break;
                }
            }
            at = end;
        }
        match taken {
            Some(t) => {
                let (s, subset) = cands.swap_remove(t);
                c = s;
                n = if subset { 2 } else { (n - 1).max(2) };
            }
            None => {
                if n >= c.len() {
                    break;
                }
                n = (2 * n).min(c.len());
            }
        }
    }
    if c.len() == 1 && holds(&[])? {
        spent += 1;
        c.clear();
    }
    Ok((perturbation_of(&c), spent, false))
}

/// Records kept before and after the finding's instant in the excerpt.
const EXCERPT_BEFORE: usize = 14;
const EXCERPT_AFTER: usize = 6;

/// Re-run the perturbation with the trace on: the finding (its CPU from the trace), the ftrace
/// excerpt around its instant, and the hash of the whole trace.
pub fn excerpt(spec: &RunSpec, p: &Perturbation) -> Result<(Option<Finding>, String, u64), String> {
    let Some(f) = replay(spec, p)? else {
        return Ok((None, String::new(), 0));
    };
    let mut s = spec.clone();
    s.replay = None;
    let mut k = run::build(&s)?;
    k.perturb(&p.jitter, Box::new(Explorer::replay(p.picks.clone())))?;
    k.k.enable_checks();
    let out = std::sync::Arc::new(std::sync::Mutex::new(Excerpt::default()));
    let mut sink = ExcerptSink {
        at: f.time_ns,
        nr_cpus: k.m.topo.nr_cpus,
        hash: run::TraceHasher::default(),
        names: NameTable::default(),
        before: Default::default(),
        after: Vec::new(),
        out: out.clone(),
    };
    crate::trace::TraceSink::funcs(&mut sink, &k.cfg.background.trace_funcs());
    k.trace.enabled = true;
    k.trace.sink = Some(Box::new(sink));
    k.run(s.limit_ns);
    k.flush_trace();
    let again = first_finding(&k);
    let sink = k.trace.sink.take().expect("attached above");
    sink.finish().map_err(|e| format!("internal: excerpt sink: {e}"))?;
    if again.as_ref().map(|g| (&g.rule, g.time_ns)) != Some((&f.rule, f.time_ns)) {
        return Err(format!("internal: the traced re-run of rule {} differs from the run without trace", f.rule));
    }
    let o = out.lock().expect("no panics hold it");
    Ok((Some(f), o.text.clone(), o.hash))
}

#[derive(Debug, Default)]
struct Excerpt {
    text: String,
    hash: u64,
}

#[derive(Default)]
struct NameTable {
    comms: std::collections::BTreeMap<u32, String>,
    funcs: Vec<String>,
    masks: Vec<String>,
    swapper: String,
}

impl crate::trace::ftrace::Names for NameTable {
    fn comm(&self, pid: u32, _cpu: u32) -> &str {
        if pid == 0 {
            return &self.swapper;
        }
        self.comms.get(&pid).map_or("<...>", |c| c.as_str())
    }
    fn cpumask(&self, id: u32) -> &str {
        self.masks.get(id as usize).map_or("", |s| s.as_str())
    }
    fn func(&self, id: u32) -> &str {
        self.funcs.get(id as usize).map_or("", |s| s.as_str())
    }
}

/// A trace sink that hashes every record (as [`run::trace_hash`]) and formats the records
/// around one instant.
struct ExcerptSink {
    at: u64,
    nr_cpus: u32,
    hash: run::TraceHasher,
    names: NameTable,
    before: std::collections::VecDeque<String>,
    after: Vec<String>,
    out: std::sync::Arc<std::sync::Mutex<Excerpt>>,
}

impl crate::trace::TraceSink for ExcerptSink {
    fn tasks(&mut self, new: &[crate::trace::TaskInfo]) {
        for t in new {
            self.names.comms.insert(t.pid, t.comm.clone());
        }
    }
    fn funcs(&mut self, names: &[String]) {
        self.names.funcs = names.to_vec();
    }
    fn write(
        &mut self,
        records: &[crate::trace::Record],
        masks: &[crate::hw::cpumask::CpuMask],
    ) -> std::io::Result<()> {
        let mut masks_done = false;
        for r in records {
            self.hash.eat(r);
            if (r.ts_ns > self.at && self.after.len() >= EXCERPT_AFTER) || r.ts_ns.saturating_add(200_000) < self.at {
                continue;
            }
            if !masks_done {
                self.names.masks = masks.iter().map(|m| crate::trace::cpumask_pb(m, self.nr_cpus)).collect();
                masks_done = true;
            }
            self.names.swapper = format!("swapper/{}", r.cpu);
            let mut line = Vec::new();
            crate::trace::ftrace::write_record(&mut line, r, &self.names);
            let line = String::from_utf8_lossy(&line).into_owned();
            if r.ts_ns <= self.at {
                self.before.push_back(line);
                if self.before.len() > EXCERPT_BEFORE {
                    self.before.pop_front();
                }
            } else {
                self.after.push(line);
            }
        }
        Ok(())
    }
    fn finish(self: Box<Self>) -> std::io::Result<u64> {
        let mut o = self.out.lock().expect("no panics hold it");
        o.text = self.before.iter().chain(self.after.iter()).map(String::as_str).collect();
        o.hash = self.hash.finish();
        Ok(0)
    }
    fn abort(self: Box<Self>) {}
}
