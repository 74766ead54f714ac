//! The run spec: everything that decides a run ([`RunSpec`]), with its one parser and its one
//! printer. Every way of describing a run produces a `RunSpec` through the field table
//! [`FIELDS`]: command-line flags (`--NAME VALUE`, `cli::SpecArgs`), scenario files
//! ([`scenario`]), sweep grids (`sweep`), experiment plans and experiment files
//! (`experiments`). A field's value is read by [`RunSpec::set`] whatever its source, and
//! [`RunSpec::to_args`] prints a spec as the `schedsim run` command line that reads back into
//! an equal spec (`tests/run_line.rs`). A new field is one row of [`FIELDS`] (and its flag in
//! `cli::SpecArgs`, for `--help`).

pub mod scenario;

use crate::limits::{check_hz, limit_ms_to_ns};
use crate::sim::{Perturbation, Time, NSEC_PER_SEC};
use crate::workload::params::Params;

/// Everything that decides a run. [`RunSpec::to_args`] prints it as a `schedsim run` command
/// line and `cli::parse_run_line` reads one back: `tests/run_line.rs` checks `parse(print(spec))
/// == spec` and that a printed line reruns bit-identically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    pub machine: String,
    pub kernel: String,
    /// `+ID,-ID` on top of the named kernel.
    pub patches: String,
    /// Sched features (`NAME` / `NO_NAME`).
    pub features: Vec<String>,
    pub hz: Option<u32>,
    pub seed: u64,
    pub workload: String,
    pub params: Params,
    /// Idle states to enable or disable by name, e.g. ("C2", false).
    pub idle_states: Vec<(String, bool)>,
    /// Stop after this much simulated time even if the workload is not done.
    pub limit_ns: Time,
    /// Keep trace records. Not part of the command line: it changes what is kept, never the
    /// run (`--trace FILE` is an output option).
    pub trace: bool,
    /// CONFIG_PREEMPT_RT.
    pub preempt_rt: bool,
    /// Background activity: a built-in profile name, `none`, or a profile file (`.toml`).
    /// `None` takes the machine's default.
    pub background: Option<String>,
    /// The preemption model (`none`, `voluntary`, `full`, `dynamic-...`). `None` takes the
    /// machine's default.
    pub preempt: Option<String>,
    /// A perturbation found by `schedsim explore` to replay (`--replay TOKEN`).
    pub replay: Option<Perturbation>,
    /// Run the invariant checkers (`--check`; `linux::check`). They only observe: the run is
    /// the same with or without them.
    pub check: bool,
    /// Named unknowns set (`--unknown NAME=VALUE`; `crate::unknowns`): (name, canonical
    /// value), in the table's order, each at most once. Empty: every unknown at its default.
    pub unknowns: Vec<(String, String)>,
    /// The CPUs whose `/proc/schedstat` lines the result keeps (`run --schedstat CPULIST`);
    /// `None`: the busiest CPUs the report shows. Not part of the command line: it changes
    /// what is kept, never the run.
    pub schedstat_cpus: Option<Vec<u32>>,
}

/// One field of a run spec besides its workload and parameters: its name (the `--NAME` flag
/// and the word [`RunSpec::to_args`] prints), its key in scenario, grid and experiment files,
/// whether it is an on/off switch (printed bare, `--NAME`) or may repeat, how a value is read
/// into a spec (`what` is how the user spelled the field: `--hz`, or `hz` in a file; errors
/// start with it), and how a spec's value is printed (no value: not printed).
pub struct Field {
    pub name: &'static str,
    pub key: &'static str,
    pub switch: bool,
    pub repeats: bool,
    pub set: fn(&mut RunSpec, &str, &str) -> Result<(), String>,
    pub get: fn(&RunSpec) -> Vec<String>,
}

/// An on/off value: `on`/`1`/`true`/`yes` or `off`/`0`/`false`/`no`.
fn on_off(v: &str) -> Option<bool> {
    match v {
        "on" | "1" | "true" | "yes" | "enable" => Some(true),
        "off" | "0" | "false" | "no" | "disable" => Some(false),
        _ => None,
    }
}

