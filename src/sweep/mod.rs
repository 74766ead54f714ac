//! Sweeps: a grid of kernels x machines x parameters x seeds (and the built-in experiments'
//! variants and seeds) expanded into independent runs, each written as one JSON line; shards of
//! the grid for job arrays; and the merge of shard outputs into comparison tables.
//!
//! The grid file (`schedsim sweep GRID.toml`):
//!
//! ```toml
//! kernels = ["v6.10", "v6.10+3dcac251b066"]   # NAME[+ID][-ID]...; the first is the baseline
//! machines = ["smp-4"]                        # presets or machine files
//! seeds = 3                                   # seeds first_seed .. first_seed + seeds
//! first_seed = 1
//! background = "none"                         # optional: any run spec field by its file key
//!
//! [[run]]
//! workload = "ipistorm"                       # or scenario = "NAME" / "FILE.toml"
//! params = { numipi = 200, wait = [0, 1] }    # a list: one group per value (cartesian)
//!
//! [[run]]
//! experiment = "rt-push"                      # an experiment's variants and seeds (a built-in
//! seeds = 2                                   # name or an experiment FILE.toml)
//!
//! [[run]]
//! experiment = "ipistorm"                     # its variants over its named unknowns
//! band = true                                 # (`reproduce ipistorm --band`)
//! band_design = "auto"                        # or "grid", "lhs:N"
//! band_seeds = 2                              # seeds per state besides the default
//!
//! [[run]]
//! experiment = "lkp-matrix"                   # cells = "hackbench": `reproduce --cells`
//! cells = "hackbench"
//! ```
//!
//! Spec fields (`spec::FIELDS`, e.g. `hz`, `features`, `idle_states`) at the top level apply to
//! every run, in a `[[run]]` to its runs; a grid says machines and seeds with its own lists.
//!
//! Every run has a stable key (a hash of its canonical description), so a sweep resumes by
//! skipping the keys already in its output, and shard `I/N` takes the runs whose position in
//! the expanded grid is `I` modulo `N`. Nothing here touches a run's inside: each run is the
//! ordinary deterministic [`crate::run::execute`]; floats appear only in the merged tables.

use crate::experiments::{self, ExpOpts};
use crate::report::{self, CompareRow, Comparison};
use crate::run::{self, RunResult};
use crate::spec::scenario::{field_values_of, line_of, read_table, FileTable};
use crate::spec::RunSpec;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;

pub mod band;
pub mod calibrate;
use std::path::Path;

/// One run of a grid: its spec and where it belongs in the merged tables.
#[derive(Debug, Clone)]
pub struct GridRun {
    /// Position in the expanded grid (the merge's order; the shard selector).
    pub index: usize,
    /// The comparison it belongs to: workload, parameters and machine (or the experiment).
    pub group: String,
    /// Its row in that comparison: the kernel as the grid names it (or the experiment's variant).
    pub variant: String,
    /// The experiment it comes from, if any.
    pub experiment: Option<String>,
    pub spec: RunSpec,
    /// Its state and variant in an experiment's band (`crate::sweep::band`), if it is a band's run.
    pub band: Option<crate::sweep::band::BandTag>,
}

impl GridRun {
    /// The canonical description of the run: everything that decides its result, as the run
    /// spec's own command line (`RunSpec::command_line`) and the experiment it belongs to.
    pub fn describe(&self) -> Value {
        let mut v = json!({
            "command": self.spec.command_line(),
            "experiment": self.experiment,
        });
        if let Some(b) = &self.band {
            // A band's default state runs the experiment's own commands: its own runs still.
            v["band"] = json!(b.state);
        }
        v
    }

    /// The stable run key: FNV-1a (64 bit) of the canonical description, in hex.
    pub fn key(&self) -> String {
        let text = self.describe().to_string();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// A shard selector: `index` of `count` (both from 0; `0/1` is the whole grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parse `I/N` with `0 <= I < N`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let err = || format!("--shard '{s}': expected I/N with 0 <= I < N (e.g. --shard 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(err)?;
        let index: usize = i.trim().parse().map_err(|_| err())?;
        let count: usize = n.trim().parse().map_err(|_| err())?;
        if count == 0 || index >= count {
            return Err(err());
        }
        Ok(Shard { index, count })
    }

    pub fn contains(&self, run: &GridRun) -> bool {
        run.index % self.count == self.index
    }
}

/// The grid's own keys at its top level and in each `[[run]]` (all other keys are run spec
/// fields, `spec::FIELDS` by file key, applied to every run below them).
const GRID_KEYS: &[&str] = &["kernels", "machines", "seeds", "first_seed", "run"];
const RUN_KEYS: &[&str] = &[
    "workload",
    "scenario",
    "experiment",
    "kernels",
    "machines",
    "seeds",
    "first_seed",
    "kernel",
    "cells",
    "params",
    "band",
    "band_design",
    "band_seeds",
];

