//! `key=value` workload parameters, as given to `insmod` or a benchmark's command line, and
//! the limits every number a user gives is checked against where it enters (command line,
//! scenario file, machine file, workload parameters), so that no later arithmetic can overflow
//! and no run asks for unbounded work.

use crate::sim::{NSEC_PER_MSEC, NSEC_PER_SEC};

/// The longest simulated time a run may ask for: one hour (`--limit-ms`, `limit_ms`, a
/// workload's duration). Every time the model adds to it stays far below `u64::MAX`.
pub const MAX_SIM_NS: u64 = 3_600 * NSEC_PER_SEC;
/// The largest single latency, cost or sleep a user may give: one second (machine-file costs,
/// idle-state latencies, a workload's per-call sleep).
pub const MAX_LATENCY_NS: u64 = NSEC_PER_SEC;
/// The most tasks a workload may create: the largest `pid_max` the kernel accepts on 64-bit
/// (PID_MAX_LIMIT, include/linux/threads.h; the default is 32768). Creating and running
/// tasks costs O(log n) each (issue 16), about 1 kB of memory per task.
pub const MAX_TASKS: u64 = 4 * 1024 * 1024;

/// The largest input file read (scenario, machine, background, rt-app, grid, program output):
/// 64 MiB. A larger file, or an endless one such as `/dev/zero`, is an error, not an unbounded
/// allocation.
pub const MAX_INPUT_FILE_BYTES: u64 = 64 << 20;
/// The largest trace file `validate --from-trace` reads (after gunzip): 2 GiB.
pub const MAX_TRACE_FILE_BYTES: u64 = 2 << 30;
/// The most memory a run may be estimated to need: 8 GiB. The estimate
/// ([`estimate_memory`]) is made from the counts known before anything is allocated, so a run
/// too large for the machine ends in a clear error naming the flags instead of an allocation
/// failure part-way through building it.
pub const MAX_MEMORY_BYTES: u64 = 8 << 30;
/// Fixed part of the estimate: the machine's tables, the trace buffer, the binary (bytes).
pub const MEM_BASE_BYTES: u64 = 16 << 20;
/// Per CPU: its `Cpu`, runqueues, idle task, per-CPU kernel threads and timers (bytes).
pub const MEM_PER_CPU_BYTES: u64 = 16 << 10;
/// Per pair of CPUs: what grows as CPUs^2 (machine-wide NUMA spans, SMT spans' word windows;
/// since issue 16 spans and group lists are shared and masks store only their words, about
/// 0.05 B a pair is measured, so this is mostly margin; docs/limits.md) (bytes).
pub const MEM_PER_CPU_PAIR_BYTES: u64 = 2;
/// Per task: `task_struct` model, saved frames, runqueue entity, the workload's own frame
/// (bytes; the workloads' larger per-task state is added by `Workload::planned_size`).
pub const MEM_PER_TASK_BYTES: u64 = 2 << 10;

/// The estimated memory of a run of `tasks` tasks on `nr_cpus` CPUs whose workload keeps
/// `workload_bytes` of its own (saturating: an absurd count gives `u64::MAX`). Calibrated
/// against the heap a run actually reaches (`tests/limits.rs`; docs/limits.md).
pub fn estimate_memory(nr_cpus: u64, tasks: u64, workload_bytes: u64) -> u64 {
    MEM_BASE_BYTES
        .saturating_add(nr_cpus.saturating_mul(MEM_PER_CPU_BYTES))
        .saturating_add(nr_cpus.saturating_mul(nr_cpus).saturating_mul(MEM_PER_CPU_PAIR_BYTES))
        .saturating_add(tasks.saturating_mul(MEM_PER_TASK_BYTES))
        .saturating_add(workload_bytes)
}

