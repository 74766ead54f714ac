//! The built-in experiments (`schedsim reproduce NAME`): each runs its variants over several
//! seeds and prints the table with the published figures beside the simulated ones.
//!
//! An experiment is a [`Plan`], a value: its variants (each a run spec and its published
//! figure), how many seeds, and how its results become the table ([`Analysis`]). Running
//! (`reproduce`), sweeping (`sweep`), the HTML report and `list` all consume plans; nothing is
//! collected on the side. An experiment is either code (a `plan` function and its analysis, in
//! a file of this directory) or data: a TOML experiment file ([`file`]; the built-in ones in
//! `experiments/` at the repository's root, or a user's own with `reproduce FILE.toml`).

pub mod controls;
pub mod file;
pub mod hackbench2013;
pub mod ipistorm;
pub mod ipistorm_arm;
pub mod ipistorm_intel;
pub mod lkp_matrix;
pub mod nohz;
pub mod plan;
pub mod rtpush;
pub mod schbench_ttwu;

pub use controls::Control;
pub use plan::{Analysis, Plan, Variant};

/// Options shared by all experiments.
#[derive(Debug, Clone)]
pub struct ExpOpts {
    /// Seeds per variant.
    pub runs: usize,
    /// First seed (the runs use `seed .. seed + runs`).
    pub seed: u64,
    /// Worker threads for independent runs (never inside one run).
    pub jobs: usize,
    /// Workload parameters overriding the experiment's (e.g. a smaller numipi).
    pub params: Vec<(String, String)>,
    /// Run spec fields applied to every run on top of the experiment's (`spec::FIELDS` by
    /// name: e.g. `background`, `preempt`); an experiment's own kernels, machines and seeds are
    /// not overridden.
    pub overrides: Vec<(String, String)>,
    /// The named kernel the variants are built on, for experiments that take one
    /// (hackbench-2013: v3.8 by default).
    pub kernel: Option<String>,
    /// The cells of a matrix experiment to run (lkp-matrix's `--cells`: substrings or globs,
    /// comma-separated).
    pub cells: Option<String>,
}

impl Default for ExpOpts {
    fn default() -> Self {
        ExpOpts { runs: 5, seed: 1, jobs: 2, params: Vec::new(), overrides: Vec::new(), kernel: None, cells: None }
    }
}

