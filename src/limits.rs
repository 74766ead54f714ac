//! Program-wide input limits: every number a user gives (command line, scenario, machine,
//! background, rt-app and grid files, workload parameters) is checked against these where it
//! enters, so that no later arithmetic can overflow and no run asks for unbounded work. The
//! bottom layer: it names nothing else of the crate but the clock units of `sim`.

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
             --machine); schedsim allows at most {}: give fewer tasks, a smaller machine or less simulated time",
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
        MAX_CPUS,
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

/// The most CPUs a machine may have (a CPU id fits in 16 bits with room for the hardware
/// model's markers; `hw::cacheline` asserts it).
pub const MAX_CPUS: u32 = 8192;

/// The most seeds (runs) one variant or one grid entry may ask for (`--runs`, a grid's `seeds`).
pub const MAX_RUNS: usize = 1000;

/// The CONFIG_HZ choices (kernel/Kconfig.hz), the same for `--hz`, a scenario's `hz` and a
/// machine file's.
pub const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];

/// `hz` is a CONFIG_HZ choice; the error names `what` (a flag or `file:line: hz`).
pub fn check_hz(hz: u32, what: &str) -> Result<(), String> {
    if HZ_CHOICES.contains(&hz) {
        return Ok(());
    }
    Err(format!("{what} {hz} is not a CONFIG_HZ choice (100, 250, 300 or 1000)"))
}
