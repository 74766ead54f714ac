//! The model's own path durations, from its trace records at ns precision: the same tracepoint
//! pairs that `tools/measure/path_costs.py` measures on the real kernel (docs/measured-paths.md),
//! so the two can be compared (docs/path-costs-check.md, `tools/measure/path_check.py`).
//!
//! Usage:
//!   cargo run --release --example path_durations -- MACHINE BACKGROUND SEED WORKLOAD [PARAM=VALUE...]
//!
//! e.g. `... docs/guest-2vcpu-icx.toml none 1 hackbench tool=perf "args=-g 1 -l 100"`. Prints one
//! JSON object: path name -> {n, p10, p50, p90, inner_p50}, where inner_p50 is the median
//! number of trace records the model writes on that CPU strictly inside the interval (the real
//! kernel's interval is inflated by its own records; the model's records cost nothing).
//!
//! Path names follow path_costs.py: `csd:FUNC`, `call_function_single`, `reschedule`,
//! `local_timer`, `softirq:SCHED|TIMER|RCU|...`, `timer:FUNC`, `idle_exit_next`,
//! `wake:SAME|CROSS:busy|idle` (sched_waking to the sched_switch that runs that pid; busy/idle is
//! the state at the waking of the CPU the task is switched in on).

use schedsim::run::execute;
use schedsim::spec::RunSpec;
use schedsim::trace::{Event, Record, Sym, Vector};
use std::collections::BTreeMap;

fn sym_name(s: Sym) -> String {
    match s {
        Sym::SchedTtwuPending => "sched_ttwu_pending".into(),
        Sym::NohzCsdFunc => "nohz_csd_func".into(),
        Sym::DoNothingIpi => "do_nothing_ipi".into(),
        Sym::RtoPushIrqWorkFunc => "rto_push_irq_work_func".into(),
        other => format!("{other:?}"),
    }
}

fn softirq_name(vec: u32) -> &'static str {
    // include/linux/interrupt.h softirq numbers.
    match vec {
        0 => "HI",
        1 => "TIMER",
        2 => "NET_TX",
        3 => "NET_RX",
        4 => "BLOCK",
        5 => "IRQ_POLL",
        6 => "TASKLET",
        7 => "SCHED",
        8 => "HRTIMER",
        9 => "RCU",
        _ => "?",
    }
}

fn vector_name(v: Vector) -> &'static str {
    match v {
        Vector::LocalTimer => "local_timer",
        Vector::CallFunctionSingle => "call_function_single",
        Vector::Reschedule => "reschedule",
        Vector::CallFunction => "call_function",
    }
}

/// One open interval on a CPU: its path name, its start, and the index of its first record.
struct Open {
    key: String,
    start: u64,
    idx: usize,
}

#[derive(Default)]
struct Samples {
    dur: Vec<u64>,
    inner: Vec<u64>,
}

fn pct(v: &[u64], p: f64) -> f64 {
    // Linear interpolation between closest ranks (numpy's default, as path_costs.py uses).
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let x = p / 100.0 * (n - 1) as f64;
    let lo = x.floor() as usize;
    let hi = x.ceil() as usize;
    v[lo] as f64 + (v[hi] as f64 - v[lo] as f64) * (x - lo as f64)
}