/// Reject a run whose [`estimate_memory`] is above [`MAX_MEMORY_BYTES`]; `flags` names what
/// sets the task count (e.g. "schbench -m/-t") for the error. Returns the estimate.
pub fn check_memory(nr_cpus: u64, tasks: u64, workload_bytes: u64, flags: &str) -> Result<u64, String> {
    let bytes = estimate_memory(nr_cpus, tasks, workload_bytes);
    if bytes > MAX_MEMORY_BYTES {
        return Err(format!(
            "this run would need about {} of memory ({tasks} tasks set by {flags}, {nr_cpus} CPUs set by \
             --machine); schedsim allows at most {}: give fewer tasks or a smaller machine",
            bytes_text(bytes),
            bytes_text(MAX_MEMORY_BYTES)
        ));
    }
    Ok(bytes)
}

/// The limits above, as `schedsim run --help` and `compare --help` state them.
pub fn limits_help() -> String {
    format!(
        "Limits: at most {MAX_TASKS} tasks (the kernel's PID_MAX_LIMIT), {} CPUs, {} ms of simulated time \
         (--limit-ms; one hour), {} ms for a single cost or sleep, and {} of estimated memory (tasks x {} plus a \
         workload's own per-task state such as a schbench worker's latency histogram, CPUs x {}, CPUs^2 x {}). \
         A run above a limit stops before it starts, with an error naming the flag or parameter.",
        crate::hw::topology::MAX_CPUS,
        MAX_SIM_NS / NSEC_PER_MSEC,
        MAX_LATENCY_NS / NSEC_PER_MSEC,
        bytes_text(MAX_MEMORY_BYTES),
        bytes_text(MEM_PER_TASK_BYTES),
        bytes_text(MEM_PER_CPU_BYTES),
        bytes_text(MEM_PER_CPU_PAIR_BYTES),
    )
}

/// `bytes` in the largest binary unit that keeps one decimal (integer arithmetic).
pub fn bytes_text(bytes: u64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, name) in units {
        if bytes >= size {
            let tenths = (bytes % size).saturating_mul(10) / size;
            return if tenths == 0 {
                format!("{} {name}", bytes / size)
            } else {
                format!("{}.{tenths} {name}", bytes / size)
            };
        }
    }
    format!("{bytes} B")
}

/// `value` in units of `unit_ns` as nanoseconds, at most `max_ns`; the error names `what` and
/// the allowed range in the caller's unit.
pub fn to_ns_checked(value: u64, unit_ns: u64, unit: &str, max_ns: u64, what: &str) -> Result<u64, String> {
    match value.checked_mul(unit_ns) {
        Some(ns) if ns <= max_ns => Ok(ns),
        _ => Err(format!("{what} = {value} {unit} is out of range (0..={} {unit})", max_ns / unit_ns)),
    }
}

/// `--limit-ms` / `limit_ms`: simulated milliseconds, 1 ..= one hour.
pub fn limit_ms_to_ns(ms: u64, what: &str) -> Result<u64, String> {
    if ms == 0 {
        return Err(format!("{what} = 0 is out of range (1..={} ms)", MAX_SIM_NS / NSEC_PER_MSEC));
    }
    to_ns_checked(ms, NSEC_PER_MSEC, "ms", MAX_SIM_NS, what).map_err(|_| {
        format!("{what} = {ms} is out of range (1..={} ms: one hour of simulated time)", MAX_SIM_NS / NSEC_PER_MSEC)
    })
}

/// Parsed parameters with the origin of each (for error messages).
#[derive(Debug, Clone, Default)]
pub struct Params {
    items: Vec<(String, String)>,
    /// Where these came from ("command line", "scenario.toml:12").
    pub origin: String,
}

/// Two parameter lists are equal when their items are (in order); where they came from only
/// shapes error messages.
impl PartialEq for Params {
    fn eq(&self, other: &Params) -> bool {
        self.items == other.items
    }
}

impl Eq for Params {}