/// Where an experiment comes from.
pub enum Source {
    /// Code: its description, its plan, and whether it takes `--kernel`.
    Code { description: &'static str, plan: fn(&ExpOpts) -> Result<Plan, String>, takes_kernel: bool },
    /// An experiment file's text (`file`), embedded in the binary.
    File(&'static str),
}

/// An experiment of the acceptance suite.
pub struct Experiment {
    pub name: &'static str,
    pub source: Source,
}

impl Experiment {
    pub fn description(&self) -> String {
        match &self.source {
            Source::Code { description, .. } => description.to_string(),
            Source::File(text) => file::description(text, self.name),
        }
    }

    /// Whether the experiment's variants are built on a kernel `--kernel` chooses.
    pub fn takes_kernel(&self) -> bool {
        matches!(self.source, Source::Code { takes_kernel: true, .. })
    }

    /// The experiment's plan with options `o`.
    pub fn plan(&self, o: &ExpOpts) -> Result<Plan, String> {
        if let (Some(k), false) = (&o.kernel, self.takes_kernel()) {
            return Err(format!(
                "--kernel {k}: experiment '{}' runs its own kernels (--kernel is accepted by: {})",
                self.name,
                takes_kernel().join(", ")
            ));
        }
        if let (Some(c), false) = (&o.cells, self.name == "lkp-matrix") {
            return Err(format!("--cells {c}: experiment '{}' has no cells (--cells is for lkp-matrix)", self.name));
        }
        match &self.source {
            Source::Code { plan, .. } => plan(o),
            Source::File(text) => file::plan(text, &format!("<built-in experiment {}>", self.name), o),
        }
    }
}

pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "ipistorm",
        source: Source::Code {
            description: "CPU8 sends 100k waiting smp_call_function_single() to CPU16 on a 2S EPYC 7763 (C2 off): v6.10, SM_IDLE, revert of b2a02fc43a1f, TIF_NOTIFY_IPI RFC, softirq-flag RFC aligned/unaligned",
            plan: ipistorm::plan,
            takes_kernel: false,
        },
    },
    Experiment {
        name: "ipistorm-intel",
        source: Source::Code {
            description: "Chen Yu's ipistorm on a 240-CPU 2-node Intel server (C1E and deeper off): v6.10 vs SM_IDLE, ten runs each, every run's time with its ungated newidle passes and rd->overloaded time",
            plan: ipistorm_intel::plan,
            takes_kernel: false,
        },
    },
    Experiment {
        name: "ipistorm-arm",
        source: Source::Code {
            description: "the TIF_NOTIFY_IPI RFC's ipistorm on a 2S Neoverse-N1 (arm64, WFI idle, no polling flag): v6.10, SM_IDLE, TIF_NOTIFY_IPI, with how each call completed",
            plan: ipistorm_arm::plan,
            takes_kernel: false,
        },
    },
    Experiment {
        name: "schbench-ttwu",
        source: Source::Code {
            description: "schbench -m 2 -t 16 on a 32-vCPU Ice Lake VM: ttwu_pending cleared early (v6.1), revert of f3dd3f674555, the fix d6962c4fe8f9 (v6.2)",
            plan: schbench_ttwu::plan,
            takes_kernel: false,
        },
    },
    Experiment {
        name: "lkp-matrix",
        source: Source::Code {
            description: "the 0-day robot's SM_IDLE matrix on a 128-CPU 4-node Xeon: hackbench pipe/socket x process/threads at 25/50/100% and netperf TCP_RR/UDP_RR/TCP_STREAM/UDP_STREAM at 25-100%, v6.10 vs +SM_IDLE as LKP's %change (shortened runs; --cells to choose)",
            plan: lkp_matrix::plan,
            takes_kernel: false,
        },
    },
    Experiment { name: "ilb-polling", source: Source::File(include_str!("../../experiments/ilb-polling.toml")) },
    Experiment {
        name: "rt-warn",
        source: Source::Code {
            description: "PREEMPT_RT with patch 1: the do_softirq_post_smp_call_flush WARN, without and with 6675ce20046d",
            plan: nohz::rt_warn,
            takes_kernel: false,
        },
    },
    Experiment {
        name: "nanosleep",
        source: Source::Code {
            description: "240 processes looping nanosleep(1 us) on 240 CPUs: share of CPU time in newidle balance and update_sd_lb_stats, v6.10 vs v6.13",
            plan: nohz::nanosleep,
            takes_kernel: false,
        },
    },
    Experiment {
        name: "hackbench-2013",
        source: Source::Code {
            description: "perf stat -a hackbench 500 on an i7 4C/8T, on v3.8 (--kernel v6.10 for today's): idle_balance in __schedule vs Rostedt's 2013 post-schedule idle_balance (IRQs on), and with the nr_running re-check (at most 2 seeds, ~75-110 s wall each)",
            plan: hackbench2013::plan,
            takes_kernel: true,
        },
    },
    Experiment {
        name: "rt-push",
        source: Source::Code {
            description: "a FIFO task woken onto the CPU of a pinned FIFO task it outranks (4-CPU SMP): v6.10 push_rt_task vs Rostedt's 2013 ok_to_push_task, and v3.8 (no RT_PUSH_IPI)",
            plan: rtpush::plan,
            takes_kernel: false,
        },
    },
];

/// The names of the experiments that take `--kernel`.
pub fn takes_kernel() -> Vec<&'static str> {
    EXPERIMENTS.iter().filter(|e| e.takes_kernel()).map(|e| e.name).collect()
}

pub fn find(name: &str) -> Result<&'static Experiment, String> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        format!(
            "unknown experiment '{name}' (expected one of: {}, or an experiment file ending in .toml)",
            names.join(", ")
        )
    })
}

/// The plan of experiment `name`: a built-in one, or an experiment file (a name ending in
/// `.toml`).
pub fn plan_of(name: &str, o: &ExpOpts) -> Result<Plan, String> {
    if name.ends_with(".toml") {
        let text = crate::input::read_input_file(name, "experiment file")?;
        return file::plan(&text, name, o);
    }
    find(name)?.plan(o)
}
