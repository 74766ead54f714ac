//! `schedsim explore`: the interleaving explorer's command line (`crate::explore`).

use super::{apply_spec_args, base_spec, emit, SpecArgs};
use crate::explore::{self, strategy::Kind, Options, Report};
use crate::spec::RunSpec;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Built-in scenario (as for `schedsim run`).
    #[arg(default_value = "ipistorm")]
    scenario: String,
    /// Workload parameters, key=value (schbench: its options after `--`).
    params: Vec<String>,
    /// A TOML scenario file instead of a built-in scenario.
    #[arg(long = "scenario", value_name = "FILE")]
    scenario_file: Option<PathBuf>,
    #[command(flatten)]
    spec: SpecArgs,
    /// Seed of every run (the perturbation of run i derives from it and i).
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Number of perturbed runs (1..=1000000).
    #[arg(long, default_value_t = 100)]
    budget: u64,
    /// How same-time actions are ordered: random, pct or delay.
    #[arg(long, default_value = "random")]
    strategy: String,
    /// PCT's bug depth (d: d-1 priority change points), or the delay bound (at most D
    /// deviations from FIFO); 1..=1000.
    #[arg(long, default_value_t = 3)]
    depth: u32,
    /// Worker threads (the output is the same for any number).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Do not perturb the jitter draws (only the order of same-time actions).
    #[arg(long)]
    no_jitter: bool,
    /// Stop at the first run with a finding (the runs in flight beside it are not reported).
    #[arg(long)]
    first: bool,
    /// The most runs the minimization of one finding may take (1..=100000).
    #[arg(long, default_value_t = 200)]
    minimize_runs: u64,
    /// No progress display on stderr.
    #[arg(long)]
    quiet: bool,
    /// Print one JSON document instead of text (findings with rule, instant, CPU, replay token
    /// and command, trace hash).
    #[arg(long)]
    json: bool,
}

/// The `schedsim run` command line that replays perturbation `p` on `s` with the checkers on:
/// the spec's own printer ([`RunSpec::command_line`]), so it reads back as the same run.
pub fn replay_line(s: &RunSpec, p: &crate::explore::Perturbation) -> String {
    RunSpec { check: true, replay: Some(p.clone()), ..s.clone() }.command_line()
}

/// The explorer's report as text (identical for any `--jobs`).
pub fn report_text(s: &RunSpec, o: &Options, r: &Report) -> String {
    let mut t = String::new();
    let runs = r.outcomes.len();
    t.push_str(&format!(
        "explore: {} runs of {} (strategy {}, depth {}, jitter {}), seed {}\n",
        runs,
        s.workload,
        o.strategy.name(),
        o.depth,
        if o.jitter { "perturbed" } else { "as drawn" },
        s.seed
    ));
    let mean_points = r.outcomes.iter().map(|x| x.choice_points).sum::<u64>() / runs.max(1) as u64;
    let mean_picks = r.outcomes.iter().map(|x| x.perturbed.0 as u64).sum::<u64>() / runs.max(1) as u64;
    t.push_str(&format!(
        "unperturbed run: {} choice points, {}\nperturbed runs: {} choice points and {} choices off FIFO on average\n",
        r.base_points,
        match &r.base_finding {
            Some(f) => format!("first violation {} at {} ns on CPU {}", f.rule, f.time_ns, f.cpu),
            None => "no violation".into(),
        },
        mean_points,
        mean_picks
    ));
    if r.found.is_empty() {
        t.push_str(&format!("no finding in {runs} runs\n"));
        return t;
    }
    for (n, f) in r.found.iter().enumerate() {
        let x = &f.finding;
        t.push_str(&format!(
            "\nfinding {}: {} (first in run {}; {} of {} runs)\n  kernel rule: {}\n  first at {}.{:06} ms on CPU {}: {}\n",
            n + 1,
            x.rule,
            f.first_run,
            f.hits,
            runs,
            x.kernel_rule,
            x.time_ns / 1_000_000,
            x.time_ns % 1_000_000,
            x.cpu,
            x.detail
        ));
        let picks: Vec<String> = f.perturbation.picks.iter().map(|(p, c)| format!("{p}:{c}")).collect();
        let cpus: Vec<String> = f.perturbation.jitter.iter().map(|(c, _)| c.to_string()).collect();
        t.push_str(&format!(
            "  minimized: {} -> {} perturbed items in {} runs{} (choices point:pick [{}], jitter re-seeded on CPUs [{}])\n",
            f.original_len,
            f.perturbation.len(),
            f.minimize_runs,
            if f.minimize_cut { ", stopped at --minimize-runs" } else { "" },
            picks.join(" "),
            cpus.join(" ")
        ));
        t.push_str("  trace around it:\n");
        for l in f.excerpt.lines() {
            t.push_str(&format!("    {l}\n"));
        }
        t.push_str(&format!("  trace hash {:016x}\n  replay: {}\n", f.trace_hash, replay_line(s, &f.perturbation)));
    }
    t
}