/// A variant's label in a grid: `#INDEX KERNEL PATCHES FEATURES`.
pub fn variant_label(v: usize, spec: &RunSpec) -> String {
    let (k, p) = (&spec.kernel, &spec.patches);
    let mut variant = format!("#{v} {k}");
    if !p.is_empty() {
        variant.push_str(&format!(" {}", p.replace(',', " ")));
    }
    for f in &spec.features {
        variant.push_str(&format!(" {f}"));
    }
    if spec.preempt_rt {
        variant.push_str(" PREEMPT_RT");
    }
    variant
}

/// Fields a grid cannot set for a run: it says them with its own lists.
fn grid_owned_field(key: &str) -> Option<&'static str> {
    match key {
        "machine" => Some("machines = [...]"),
        "seed" => Some("seeds = N and first_seed = N"),
        _ => None,
    }
}

#[derive(Deserialize)]
struct GridRuns {
    #[serde(default)]
    run: Vec<toml::Spanned<FileTable>>,
}

/// `t[key]` as a list of strings (a `[...]` of strings), if given.
fn strings_at(t: &FileTable, key: &str, text: &str, origin: &str) -> Result<Option<Vec<String>>, String> {
    let Some(v) = t.get(key) else { return Ok(None) };
    let line = line_of(text, v.span().start);
    let err = || format!("{origin}:{line}: {key} = {}: expected a list of strings", v.get_ref());
    let toml::Value::Array(a) = v.get_ref() else { return Err(err()) };
    if a.is_empty() {
        // Never a silent default: without the key the run's own is used.
        return Err(format!("{origin}:{line}: {key} = []: an empty list (leave {key} out for the runs' own)"));
    }
    a.iter().map(|x| x.as_str().map(str::to_string).ok_or_else(err)).collect::<Result<Vec<_>, _>>().map(Some)
}

/// `t[key]` as a non-negative integer, if given.
fn uint_at(t: &FileTable, key: &str, text: &str, origin: &str) -> Result<Option<u64>, String> {
    let Some(v) = t.get(key) else { return Ok(None) };
    let line = line_of(text, v.span().start);
    match v.get_ref() {
        toml::Value::Integer(i) if *i >= 0 => Ok(Some(*i as u64)),
        other => Err(format!("{origin}:{line}: {key} = {other}: expected a whole number")),
    }
}

/// `t[key]` as a string, if given.
fn string_at(t: &FileTable, key: &str, text: &str, origin: &str) -> Result<Option<String>, String> {
    let Some(v) = t.get(key) else { return Ok(None) };
    match v.get_ref() {
        toml::Value::String(s) => Ok(Some(s.clone())),
        other => Err(format!("{origin}:{}: {key} = {other}: expected a string", line_of(text, v.span().start))),
    }
}

/// The run spec fields of a grid table, with the grid's own keys left out; a field the grid
/// says with its lists is an error.
fn grid_fields(
    t: &FileTable,
    text: &str,
    origin: &str,
    own: &[&str],
) -> Result<Vec<(&'static str, String, usize)>, String> {
    for (k, v) in t {
        if let (Some(instead), false) = (grid_owned_field(k), own.contains(&k.as_str())) {
            let line = line_of(text, v.span().start);
            return Err(format!("{origin}:{line}: {k} is set by the grid: use {instead}"));
        }
    }
    field_values_of(t, text, origin, own)
}

fn param_values(v: &toml::Value) -> Option<Vec<String>> {
    let one = |v: &toml::Value| match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some((*b as u8).to_string()),
        _ => None,
    };
    match v {
        toml::Value::Array(a) if !a.is_empty() => a.iter().map(one).collect(),
        toml::Value::Array(_) => None,
        v => one(v).map(|s| vec![s]),
    }
}

