//! What a panic prints. A failing simulator `assert!` is a bug in schedsim; to be fixed it
//! must be reproducible, so a panic inside a run prints, on stderr and before the panic
//! message, the run's reproduce line (`# schedsim run ...`) and the last trace records the
//! kernel still holds in memory (or that tracing was off). Panics outside a run print the
//! usual message only.
//!
//! How: [`install_hook`] (called once by the binary's `main`) replaces the panic hook. While
//! [`run_guarded`] runs a kernel, the hook holds the panic message back; `run_guarded` catches
//! the unwind, prints the line, the records and then the message, and resumes unwinding, so
//! the exit status is the usual 101. Nothing here runs unless something panicked: the only
//! cost on a normal run is setting one thread-local at its start and end. This module and
//! `cli/` are the only ones that write to stderr.

use crate::linux::programs::Programs;
use crate::linux::Kernel;
use crate::trace::ftrace;
use crate::world::World;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many of the last trace records a panic report prints.
pub const TAIL_RECORDS: usize = 20;

thread_local! {
    /// The reproduce line of the run in progress on this thread.
    static RUN_LINE: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The panic message the hook held back for [`run_guarded`] to print.
    static HELD: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install the panic hook (once, from `main`). Inside [`run_guarded`] it keeps the message
/// for the report; elsewhere it is the default hook.
pub fn install_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let in_run = RUN_LINE.with(|l| l.borrow().is_some());
        if !in_run {
            default(info);
            return;
        }
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
            .unwrap_or("Box<dyn Any>");
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("<unnamed>");
        let at = info.location().map_or(String::new(), |l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()));
        let bt = std::backtrace::Backtrace::capture();
        let bt = match bt.status() {
            std::backtrace::BacktraceStatus::Captured => format!("stack backtrace:\n{bt}"),
            _ => "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n".to_string(),
        };
        let msg = format!("thread '{name}' panicked{at}:\n{payload}\n{bt}");
        HELD.with(|h| *h.borrow_mut() = Some(msg));
    }));
}

/// A deliberate panic after this much simulated time (ns; 0: none), for the test of the
/// panic report (`schedsim run --panic-at-ms N`, a hidden flag).
static PANIC_AT_NS: AtomicU64 = AtomicU64::new(0);

/// Ask the next runs of this process to panic deliberately after `ns` of simulated time.
pub fn set_panic_at(ns: u64) {
    PANIC_AT_NS.store(ns, Ordering::Relaxed);
}

/// Clears the thread's run line when the run ends, normally or by unwinding.
struct LineGuard;

impl Drop for LineGuard {
    fn drop(&mut self) {
        RUN_LINE.with(|l| *l.borrow_mut() = None);
    }
}

/// Run `w` up to `limit` ([`World::run`]). If it panics, print `line` (the run's reproduce
/// line), the kernel's last trace records and the panic message on stderr, then go on
/// unwinding.
pub fn run_guarded<P: Programs>(w: &mut World<P>, limit: crate::sim::Time, line: String) {
    RUN_LINE.with(|l| *l.borrow_mut() = Some(line));
    let _clear = LineGuard;
    let at = PANIC_AT_NS.load(Ordering::Relaxed);
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        if at == 0 {
            w.run(limit);
        } else {
            w.run(at.min(limit));
            panic!("deliberate panic after {at} ns of simulated time (--panic-at-ms)");
        }
    }));
    let Err(e) = r else { return };
    let line = RUN_LINE.with(|l| l.borrow().clone()).unwrap_or_default();
    let msg = HELD.with(|h| h.borrow_mut().take()).unwrap_or_default();
    eprint!("{}", report(&w.k, &line, &msg));
    panic::resume_unwind(e);
}

/// The report's text: the reproduce line, the trace tail (or why there is none), the message.
fn report(k: &Kernel, line: &str, msg: &str) -> String {
    let mut o = format!("schedsim: a panic in the run of\n{line}\n");
    let recs = &k.trace.records;
    if !k.trace.enabled {
        o.push_str("(tracing was off in this run: add --trace FILE to the line above for the records)\n");
    } else if recs.is_empty() {
        o.push_str("(no trace record in memory: the last ones went to the trace file)\n");
    } else {
        let n = recs.len().min(TAIL_RECORDS);
        o.push_str(&format!("the last {n} trace records at {} ns:\n", k.now));
        let names = KernelNames::new(k);
        let mut out = Vec::new();
        for r in &recs[recs.len() - n..] {
            ftrace::write_record(&mut out, r, &names);
        }
        o.push_str(&String::from_utf8_lossy(&out));
    }
    o.push_str(msg);
    o
}

/// Task names, trace masks and background functions straight from the kernel.
struct KernelNames {
    comms: Vec<(u32, String)>,
    swapper: Vec<String>,
    masks: Vec<String>,
    funcs: Vec<String>,
}

impl KernelNames {
    fn new(k: &Kernel) -> KernelNames {
        let nr = k.m.topo.nr_cpus;
        let mut comms: Vec<(u32, String)> =
            k.tasks.iter().filter(|t| t.pid != 0).map(|t| (t.pid, t.comm.clone())).collect();
        comms.sort();
        KernelNames {
            comms,
            swapper: (0..nr).map(|c| format!("swapper/{c}")).collect(),
            masks: k.trace.masks.iter().map(|m| crate::trace::cpumask_pb(m, nr)).collect(),
            funcs: k.cfg.background.trace_funcs(),
        }
    }
}

impl ftrace::Names for KernelNames {
    fn comm(&self, pid: u32, cpu: u32) -> &str {
        if pid == 0 {
            return self.swapper.get(cpu as usize).map_or("swapper", String::as_str);
        }
        match self.comms.binary_search_by_key(&pid, |(p, _)| *p) {
            Ok(i) => &self.comms[i].1,
            Err(_) => "<...>",
        }
    }
    fn cpumask(&self, id: u32) -> &str {
        self.masks.get(id as usize).map_or("", String::as_str)
    }
    fn func(&self, id: u32) -> &str {
        self.funcs.get(id as usize).map_or("", String::as_str)
    }
}