fn walk(trace: &[Record], nr_cpus: usize) -> BTreeMap<String, Samples> {
    let mut out: BTreeMap<String, Samples> = BTreeMap::new();
    // Per-CPU record index (position among that CPU's records) to count records inside.
    let mut per_cpu_idx = vec![0usize; nr_cpus];
    let mut open: Vec<Vec<Open>> = (0..nr_cpus).map(|_| Vec::new()).collect();
    let mut idle_exit: Vec<Option<(u64, usize)>> = vec![None; nr_cpus];
    let mut cur: Vec<u32> = vec![0; nr_cpus];
    // pid -> (ts of sched_waking, waking CPU, per-CPU idle flags at the waking)
    let mut waking: BTreeMap<u32, (u64, u32, Vec<bool>, Vec<usize>)> = BTreeMap::new();
    let add = |out: &mut BTreeMap<String, Samples>, k: String, d: u64, inner: u64| {
        let s = out.entry(k).or_default();
        s.dur.push(d);
        s.inner.push(inner);
    };
    for r in trace {
        let c = r.cpu as usize;
        let i = per_cpu_idx[c];
        per_cpu_idx[c] += 1;
        if let Some((t, j)) = idle_exit[c].take() {
            add(&mut out, "idle_exit_next".into(), r.ts_ns - t, (i - j - 1) as u64);
        }
        let close = |open: &mut Vec<Open>, key: &str| -> Option<Open> {
            let pos = open.iter().rposition(|o| o.key == key)?;
            Some(open.remove(pos))
        };
        match r.event {
            Event::CsdFunctionEntry { func, .. } => {
                open[c].push(Open { key: format!("csd:{}", sym_name(func)), start: r.ts_ns, idx: i })
            }
            Event::CsdFunctionExit { func, .. } => {
                if let Some(o) = close(&mut open[c], &format!("csd:{}", sym_name(func))) {
                    add(&mut out, o.key, r.ts_ns - o.start, (i - o.idx - 1) as u64);
                }
            }
            Event::VectorEntry { vector } => {
                open[c].push(Open { key: vector_name(vector).into(), start: r.ts_ns, idx: i })
            }
            Event::VectorExit { vector } => {
                if let Some(o) = close(&mut open[c], vector_name(vector)) {
                    add(&mut out, o.key, r.ts_ns - o.start, (i - o.idx - 1) as u64);
                }
            }
            Event::SoftirqEntry { vec } => {
                open[c].push(Open { key: format!("softirq:{}", softirq_name(vec)), start: r.ts_ns, idx: i })
            }
            Event::SoftirqExit { vec } => {
                if let Some(o) = close(&mut open[c], &format!("softirq:{}", softirq_name(vec))) {
                    add(&mut out, o.key, r.ts_ns - o.start, (i - o.idx - 1) as u64);
                }
            }
            Event::TimerExpireEntry { timer, func, .. } => {
                open[c].push(Open { key: format!("timer@{timer:x}#{func}"), start: r.ts_ns, idx: i })
            }
            Event::TimerExpireExit { timer } => {
                let pos = open[c].iter().rposition(|o| o.key.starts_with(&format!("timer@{timer:x}#")));
                if let Some(p) = pos {
                    let o = open[c].remove(p);
                    let func = o.key.rsplit('#').next().unwrap_or("").to_string();
                    add(&mut out, format!("timer:#{func}"), r.ts_ns - o.start, (i - o.idx - 1) as u64);
                }
            }
            Event::CpuIdle { state, .. } if state == u32::MAX => {
                idle_exit[c] = Some((r.ts_ns, i));
            }
            Event::SchedWaking { pid, .. } => {
                let idle: Vec<bool> = cur.iter().map(|&p| p == 0).collect();
                waking.insert(pid, (r.ts_ns, r.cpu, idle, per_cpu_idx.clone()));
            }
            Event::SchedSwitch { next_pid, .. } => {
                cur[c] = next_pid;
                if let Some((t, wcpu, idle, idxs)) = waking.remove(&next_pid) {
                    let same = if wcpu == r.cpu { "SAME" } else { "CROSS" };
                    let state = if idle[c] { "idle" } else { "busy" };
                    // Records on the switching CPU since the waking (excluding this one).
                    let inner = (i - idxs[c]) as u64;
                    add(&mut out, format!("wake:{same}:{state}"), r.ts_ns - t, inner);
                }
            }
            _ => {}
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: path_durations MACHINE BACKGROUND SEED WORKLOAD [PARAM=VALUE...]");
        std::process::exit(2);
    }
    let mut spec = RunSpec::new(&args[3]);
    spec.machine = args[0].clone();
    spec.background = Some(args[1].clone());
    spec.seed = match args[2].parse() {
        Ok(s) => s,
        Err(_) => {
            eprintln!("path_durations: SEED '{}' is not an unsigned integer", args[2]);
            std::process::exit(2);
        }
    };
    spec.trace = true;
    let params = match schedsim::workload::params::Params::parse(args[4..].iter().map(|s| s.as_str()), "command line") {
        Ok(p) => p,
        Err(e) => {
            eprintln!("path_durations: {e}");
            std::process::exit(2);
        }
    };
    spec.params = params;
    let r = match execute(&spec) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("path_durations: {e}");
            std::process::exit(1);
        }
    };
    let mut paths = walk(&r.trace, r.nr_cpus as usize);
    // Timer callbacks by their function name (the background source's name).
    let named: BTreeMap<String, Samples> = std::mem::take(&mut paths)
        .into_iter()
        .map(|(k, v)| match k.strip_prefix("timer:#") {
            Some(id) => {
                let name = id.parse::<usize>().ok().and_then(|i| r.funcs.get(i)).cloned().unwrap_or(id.to_string());
                (format!("timer:{name}"), v)
            }
            None => (k, v),
        })
        .collect();
    let mut obj = serde_json::Map::new();
    for (k, mut s) in named {
        s.dur.sort_unstable();
        s.inner.sort_unstable();
        obj.insert(
            k,
            serde_json::json!({
                "n": s.dur.len(),
                "p10": pct(&s.dur, 10.0),
                "p50": pct(&s.dur, 50.0),
                "p90": pct(&s.dur, 90.0),
                "inner_p50": pct(&s.inner, 50.0),
            }),
        );
    }
    let out = serde_json::json!({
        "machine": r.machine,
        "kernel": r.kernel_label,
        "seed": r.seed,
        "sim_ns": r.sim_ns,
        "records": r.trace.len(),
        "paths": obj,
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
}