/// Parse a grid file's text and expand it into its runs, in grid order. `origin` names the
/// file in errors (`origin:line: ...`); scenario files are relative to it.
pub fn parse_grid(text: &str, origin: &str) -> Result<Vec<GridRun>, String> {
    let top = read_table(text, origin)?;
    let g: GridRuns = toml::from_str(text).map_err(|e| format!("{origin}: {}", e.message().replace('\n', " ")))?;
    if g.run.is_empty() {
        return Err(format!("{origin}:1: no runs: add at least one [[run]] table (workload, scenario or experiment)"));
    }
    let top_fields = grid_fields(&top, text, origin, GRID_KEYS)?;
    let top_kernels = strings_at(&top, "kernels", text, origin)?.unwrap_or_default();
    let top_machines = strings_at(&top, "machines", text, origin)?.unwrap_or_default();
    let top_seeds = uint_at(&top, "seeds", text, origin)?;
    let top_first = uint_at(&top, "first_seed", text, origin)?;
    let mut out = Vec::new();
    for sp in &g.run {
        let line = line_of(text, sp.span().start);
        let at = |m: String| format!("{origin}:{line}: {m}");
        let e = sp.get_ref();
        let seeds = uint_at(e, "seeds", text, origin)?.or(top_seeds).unwrap_or(1);
        if seeds == 0 || seeds > crate::limits::MAX_RUNS as u64 {
            return Err(at(format!("seeds = {seeds} is out of range (1..={})", crate::limits::MAX_RUNS)));
        }
        let seeds = seeds as usize;
        let first_seed = uint_at(e, "first_seed", text, origin)?.or(top_first).unwrap_or(1);
        if first_seed.checked_add(seeds as u64 - 1).is_none() {
            return Err(at(format!(
                "first_seed = {first_seed}: the seeds first_seed..first_seed+{seeds} overflow 64 bits"
            )));
        }
        // The spec fields below this run: the grid's, then the run's own.
        let mut fields = top_fields.clone();
        fields.extend(grid_fields(e, text, origin, RUN_KEYS)?);
        let apply = |s: &mut RunSpec| -> Result<(), String> {
            for (name, value, l) in &fields {
                let key = crate::spec::field(name).map_or(*name, |f| f.key);
                s.set_as(name, value, key).map_err(|er| format!("{origin}:{l}: {er}"))?;
            }
            Ok(())
        };
        let mut params: Vec<(String, Vec<String>)> = Vec::new();
        if let Some(p) = e.get("params") {
            let toml::Value::Table(pt) = p.get_ref() else {
                return Err(at("params: expected a table of key = value".into()));
            };
            for (k, v) in pt {
                let vals = param_values(v).ok_or_else(|| {
                    at(format!("params.{k} = {v}: expected a string, integer or boolean, or a non-empty list of them"))
                })?;
                params.push((k.clone(), vals));
            }
        }
        let (workload, scenario, experiment, kernel, cells) = (
            string_at(e, "workload", text, origin)?,
            string_at(e, "scenario", text, origin)?,
            string_at(e, "experiment", text, origin)?,
            string_at(e, "kernel", text, origin)?,
            string_at(e, "cells", text, origin)?,
        );
        let (kernels, machines) = (strings_at(e, "kernels", text, origin)?, strings_at(e, "machines", text, origin)?);
        let chosen = [&workload, &scenario, &experiment].iter().filter(|x| x.is_some()).count();
        if chosen != 1 {
            return Err(at("a [[run]] needs exactly one of workload = NAME, scenario = NAME|FILE.toml, \
                 experiment = NAME"
                .into()));
        }
        if let Some(name) = &experiment {
            if kernels.is_some() || machines.is_some() {
                return Err(at(format!(
                    "experiment '{name}' runs its own kernels and machines: kernels/machines do not apply \
                     (kernel = NAME for {})",
                    experiments::takes_kernel().join(", ")
                )));
            }
            if params.iter().any(|(_, v)| v.len() > 1) {
                return Err(at("an experiment's params take one value each".into()));
            }
            let o = ExpOpts {
                runs: seeds,
                seed: first_seed,
                jobs: 1,
                params: params.iter().map(|(k, v)| (k.clone(), v[0].clone())).collect(),
                overrides: fields.iter().map(|(n, v, _)| (n.to_string(), v.clone())).collect(),
                kernel: kernel.clone(),
                cells: cells.clone(),
            };
            let plan = experiments::plan_of(name, &o).map_err(&at)?;
            let band = match e.get("band").map(|b| b.get_ref()) {
                None | Some(toml::Value::Boolean(false)) => None,
                Some(toml::Value::Boolean(true)) => {
                    let design = string_at(e, "band_design", text, origin)?;
                    let design = crate::sweep::band::Design::parse(design.as_deref().unwrap_or("auto")).map_err(&at)?;
                    let runs =
                        uint_at(e, "band_seeds", text, origin)?.unwrap_or(crate::sweep::band::DEFAULT_BAND_RUNS as u64);
                    if runs == 0 || runs > crate::limits::MAX_RUNS as u64 {
                        return Err(at(format!(
                            "band_seeds = {runs} is out of range (1..={})",
                            crate::limits::MAX_RUNS
                        )));
                    }
                    Some(crate::sweep::band::BandOpts { design, runs: runs as usize })
                }
                Some(other) => return Err(at(format!("band = {other}: expected true or false"))),
            };
            if band.is_none() && (e.contains_key("band_design") || e.contains_key("band_seeds")) {
                return Err(at("band_design and band_seeds are for band = true".into()));
            }
            if let Some(b) = band {
                let runs = crate::sweep::band::runs(&plan, &b, out.len()).map_err(&at)?;
                if out.len() + runs.len() > MAX_GRID_RUNS {
                    return Err(at(format!("this band expands to more than {MAX_GRID_RUNS} runs")));
                }
                out.extend(runs);
                continue;
            }
            for (v, spec) in plan.specs() {
                out.push(GridRun {
                    index: out.len(),
                    group: format!("experiment {}", plan.experiment),
                    variant: variant_label(v, &spec),
                    experiment: Some(plan.experiment.clone()),
                    spec,
                    band: None,
                });
            }
            continue;
        }
        if e.contains_key("band") || e.contains_key("band_design") || e.contains_key("band_seeds") {
            return Err(at("band = true is for experiment = NAME (its unknowns)".into()));
        }
        if kernel.is_some() {
            return Err(at("kernel = NAME is for experiments; use kernels = [...]".into()));
        }
        if cells.is_some() {
            return Err(at("cells = PATTERNS is for experiment = \"lkp-matrix\"".into()));
        }
        let kernels = kernels.unwrap_or_else(|| top_kernels.clone());
        let mut base = match (&workload, &scenario) {
            (Some(w), _) => {
                if !crate::workload::WORKLOADS.iter().any(|(n, _)| n == w) {
                    let names: Vec<&str> = crate::workload::WORKLOADS.iter().map(|(n, _)| *n).collect();
                    return Err(at(format!("unknown workload '{w}' (expected one of: {})", names.join(", "))));
                }
                RunSpec::new(w)
            }
            (None, Some(sc)) if sc.ends_with(".toml") => {
                let dir = Path::new(origin).parent().unwrap_or(Path::new(""));
                let path = dir.join(sc);
                let t = crate::input::read_input_file(&path, "scenario file").map_err(&at)?;
                crate::spec::scenario::parse(&t, &path.display().to_string())?
            }
            (None, Some(sc)) => crate::spec::scenario::builtin(sc).map_err(&at)?,
            _ => unreachable!("exactly one chosen"),
        };
        apply(&mut base)?;
        let kernels = if kernels.is_empty() { vec![base.kernel.clone()] } else { kernels };
        let machines = machines.unwrap_or_else(|| top_machines.clone());
        let machines = if machines.is_empty() { vec![base.machine.clone()] } else { machines };
        // The grid's size before it is expanded: kernels x machines x parameter values x seeds.
        let size = params
            .iter()
            .try_fold(kernels.len().max(1).saturating_mul(machines.len()).saturating_mul(seeds), |n, (_, v)| {
                n.checked_mul(v.len())
            })
            .and_then(|n| n.checked_add(out.len()))
            .filter(|&n| n <= MAX_GRID_RUNS);
        if size.is_none() {
            return Err(at(format!(
                "this [[run]] expands to more than {MAX_GRID_RUNS} runs (kernels x machines x parameter values x seeds)"
            )));
        }
        // The cartesian product of the parameter lists, in the file's (sorted) key order.
        let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for (k, vals) in &params {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    vals.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((k.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        for m in &machines {
            for combo in &combos {
                // Kernel and machine errors point at the line that names them.
                let line_naming = |word: &str| {
                    let l = text.find(&format!("\"{word}\"")).map_or(line, |o| line_of(text, o));
                    move |m: String| format!("{origin}:{l}: {m}")
                };
                let mut s0 = base.clone();
                s0.set("machine", m).map_err(line_naming(m))?;
                s0.add_params(combo, "params");
                let ptext: Vec<String> = s0.params.pairs().iter().map(|(k, v)| format!("{k}={v}")).collect();
                let mut group = format!("{} {} on {}", s0.workload, ptext.join(" "), s0.machine);
                if let Some(b) = &s0.background {
                    group.push_str(&format!(" background={b}"));
                }
                if let Some(p) = &s0.preempt {
                    group.push_str(&format!(" preempt={p}"));
                }
                run::machine(&s0.machine).map_err(line_naming(m))?;
                for k in &kernels {
                    let (name, patches) = crate::linux::config::split_kernel_spec(k).map_err(line_naming(k))?;
                    crate::linux::KernelConfig::resolve(name, &patches.join(","), 250).map_err(line_naming(k))?;
                    let mut s = s0.clone();
                    s.set("kernel", name)?;
                    if !patches.is_empty() {
                        s.set("patch", &patches.join(","))?;
                    }
                    // Bad kernels, patches, machines or parameters fail here, before anything runs.
                    run::build(&s).map_err(|er| at(format!("{} on {} ({k}): {er}", s.workload, s.machine)))?;
                    for i in 0..seeds {
                        let mut s = s.clone();
                        s.seed = first_seed + i as u64;
                        out.push(GridRun {
                            index: out.len(),
                            group: group.clone(),
                            variant: k.clone(),
                            experiment: None,
                            spec: s,
                            band: None,
                        });
                    }
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in &out {
        if !seen.insert(r.key()) {
            return Err(format!(
                "{origin}: the grid names the same run twice ({} {} seed {}); each run must be distinct",
                r.group, r.variant, r.spec.seed
            ));
        }
    }
    Ok(out)
}

/// The most runs a grid may expand to.
pub const MAX_GRID_RUNS: usize = 100_000;

/// Read and expand a grid file.
pub fn load_grid(path: &Path) -> Result<Vec<GridRun>, String> {
    let text = crate::input::read_input_file(path, "grid file")?;
    parse_grid(&text, &path.display().to_string())
}

/// The workload's primary figure: (name, unit, lower is better, value).
pub fn primary_metric(r: &RunResult) -> (&'static str, &'static str, bool, f64) {
    let m = r.workload.metric(&r.facts());
    (m.name, m.unit, m.lower_is_better, m.value)
}

/// The JSON line of a finished run (without the trailing newline).
pub fn run_line(run: &GridRun, r: &RunResult) -> String {
    run_line_value(run, r).to_string()
}

/// The JSON document of [`run_line`]; a band's run also carries its `band` object (its
/// experiment, state, variant and figure: `crate::sweep::band`).
pub fn run_line_value(run: &GridRun, r: &RunResult) -> Value {
    let (name, unit, lower, value) = primary_metric(r);
    let mut v = json!({
        "key": run.key(),
        "index": run.index,
        "group": run.group,
        "variant": run.variant,
        "spec": run.describe(),
        "metric": {"name": name, "unit": unit, "lower_is_better": lower, "value": value},
        "result": crate::output::run_json(&run.spec, r),
    });
    if let Some(b) = &run.band {
        v["band"] = b.line(r);
    }
    v
}

/// What a sweep's JSONL file holds: its sweep lines, how many interrupted lines (a write cut
/// short: a line that begins a JSON object and ends before it closes), and whether the last line
/// lacks its newline. A missing file holds nothing.
#[derive(Debug, Default)]
struct Jsonl {
    lines: Vec<Value>,
    /// The line number of each of `lines`.
    at: Vec<usize>,
    interrupted: usize,
    unterminated: bool,
}

/// Read `path` as a sweep's JSONL: every line a sweep line (key, index and metric) or an
/// interrupted one; anything else is not this tool's file and an error naming it, so that a
/// sweep never appends to (or a merge never reads) a file that is not its own.
fn read_jsonl(path: &Path) -> Result<Jsonl, String> {
    let text = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Jsonl::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let foreign = |n: usize, why: &str| {
        format!(
            "{}:{n}: not a line of a schedsim sweep ({why}); a sweep appends only to its own JSONL output \
             (give --out a new file or a sweep's output)",
            path.display()
        )
    };
    let text = std::str::from_utf8(&text).map_err(|_| foreign(1, "not UTF-8 text"))?;
    let mut j = Jsonl { unterminated: !text.is_empty() && !text.ends_with('\n'), ..Default::default() };
    for (i, l) in text.split('\n').enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(v) => {
                let ok = v.get("key").and_then(Value::as_str).is_some()
                    && v.get("index").and_then(Value::as_u64).is_some()
                    && v.pointer("/metric/value").is_some();
                if !ok {
                    return Err(foreign(i + 1, "expected key, index and metric"));
                }
                if let Some(why) = line_problem(&v) {
                    return Err(format!("{}:{}: {why}", path.display(), i + 1));
                }
                j.lines.push(v);
                j.at.push(i + 1);
            }
            Err(e) if e.is_eof() && l.starts_with('{') => j.interrupted += 1,
            Err(e) => return Err(foreign(i + 1, &e.to_string())),
        }
    }
    Ok(j)
}

/// What is wrong with a sweep line's fields that merge reads (None: nothing): a figure that is
/// not a number (never counted as 0), a unit or name that is not a string.
fn line_problem(v: &Value) -> Option<String> {
    let mut figures = vec![("metric", &v["metric"])];
    if let Some(b) = v.get("band") {
        figures.push(("band.figure", &b["figure"]));
    }
    for (what, m) in figures {
        if !m["value"].is_number() {
            return Some(format!("{what}.value is {}, expected a number", m["value"]));
        }
        for k in ["name", "unit"] {
            if !m[k].is_string() {
                return Some(format!("{what}.{k} is {}, expected a string", m[k]));
            }
        }
    }
    for k in ["group", "variant"] {
        if !v[k].is_string() && !v[k].is_null() {
            return Some(format!("{k} is {}, expected a string", v[k]));
        }
    }
    for c in CHANGE_COUNTERS {
        let x = &v["result"]["counters"][c];
        if !x.is_null() && !x.is_number() {
            return Some(format!("result.counters.{c} is {x}, expected a number"));
        }
    }
    None
}

/// Options of one sweep.
#[derive(Debug, Clone)]
pub struct SweepOpts {
    pub shard: Shard,
    pub jobs: usize,
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepSummary {
    pub grid_runs: usize,
    pub shard_runs: usize,
    pub skipped: usize,
    pub ran: usize,
}

/// Run this shard's runs not already in `out` on `jobs` threads, appending one complete JSON
/// line per finished run (so an interrupted sweep resumes where it stopped).
pub fn sweep(runs: &[GridRun], out: &Path, o: &SweepOpts) -> Result<SweepSummary, String> {
    let j = read_jsonl(out)?;
    let done: std::collections::BTreeSet<String> =
        j.lines.iter().filter_map(|v| v["key"].as_str().map(str::to_string)).collect();
    let mine: Vec<&GridRun> = runs.iter().filter(|r| o.shard.contains(r)).collect();
    let todo: Vec<&GridRun> = mine.iter().copied().filter(|r| !done.contains(&r.key())).collect();
    let summary = SweepSummary {
        grid_runs: runs.len(),
        shard_runs: mine.len(),
        skipped: mine.len() - todo.len(),
        ran: todo.len(),
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .map_err(|e| format!("cannot open {}: {e}", out.display()))?;
    // A last line cut short by an interrupted sweep is ended, never truncated: it stays an
    // interrupted line (not a done run) and the lines appended after it are whole.
    if j.unterminated {
        file.write_all(b"\n").map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    if todo.is_empty() {
        // The file exists even for a shard with nothing to run, so a merge finds every shard.
        return Ok(summary);
    }
    let file = std::sync::Mutex::new(file);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let jobs = o.jobs.max(1).min(todo.len());
    run::RUNS_QUEUED.fetch_add(todo.len(), std::sync::atomic::Ordering::Relaxed);
    std::thread::scope(|sc| {
        for _ in 0..jobs {
            sc.spawn(|| loop {
                if failed.lock().expect("no panics hold the lock").is_some() {
                    break;
                }
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(run) = todo.get(i) else { break };
                let res = run::execute(&run.spec).and_then(|r| {
                    let mut line = run_line(run, &r);
                    line.push('\n');
                    let mut f = file.lock().expect("no panics hold the lock");
                    // Whole or not at all when SIGTERM comes (cli::signals waits for it).
                    crate::trace::sink::partials::whole(|| f.write_all(line.as_bytes()).and_then(|_| f.flush()))
                        .map_err(|e| format!("cannot write {}: {e}", out.display()))
                });
                run::RUNS_DONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Err(e) = res {
                    let mut fl = failed.lock().expect("no panics hold the lock");
                    fl.get_or_insert(format!(
                        "run {} ({} {} seed {}): {e}",
                        run.key(),
                        run.group,
                        run.variant,
                        run.spec.seed
                    ));
                    break;
                }
            });
        }
    });
    match failed.into_inner().expect("no panics hold the lock") {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// The runs of several sweep outputs, one per key (the first seen), in grid order.
pub fn read_lines(files: &[std::path::PathBuf]) -> Result<Vec<Value>, String> {
    let mut by_key: BTreeMap<String, Value> = BTreeMap::new();
    // Each group's unit and the line that set it: a group averages figures of one unit only.
    let mut units: BTreeMap<String, (String, String)> = BTreeMap::new();
    for f in files {
        if !f.exists() {
            return Err(format!("cannot read {}: no such file", f.display()));
        }
        let j = read_jsonl(f)?;
        for (v, at) in j.lines.into_iter().zip(j.at) {
            let here = format!("{}:{at}", f.display());
            let group = v["group"].as_str().unwrap_or("").to_string();
            let unit = primary(&v)["unit"].as_str().unwrap_or("").to_string();
            match units.get(&group) {
                Some((u, there)) if *u != unit => {
                    return Err(format!(
                        "{here}: group '{group}' in unit '{unit}', but {there} has it in '{u}': a group's figures \
                         are compared in one unit"
                    ))
                }
                Some(_) => {}
                None => {
                    units.insert(group, (unit, here));
                }
            }
            let k = v["key"].as_str().expect("checked").to_string();
            by_key.entry(k).or_insert(v);
        }
    }
    let mut v: Vec<Value> = by_key.into_values().collect();
    v.sort_by_key(|l| (l["index"].as_u64().unwrap_or(0), l["key"].as_str().unwrap_or("").to_string()));
    Ok(v)
}

/// Counters shown in the `%change` table besides the primary metric.
pub const CHANGE_COUNTERS: &[&str] = &[
    "context_switches",
    "cpu_migrations",
    "ipis_sent",
    "resched_ipis_sent",
    "idle_exits",
    "newidle_calls",
    "newidle_balances",
    "nohz_kicks",
    "ksoftirqd_wakeups",
    "task_clock_ns",
];

/// One metric of the `%change` table: the baseline's and each variant's mean and stddev.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct Change {
    pub metric: String,
    /// (variant, mean, stddev % of the mean as lkp-tests shows it, whole and truncated
    /// ([`report::lkp_stddev_percent`]; 0 when it shows none), `%change` against the baseline
    /// ([`report::lkp_change`])).
    pub variants: Vec<(String, f64, f64, Option<f64>)>,
}

/// One merged group: its mmtests-style comparison and its `%change` rows; for a band, the
/// comparison and changes of its default state (the point answer, in the experiment's figure)
/// and the band's tables.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MergedGroup {
    pub group: String,
    pub comparison: Comparison,
    pub changes: Vec<Change>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<crate::sweep::band::Report>,
}

/// A line's primary figure: a band's run's figure (`band.figure`), else the workload's metric.
fn primary(l: &Value) -> &Value {
    l.get("band").map_or(&l["metric"], |b| &b["figure"])
}

/// A group's variants in order of first appearance, each with its lines.
type Variants<'a> = Vec<(String, Vec<&'a Value>)>;

/// Merge sweep lines (from [`read_lines`]) into one comparison per group; the baseline is each
/// group's first variant in grid order.
pub fn merge(lines: &[Value]) -> Vec<MergedGroup> {
    // group -> variant -> lines, both in order of first appearance; a band's group keeps its
    // default state's lines, and all its lines for its band tables.
    let mut groups: Vec<(String, Variants)> = Vec::new();
    let mut bands: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for l in lines {
        if let Some(b) = l.get("band") {
            bands.entry(l["group"].as_str().unwrap_or("").to_string()).or_default().push(l);
            if b["state"].as_u64() != Some(0) {
                continue;
            }
        }
        let g = l["group"].as_str().unwrap_or("").to_string();
        let v = l["variant"].as_str().unwrap_or("").to_string();
        let gi = match groups.iter().position(|(n, _)| *n == g) {
            Some(i) => i,
            None => {
                groups.push((g, Vec::new()));
                groups.len() - 1
            }
        };
        let vars = &mut groups[gi].1;
        match vars.iter_mut().find(|(n, _)| *n == v) {
            Some((_, ls)) => ls.push(l),
            None => vars.push((v, vec![l])),
        }
    }
    let num = |v: &Value| v.as_f64().unwrap_or(0.0);
    let mut out = Vec::new();
    for (g, vars) in groups {
        let first = vars[0].1[0];
        let mut rows = Vec::new();
        for (name, ls) in &vars {
            let vals: Vec<f64> = ls.iter().map(|l| num(&primary(l)["value"])).collect();
            let (mean, stddev) = report::mean_stddev(&vals);
            // The patch deltas of the row's kernel, as its label prints them ("v6.10 +ID -ID").
            let label = ls[0]["result"]["kernel"].as_str().unwrap_or("");
            let mut extra = serde_json::Map::new();
            extra.insert("samples".into(), json!(vals));
            rows.push(CompareRow {
                variant: name.clone(),
                kernel: ls[0]["result"]["kernel"].as_str().unwrap_or("").to_string(),
                patches: label.split_whitespace().skip(1).map(str::to_string).collect(),
                runs: ls.len(),
                mean,
                stddev,
                normalized: 0.0,
                published: None,
                extra,
            });
        }
        report::normalize(&mut rows);
        let m = primary(first);
        let metric = m["name"].as_str().unwrap_or("metric").to_string();
        let mut changes = Vec::new();
        let mut names = vec![format!("{metric}_{}", m["unit"].as_str().unwrap_or(""))];
        names.extend(CHANGE_COUNTERS.iter().map(|c| c.to_string()));
        for (mi, mname) in names.iter().enumerate() {
            let value =
                |l: &Value| if mi == 0 { num(&primary(l)["value"]) } else { num(&l["result"]["counters"][mname]) };
            let stats: Vec<(f64, i64)> = vars
                .iter()
                .map(|(_, ls)| {
                    let v: Vec<f64> = ls.iter().map(|l| value(l)).collect();
                    (report::mean_stddev(&v).0, report::lkp_stddev_percent(&v).unwrap_or(0))
                })
                .collect();
            if mi > 0 && stats.iter().all(|(m, _)| *m == 0.0) {
                continue;
            }
            let base = stats[0].0;
            let variants = vars
                .iter()
                .zip(&stats)
                .enumerate()
                .map(|(i, ((n, _), (mean, sd)))| {
                    let change = if i > 0 { report::lkp_change(base, *mean) } else { None };
                    (n.clone(), *mean, *sd as f64, change)
                })
                .collect();
            changes.push(Change { metric: mname.clone(), variants });
        }
        let comparison = Comparison {
            table: None,
            experiment: g.clone(),
            machine: first["result"]["machine"].as_str().unwrap_or("").to_string(),
            metric,
            unit: m["unit"].as_str().unwrap_or("").to_string(),
            lower_is_better: m["lower_is_better"].as_bool().unwrap_or(true),
            statistic: crate::report::MMTESTS_AMEAN.into(),
            rows,
            title: g.clone(),
            notes: Vec::new(),
        };
        let band = bands.get(&g).and_then(|ls| crate::sweep::band::analyze(ls).ok());
        out.push(MergedGroup { group: g, comparison, changes, band });
    }
    out
}

/// The LKP-style `%change` table of one group: the baseline's mean with its stddev%, then each
/// other variant's `%change` and mean with stddev%, one row per metric.
pub fn render_changes(g: &MergedGroup) -> String {
    let Some(first) = g.changes.first() else { return String::new() };
    let cell = |mean: f64, sd: f64| {
        let m = match mean.abs() {
            a if a >= 1000.0 => format!("{mean:.0}"),
            a if a >= 1.0 => format!("{mean:.2}"),
            _ => format!("{mean:.4}"),
        };
        // The stddev only when lkp-tests shows it (above 2%: report::lkp_stddev_percent).
        if sd != 0.0 {
            format!("{m:>14} ±{:>3.0}%", sd.abs())
        } else {
            format!("{m:>14}      ")
        }
    };
    let mut s = String::new();
    let names: Vec<&str> = first.variants.iter().map(|v| v.0.as_str()).collect();
    s.push_str(&format!("{:>20}", names[0]));
    for n in &names[1..] {
        s.push_str(&format!("  {:>31}", n));
    }
    s.push('\n');
    s.push_str(&format!("{:>20}", "-".repeat(20)));
    for _ in &names[1..] {
        s.push_str(&format!("  {}", "-".repeat(31)));
    }
    s.push('\n');
    s.push_str(&format!("{:>20}", "%stddev"));
    for _ in &names[1..] {
        s.push_str(&format!("  {:>9}  {:>20}", "%change", "%stddev"));
    }
    s.push('\n');
    for c in &g.changes {
        let (_, m, sd, _) = &c.variants[0];
        s.push_str(&cell(*m, *sd));
        for (_, m, sd, ch) in &c.variants[1..] {
            let chs = ch.map_or("-".to_string(), |x| format!("{x:+.1}%"));
            s.push_str(&format!("  {:>9}  {}", chs, cell(*m, *sd)));
        }
        s.push_str(&format!("  {}\n", c.metric));
    }
    s
}

/// The text of `schedsim merge`: per group, the comparison table and the `%change` table.
pub fn render_merged(groups: &[MergedGroup]) -> String {
    let mut s = String::new();
    for (i, g) in groups.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&report::render_table(&g.comparison));
        s.push('\n');
        s.push_str(&render_changes(g));
        if let Some(b) = &g.band {
            s.push_str(&crate::sweep::band::render(b));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn grid_numbers_are_range_checked_before_expanding() {
        let base = "machines = [\"smp-4\"]\n[[run]]\nworkload = \"ipistorm\"\nparams = { numipi = 10 }\n";
        // Found by the mutation fuzz of tests/fuzz_corpus.rs: a huge seed count allocated
        // until memory ran out (or overflowed a Vec's capacity).
        for (extra, want) in [
            ("seeds = 18446744073709551615\n", "g.toml:1: a number is out of range"),
            ("seeds = 1001\n", "is out of range (1..=1000)"),
            ("seeds = 2\nfirst_seed = 18446744073709551615\n", "g.toml:2: a number is out of range"),
            ("limit_ms = 18446744073709551615\n", "g.toml:1: a number is out of range"),
            ("limit_ms = 3600001\n", "limit_ms = 3600001 is out of range"),
        ] {
            let e = parse_grid(&format!("{extra}{base}"), "g.toml").unwrap_err();
            assert!(e.contains(want), "{extra}: {e}");
        }
        let many: Vec<String> = (0..400).map(|i| i.to_string()).collect();
        let g = format!(
            "seeds = 1000\nmachines = [\"smp-4\"]\n[[run]]\nworkload = \"ipistorm\"\nparams = {{ numipi = [{}] }}\n",
            many.join(", ")
        );
        let e = parse_grid(&g, "g.toml").unwrap_err();
        assert!(e.contains("expands to more than 100000 runs"), "{e}");
    }

    use super::*;

    #[test]
    fn shard_parse_and_select() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn grid_errors_name_file_and_line() {
        let e =
            parse_grid("kernels = [\"v6.10\"]\nbogus = 1\n[[run]]\nworkload = \"ipistorm\"\n", "g.toml").unwrap_err();
        assert!(e.starts_with("g.toml:2:"), "{e}");
        let e = parse_grid("kernels = [\"v6.10\"]\n\n[[run]]\nworkload = \"nosuch\"\n", "g.toml").unwrap_err();
        assert!(e.starts_with("g.toml:3:") && e.contains("unknown workload"), "{e}");
        let e =
            parse_grid("[[run]]\nworkload = \"ipistorm\"\nmachines = [\"smp-4\"]\nparams = { bad = 1 }\n", "g.toml")
                .unwrap_err();
        assert!(e.starts_with("g.toml:1:") && e.contains("unknown ipistorm parameter 'bad'"), "{e}");
        let e = parse_grid(
            "kernels = [\"v6.10\", \"v9.9\"]\n[[run]]\nworkload = \"ipistorm\"\nparams = { numipi = 10 }\n",
            "g.toml",
        )
        .unwrap_err();
        assert!(e.starts_with("g.toml:1:") && e.contains("unknown kernel 'v9.9'"), "{e}");
        let e = parse_grid("[[run]]\nworkload = \"idle\"\n\nmachines = [\"nosuch\"]\n", "g.toml").unwrap_err();
        assert!(e.starts_with("g.toml:4:"), "{e}");
        let e = parse_grid("[[run]]\nexperiment = \"nosuch\"\n", "g.toml").unwrap_err();
        assert!(e.starts_with("g.toml:1:") && e.contains("unknown experiment"), "{e}");
        let e = parse_grid("seeds = 2\n", "g.toml").unwrap_err();
        assert!(e.contains("no runs"), "{e}");
    }

    #[test]
    fn grid_expands_in_order_with_stable_keys() {
        let g = "kernels = [\"v6.10\", \"v6.12\"]\nmachines = [\"smp-4\"]\nseeds = 2\n\
                 [[run]]\nworkload = \"ipistorm\"\nparams = { numipi = [10, 20] }\n";
        let runs = parse_grid(g, "g.toml").unwrap();
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[0].variant, "v6.10");
        assert_eq!(runs[2].variant, "v6.12");
        assert_eq!(runs[1].spec.seed, 2);
        assert!(runs[4].group.contains("numipi=20"));
        let again = parse_grid(g, "other.toml").unwrap();
        assert_eq!(
            runs.iter().map(GridRun::key).collect::<Vec<_>>(),
            again.iter().map(GridRun::key).collect::<Vec<_>>()
        );
        let shards: Vec<usize> =
            (0..3).map(|i| runs.iter().filter(|r| Shard { index: i, count: 3 }.contains(r)).count()).collect();
        assert_eq!(shards, vec![3, 3, 2]);
    }
}