/// The explorer's report as one JSON document (identical for any `--jobs`): the exploration's
/// settings, the unperturbed run, and each finding with its kernel rule, first instant and CPU,
/// its minimized perturbation as a replay token and the `schedsim run` line that replays it,
/// and the hash of its trace.
pub fn report_json(s: &RunSpec, o: &Options, r: &Report) -> serde_json::Value {
    use serde_json::json;
    let finding = |f: &explore::Finding| {
        json!({
            "rule": f.rule,
            "kernel_rule": f.kernel_rule,
            "time_ns": f.time_ns,
            "cpu": f.cpu,
            "detail": f.detail,
        })
    };
    json!({
        "scenario": s.workload,
        "command": s.command_line(),
        "seed": s.seed,
        "strategy": o.strategy.name(),
        "depth": o.depth,
        "jitter": o.jitter,
        "runs": r.outcomes.len(),
        "unperturbed": {
            "choice_points": r.base_points,
            "finding": r.base_finding.as_ref().map(finding),
        },
        "findings": r.found.iter().map(|f| {
            let mut v = finding(&f.finding);
            v["first_run"] = json!(f.first_run);
            v["hits"] = json!(f.hits);
            v["replay_token"] = json!(f.perturbation.token());
            v["replay_command"] = json!(replay_line(s, &f.perturbation));
            v["perturbed_items"] = json!(f.perturbation.len());
            v["perturbed_items_before_minimizing"] = json!(f.original_len);
            v["minimize_runs"] = json!(f.minimize_runs);
            v["minimize_cut"] = json!(f.minimize_cut);
            v["trace_hash"] = json!(format!("{:016x}", f.trace_hash));
            v["excerpt"] = json!(f.excerpt);
            v
        }).collect::<Vec<_>>(),
    })
}

pub fn cmd_explore(a: ExploreArgs) -> Result<(), String> {
    let mut params = a.params.clone();
    if a.scenario_file.is_some() && a.scenario != "ipistorm" {
        params.insert(0, a.scenario.clone());
    }
    let mut s = base_spec(&a.scenario, &a.scenario_file, &params)?;
    apply_spec_args(&mut s, &a.spec)?;
    if let Some(seed) = a.seed {
        s.seed = seed;
    }
    if !(1..=100_000).contains(&a.minimize_runs) {
        return Err(format!("--minimize-runs {} is out of range (1..=100000)", a.minimize_runs));
    }
    if !(1..=1024).contains(&a.jobs) {
        return Err(format!("--jobs {} is out of range (1..=1024)", a.jobs));
    }
    let o = Options {
        strategy: Kind::parse(&a.strategy)?,
        budget: a.budget,
        depth: a.depth,
        jitter: !a.no_jitter,
        jobs: a.jobs,
        stop_at_first: a.first,
        minimize_runs: a.minimize_runs,
    };
    let start = std::time::Instant::now();
    let mut runs_done = (0u64, 0f64);
    let mut first_found: Option<f64> = None;
    let mut progress = |done: u64, hits: u64| {
        let t = start.elapsed().as_secs_f64();
        runs_done = (done, t);
        if hits > 0 && first_found.is_none() {
            first_found = Some(t);
        }
        if !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\rschedsim: {done}/{} runs, {hits} with a finding  ", o.budget);
        }
    };
    let r = explore::explore_with(&s, &o, &mut progress)?;
    let wall = start.elapsed().as_secs_f64();
    if !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    if a.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&report_json(&s, &o, &r)).expect("serializable")));
    } else {
        emit(&report_text(&s, &o, &r));
    }
    if !a.quiet {
        // Timing goes to stderr: stdout is the same for any --jobs.
        let (n, t) = runs_done;
        eprintln!(
            "schedsim: {n} runs in {t:.2} s ({:.1} runs/s, {} jobs; plus the unperturbed run){}; total with minimization {wall:.2} s",
            n as f64 / t.max(1e-9),
            o.jobs,
            match first_found {
                Some(f) => format!("; first finding after {f:.2} s"),
                None => String::new(),
            }
        );
    }
    Ok(())
}