impl Params {
    /// Parse `k=v` items. Every item needs its `=` and a key may appear once.
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>, origin: &str) -> Result<Params, String> {
        let mut out: Vec<(String, String)> = Vec::new();
        for it in items {
            let it = it.trim();
            if it.is_empty() {
                continue;
            }
            let Some((key, val)) = it.split_once('=').map(|(k, v)| (k.trim(), v.trim())) else {
                return Err(format!("{origin}: parameter '{it}' has no value (expected {it}=VALUE)"));
            };
            if key.is_empty() {
                return Err(format!("{origin}: parameter '{it}' has no name (expected key=value)"));
            }
            if let Some((_, prev)) = out.iter().find(|(k, _)| k == key) {
                return Err(format!("{origin}: parameter '{key}' given twice ({key}={prev} and {key}={val})"));
            }
            out.push((key.to_string(), val.to_string()));
        }
        Ok(Params { items: out, origin: origin.to_string() })
    }

    pub fn from_pairs(pairs: Vec<(String, String)>, origin: &str) -> Params {
        let mut p = Params { items: Vec::new(), origin: origin.to_string() };
        for (k, v) in pairs {
            p.set(k, v);
        }
        p
    }

    /// Set `key`, replacing an earlier value (keeps the first position).
    pub fn set(&mut self, key: String, val: String) {
        match self.items.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = val,
            None => self.items.push((key, val)),
        }
    }

    /// Fail on keys not in `known`.
    pub fn check_known(&self, workload: &str, known: &[&str]) -> Result<(), String> {
        for (k, _) in &self.items {
            if !known.contains(&k.as_str()) {
                return Err(format!(
                    "{}: unknown {workload} parameter '{k}' (expected one of: {})",
                    self.origin,
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.items.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn u64_or(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| {
                format!("{}: parameter {key}='{v}' is not a non-negative integer (at most {})", self.origin, u64::MAX)
            }),
        }
    }

    /// `key` as an integer in `lo..=hi` (`default` when absent); the error names the key and
    /// the range.
    pub fn u64_in(&self, key: &str, default: u64, lo: u64, hi: u64) -> Result<u64, String> {
        let v = self.u64_or(key, default)?;
        if v < lo || v > hi {
            return Err(format!("{}: parameter {key}={v} is out of range ({lo}..={hi})", self.origin));
        }
        Ok(v)
    }

    /// `key`, a time in units of `unit_ns` named `unit` (`default` in those units when absent),
    /// as nanoseconds of at most `max_ns`; the error names the key and the range.
    pub fn time_ns(&self, key: &str, default: u64, unit_ns: u64, unit: &str, max_ns: u64) -> Result<u64, String> {
        let v = self.u64_or(key, default)?;
        to_ns_checked(v, unit_ns, unit, max_ns, &format!("parameter {key}"))
            .map_err(|e| format!("{}: {e}", self.origin))
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(default),
            Some("1" | "y" | "Y" | "true") => Ok(true),
            Some("0" | "n" | "N" | "false") => Ok(false),
            Some(v) => Err(format!(
                "{}: parameter {key}='{v}' is not a boolean (expected 0/1, y/n or true/false)",
                self.origin
            )),
        }
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_keys_and_repeats_are_errors() {
        let e = Params::parse(["numipi"], "command line").unwrap_err();
        assert!(e.contains("'numipi' has no value"), "{e}");
        let e = Params::parse(["numipi=1", "numipi=2"], "command line").unwrap_err();
        assert!(e.contains("'numipi' given twice"), "{e}");
        assert!(Params::parse(["a=1", "b=2"], "x").is_ok());
    }

    #[test]
    fn ranges_and_conversions_are_checked() {
        let p = Params::parse(["n=5", "t=18446744073709551615", "big=99999999999999999999"], "x").unwrap();
        assert_eq!(p.u64_in("n", 1, 1, 10), Ok(5));
        assert!(p.u64_in("n", 1, 6, 10).unwrap_err().contains("n=5 is out of range (6..=10)"));
        let e = p.time_ns("t", 0, 1000, "us", MAX_LATENCY_NS).unwrap_err();
        assert!(e.contains("parameter t = 18446744073709551615 us is out of range (0..=1000000 us)"), "{e}");
        assert!(p.u64_or("big", 0).unwrap_err().contains("not a non-negative integer"));
        assert_eq!(limit_ms_to_ns(5, "--limit-ms"), Ok(5 * NSEC_PER_MSEC));
        assert!(limit_ms_to_ns(u64::MAX, "--limit-ms").unwrap_err().contains("(1..=3600000 ms"));
        assert!(limit_ms_to_ns(0, "--limit-ms").is_err());
    }
}
