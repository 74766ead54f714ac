//! `schedsim import TRACE`: a recorded trace as an rt-app workload (`crate::import`), read as a
//! stream (`.gz` gunzipped on the fly), the workload written whole or not at all.

use crate::import::build::{Builder, Options, Subtract};
use crate::import::{self, report};
use std::io::Write;
use std::path::PathBuf;

/// `schedsim import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The trace: tracefs's `trace` text, `trace-cmd report` output, `perf script` output of
    /// `perf sched record`, trace-cmd's `trace.dat` (versions 6 and 7, zlib or zstd
    /// compressed), or a Perfetto trace with ftrace sched events (expanded or compact_sched);
    /// `.gz` is read gunzipped.
    pub trace: PathBuf,
    /// Where to write the rt-app JSON workload (default: standard output; the report then goes
    /// to standard error).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Import only this time range, trace seconds: A,B (as the trace prints timestamps).
    #[arg(long, value_name = "A,B")]
    pub window: Option<String>,
    /// Import the tasks of this name (repeatable; `NAME*` matches a prefix).
    #[arg(long)]
    pub comm: Vec<String>,
    /// Import this task (repeatable).
    #[arg(long)]
    pub pid: Vec<u32>,
    /// Import kernel threads and the tracer's own tasks too.
    #[arg(long)]
    pub all_tasks: bool,
    /// Pin each thread: `observed` gives it the CPUs it ran on (the trace does not carry
    /// `sched_setaffinity`'s mask); `none` (default) leaves threads free.
    #[arg(long, value_name = "observed|none", default_value = "none")]
    pub affinity: String,
    /// The machine the workload is built for: its path costs are taken off the runs (the model
    /// charges them again). A preset or a machine file (default smp-4's).
    #[arg(long)]
    pub machine: Option<String>,
    /// Stop importing after this many thread steps in all (bounds the memory and the workload).
    #[arg(long, default_value_t = 2_000_000)]
    pub max_steps: usize,
    /// Import at most this many tasks.
    #[arg(long, default_value_t = 10_000)]
    pub max_tasks: usize,
}

fn seconds_ns(s: &str, what: &str) -> Result<u64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{what}: `{s}` is not a number of seconds"))?;
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(format!("{what}: `{s}` is out of range (expected seconds, 0 to 1e9)"));
    }
    Ok((v * 1e9).round() as u64)
}

/// The costs the model charges again, from the machine's path costs (see `Subtract`'s fields).
pub fn subtract_for(machine: &str) -> Result<Subtract, String> {
    let m = crate::run::machine(machine)?;
    let c = crate::linux::cost::PathCosts::for_machine(&m);
    // A barrier is a lock, a check and an unlock in user space around the futex call.
    let user = 3 * c.user_op;
    Ok(Subtract {
        block_ns: c.syscall + c.futex + c.schedule_enter + c.pick_fair_task + user,
        wake_ns: c.syscall + c.futex + c.ttwu + c.ttwu_activate + user,
        wakein_ns: c.context_switch + c.schedule_exit,
    })
}

/// A file read at offsets (`import::tracedat` reads pages where the CPUs' data are,
/// `import::perfetto` a CPU's bundles).
struct FileAt(std::fs::File);

impl import::tracedat::ReadAt for FileAt {
    fn read_exact_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.0, buf, at)
    }
}

/// Open a binary trace (trace.dat, Perfetto) for reads at offsets, and its length: a `.gz` is first gunzipped to an
/// unlinked temporary file (memory stays bounded however large the trace).
fn open_at(path: &std::path::Path, origin: &str) -> Result<(std::fs::File, u64), String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read trace {origin}: {e}"))?;
    let f = if path.extension().is_some_and(|x| x == "gz") {
        let tmp = std::env::temp_dir().join(format!("schedsim-import-{}.dat", std::process::id()));
        let mut out = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| format!("{origin}: cannot create a temporary file {}: {e}", tmp.display()))?;
        let _ = std::fs::remove_file(&tmp);
        let mut gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(f));
        std::io::copy(&mut gz, &mut out).map_err(|e| format!("{origin}: cannot gunzip: {e}"))?;
        out
    } else {
        f
    };
    let len = f.metadata().map_err(|e| format!("cannot read trace {origin}: {e}"))?.len();
    Ok((f, len))
}