/// The fields of a run spec, in the order [`RunSpec::to_args`] prints them and files apply
/// them (the machine before its idle states).
pub const FIELDS: &[Field] = &[
    Field {
        name: "machine",
        key: "machine",
        switch: false,
        repeats: false,
        set: |s, v, _what| {
            known_machine(v)?;
            if v != s.machine {
                // Idle-state choices made for another machine do not carry over.
                s.idle_states.clear();
            }
            s.machine = v.to_string();
            Ok(())
        },
        get: |s| vec![s.machine.clone()],
    },
    Field {
        name: "kernel",
        key: "kernel",
        switch: false,
        repeats: false,
        set: |s, v, _what| {
            crate::linux::config::KernelConfig::resolve(v, "", 250)?;
            s.kernel = v.to_string();
            Ok(())
        },
        get: |s| vec![s.kernel.clone()],
    },
    Field {
        name: "patch",
        key: "patches",
        switch: false,
        repeats: true,
        set: |s, v, _what| {
            known_patches(v)?;
            s.patches = merge_patches(&s.patches, v);
            Ok(())
        },
        get: |s| if s.patches.is_empty() { vec![] } else { vec![s.patches.clone()] },
    },
    Field {
        name: "feature",
        key: "features",
        switch: false,
        repeats: true,
        set: |s, v, _what| {
            crate::linux::kernel::sched::features::Features::default().apply(v)?;
            s.features.push(v.to_string());
            Ok(())
        },
        get: |s| s.features.clone(),
    },
    Field {
        name: "hz",
        key: "hz",
        switch: false,
        repeats: false,
        set: |s, v, what| {
            // `--hz 123` on the command line, `hz = 123` in a file.
            let what = if what.starts_with('-') { what.to_string() } else { format!("{what} =") };
            let hz: u32 = v.parse().map_err(|_| format!("{what} {v}: expected a number (100, 250, 300 or 1000)"))?;
            check_hz(hz, &what)?;
            s.hz = Some(hz);
            Ok(())
        },
        get: |s| s.hz.map(|h| h.to_string()).into_iter().collect(),
    },
    Field {
        name: "cstate",
        key: "idle_states",
        switch: false,
        repeats: true,
        set: |s, v, what| {
            let bad = || format!("{what} '{v}': expected NAME=on or NAME=off");
            let (name, on) = v.split_once('=').ok_or_else(bad)?;
            let on = on_off(on).ok_or_else(bad)?;
            s.idle_states.retain(|(n, _)| n != name);
            s.idle_states.push((name.to_string(), on));
            Ok(())
        },
        get: |s| s.idle_states.iter().map(|(n, on)| format!("{n}={}", if *on { "on" } else { "off" })).collect(),
    },
    Field {
        name: "limit-ms",
        key: "limit_ms",
        switch: false,
        repeats: false,
        set: |s, v, what| {
            let ms: u64 = v.parse().map_err(|_| format!("{what} = {v}: expected a whole number of milliseconds"))?;
            s.limit_ns = limit_ms_to_ns(ms, what)?;
            Ok(())
        },
        get: |s| {
            if s.limit_ns == RunSpec::new(&s.workload).limit_ns {
                return vec![];
            }
            vec![s.limit_ns.div_ceil(crate::sim::NSEC_PER_MSEC).to_string()]
        },
    },
    Field {
        name: "background",
        key: "background",
        switch: false,
        repeats: false,
        set: |s, v, _what| {
            known_background(v)?;
            s.background = Some(v.to_string());
            Ok(())
        },
        get: |s| s.background.clone().into_iter().collect(),
    },
    Field {
        name: "preempt",
        key: "preempt",
        switch: false,
        repeats: false,
        set: |s, v, _what| {
            known_preempt(v)?;
            s.preempt = Some(v.to_string());
            Ok(())
        },
        get: |s| s.preempt.clone().into_iter().collect(),
    },
    Field {
        name: "unknown",
        key: "unknowns",
        switch: false,
        repeats: true,
        set: |s, v, what| crate::unknowns::set_in(&mut s.unknowns, v, what),
        get: |s| s.unknowns.iter().map(|(n, v)| format!("{n}={v}")).collect(),
    },
    Field {
        name: "seed",
        key: "seed",
        switch: false,
        repeats: false,
        set: |s, v, what| {
            s.seed = v.parse().map_err(|_| format!("{what} '{v}': expected a number (0..=18446744073709551615)"))?;
            Ok(())
        },
        get: |s| vec![s.seed.to_string()],
    },
    Field {
        name: "replay",
        key: "replay",
        switch: false,
        repeats: false,
        set: |s, v, _what| {
            s.replay = Some(Perturbation::parse(v)?);
            Ok(())
        },
        get: |s| s.replay.as_ref().map(|p| p.token()).into_iter().collect(),
    },
    Field {
        name: "preempt-rt",
        key: "preempt_rt",
        switch: true,
        repeats: false,
        set: |s, v, what| {
            s.preempt_rt = on_off(v).ok_or_else(|| format!("{what} '{v}': expected true or false"))?;
            Ok(())
        },
        get: |s| if s.preempt_rt { vec![String::new()] } else { vec![] },
    },
    Field {
        name: "check",
        key: "check",
        switch: true,
        repeats: false,
        set: |s, v, what| {
            s.check = on_off(v).ok_or_else(|| format!("{what} '{v}': expected true or false"))?;
            Ok(())
        },
        get: |s| if s.check { vec![String::new()] } else { vec![] },
    },
];

