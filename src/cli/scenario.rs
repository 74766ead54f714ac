//! Scenarios: the built-in ones (embedded, so the main job needs no files) and TOML scenario
//! files, parsed strictly with errors that name the file and line.

use crate::run::RunSpec;
use crate::workload::params::Params;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Built-in scenarios: (name, description, TOML).
pub const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "ipistorm",
        "the published ipistorm run: CPU8 -> CPU16, 100k waiting calls, EPYC 7763 2S, C2 off",
        include_str!("../../scenarios/ipistorm.toml"),
    ),
    (
        "schbench",
        "schbench -m 2 -t 16 -r 30 on the 32-vCPU Ice Lake VM (v6.2)",
        include_str!("../../scenarios/schbench.toml"),
    ),
    (
        "spinners",
        "8 spinners started on CPU 8 of an EPYC 7763 2S with polling idle CPUs (the ilb-polling setup)",
        include_str!("../../scenarios/spinners.toml"),
    ),
    (
        "numa-imbalance",
        "160 spinners on NUMA node 0 of an EPYC 7763 2S, node 1 idle (Julia Lawall's shape)",
        include_str!("../../scenarios/numa-imbalance.toml"),
    ),
    (
        "nanosleep",
        "240 processes looping nanosleep(1 us) on the 240-CPU Intel machine",
        include_str!("../../scenarios/nanosleep.toml"),
    ),
    (
        "hackbench",
        "the old `hackbench 10` (400 processes, AF_UNIX sockets, 100 loops) on the 4C/8T i7 desktop",
        include_str!("../../scenarios/hackbench.toml"),
    ),
    (
        "rt-push",
        "a FIFO task woken onto the CPU of a pinned FIFO task it outranks (4-CPU SMP): where does it run?",
        include_str!("../../scenarios/rt-push.toml"),
    ),
    (
        "pingpong",
        "two threads pinned to CPUs 0 and 1 of a 4-CPU SMP bouncing a byte through two pipes, 10000 times",
        include_str!("../../scenarios/pingpong.toml"),
    ),
    ("perf-pipe", "perf bench sched pipe -l 100000 on a 4-CPU SMP", include_str!("../../scenarios/perf-pipe.toml")),
    ("idle", "an idle EPYC 7763 2S for 100 ms (ticks, idle states, nohz)", include_str!("../../scenarios/idle.toml")),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    workload: Option<String>,
    /// An rt-app JSON file (relative to the scenario file): the `rtapp` workload.
    rtapp: Option<String>,
    machine: Option<String>,
    kernel: Option<String>,
    #[serde(default)]
    patches: Vec<String>,
    #[serde(default)]
    features: Vec<String>,
    hz: Option<toml::Spanned<u32>>,
    seed: Option<u64>,
    limit_ms: Option<toml::Spanned<u64>>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    #[serde(default)]
    idle_states: BTreeMap<String, bool>,
    /// Background profile (`none`, a built-in name or a file) and preemption model.
    background: Option<String>,
    preempt: Option<String>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Parse a scenario file's text into a run spec. `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<RunSpec, String> {
    let f: ScenarioFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        let msg = e.message().replace('\n', " ");
        format!("{origin}:{line}: {msg}")
    })?;
    let workload = match (&f.workload, &f.rtapp) {
        (Some(w), None) => w.clone(),
        (None, Some(_)) => "rtapp".to_string(),
        (Some(w), Some(_)) if w == "rtapp" => "rtapp".to_string(),
        (Some(w), Some(_)) => {
            let line = text.find("rtapp").map(|o| line_of(text, o)).unwrap_or(1);
            return Err(format!("{origin}:{line}: rtapp = FILE runs the rtapp workload, but workload = \"{w}\""));
        }
        (None, None) => return Err(format!("{origin}:1: missing `workload = NAME` (or `rtapp = \"FILE.json\"`)")),
    };
    let mut s = RunSpec::new(&workload);
    if let Some(m) = f.machine {
        s.machine = m;
    }
    if let Some(k) = f.kernel {
        s.kernel = k;
    }
    s.patches = f.patches.join(",");
    s.features = f.features;
    if let Some(hz) = &f.hz {
        let line = line_of(text, hz.span().start);
        crate::limits::check_hz(*hz.get_ref(), &format!("{origin}:{line}: hz ="))?;
    }
    s.hz = f.hz.map(|h| h.into_inner());
    s.background = f.background;
    s.preempt = f.preempt;
    if let Some(seed) = f.seed {
        s.seed = seed;
    }
    if let Some(l) = &f.limit_ms {
        let line = line_of(text, l.span().start);
        s.limit_ns =
            crate::limits::limit_ms_to_ns(*l.get_ref(), "limit_ms").map_err(|e| format!("{origin}:{line}: {e}"))?;
    }
    let mut pairs = Vec::new();
    for (k, v) in f.params {
        let v = match v {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => (b as u8).to_string(),
            other => {
                let needle = k.to_string();
                let line = text.find(&needle).map(|o| line_of(text, o)).unwrap_or(1);
                return Err(format!("{origin}:{line}: params.{k} = {other}: expected a string, integer or boolean"));
            }
        };
        pairs.push((k, v));
    }
    if let Some(r) = &f.rtapp {
        // Relative to the scenario file's directory (built-in scenarios: to the working directory).
        let base = std::path::Path::new(origin).parent().filter(|_| !origin.starts_with('<'));
        let path = match base {
            Some(d) if std::path::Path::new(r).is_relative() => d.join(r).display().to_string(),
            _ => r.clone(),
        };
        pairs.insert(0, ("file".to_string(), path));
    }
    s.params = Params::from_pairs(pairs, &format!("{origin} [params]"));
    s.idle_states = f.idle_states.into_iter().collect();
    Ok(s)
}

/// A built-in scenario by name.
pub fn builtin(name: &str) -> Result<RunSpec, String> {
    let Some((_, _, text)) = BUILTIN.iter().find(|(n, ..)| *n == name) else {
        let names: Vec<&str> = BUILTIN.iter().map(|b| b.0).collect();
        return Err(format!("unknown scenario '{name}' (expected one of: {}, or --scenario FILE)", names.join(", ")));
    };
    parse(text, &format!("<built-in {name}>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_build() {
        for (name, ..) in BUILTIN {
            let s = builtin(name).unwrap();
            crate::run::build(&s).unwrap();
        }
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("workload = \"ipistorm\"\nmachine = \"epyc-7763-2s\"\nbogus = 3\n", "x.toml").unwrap_err();
        assert!(e.starts_with("x.toml:3:"), "{e}");
        let e = parse("workload = \"ipistorm\"\nseed = \"one\"\n", "y.toml").unwrap_err();
        assert!(e.starts_with("y.toml:2:"), "{e}");
        let s = parse("workload = \"ipistorm\"\n[params]\nnumipi = 10\nsingle = 1\nbad = 2\n", "z.toml").unwrap();
        let e = crate::run::build(&s).err().unwrap();
        assert!(e.contains("unknown ipistorm parameter 'bad'"), "{e}");
    }
}
