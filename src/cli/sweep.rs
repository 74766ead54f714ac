//! `schedsim sweep GRID.toml` and `schedsim merge FILE.jsonl...`: the command-line side of
//! [`crate::sweep`].

use crate::sweep::{self, Shard, SweepOpts};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The grid: kernels x machines x parameters x seeds, and experiments (see
    /// deploy/example-grid.toml).
    pub grid: PathBuf,
    /// Append one JSON line per run to FILE; runs already in it are skipped (resume).
    #[arg(long, value_name = "FILE.jsonl", default_value = "sweep.jsonl")]
    pub out: PathBuf,
    /// Worker threads (independent runs only; default: this machine's CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only shard I of N (from 0): the runs whose grid position is I modulo N, e.g.
    /// `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT` or `--shard $JOB_COMPLETION_INDEX/N`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Only list this shard's runs (key, group, variant, seed, done or not); run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Sweep outputs (one per shard, or one for the whole grid).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON document instead of the tables.
    #[arg(long)]
    pub json: bool,
}

pub fn cmd_sweep(a: SweepArgs) -> Result<(), String> {
    let shard = match &a.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::ALL,
    };
    let jobs = match a.jobs {
        Some(0) => return Err("--jobs must be at least 1".into()),
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let runs = sweep::load_grid(&a.grid)?;
    if a.dry_run {
        let mut o = String::new();
        for r in runs.iter().filter(|r| shard.contains(r)) {
            let state = r.band.as_ref().map_or(String::new(), |b| format!("  state s{}", b.state));
            o.push_str(&format!("{}  {}  {}  seed {}{state}\n", r.key(), r.group, r.variant, r.spec.seed));
        }
        super::emit(&o);
        return Ok(());
    }
    let progress = super::Progress::start(false, super::Progress::RUNS);
    let s = sweep::sweep(&runs, &a.out, &SweepOpts { shard, jobs });
    drop(progress);
    let s = s?;
    eprintln!(
        "schedsim: sweep {}: {} runs in the grid, shard {}/{}: {} runs, {} already in {}, {} run now",
        a.grid.display(),
        s.grid_runs,
        shard.index,
        shard.count,
        s.shard_runs,
        s.skipped,
        a.out.display(),
        s.ran
    );
    Ok(())
}

pub fn cmd_merge(a: MergeArgs) -> Result<(), String> {
    let lines = sweep::read_lines(&a.files)?;
    if lines.is_empty() {
        let names: Vec<String> = a.files.iter().map(|f| f.display().to_string()).collect();
        return Err(format!("merge: {} hold(s) no sweep lines (no runs to merge)", names.join(", ")));
    }
    let groups = sweep::merge(&lines);
    if a.json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&groups).expect("serializable")));
    } else {
        super::emit(&sweep::render_merged(&groups));
    }
    Ok(())
}
