//! Scenarios: the built-in ones (embedded, so the main job needs no files) and TOML scenario
//! files, parsed strictly with errors that name the file and line.

use super::RunSpec;
use crate::workload::params::Params;
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
        "schbench23",
        "schbench 2023 (48aed1d) -m 2 -t 16 -r 30: LKP's default job, 25% load on the 128-CPU 4-node Xeon",
        include_str!("../../scenarios/schbench23.toml"),
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
    (
        "netperf",
        "LKP's netperf TCP_RR at 25% load (32 netperf/netserver pairs over loopback) on the 128-CPU 4-node Xeon",
        include_str!("../../scenarios/netperf.toml"),
    ),
    (
        "tbench",
        "LKP's tbench at 25% load (32 clients and tbench_srv children over loopback TCP, -t 1) on the 128-CPU 4-node Xeon",
        include_str!("../../scenarios/tbench.toml"),
    ),
];

/// A TOML document's top-level keys with where each value starts (for `file:line` errors).
pub type FileTable = BTreeMap<String, toml::Spanned<toml::Value>>;

/// The 1-based line of byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Read a TOML document's top-level keys; a syntax error names the file and line.
pub fn read_table(text: &str, origin: &str) -> Result<FileTable, String> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        let msg = e.message().replace('\n', " ");
        if msg.contains("too large") {
            // TOML integers are 64-bit signed.
            return format!("{origin}:{line}: a number is out of range (TOML integers are at most {})", i64::MAX);
        }
        format!("{origin}:{line}: {msg}")
    })
}

/// The values a file gives a spec field: a scalar is one value, a list one per item (for
/// fields that repeat), a table of on/off switches one `NAME=on|off` per entry (idle states),
/// a table of `NAME = "VALUE"` one `NAME=VALUE` per entry (unknowns).
fn field_values(f: &super::Field, v: &toml::Value) -> Result<Vec<String>, String> {
    let scalar = |v: &toml::Value| match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    };
    match v {
        toml::Value::Array(items) if f.repeats => items
            .iter()
            .map(|i| scalar(i).ok_or_else(|| format!("{} = [...]: expected a list of strings", f.key)))
            .collect(),
        toml::Value::Table(t) if f.name == "unknown" => t
            .iter()
            .map(|(n, v)| match v {
                toml::Value::String(s) => Ok(format!("{n}={s}")),
                toml::Value::Integer(i) => Ok(format!("{n}={i}")),
                other => Err(format!("{}.{n} = {other}: expected a string, e.g. \"50us@16\"", f.key)),
            })
            .collect(),
        toml::Value::Table(t) if f.name == "cstate" => t
            .iter()
            .map(|(n, on)| match on {
                toml::Value::Boolean(b) => Ok(format!("{n}={}", if *b { "on" } else { "off" })),
                other => Err(format!("{}.{n} = {other}: expected true or false", f.key)),
            })
            .collect(),
        v => scalar(v).map(|s| vec![s]).ok_or_else(|| {
            if f.repeats {
                format!("{} = {v}: expected a string or a list of strings", f.key)
            } else {
                format!("{} = {v}: expected a string, integer or boolean", f.key)
            }
        }),
    }
}

/// The spec fields a file's table gives (keys of [`super::FIELDS`]), as (field name, value,
/// line) in the fields' order, after checking that every other key is in `own` (the keys the
/// file's reader handles itself). Errors name the file, the line and the key.
pub fn field_values_of(
    t: &FileTable,
    text: &str,
    origin: &str,
    own: &[&str],
) -> Result<Vec<(&'static str, String, usize)>, String> {
    let line = |v: &toml::Spanned<toml::Value>| line_of(text, v.span().start);
    for (k, v) in t {
        if super::field(k).is_none_or(|f| f.key != k) && !own.contains(&k.as_str()) {
            let mut keys: Vec<&str> = own.to_vec();
            keys.extend(super::FIELDS.iter().map(|f| f.key));
            return Err(format!("{origin}:{}: unknown key `{k}` (expected one of: {})", line(v), keys.join(", ")));
        }
    }
    let mut out = Vec::new();
    for f in super::FIELDS {
        if own.contains(&f.key) {
            continue;
        }
        let Some(v) = t.get(f.key) else { continue };
        let values = field_values(f, v.get_ref()).map_err(|e| format!("{origin}:{}: {e}", line(v)))?;
        out.extend(values.into_iter().map(|x| (f.name, x, line(v))));
    }
    Ok(out)
}

/// Apply the spec fields a file's table gives to `s` ([`field_values_of`]): the one parser of
/// each value is `RunSpec::set`. Errors name the file, the line and the field.
pub fn apply_fields(s: &mut RunSpec, t: &FileTable, text: &str, origin: &str, own: &[&str]) -> Result<(), String> {
    for (name, value, line) in field_values_of(t, text, origin, own)? {
        let key = super::field(name).map_or(name, |f| f.key);
        s.set_as(name, &value, key).map_err(|e| format!("{origin}:{line}: {e}"))?;
    }
    Ok(())
}

/// Workload parameters from a file's `params` table: each a string, integer or boolean
/// (`true` is 1); errors name the file and line.
pub fn file_params(v: &toml::Spanned<toml::Value>, text: &str, origin: &str) -> Result<Vec<(String, String)>, String> {
    let line = line_of(text, v.span().start);
    let toml::Value::Table(t) = v.get_ref() else {
        return Err(format!("{origin}:{line}: params: expected a table of key = value"));
    };
    let mut pairs = Vec::new();
    for (k, v) in t {
        let v = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => (*b as u8).to_string(),
            other => {
                let needle = k.to_string();
                let line = text.find(&needle).map(|o| line_of(text, o)).unwrap_or(line);
                return Err(format!("{origin}:{line}: params.{k} = {other}: expected a string, integer or boolean"));
            }
        };
        pairs.push((k.clone(), v));
    }
    Ok(pairs)
}