/// The field named `name` (its flag name) or keyed `name` (its file key).
pub fn field(name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.name == name || f.key == name)
}

// Names are checked where they are set, so that a file's unknown name is reported with its
// file and line (`scenario::apply_fields`), not when the run is built. Files (`.toml`) are
// read and checked when the run is built; their errors name them.

fn known_machine(v: &str) -> Result<(), String> {
    if v.ends_with(".toml") || crate::hw::preset_text(v).is_some() {
        return Ok(());
    }
    crate::hw::preset(v).map(|_| ())
}

fn known_patches(v: &str) -> Result<(), String> {
    for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let id = item.trim_start_matches(['+', '-']);
        if crate::linux::patches::Patch::from_id(id).is_none() {
            let ids: Vec<&str> = crate::linux::patches::PATCHES.iter().map(|p| p.id).collect();
            return Err(format!("unknown patch '{id}' (expected +ID or -ID with ID one of: {})", ids.join(", ")));
        }
    }
    Ok(())
}

/// The background names `run::background` resolves (a profile file is read there).
pub fn known_background(v: &str) -> Result<(), String> {
    if v.ends_with(".toml") || v == "none" || crate::background::names().contains(&v) {
        return Ok(());
    }
    Err(format!(
        "unknown background '{v}' (expected one of: {}, or a profile file ending in .toml)",
        crate::background::names().join(", ")
    ))
}

/// The preemption models `--preempt`, scenario and machine files accept.
pub fn known_preempt(v: &str) -> Result<(), String> {
    match crate::linux::config::Preempt::parse(v) {
        Some(_) => Ok(()),
        None => Err(format!(
            "unknown preemption model '{v}' (expected one of: {})",
            crate::linux::config::Preempt::NAMES.join(", ")
        )),
    }
}

/// A spec's patch items with `extra` on top: an item of `extra` replaces the item for the same
/// patch, so each patch is named once.
fn merge_patches(base: &str, extra: &str) -> String {
    let id = |item: &str| {
        let raw = item.trim().trim_start_matches(['+', '-']).to_string();
        crate::linux::patches::Patch::from_id(&raw).map_or(raw, |p| p.info().id.to_string())
    };
    let over: Vec<String> = extra.split(',').filter(|i| !i.trim().is_empty()).map(id).collect();
    let mut items: Vec<&str> =
        base.split(',').map(str::trim).filter(|i| !i.is_empty() && !over.contains(&id(i))).collect();
    items.extend(extra.split(',').map(str::trim).filter(|i| !i.is_empty()));
    items.join(",")
}

