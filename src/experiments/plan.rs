//! An experiment as a value: what runs ([`Plan::variants`], each a run spec over
//! [`Plan::runs`] seeds) and how the results become its table ([`Analysis`]).

use super::ExpOpts;
use crate::report::Comparison;
use crate::run::RunResult;
use crate::spec::RunSpec;
use crate::unknowns::Axis;
use crate::workload::Metric;

/// One variant of an experiment: a row of its table.
#[derive(Debug, Clone)]
pub struct Variant {
    pub label: String,
    /// The run of its first seed; seed `i` runs it with seed `plan.seed + i`.
    pub spec: RunSpec,
    /// The published figure of the row's normalized metric, if the sources give one.
    pub published: Option<f64>,
}

/// How a plan's results become its table.
#[derive(Clone)]
pub enum Analysis {
    /// An experiment's own code: the results per variant, in seed order.
    Code(fn(&Plan, &[Vec<RunResult>]) -> Result<Comparison, String>),
    /// An experiment file's table: each variant's workload metric and the file's breakdowns.
    File(super::file::Tables),
}

/// An experiment's plan.
#[derive(Clone)]
pub struct Plan {
    pub experiment: String,
    /// The table's title (the workload's command line and set-up).
    pub title: String,
    pub machine: String,
    pub variants: Vec<Variant>,
    /// Seeds per variant, from `seed`.
    pub runs: usize,
    pub seed: u64,
    pub analysis: Analysis,
    /// What the report's timelines show: the experiment's CPUs and instant of interest.
    pub focus: crate::focus::Focus,
    /// The named unknowns the answer depends on, each over the values a band takes of it
    /// (`crate::unknowns::Axis`): what `reproduce --band` runs every variant over, and the space
    /// a calibration searches. Empty: the experiment names none. Set by each experiment's plan
    /// function (an experiment file's `[[unknown]]` tables).
    pub unknowns: Vec<Axis>,
    /// One run's figure: what a row of the table averages (by default the workload's primary
    /// metric, `Program::metric`). A band is a band of this figure.
    pub figure: fn(&RunResult) -> Metric,
}

/// The workload's primary metric, the default figure of a plan.
pub fn workload_metric(r: &RunResult) -> Metric {
    r.workload.metric(&r.facts())
}

impl Plan {
    /// A plan of `variants` with the options' seeds; the options' parameters and spec
    /// overrides are applied to every variant's spec (after the experiment's own), so every
    /// experiment treats `--param` and `--background`/`--preempt` alike.
    pub fn new(
        experiment: &str,
        title: String,
        machine: &str,
        variants: Vec<Variant>,
        runs: usize,
        o: &ExpOpts,
        analysis: Analysis,
    ) -> Result<Plan, String> {
        let mut p = Plan {
            experiment: experiment.to_string(),
            title,
            machine: machine.to_string(),
            variants,
            runs,
            seed: o.seed,
            analysis,
            focus: Default::default(),
            unknowns: Vec::new(),
            figure: workload_metric,
        };
        for v in &mut p.variants {
            v.spec.seed = o.seed;
            v.spec.add_params(&o.params, &format!("{experiment} experiment"));
            for (name, value) in &o.overrides {
                if ["machine", "kernel", "patch", "patches", "seed"].contains(&name.as_str()) {
                    return Err(format!(
                        "experiment '{experiment}' runs its own machines, kernels and seeds: {name} cannot be overridden"
                    ));
                }
                v.spec.set(name, value).map_err(|e| format!("experiment '{experiment}': {e}"))?;
            }
        }
        Ok(p)
    }

    /// Every run of the plan as (variant index, spec), variant after variant, seeds in order.
    pub fn specs(&self) -> Vec<(usize, RunSpec)> {
        let mut out = Vec::with_capacity(self.variants.len() * self.runs);
        for (vi, v) in self.variants.iter().enumerate() {
            for i in 0..self.runs {
                let mut s = v.spec.clone();
                s.seed = self.seed + i as u64;
                out.push((vi, s));
            }
        }
        out
    }

    /// Run every spec on `jobs` threads (the first is validated before anything runs, so a bad
    /// parameter gives its error at once): the results per variant, in seed order.
    pub fn results(&self, jobs: usize) -> Result<Vec<Vec<RunResult>>, String> {
        let specs: Vec<RunSpec> = self.specs().into_iter().map(|(_, s)| s).collect();
        crate::run::build(&specs[0])?;
        let mut results = crate::run::run_all(&specs, jobs)?.into_iter();
        Ok((0..self.variants.len()).map(|_| results.by_ref().take(self.runs).collect()).collect())
    }

    /// Run the plan and make its table.
    pub fn run(&self, jobs: usize) -> Result<Comparison, String> {
        self.analyze(&self.results(jobs)?)
    }

    /// The table of results per variant (in seed order).
    pub fn analyze(&self, results: &[Vec<RunResult>]) -> Result<Comparison, String> {
        match &self.analysis {
            Analysis::Code(f) => f(self, results),
            Analysis::File(t) => t.analyze(self, results),
        }
    }
}