/// Parse a scenario file's text into a run spec: `workload = NAME` (or `rtapp = "FILE.json"`),
/// its `params`, and any field of the spec by its file key. `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<RunSpec, String> {
    from_table(&read_table(text, origin)?, text, origin, &[])
}

/// The run spec of a scenario's keys in table `t` of file `text` (a scenario file's top level,
/// an experiment file's `[spec]`); `own` are further keys the caller handles itself.
pub fn from_table(t: &FileTable, text: &str, origin: &str, own: &[&str]) -> Result<RunSpec, String> {
    let str_of = |k: &str| -> Result<Option<String>, String> {
        match t.get(k) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                toml::Value::String(s) => Ok(Some(s.clone())),
                other => Err(format!("{origin}:{}: {k} = {other}: expected a string", line_of(text, v.span().start))),
            },
        }
    };
    let (wl, rtapp) = (str_of("workload")?, str_of("rtapp")?);
    let workload = match (&wl, &rtapp) {
        (Some(w), None) => w.clone(),
        (None, Some(_)) => "rtapp".to_string(),
        (Some(w), Some(_)) if w == "rtapp" => "rtapp".to_string(),
        (Some(w), Some(_)) => {
            let line = text.find("rtapp").map(|o| line_of(text, o)).unwrap_or(1);
            return Err(format!("{origin}:{line}: rtapp = FILE runs the rtapp workload, but workload = \"{w}\""));
        }
        (None, None) => return Err(format!("{origin}:1: missing `workload = NAME` (or `rtapp = \"FILE.json\"`)")),
    };
    if !crate::workload::WORKLOADS.iter().any(|(n, _)| *n == workload) {
        let line = t.get("workload").map_or(1, |v| line_of(text, v.span().start));
        let names: Vec<&str> = crate::workload::WORKLOADS.iter().map(|(n, _)| *n).collect();
        return Err(format!("{origin}:{line}: unknown workload '{workload}' (expected one of: {})", names.join(", ")));
    }
    let mut s = RunSpec::new(&workload);
    let mut keys = vec!["workload", "rtapp", "params"];
    keys.extend(own);
    apply_fields(&mut s, t, text, origin, &keys)?;
    let mut pairs = match t.get("params") {
        Some(v) => file_params(v, text, origin)?,
        None => Vec::new(),
    };
    if let Some(r) = &rtapp {
        // Relative to the scenario file's directory (built-in scenarios: to the working directory).
        let base = std::path::Path::new(origin).parent().filter(|_| !origin.starts_with('<'));
        let path = match base {
            Some(d) if std::path::Path::new(r).is_relative() => d.join(r).display().to_string(),
            _ => r.clone(),
        };
        pairs.insert(0, ("file".to_string(), path));
    }
    // Parameter errors (unknown names, ranges) come when the workload reads them: they name the
    // file and the line of the `[params]` table.
    let origin = match t.get("params") {
        Some(v) => format!("{origin}:{}: [params]", line_of(text, v.span().start)),
        None => format!("{origin} [params]"),
    };
    s.params = Params::from_pairs(pairs, &origin);
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
    fn builtins_parse() {
        for (name, ..) in BUILTIN {
            builtin(name).unwrap();
        }
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("workload = \"ipistorm\"\nmachine = \"epyc-7763-2s\"\nbogus = 3\n", "x.toml").unwrap_err();
        assert!(e.starts_with("x.toml:3:"), "{e}");
        let e = parse("workload = \"ipistorm\"\nseed = \"one\"\n", "y.toml").unwrap_err();
        assert!(e.starts_with("y.toml:2:"), "{e}");
        let e = parse("workload = \"ipistorm\"\nhz = 123\n", "h.toml").unwrap_err();
        assert!(e.starts_with("h.toml:2: hz = 123 is not a CONFIG_HZ choice"), "{e}");
        let e = parse("workload = \"ipistorm\"\nfeatures = [1.5]\n", "f.toml").unwrap_err();
        assert!(e.starts_with("f.toml:2: features"), "{e}");
        let s =
            parse("workload = \"ipistorm\"\nidle_states = { C2 = false }\npatches = [\"+3dcac251b066\"]\n", "c.toml")
                .unwrap();
        assert_eq!(s.idle_states, vec![("C2".to_string(), false)]);
        assert_eq!(s.patches, "+3dcac251b066");
        let s = parse(
            "workload = \"ipistorm\"\nunknowns = { start-avg-idle = \"0.05ms@16\", overload-holder = \"same-llc@16\" }\n",
            "u.toml",
        )
        .unwrap();
        let want = [("overload-holder", "same-llc@16"), ("start-avg-idle", "50us@16")];
        assert_eq!(s.unknowns, want.map(|(a, b)| (a.to_string(), b.to_string())));
        let e = parse("workload = \"ipistorm\"\n\nunknowns = { newidle-cost = 5 }\n", "u.toml").unwrap_err();
        assert!(e.starts_with("u.toml:3: unknowns: newidle-cost=5: expected TIME@CPULIST/LEVEL"), "{e}");
        let e = parse("workload = \"ipistorm\"\nunknowns = { bogus = \"1\" }\n", "u.toml").unwrap_err();
        assert!(e.starts_with("u.toml:2: unknowns 'bogus=1': no unknown named 'bogus'"), "{e}");
    }
}