pub fn cmd_import(a: ImportArgs) -> Result<(), String> {
    let window = match &a.window {
        None => None,
        Some(w) => {
            let (x, y) = w.split_once(',').ok_or_else(|| format!("--window {w}: expected A,B (seconds)"))?;
            let (x, y) = (seconds_ns(x, "--window")?, seconds_ns(y, "--window")?);
            if y <= x {
                return Err(format!("--window {w}: the end must be after the start"));
            }
            Some((x, y))
        }
    };
    let affinity_observed = match a.affinity.as_str() {
        "observed" => true,
        "none" => false,
        o => return Err(format!("--affinity {o}: expected `observed` or `none`")),
    };
    if a.max_steps == 0 || a.max_tasks == 0 {
        return Err("--max-steps and --max-tasks must be at least 1".into());
    }
    let machine = a.machine.clone().unwrap_or_else(|| "smp-4".into());
    let opts = Options {
        window,
        comms: a.comm.clone(),
        pids: a.pid.clone(),
        all_tasks: a.all_tasks,
        affinity_observed,
        subtract: subtract_for(&machine)?,
        max_steps: a.max_steps,
        max_tasks: a.max_tasks,
    };
    if let Some(o) = &a.output {
        super::same_file::check(&[("trace", &a.trace)], &[("-o", o)])?;
    }
    let origin = a.trace.display().to_string();
    let open = || -> Result<std::io::BufReader<Box<dyn std::io::Read>>, String> {
        let f = std::fs::File::open(&a.trace).map_err(|e| format!("cannot read trace {origin}: {e}"))?;
        let gz = a.trace.extension().is_some_and(|e| e == "gz");
        let raw: Box<dyn std::io::Read> = if gz { Box::new(flate2::read::MultiGzDecoder::new(f)) } else { Box::new(f) };
        Ok(std::io::BufReader::with_capacity(1 << 20, raw))
    };
    let mut input = open()?;
    let mut b = Builder::new(opts);
    // A trace.dat is told by its magic, a Perfetto trace by its first packet's tag and binary
    // bytes; anything else is read as text.
    let head = std::io::BufRead::fill_buf(&mut input).map_err(|e| format!("cannot read trace {origin}: {e}"))?;
    if import::tracedat::is_tracedat(head) {
        drop(input);
        let (f, len) = open_at(&a.trace, &origin)?;
        import::tracedat::read_tracedat(Box::new(FileAt(f)), len, &origin, &mut b).map_err(|e| e.to_string())?;
    } else if import::perfetto::is_perfetto(head) {
        drop(input);
        let (f, len) = open_at(&a.trace, &origin)?;
        import::perfetto::read_perfetto(Box::new(FileAt(f)), len, &origin, &mut b).map_err(|e| e.to_string())?;
    } else {
        import::read_text(&mut input, &origin, &mut b).map_err(|e| e.to_string())?;
    }
    b.finish();
    let (need, _) = b.missing();
    if !need.is_empty() {
        return Err(format!(
            "{origin}: the trace has no {} records, which the import needs; record with: {}",
            need.join(" or "),
            import::RECORD_LINE
        ));
    }
    if b.tasks.is_empty() {
        return Err(format!(
            "{origin}: no task to import (kernel threads and tracers are left out: --all-tasks, --comm or --pid \
             pick tasks)"
        ));
    }
    let json = report::workload_json(&b);
    let text = report::report_text(&b, &origin);
    match &a.output {
        Some(p) => {
            let mut out =
                crate::trace::sink::Output::create(p).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            out.w().write_all(json.as_bytes()).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            out.commit().map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            super::emit(&text);
        }
        None => {
            super::emit(&json);
            eprint!("{text}");
        }
    }
    Ok(())
}
