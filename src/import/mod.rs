//! `schedsim import`: a recorded scheduling trace turned into an rt-app workload (issue 36).
//!
//! Three stages, each streaming so that memory does not grow with the trace's length:
//!
//! 1. A reader turns the trace into one stream of [`Rec`]s, the sched records the builder needs
//!    (switch, waking/wakeup, wakeup_new, fork, exit, migrate, interrupt, softirq and timer
//!    context, the `sched_setscheduler`/`sched_setaffinity` syscalls, lost-events markers).
//!    [`text`] reads the three text layouts: tracefs's `trace` file, `trace-cmd report`, and
//!    `perf script` of `perf sched record`; [`tracedat`] reads trace-cmd's binary `trace.dat`;
//!    [`perfetto`] a Perfetto protobuf trace (expanded or `compact_sched` ftrace bundles).
//! 2. [`build::Builder`] follows every imported task through the stream and writes its rt-app
//!    thread: runs, sleeps, wake dependencies as two-thread barriers, forks and ends.
//! 3. [`report`] says what the import assumed, task by task.
//!
//! No I/O here: `cli::import` opens the files and hands over a `BufRead`.

pub mod build;
pub mod perfetto;
pub mod report;
pub mod text;
pub mod tracedat;

use std::fmt;

/// A record's execution context on its CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctx {
    Task,
    /// Hard interrupt (the flags' `h`/`H`, or between `irq_handler_entry` and `_exit`).
    Irq,
    Softirq,
    /// Inside an `hrtimer_expire_entry` of `hrtimer_wakeup` (a sleeping task's timer).
    HrtimerWakeup,
    /// Inside any other timer callback (timer wheel or hrtimer).
    Timer,
}

/// A task's state as `sched_switch` prints `prev_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrevState {
    /// `R`/`R+`: preempted, still runnable.
    Runnable,
    /// `S`: interruptible sleep.
    Sleep,
    /// `D`: uninterruptible sleep.
    Disk,
    /// Anything else (`I`, `T`, `t`, `X`, `Z`, `P`): not runnable.
    Other,
}

/// What a record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind<'a> {
    Switch {
        prev_pid: u32,
        prev_prio: u32,
        prev_state: PrevState,
        next_pid: u32,
        next_prio: u32,
        next_comm: &'a str,
    },
    /// `sched_waking` (the waker's side of `try_to_wake_up()`).
    Waking {
        pid: u32,
        prio: u32,
        comm: &'a str,
    },
    /// `sched_wakeup` (logged where the wakee is activated, maybe from an IPI).
    Wakeup {
        pid: u32,
        prio: u32,
        comm: &'a str,
    },
    WakeupNew {
        pid: u32,
        prio: u32,
    },
    Fork {
        child_pid: u32,
        child_comm: &'a str,
    },
    Exit {
        pid: u32,
    },
    Migrate {
        pid: u32,
        dest_cpu: u32,
    },
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    /// A timer callback starts; `wakeup`: `hrtimer_wakeup` (a task's sleep timer).
    TimerEntry {
        wakeup: bool,
    },
    TimerExit,
    /// `sys_enter_sched_setscheduler`: the target pid (0: the caller) and policy.
    SetScheduler {
        pid: u32,
        policy: u32,
    },
    /// `sys_enter_sched_setaffinity` (the mask is a user pointer: not in the trace).
    SetAffinity {
        pid: u32,
    },
    /// `[LOST n EVENTS]`: the ring buffer overran on this CPU.
    Lost {
        count: u64,
    },
    /// An event the builder does not use (counted by name for the report).
    Other,
}

/// The pid of a record whose task the recording tool did not know.
pub const UNKNOWN_PID: u32 = u32::MAX;

/// One record of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec<'a> {
    pub ts_ns: u64,
    pub cpu: u32,
    /// The task current on the CPU when the record was logged, and its name ([`UNKNOWN_PID`]
    /// when the tool could not tell: `perf script` prints -1).
    pub pid: u32,
    pub comm: &'a str,
    /// From the flags column when the layout has one; None otherwise (`perf script`).
    pub ctx: Option<Ctx>,
    /// The event's name without its system (`sched_switch`).
    pub event: &'a str,
    pub kind: Kind<'a>,
}