impl RunSpec {
    pub fn new(workload: &str) -> RunSpec {
        RunSpec {
            machine: "epyc-7763-2s".into(),
            kernel: "v6.10".into(),
            patches: String::new(),
            features: Vec::new(),
            hz: None,
            seed: 1,
            workload: workload.into(),
            params: Params::default(),
            idle_states: Vec::new(),
            limit_ns: 120 * NSEC_PER_SEC,
            trace: false,
            preempt_rt: false,
            background: None,
            preempt: None,
            replay: None,
            check: false,
            unknowns: Vec::new(),
            schedstat_cpus: None,
        }
    }

    /// Read `value` into the field `name` (a flag name or a file key): the one parser of a
    /// spec's fields. Errors say which field and what was expected.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.set_as(name, value, name)
    }

    /// [`RunSpec::set`], errors naming the field as the user spelled it (`what`: `--hz` on
    /// the command line, `hz` in a file).
    pub fn set_as(&mut self, name: &str, value: &str, what: &str) -> Result<(), String> {
        let f = field(name).ok_or_else(|| {
            let names: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
            format!("unknown run spec field '{name}' (expected one of: {})", names.join(", "))
        })?;
        (f.set)(self, value.trim(), what)
    }

    /// Add workload parameters on top of the spec's (a later value of a key wins).
    pub fn add_params(&mut self, pairs: &[(String, String)], origin: &str) {
        let mut all = self.params.pairs().to_vec();
        all.extend(pairs.iter().cloned());
        self.params = Params::from_pairs(all, origin);
    }

    /// The command line of this spec, the words after `schedsim`: `run --workload NAME` (the bare
    /// workload, no scenario defaults), its parameters as `key=value`, then a flag for every
    /// field that changes a run ([`FIELDS`], in order). `cli::parse_run_line` reads them back
    /// into an equal spec. The machine is shown as given (a machine file by its path); the
    /// kernel and its patch deltas in the grammar `--kernel` and `--patch` accept. A time limit
    /// is shown in whole milliseconds (every entry point sets it in milliseconds).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["run".to_string(), "--workload".to_string(), self.workload.clone()];
        a.extend(self.params.pairs().iter().map(|(k, v)| format!("{k}={v}")));
        for f in FIELDS {
            for v in (f.get)(self) {
                if f.switch {
                    a.push(format!("--{}", f.name));
                } else if v.starts_with('-') {
                    // `--patch=-ID`: a value that starts with `-` stays glued to its flag.
                    a.push(format!("--{}={v}", f.name));
                } else {
                    a.push(format!("--{}", f.name));
                    a.push(v);
                }
            }
        }
        a
    }

    /// The spec as one shell line, `schedsim run ...` (each word quoted for a POSIX shell
    /// where it needs it).
    pub fn command_line(&self) -> String {
        let words: Vec<String> = self.to_args().iter().map(|w| shell_quote(w)).collect();
        format!("schedsim {}", words.join(" "))
    }
}

/// `w` as one word of a POSIX shell line: bare when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written `'\''`).
pub fn shell_quote(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=.,/:@%".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', "'\\''"))
}

/// Split a shell line into words as a POSIX shell does for plain words, single quotes,
/// double quotes (with `\"`, `\\`, `\$` and `` \` `` escapes) and backslash escapes; no
/// expansion. The inverse of joining [`shell_quote`]d words with spaces.
pub fn shell_split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(format!("unterminated single quote in: {line}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(format!("unterminated double quote in: {line}")),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(format!("unterminated double quote in: {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err(format!("trailing backslash in: {line}")),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}