/// A bad input: where (file, line) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    pub origin: String,
    /// 1-based line, 0 when the error is about the whole file.
    pub line: u64,
    pub msg: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.origin, self.msg)
        } else {
            write!(f, "{}:{}: {}", self.origin, self.line, self.msg)
        }
    }
}

/// The events a useful recording has, as the `trace-cmd record` line that records them.
pub const RECORD_LINE: &str = "trace-cmd record -e sched:sched_switch -e sched:sched_waking -e sched:sched_wakeup \
     -e sched:sched_wakeup_new -e sched:sched_process_fork -e sched:sched_process_exit -e sched:sched_migrate_task \
     -e irq:irq_handler_entry -e irq:irq_handler_exit -e irq:softirq_entry -e irq:softirq_exit \
     -e timer:hrtimer_expire_entry -e timer:hrtimer_expire_exit -e timer:timer_expire_entry -e timer:timer_expire_exit \
     -e syscalls:sys_enter_sched_setscheduler -e syscalls:sys_enter_sched_setaffinity PROGRAM";

/// Read a whole trace from `input` into `builder`, line by line (one line held at a time).
pub fn read_text(
    input: &mut dyn std::io::BufRead,
    origin: &str,
    builder: &mut build::Builder,
) -> Result<(), ImportError> {
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut last_ts = 0u64;
    let mut last_line = 0u64;
    loop {
        buf.clear();
        let n = read_line_bounded(input, &mut buf).map_err(|e| ImportError {
            origin: origin.into(),
            line: line_no + 1,
            msg: e,
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        builder.seen.unterminated = buf.last() != Some(&b'\n');
        let line = std::str::from_utf8(&buf).map_err(|_| ImportError {
            origin: origin.into(),
            line: line_no,
            msg: "not UTF-8 text (expected ftrace text, `trace-cmd report` or `perf script` output)".into(),
        })?;
        let line = line.trim_end_matches(['\n', '\r']);
        let rec = text::parse_line(line).map_err(|msg| ImportError { origin: origin.into(), line: line_no, msg })?;
        let Some(rec) = rec else { continue };
        if rec.ts_ns < last_ts {
            return Err(ImportError {
                origin: origin.into(),
                line: line_no,
                msg: format!(
                    "timestamp {} is {} ns before line {}'s {}: records out of order (expected a trace sorted by \
                     time, as tracefs, `trace-cmd report` and `perf script` print it)",
                    text::fmt_ts(rec.ts_ns),
                    last_ts - rec.ts_ns,
                    last_line,
                    text::fmt_ts(last_ts)
                ),
            });
        }
        last_ts = rec.ts_ns;
        last_line = line_no;
        builder.push(&rec, line_no);
    }
    if line_no == 0 {
        return Err(ImportError { origin: origin.into(), line: 0, msg: "empty file (expected a trace)".into() });
    }
    Ok(())
}

/// The longest line read: a real trace line is a few hundred bytes; a longer one is not a trace.
pub const MAX_LINE_BYTES: usize = 64 << 10;

fn read_line_bounded(input: &mut dyn std::io::BufRead, buf: &mut Vec<u8>) -> Result<usize, String> {
    loop {
        let avail = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read: {e}")),
        };
        if avail.is_empty() {
            return Ok(buf.len());
        }
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        buf.extend_from_slice(&avail[..take]);
        input.consume(take);
        if buf.len() > MAX_LINE_BYTES {
            return Err(format!("a line longer than {MAX_LINE_BYTES} bytes (expected trace text)"));
        }
        if done {
            return Ok(buf.len());
        }
    }
}

/// Where a binary trace's bytes are: the file the command line opened, or memory (tests,
/// fuzzing). The readers check `at + n` against the length before they read.
pub(crate) enum Backing {
    File(Box<dyn tracedat::ReadAt>),
    Mem(Vec<u8>),
}

impl Backing {
    /// `n` bytes at `at`.
    pub(crate) fn read(&self, at: u64, n: u64) -> std::io::Result<Vec<u8>> {
        match self {
            Backing::File(f) => {
                let mut b = vec![0u8; n as usize];
                f.read_exact_at(&mut b, at)?;
                Ok(b)
            }
            Backing::Mem(m) => Ok(m[at as usize..(at + n) as usize].to_vec()),
        }
    }
}
